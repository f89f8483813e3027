//go:build linux

package main

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/internal/history"
	"github.com/groupd/groupd/wire"
)

// The files in testdata/peers were captured from scripts/bench/peers.sh
// runs in the lab (N = 3): each peer's own view output, as the harness
// records it, and the outputs of corosync-quorumtool -s and serf members.

// feed runs every line of a testdata file through p and returns the views
// it gave.
func feed(t *testing.T, name string, p viewParser) []pview {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "peers", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []pview
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := p.parse(sc.Text()); ok {
			out = append(out, v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func epoch(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := parseEpoch(s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func TestParseEpoch(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"1795432451.633532", time.Unix(1795432451, 633532000)},
		{"1795432451", time.Unix(1795432451, 0)},
		{"1795432451.5", time.Unix(1795432451, 500000000)},
		{"1795432451.1234567891234", time.Unix(1795432451, 123456789)},
	} {
		got, err := parseEpoch(c.in)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("parseEpoch(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "x", "12.x", "-"} {
		if _, err := parseEpoch(bad); err == nil {
			t.Errorf("parseEpoch(%q): no error", bad)
		}
	}
}

func TestCorosyncLogParser(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.Local) }
	got := feed(t, "corosync-n2.log", newCorosyncLogParser(now))
	at := func(h, m, s, ms int) time.Time { return time.Date(2026, 11, 23, h, m, s, ms*1e6, time.Local) }
	want := []pview{
		{At: at(11, 13, 13, 33), Members: []int{2}, Leader: 2, ID: "2.5"},
		{At: at(11, 13, 13, 169), Members: []int{1, 2, 3}, Leader: 1, ID: "1.9"},
		{At: at(11, 13, 37, 25), Members: []int{2, 3}, Leader: 2, ID: "2.d"}, // node 1 killed
		{At: at(11, 13, 37, 561), Members: []int{1, 2, 3}, Leader: 1, ID: "1.12"},
		{At: at(11, 13, 45, 649), Members: []int{2, 3}, Leader: 2, ID: "2.16"}, // partition 1 | 2,3
		{At: at(11, 13, 48, 597), Members: []int{1, 2, 3}, Leader: 1, ID: "1.1a"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d views, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if !got[i].same(want[i]) || !got[i].At.Equal(want[i].At) {
			t.Errorf("view %d: got %v at %v, want %v at %v", i, got[i], got[i].At, want[i], want[i].At)
		}
	}
}

func TestCorosyncLogContinuedMembersAndYear(t *testing.T) {
	// A Members list longer than corosync's 64-byte buffer goes on over
	// several lines, each but the last ending in a backslash. The year is
	// the one that puts the time nearest to now, not after it.
	now := func() time.Time { return time.Date(2027, 1, 1, 0, 0, 5, 0, time.Local) }
	p := newCorosyncLogParser(now)
	var ids1, ids2 []string
	for i := 1; i <= 20; i++ {
		ids1 = append(ids1, itoa(i))
	}
	for i := 21; i <= 32; i++ {
		ids2 = append(ids2, itoa(i))
	}
	lines := []string{
		"Dec 31 23:59:58.100 [7] vm corosync notice  [TOTEM ] A new membership (a.3f) was formed. Members joined: 11",
		"Dec 31 23:59:58.104 [7] vm corosync notice  [QUORUM] Members[32]: " + strings.Join(ids1, " ") + `\`,
		"Dec 31 23:59:58.104 [7] vm corosync notice  [QUORUM] Members[32]: " + strings.Join(ids2, " "),
		"Dec 31 23:59:58.108 [7] vm corosync notice  [MAIN  ] Completed service synchronization, ready to provide service.",
	}
	var got []pview
	for _, l := range lines {
		if v, ok := p.parse(l); ok {
			got = append(got, v)
		}
	}
	if len(got) != 1 {
		t.Fatalf("got %d views, want 1: %v", len(got), got)
	}
	v := got[0]
	if v.ID != "a.3f" || v.Leader != 10 || len(v.Members) != 32 || v.Members[0] != 1 || v.Members[31] != 32 {
		t.Errorf("view %v", v)
	}
	if want := time.Date(2026, 12, 31, 23, 59, 58, 108e6, time.Local); !v.At.Equal(want) {
		t.Errorf("at %v, want %v", v.At, want)
	}
	// "starting up" forgets a half-read view.
	p.parse("Jan  1 00:00:01.000 [8] vm corosync notice  [TOTEM ] A new membership (1.40) was formed. Members joined: 1")
	p.parse("Jan  1 00:00:01.200 [9] vm corosync notice  [MAIN  ] Corosync Cluster Engine 3.1.7 starting up")
	if _, ok := p.parse("Jan  1 00:00:02.000 [9] vm corosync notice  [MAIN  ] Completed service synchronization, ready to provide service."); ok {
		t.Error("a view from before a restart")
	}
}

func itoa(i int) string { return joinInts([]int{i}) }

func TestParseQuorumtool(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "peers", "quorumtool-s.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	q, err := parseQuorumtool(f)
	if err != nil {
		t.Fatal(err)
	}
	if q.Ring != "1.9" || q.Rep != 1 || !q.Quorate || !slices.Equal(q.Members, []int{1, 2, 3}) {
		t.Errorf("got %+v", q)
	}
	f16, err := os.Open(filepath.Join("testdata", "peers", "quorumtool-s-16.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f16.Close()
	if q, err = parseQuorumtool(f16); err != nil || q.Ring != "1.32" || q.Rep != 1 || len(q.Members) != 16 || q.Members[15] != 16 {
		t.Errorf("N = 16: got %+v, %v", q, err)
	}
	if _, err := parseQuorumtool(strings.NewReader("Cannot initialize QUORUM service\n")); err == nil {
		t.Error("no error for an output without a ring")
	}
}

func TestSerfLogParser(t *testing.T) {
	got := feed(t, "serf-agent-n1.log", &serfLogParser{})
	// join n1, n3, n2; n3 killed and back; partition 1 | 2,3 and heal.
	want := []struct {
		at      string
		members []int
	}{
		{"1795432429.639377", []int{1}},
		{"1795432429.772869", []int{1, 3}},
		{"1795432429.790286", []int{1, 2, 3}},
		{"1795432451.633532", []int{1, 2}},
		{"1795432453.045822", []int{1, 2, 3}},
		{"1795432460.634815", []int{1, 3}},
		{"1795432462.635241", []int{1}},
		{"1795432483.045423", []int{1, 3}},
		{"1795432483.076789", []int{1, 2, 3}},
	}
	if len(got) < len(want) {
		t.Fatalf("got %d views, want at least %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		if !got[i].At.Equal(epoch(t, w.at)) || !slices.Equal(got[i].Members, w.members) {
			t.Errorf("view %d: got %v at %v, want %v at %s", i, got[i], got[i].At, w.members, w.at)
		}
	}
	// A restarted agent starts from an empty table; forced leaves count.
	p := &serfLogParser{}
	p.parse("1.0     2026/11/23 11:13:49 [INFO] serf: EventMemberJoin: n1 10.91.0.1")
	p.parse("1.1     2026/11/23 11:13:49 [INFO] serf: EventMemberJoin: n2 10.91.0.2")
	if v, _ := p.parse("1.2     2026/11/23 11:13:49 [INFO] serf: EventMemberLeave (forced): n2 10.91.0.2"); !slices.Equal(v.Members, []int{1}) {
		t.Errorf("forced leave: %v", v)
	}
	p.parse("2.0     2026/11/23 11:13:50 [INFO] agent: Serf agent starting")
	if v, _ := p.parse("2.1     2026/11/23 11:13:50 [INFO] serf: EventMemberJoin: n3 10.91.0.3"); !slices.Equal(v.Members, []int{3}) {
		t.Errorf("after a restart: %v", v)
	}
}

func TestSerfHandlerParser(t *testing.T) {
	got := feed(t, "serf-events-n1.log", &serfHandlerParser{})
	want := []struct {
		at      string
		members []int
	}{
		{"1795432430.824938", []int{1, 2, 3}},
		{"1795432452.651185", []int{1, 2}},
		{"1795432454.055675", []int{1, 2, 3}},
		{"1795432461.651187", []int{1, 3}},
		{"1795432463.645517", []int{1}},
		{"1795432484.085784", []int{1, 2, 3}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d views, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		if !got[i].At.Equal(epoch(t, w.at)) || !slices.Equal(got[i].Members, w.members) {
			t.Errorf("view %d: got %v at %v, want %v at %s", i, got[i], got[i].At, w.members, w.at)
		}
	}
}

func TestParseSerfMembers(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "peers", "serf-members.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	alive, err := parseSerfMembers(f)
	if err != nil || !slices.Equal(alive, []int{1, 2, 3}) {
		t.Errorf("got %v, %v; want [1 2 3]", alive, err)
	}
	// After a kill, the victim stays listed, failed.
	alive, err = parseSerfMembers(strings.NewReader("n1  10.91.0.1:7946  alive  \nn2  10.91.0.2:7946  alive  \nn3  10.91.0.3:7946  failed\n"))
	if err != nil || !slices.Equal(alive, []int{1, 2}) {
		t.Errorf("got %v, %v; want [1 2]", alive, err)
	}
	if _, err := parseSerfMembers(strings.NewReader("Error connecting to Serf agent: dial tcp 127.0.0.1:7373: connect: connection refused\n")); err == nil {
		t.Error("no error without members")
	}
}

func TestJGroupsParser(t *testing.T) {
	got := feed(t, "jgroups-n1.log", jgroupsParser{})
	if len(got) != 9 {
		t.Fatalf("got %d views, want 9 (banner lines skipped): %v", len(got), got)
	}
	if v := got[2]; v.ID != "n1|2" || v.Leader != 1 || !slices.Equal(v.Members, []int{1, 2, 3}) ||
		!v.At.Equal(epoch(t, "1795432487.938078")) {
		t.Errorf("cold start view %v", v)
	}
	// The MergeView after the heal: coordinator n3, members in view order.
	if v := got[6]; v.ID != "n3|7" || v.Leader != 3 || !slices.Equal(v.Members, []int{1, 2, 3}) {
		t.Errorf("merge view %v", v)
	}
	for _, bad := range []string{"", "1795432487.710353 view n1|0", "1795432487.710353 view n1|0 x1 n1", "GMS: address=n1"} {
		if _, ok := (jgroupsParser{}).parse(bad); ok {
			t.Errorf("parsed %q", bad)
		}
	}
}

// TestGroupdViewsFromHistory: groupd's views in the peers' comparison are
// read through internal/history, from the events the lab recorded.
func TestGroupdViewsFromHistory(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "peers", "groupd-n1.events.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := history.New()
	if n, err := h.Read(f); err != nil || n != 6 {
		t.Fatalf("read %d events, %v", n, err)
	}
	got := h.Events(time.Time{}, time.Time{})
	if v := got[2].New; v.State != wire.StateNormal || v.Group.String() != "3.3" || v.Coordinator != 3 || !slices.Equal(idsOf(v.Members), []int{1, 2, 3}) {
		t.Errorf("converged view %v", v)
	}
	if v := got[5].New; v.Group.String() != "4.2" || v.Coordinator != 2 || !slices.Equal(idsOf(v.Members), []int{1, 2}) {
		t.Errorf("failed-over view %v", v)
	}
	// The first reaction after the converged view: node 1's election.
	if ev, ok := h.FirstEvent(got[2].Time.Add(time.Nanosecond), []wire.NodeID{1}); !ok || ev.Reason != "election" {
		t.Errorf("first reaction %v %v", ev, ok)
	}
	if _, ok := h.FirstEvent(time.Time{}, []wire.NodeID{2}); ok {
		t.Error("node 2 has no events here")
	}
}

func TestKeepalivedLogParser(t *testing.T) {
	got := feed(t, "keepalived-n2.log", keepalivedLogParser{})
	want := []struct{ at, state string }{
		{"1795433560.343276", "STOP"}, // Starting Keepalived: no state yet
		{"1795433560.913065", "BACKUP"},
		{"1795433564.542782", "MASTER"}, // a moment, at a cold start under load
		{"1795433564.605970", "BACKUP"},
		{"1795433583.276237", "MASTER"}, // node 3 killed
		{"1795433587.086775", "BACKUP"}, // node 3 back, preempts
		{"1795433597.815977", "STOP"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d views, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].State != w.state || !got[i].At.Equal(epoch(t, w.at)) {
			t.Errorf("view %d: got %s at %v, want %s at %s", i, got[i].State, got[i].At, w.state, w.at)
		}
	}
}
