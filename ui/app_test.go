package ui

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/timeline"
)

// appHarness runs assets/app.js under node with a stand-in for the DOM
// and for fetch (the API's answers come from argv[3]), lets it poll once
// and render, then runs the test's script (argv[4], the body of a function
// of the page's window.groupdUI, g, and the element stand-ins, el) and
// prints what it returns as JSON.
const appHarness = `
const fs = require('fs'), vm = require('vm');
const elems = {};
const el = (id) => elems[id] ||= {id, textContent: '', innerHTML: '', dataset: {}, clientWidth: 1000, hidden: false, value: '',
  setAttribute() {}, addEventListener() {}, getBoundingClientRect: () => ({left: 0, width: 1000})};
const api = JSON.parse(process.argv[3]);
const ctx = {
  console, setTimeout, clearTimeout, setInterval: () => 0, clearInterval() {}, performance, TextDecoder, AbortController,
  document: {getElementById: el, title: '', querySelectorAll: () => []}, location: {reload() {}},
  addEventListener() {},
  fetch: async (path) => path in api ?
    {ok: true, status: 200, json: async () => api[path], text: async () => api[path], body: null} :
    {ok: false, status: 404, json: async () => null, body: null},
};
ctx.window = ctx;
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(process.argv[2], 'utf8'), ctx);
setTimeout(() => {
  const out = new Function('g', 'el', process.argv[4])(ctx.groupdUI, el);
  console.log(JSON.stringify(out));
  process.exit(0);
}, 300);
`

// runApp runs script against the page fed with api (path -> answer) and
// decodes what it returns into out. It skips without Node.js.
func runApp(t *testing.T, api map[string]any, script string, out any) {
	t.Helper()
	nodeJS, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node (Node.js) is not installed: the live view's script is not run here (apt-get install nodejs)")
	}
	dir := t.TempDir()
	harness := filepath.Join(dir, "harness.js")
	app := filepath.Join(dir, "app.js")
	src, err := fs.ReadFile(Assets(), "app.js")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(harness, []byte(appHarness), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(app, src, 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(api)
	res, err := exec.Command(nodeJS, harness, app, string(b), script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, res)
	}
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatalf("harness output %q: %v", res, err)
	}
}

// pageNode is one node of window.groupdUI.view() (assets/app.js).
type pageNode struct {
	ID      int    `json:"id"`
	Label   string `json:"label"`
	Group   string `json:"group"`
	Down    bool   `json:"down"`
	Reach   string `json:"reach"`
	Leader  bool   `json:"leader"`
	Primary bool   `json:"primary"`
}

// pageView is window.groupdUI.view().
type pageView struct {
	Nodes  []pageNode `json:"nodes"`
	Groups []struct {
		Group   string `json:"group"`
		IDs     []int  `json:"ids"`
		Primary bool   `json:"primary"`
	} `json:"groups"`
	Links []struct {
		A, B     int
		State    string `json:"state"`
		From, To int
		Basis    string `json:"basis"`
	} `json:"links"`
}

func (v pageView) link(a, b int) string {
	for _, l := range v.Links {
		if l.A == min(a, b) && l.B == max(a, b) {
			return l.State
		}
	}
	return ""
}

func (v pageView) node(id int) (n pageNode) {
	for _, n := range v.Nodes {
		if n.ID == id {
			return n
		}
	}
	return n
}

// TestAppDeadLeader: after a kill -9 of the leader (node 3), the view of
// node 1 must not count node 3 in the group or star it, whatever its last
// gossip meta says (the issue: "★ n3 … dead" under "3 nodes in 1 group").
// The members carry no reach (an older daemon): gossip decides.
func TestAppDeadLeader(t *testing.T) {
	status := map[string]any{"id": 1, "name": "n1", "priority": 100, "state": "normal", "role": "participant",
		"group": "200.2", "coordinator": 2, "coordinator_name": "n2", "members": []int{1, 2},
		"leader": false, "primary": true, "time": "2026-11-26T10:00:02Z", "since": "2026-11-26T10:00:01Z"}
	members := []map[string]any{
		{"id": 1, "name": "n1", "priority": 100, "gossip": "alive", "in_group": true, "group": "200.2", "state": "normal", "leader": false},
		{"id": 2, "name": "n2", "priority": 100, "gossip": "alive", "in_group": true, "group": "200.2", "state": "normal", "leader": true},
		// What an older daemon serves: the dead node's last meta.
		{"id": 3, "name": "n3", "priority": 100, "gossip": "dead", "in_group": false, "group": "100.3", "state": "normal", "leader": true},
	}
	var got struct{ Summary, Groups string }
	runApp(t, map[string]any{"/v1/status": status, "/v1/members": members},
		`return {summary: el('summary').textContent, groups: el('groups').innerHTML}`, &got)
	if want := "2 nodes in 1 group, 1 not reachable from here · no quorum set"; !strings.HasPrefix(got.Summary, want) {
		t.Errorf("summary %q, want it to start with %q", got.Summary, want)
	}
	row := func(id string) string {
		i := strings.Index(got.Groups, `<tr class="node" data-id="`+id+`"`)
		if i < 0 {
			t.Fatalf("no row for node %s in %s", id, got.Groups)
		}
		return got.Groups[i : i+strings.Index(got.Groups[i:], ">")]
	}
	if r := row("3"); !strings.Contains(r, `data-leader="false"`) || !strings.Contains(r, `data-reachable="false"`) {
		t.Errorf("the dead leader's row: %s", r)
	}
	if r := row("2"); !strings.Contains(r, `data-leader="true"`) {
		t.Errorf("the live leader's row: %s", r)
	}
	if strings.Contains(got.Groups, "primary") {
		t.Errorf("without --expect the page shows a primary badge: %s", got.Groups)
	}
}

// TestAppReach: node 1's view right after a cut. Gossip still says every
// node is alive and in the old group; the reach answers say the
// coordinator's heartbeats stopped, a node of the other side was never
// heard, and node 2 was heard just now. The page must trust the evidence:
// 3 and 4 are not reachable from here, the link to 3 is cut, and no link
// to 4 is drawn (nothing is known of it).
func TestAppReach(t *testing.T) {
	status := map[string]any{"id": 1, "name": "n1", "priority": 100, "state": "normal", "role": "participant",
		"group": "500.3", "coordinator": 3, "members": []int{1, 2, 3, 4}, "expect": 0, "time": "2026-11-26T10:00:02Z"}
	m := func(id int, reach map[string]any) map[string]any {
		return map[string]any{"id": id, "name": "vm", "gossip": "alive", "in_group": true, "group": "500.3", "state": "normal",
			"leader": id == 3, "reach": reach}
	}
	members := []map[string]any{
		m(1, map[string]any{"state": "self", "basis": "self", "age_ms": 0}),
		m(2, map[string]any{"state": "up", "basis": "packet", "age_ms": 20, "window_ms": 3500}),
		m(3, map[string]any{"state": "lost", "basis": "heartbeat", "age_ms": 900, "window_ms": 750}),
		m(4, map[string]any{"state": "unknown", "basis": "none", "age_ms": -1}),
	}
	var v pageView
	runApp(t, map[string]any{"/v1/status": status, "/v1/members": members}, `return g.view()`, &v)
	for _, id := range []int{3, 4} {
		if n := v.node(id); !n.Down || n.Reach == "up" {
			t.Errorf("node %d: %+v, want not reachable", id, n)
		}
	}
	if n := v.node(2); n.Down || n.Reach != "up" || n.Group != "500.3" {
		t.Errorf("node 2: %+v, want reachable in 500.3", n)
	}
	if s := v.link(1, 3); s != "cut" {
		t.Errorf("link 1-3 %q, want cut (links %+v)", s, v.Links)
	}
	if s := v.link(1, 4); s != "" {
		t.Errorf("link 1-4 %q, want none: nothing is known of 4", s)
	}
	// Every node is called "vm": the page tells them apart by ID.
	if n := v.node(2); n.Label != "vm#2" {
		t.Errorf("node 2's label %q, want vm#2", n.Label)
	}
}

// labRecording is a lab run: three nodes in one group, a one-way cut of
// packets from 3 to 1 and 2 (written as the lab writes it), then a partition 1,2 | 3 with --expect 3,
// the kill of node 1, and the lab stopping all three (a range, as the lab writes it).
const labRecording = `{"time":"2026-11-26T10:00:00.000Z","kind":"start","spec":"1,2,3"}
{"time":"2026-11-26T10:00:01.000Z","node":1,"new":{"id":1,"name":"a","state":"normal","role":"participant","group":"1795430400100.3","coordinator":3,"members":[1,2,3],"expect":3,"primary":true}}
{"time":"2026-11-26T10:00:01.000Z","node":2,"new":{"id":2,"name":"b","state":"normal","role":"participant","group":"1795430400100.3","coordinator":3,"members":[1,2,3],"expect":3,"primary":true}}
{"time":"2026-11-26T10:00:01.000Z","node":3,"new":{"id":3,"name":"c","state":"normal","role":"coordinator","group":"1795430400100.3","coordinator":3,"members":[1,2,3],"expect":3,"primary":true,"leader":true,"term":"1795430400100.3"}}
{"time":"2026-11-26T10:00:02.000Z","kind":"oneway","spec":"3->1,3->2"}
{"time":"2026-11-26T10:00:04.000Z","kind":"heal","spec":"all"}
{"time":"2026-11-26T10:00:05.000Z","kind":"partition","spec":"1,2|3"}
{"time":"2026-11-26T10:00:06.000Z","node":3,"new":{"id":3,"name":"c","state":"normal","role":"coordinator","group":"1795430400100.3","coordinator":3,"members":[3],"expect":3,"primary":false,"leader":true,"term":"1795430400100.3"}}
{"time":"2026-11-26T10:00:06.500Z","node":1,"new":{"id":1,"name":"a","state":"normal","role":"participant","group":"1795430406500.2","coordinator":2,"members":[1,2],"expect":3,"primary":true}}
{"time":"2026-11-26T10:00:06.500Z","node":2,"new":{"id":2,"name":"b","state":"normal","role":"coordinator","group":"1795430406500.2","coordinator":2,"members":[1,2],"expect":3,"primary":true,"leader":true,"term":"1795430406500.2"}}
{"time":"2026-11-26T10:00:09.000Z","kind":"kill","spec":"1"}
{"time":"2026-11-26T10:00:09.800Z","kind":"stop","spec":"1-3"}
`

// TestAppReplayLab replays a lab recording and checks the picture at
// instants: the lab's one-way cut as a one-way link, the partition as cut
// links, a coordinator that dropped its members, primary flags only where
// a quorum holds, a killed node down, and group numbers shortened yet
// unique.
func TestAppReplayLab(t *testing.T) {
	at := func(s string) int64 {
		tm, _ := time.Parse(time.RFC3339Nano, "2026-11-26T10:00:0"+s+"Z")
		return tm.UnixMilli()
	}
	script := `g.loadHistory(` + jsString(labRecording) + `, 'rec');
const out = {};
for (const [k, t] of Object.entries(` + mustJSON(map[string]int64{"oneway": at("3"), "split": at("5.2"), "after": at("7"), "killed": at("9.5"), "stopped": at("9.9")}) + `)) { g.seek(t); out[k] = g.view(); }
out.short = [...g.short.values()];
return out;`
	var got map[string]json.RawMessage
	runApp(t, nil, script, &got)
	view := func(k string) pageView {
		var v pageView
		if err := json.Unmarshal(got[k], &v); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		return v
	}
	one := view("oneway")
	for _, p := range []int{1, 2} {
		var l struct {
			state    string
			from, to int
		}
		for _, x := range one.Links {
			if x.A == p && x.B == 3 {
				l.state, l.from, l.to = x.State, x.From, x.To
			}
		}
		if l.state != "oneway" || l.from != p || l.to != 3 {
			t.Errorf("during the one-way cut 3->1,3->2: link %d-3 %+v, want oneway %d->3 (links %+v)", p, l, p, one.Links)
		}
	}
	split := view("split")
	if s := split.link(1, 3); s != "cut" {
		t.Errorf("after the partition: link 1-3 %q, want cut", s)
	}
	after := view("after")
	if s := after.link(2, 3); s != "cut" {
		t.Errorf("after the new groups: link 2-3 %q, want cut", s)
	}
	if s := after.link(1, 2); s != "up" {
		t.Errorf("after the new groups: link 1-2 %q, want up", s)
	}
	var prim []string
	for _, g := range after.Groups {
		if g.Primary {
			prim = append(prim, g.Group)
		}
	}
	if !slices.Equal(prim, []string{"1795430406500.2"}) {
		t.Errorf("primary groups %v, want only the majority's 1795430406500.2 (groups %+v)", prim, after.Groups)
	}
	if n := view("killed").node(1); !n.Down || n.Group != "" {
		t.Errorf("node 1 after its kill: %+v, want down", n)
	}
	for _, id := range []int{1, 2, 3} {
		if n := view("stopped").node(id); !n.Down {
			t.Errorf("node %d after the lab's stop 1-3: %+v, want down", id, n)
		}
	}
	var short []string
	json.Unmarshal(got["short"], &short)
	slices.Sort(short)
	if want := []string{"…100.3", "…500.2"}; !slices.Equal(short, want) {
		t.Errorf("short group numbers %v, want %v", short, want)
	}
}

// mergeRecording is a merge seen by the lab view before every answer is
// in: coordinator 3 has begun the new group 1795430402000.3 and still
// holds its lease, while its members' last answers still name the old
// group, primary (the lab view showed two primary badges for one leader,
// e2e's TestUIPrimaryBadges once in CI).
const mergeRecording = `{"time":"2026-11-26T10:00:00.000Z","kind":"start","spec":"1,2,3"}
{"time":"2026-11-26T10:00:01.000Z","node":1,"new":{"id":1,"state":"normal","role":"participant","group":"1795430400100.3","coordinator":3,"members":[1,2,3],"expect":3,"primary":true}}
{"time":"2026-11-26T10:00:01.000Z","node":2,"new":{"id":2,"state":"normal","role":"participant","group":"1795430400100.3","coordinator":3,"members":[1,2,3],"expect":3,"primary":true}}
{"time":"2026-11-26T10:00:01.000Z","node":3,"new":{"id":3,"state":"normal","role":"coordinator","group":"1795430400100.3","coordinator":3,"members":[1,2,3],"expect":3,"primary":true,"leader":true}}
{"time":"2026-11-26T10:00:02.000Z","node":3,"new":{"id":3,"state":"election","role":"coordinator","group":"1795430402000.3","coordinator":3,"members":[],"expect":3,"primary":true,"leader":true}}
{"time":"2026-11-26T10:00:03.000Z","node":1,"new":{"id":1,"state":"normal","role":"participant","group":"1795430402000.3","coordinator":3,"members":[1,2,3],"expect":3,"primary":true}}
`

// TestAppMergeOnePrimary: a group whose coordinator's own answer is in
// another group is not primary, so one leader shows one primary badge.
func TestAppMergeOnePrimary(t *testing.T) {
	at := func(s string) int64 {
		tm, _ := time.Parse(time.RFC3339Nano, "2026-11-26T10:00:0"+s+"Z")
		return tm.UnixMilli()
	}
	var got map[string]pageView
	runApp(t, nil, `g.loadHistory(`+jsString(mergeRecording)+`, 'merge');
const out = {};
for (const [k, t] of Object.entries(`+mustJSON(map[string]int64{"before": at("1.5"), "merging": at("2.5"), "moved": at("3.5")})+`)) { g.seek(t); out[k] = g.view(); }
return out;`, &got)
	for _, tc := range []struct{ at, want string }{
		{"before", "1795430400100.3"}, {"merging", "1795430402000.3"}, {"moved", "1795430402000.3"},
	} {
		var prim []string
		for _, g := range got[tc.at].Groups {
			if g.Primary {
				prim = append(prim, g.Group)
			}
		}
		if !slices.Equal(prim, []string{tc.want}) {
			t.Errorf("%s: primary groups %v, want only %s (groups %+v)", tc.at, prim, tc.want, got[tc.at].Groups)
		}
	}
}

// TestAppReplayMatchesTimeline replays the timeline package's recording in
// the page and compares every node's group with the model the SVG
// timeline draws (timeline.Build), at instants inside its segments.
func TestAppReplayMatchesTimeline(t *testing.T) {
	text, evs, marks := readRecording(t, "../timeline/testdata/small.ndjson", "../timeline/testdata/small-faults.ndjson")
	m := timeline.Build(evs, marks, time.Time{}, time.Time{})
	var instants []int64
	for _, n := range m.Nodes {
		for _, s := range m.Rows[n] {
			if mid := s.From.Add(s.To.Sub(s.From) / 2); s.To.Sub(s.From) > 100*time.Millisecond {
				instants = append(instants, mid.UnixMilli())
			}
		}
	}
	slices.Sort(instants)
	instants = slices.Compact(instants)
	var got []map[string]string
	runApp(t, nil, `g.loadHistory(`+jsString(text)+`, 'small');
return `+mustJSON(instants)+`.map((t) => { g.seek(t); return Object.fromEntries(g.view().nodes.map((n) => [n.id, n.group])); });`, &got)
	for i, at := range instants {
		tm := time.UnixMilli(at)
		for _, n := range m.Nodes {
			want := ""
			if s, ok := m.At(n, tm); ok && !s.Down && !s.Group.IsZero() {
				want = s.Group.String()
			}
			if g := got[i][strconv.Itoa(int(n))]; g != want {
				t.Errorf("at %s node %d: the page shows group %q, the timeline %q", tm.UTC().Format("15:04:05.000"), n, g, want)
			}
		}
	}
	t.Logf("replay: %d instants x %d nodes agree with timeline.Build", len(instants), len(m.Nodes))
}

// readRecording reads an events file and a faults file: their text, one
// after the other (what the page is given), and what package timeline
// reads of them.
func readRecording(t *testing.T, events, faults string) (string, []schema.Event, []schema.Mark) {
	t.Helper()
	ev, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	fa, err := os.ReadFile(faults)
	if err != nil {
		t.Fatal(err)
	}
	evs, _, err := timeline.ReadEvents(bytes.NewReader(ev))
	if err != nil {
		t.Fatal(err)
	}
	ms, _, err := timeline.ReadFaults(bytes.NewReader(fa))
	if err != nil {
		t.Fatal(err)
	}
	return string(ev) + string(fa), evs, ms
}

func jsString(s string) string { return mustJSON(s) }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
