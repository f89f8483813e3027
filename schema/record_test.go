package schema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// readLines returns the non-blank lines of testdata/name.
func readLines(t *testing.T, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			out = append(out, bytes.Clone(l))
		}
	}
	return out
}

// encode writes v as the lab writes its records: JSON without HTML
// escapes ("1->5" stays readable).
func encode(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// TestRecordedLinesRoundTrip: lines of a recorded lab history (events of
// a current daemon and the lab's marks, taken from
// scripts/bench/results/2026-11-26) decode and encode back to the same
// bytes, so that what is written today is what was recorded then.
func TestRecordedLinesRoundTrip(t *testing.T) {
	for i, line := range readLines(t, "recorded.ndjson") {
		var v any = &Event{}
		if bytes.Contains(line, []byte(`"kind":`)) {
			v = &Mark{}
		}
		if err := json.Unmarshal(line, v); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if got := encode(t, v); !bytes.Equal(got, line) {
			t.Errorf("line %d:\ngot  %s\nwant %s", i+1, got, line)
		}
	}
}

// TestRecordedBeforeLease: a history recorded by a daemon that did not
// send lease_until yet still reads, the missing field zero.
func TestRecordedBeforeLease(t *testing.T) {
	for _, line := range readLines(t, "recorded-before-lease.ndjson") {
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		if e.Node == 0 || e.Old == nil || e.New.ID != e.Node || !e.New.LeaseUntil.IsZero() || !e.New.State.Valid() {
			t.Errorf("decoded %+v", e)
		}
		// Encoded again, it differs only by the field it lacked.
		got := strings.Replace(string(encode(t, e)), `"lease_until":null,`, "", 2)
		if got != string(line) {
			t.Errorf("got  %s\nwant %s", got, line)
		}
	}
}

func TestMarkNodes(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		kind, spec string
		down       bool
		nodes      []wire.NodeID
		bad        bool
	}{
		{KindKill, "3", true, []wire.NodeID{3}, false},
		{KindStop, "1-3,5", true, []wire.NodeID{1, 2, 3, 5}, false},
		{KindRestart, "2", true, []wire.NodeID{2}, false},
		{KindStart, "1,2", false, []wire.NodeID{1, 2}, false},
		{KindPause, "5", false, []wire.NodeID{5}, false},
		{KindPartition, "1,2|3", false, nil, false},
		{KindHeal, "all", false, nil, false},
		{KindKill, "x", true, nil, true},
		{KindWipe, "0", false, nil, true},
	} {
		m := Mark{Time: at, Kind: tc.kind, Spec: tc.spec}
		nodes, err := m.Nodes()
		if (err != nil) != tc.bad || !slices.Equal(nodes, tc.nodes) || m.Down() != tc.down {
			t.Errorf("%s %q: Nodes %v, %v; Down %v; want %v, bad %v, down %v", tc.kind, tc.spec, nodes, err, m.Down(), tc.nodes, tc.bad, tc.down)
		}
	}
}

func TestIDsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		ids  []wire.NodeID
		text string
	}{
		{[]wire.NodeID{1, 2, 3, 5}, "1-3,5"},
		{[]wire.NodeID{4}, "4"},
		{[]wire.NodeID{1, 2, 7, 8, 9}, "1,2,7-9"},
	} {
		if got := FormatIDs(tc.ids); got != tc.text {
			t.Errorf("FormatIDs(%v) = %q, want %q", tc.ids, got, tc.text)
		}
		if back, err := ParseIDs(tc.text); err != nil || !slices.Equal(back, tc.ids) {
			t.Errorf("ParseIDs(%q) = %v, %v", tc.text, back, err)
		}
	}
	for _, bad := range []string{"", "0", "3-1", "1,1", "a", "1-99999999"} {
		if _, err := ParseIDs(bad); err == nil {
			t.Errorf("ParseIDs(%q): no error", bad)
		}
	}
}

func TestLeaderAnswerJSON(t *testing.T) {
	ms := int64(1200)
	a := LeaderAnswer{Leader: true, ID: 4, Name: "n4", Term: "7.4", Group: "7.4", Primary: true, Expect: 5,
		LeaseRemainingMS: &ms, LeaderID: 4, LeaderName: "n4", Time: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	want := `{"leader":true,"id":4,"name":"n4","term":"7.4","group":"7.4","primary":true,"expect":5,` +
		`"lease_remaining_ms":1200,"leader_id":4,"leader_name":"n4","time":"2026-11-21T10:00:00Z"}`
	if got := string(encode(t, a)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	a.LeaseRemainingMS = nil
	if got := string(encode(t, a)); strings.Contains(got, "lease_remaining_ms") {
		t.Errorf("lease_remaining_ms must be left out when unknown: %s", got)
	}
}

func TestExecGuardJSON(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	req := ExecGuardRequest{Term: "7.4", GraceMS: 200, PollMS: 50}
	if got, want := string(encode(t, req)), `{"term":"7.4","grace_ms":200,"poll_ms":50}`; got != want {
		t.Errorf("request: got %s, want %s", got, want)
	}
	first := ExecGuard{ID: 3, Term: "7.4", Cgroup: "/sys/fs/cgroup/groupd-77/exec-3", Time: at}
	if got, want := string(encode(t, first)), `{"id":3,"term":"7.4","cgroup":"/sys/fs/cgroup/groupd-77/exec-3","time":"2026-11-21T10:00:00Z"}`; got != want {
		t.Errorf("first line: got %s, want %s", got, want)
	}
	last := ExecGuard{ID: 3, Term: "7.4", End: "the lease ran out", Killed: true, Time: at}
	if got, want := string(encode(t, last)), `{"id":3,"term":"7.4","end":"the lease ran out","killed":true,"time":"2026-11-21T10:00:00Z"}`; got != want {
		t.Errorf("last line: got %s, want %s", got, want)
	}
}
