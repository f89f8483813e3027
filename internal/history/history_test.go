package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// The states, and the test's clock: events at t0 + ms.
const N, E, R = wire.StateNormal, wire.StateElection, wire.StateReorganization

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// ev builds node's event at ms: state s in group seq.coord with members.
func ev(ms int, node, inc uint64, s wire.State, seq, coord uint64, members ...wire.NodeID) schema.Event {
	role := invitation.Participant
	if coord == node {
		role = invitation.Coordinator
	}
	st := schema.Status{ID: wire.NodeID(node), Priority: 100, State: s, Role: role,
		Group: wire.GroupNumber{Seq: seq, ID: wire.NodeID(coord)}, Coordinator: wire.NodeID(coord),
		Members: members, Version: 1, Counter: seq, Incarnation: inc, Time: at(ms)}
	if coord != node {
		st.Counter = 1
	}
	return schema.Event{Time: at(ms), Node: wire.NodeID(node), Reason: "merge", New: st}
}

type mark struct {
	ms         int
	kind, spec string
}

// load writes events and marks as NDJSON (events and marks in two
// streams, as scripts/netem kept them, plus one junk line), reads them back
// and replays them.
func load(t *testing.T, events []schema.Event, marks []mark) Result {
	t.Helper()
	h := New()
	var eb, fb bytes.Buffer
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		eb.Write(append(b, '\n'))
	}
	eb.WriteString("\nnot json\n")
	for _, m := range marks {
		fmt.Fprintf(&fb, `{"time":%q,"kind":%q,"spec":%q}`+"\n", at(m.ms).Format(time.RFC3339Nano), m.kind, m.spec)
	}
	n, err := h.Read(&eb)
	if err != nil || n != len(events) {
		t.Fatalf("Read events: %d, %v", n, err)
	}
	if n, err := h.Read(&fb); err != nil || n != len(marks) {
		t.Fatalf("Read marks: %d, %v (%v)", n, err, h.Bad())
	}
	if bad := h.Bad(); len(bad) != 1 || !strings.Contains(bad[0], "line") {
		t.Fatalf("bad lines: %v", bad)
	}
	return h.Replay()
}

// formed: three singletons merge into 2.3.
func formed() []schema.Event {
	return []schema.Event{
		ev(0, 1, 1, N, 1, 1, 1), ev(0, 2, 1, N, 1, 2, 2), ev(0, 3, 1, N, 1, 3, 3),
		ev(100, 3, 1, E, 2, 3, 3),
		ev(110, 1, 1, R, 2, 3), ev(110, 2, 1, R, 2, 3),
		ev(200, 3, 1, N, 2, 3, 1, 2, 3), ev(210, 1, 1, N, 2, 3, 1, 2, 3), ev(220, 2, 1, N, 2, 3, 1, 2, 3),
	}
}

func TestCleanHistory(t *testing.T) {
	res := load(t, formed(), []mark{{50, "heal", "all"}, {500, "quiet", "round 1"}})
	if !res.OK() || res.Events != 9 || res.Nodes != 3 || res.Created != 4 {
		t.Fatalf("%+v", res)
	}
	if c := res.Checks[0]; c.Label != "round 1" || c.Kind != "L1" || len(c.Violations) != 0 || c.ConvergedAfter != 170*time.Millisecond {
		t.Fatalf("check %+v, want converged 170ms after the heal", c)
	}
}

// TestKillAndRestart: node 3 is killed; at the check point 1 and 2 are
// converged under 2 (3 is not live). Then 3 comes back with a new
// incarnation in a new singleton, and a late event of its old incarnation
// is skipped.
func TestKillAndRestart(t *testing.T) {
	evs := append(formed(),
		ev(1000, 2, 1, E, 3, 2, 2),
		ev(1010, 1, 1, R, 3, 2),
		ev(1100, 2, 1, N, 3, 2, 1, 2), ev(1110, 1, 1, N, 3, 2, 1, 2),
		ev(2000, 3, 2, N, 4, 3, 3),       // restarted
		ev(2001, 3, 1, N, 2, 3, 1, 2, 3), // late line of the dead process
	)
	// A recorder reconnecting gets a snapshot that is older than an
	// event stamped just before it: skipped.
	snap := ev(1111, 1, 1, N, 2, 3, 1, 2, 3)
	snap.Reason = schema.ReasonSnapshot
	evs = append(evs, snap)
	res := load(t, evs, []mark{{900, "kill", "3"}, {950, "heal", "all"}, {1500, "quiet", "after kill"}})
	if !res.OK() {
		t.Fatalf("violations: %v %+v", res.Safety, res.Checks)
	}
	if res.Crashes != 1 || res.Restarts != 1 || res.Stale != 1 || res.Restated != 1 || res.Checks[0].ConvergedAfter != 160*time.Millisecond {
		t.Fatalf("%+v", res)
	}
}

// TestViolations: a number created twice across a restart (S1), a failed
// check point, and a number above the durable counter.
func TestViolations(t *testing.T) {
	evs := append(formed(),
		ev(1000, 3, 2, N, 2, 3, 3), // restarted into a number it used before
		ev(1100, 1, 1, N, 7, 1, 1), // node 1 alone
	)
	res := load(t, evs, []mark{{1200, "quiet", "end"}})
	if res.OK() {
		t.Fatal("a bad history passed")
	}
	var s1 bool
	for _, v := range res.Safety {
		if v.Invariant == "S1" && strings.Contains(v.Detail, "created twice") {
			s1 = true
		}
	}
	if !s1 {
		t.Errorf("no S1 duplicate: %v", res.Safety)
	}
	if len(res.Checks) != 1 || len(res.Checks[0].Violations) == 0 || res.Checks[0].ConvergedAfter != -1 {
		t.Errorf("check: %+v", res.Checks)
	}

	// A node reporting its own number above its durable counter.
	bad := ev(0, 5, 1, N, 9, 5, 5)
	bad.New.Counter = 3
	res = load(t, []schema.Event{bad}, nil)
	if len(res.Safety) == 0 || res.Safety[0].Invariant != "S1" {
		t.Errorf("own number above the counter: %v", res.Safety)
	}
}

// TestCheckPoints: a partition's side checks, a failover check, and the
// same checks failing; marks added in-process (as the lab does), with
// their IDs.
func TestCheckPoints(t *testing.T) {
	h := New()
	for _, e := range formed() {
		if err := h.AddEvent(e); err != nil {
			t.Fatal(err)
		}
	}
	// 3 is killed; 1 and 2 fail over into 3.2.
	for _, e := range []schema.Event{ev(1000, 2, 1, E, 3, 2, 2), ev(1010, 1, 1, R, 3, 2), ev(1100, 2, 1, N, 3, 2, 1, 2), ev(1110, 1, 1, N, 3, 2, 1, 2)} {
		h.AddEvent(e)
	}
	add := func(ms int, kind, spec string) int {
		t.Helper()
		id, err := h.AddMark(schema.Mark{Time: at(ms), Kind: kind, Spec: spec, Label: kind + " " + spec})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	add(900, schema.KindKill, "3")
	early := add(1050, schema.KindCheck, "L2 1,2")
	l2 := add(1200, schema.KindCheck, "L2 1,2")
	side := add(1200, schema.KindCheck, "L1 1-2")
	all := add(1200, schema.KindCheck, "L1")
	withDead := add(1200, schema.KindCheck, "L1 1,3")
	res := h.Replay()
	want := map[int]bool{early: false, l2: true, side: true, all: true, withDead: false}
	for id, ok := range want {
		c, found := res.Check(id)
		if !found || (len(c.Violations) == 0) != ok {
			t.Errorf("check %d (%s): found %v, violations %v; want held=%v", id, c.Label, found, c.Violations, ok)
		}
	}
	if c, _ := res.Check(l2); c.Kind != "L2" || !slices.Equal(c.Nodes, []wire.NodeID{1, 2}) {
		t.Errorf("L2 check: %+v", c)
	}
	if _, err := h.AddMark(schema.Mark{Time: at(1), Kind: schema.KindCheck, Spec: "L2"}); err == nil {
		t.Error("an L2 check without survivors was accepted")
	}
	if _, err := h.AddMark(schema.Mark{Time: at(1), Kind: schema.KindKill, Spec: "x"}); err == nil {
		t.Error("a kill of no node was accepted")
	}

	// FirstTime: when 1 and 2 had failed over, and when the start-up
	// group formed.
	failedOver := func(sts []invitation.Status) bool { return invariant.FailedOver(time.Time{}, sts) == nil }
	if got, ok := h.FirstTime(at(900), []wire.NodeID{1, 2}, failedOver); !ok || !got.Equal(at(1110)) {
		t.Errorf("failover first seen at %v, %v; want %v", got, ok, at(1110))
	}
	if got, ok := h.FirstTime(at(0), []wire.NodeID{1, 2, 3}, invariant.IsConverged); !ok || !got.Equal(at(220)) {
		t.Errorf("converged first seen at %v, %v; want %v", got, ok, at(220))
	}
	// FirstEvent: the survivors' first reaction to the kill, and nothing
	// after the last event.
	if ev, ok := h.FirstEvent(at(900), []wire.NodeID{1, 2}); !ok || ev.Node != 2 || !ev.Time.Equal(at(1000)) {
		t.Errorf("first reaction %v %v; want node 2's at %v", ev, ok, at(1000))
	}
	if ev, ok := h.FirstEvent(at(1001), []wire.NodeID{1}); !ok || !ev.Time.Equal(at(1010)) {
		t.Errorf("node 1's first reaction %v %v", ev, ok)
	}
	if _, ok := h.FirstEvent(at(1111), nil); ok {
		t.Error("an event after the last one")
	}
	snaps := New()
	snap := ev(5, 1, 1, N, 1, 1, 1)
	snap.Reason = schema.ReasonSnapshot
	snaps.AddEvent(snap)
	snaps.AddEvent(ev(6, 1, 1, N, 1, 1, 1))
	if ev, ok := snaps.FirstEvent(at(0), nil); !ok || !ev.Time.Equal(at(6)) {
		t.Errorf("a snapshot was taken for a reaction: %v %v", ev, ok)
	}
	if g := h.Groups(1, at(0), at(2000)); !slices.Equal(g, []wire.GroupNumber{{Seq: 1, ID: 1}, {Seq: 2, ID: 3}, {Seq: 3, ID: 2}}) {
		t.Errorf("groups of node 1: %v", g)
	}
}

// TestWipedNodeStartsAgain: a node whose data dir was wiped comes back at
// incarnation 1; the "start" mark makes its events count again, and the
// "stop" mark before it hides what it said while shutting down.
func TestWipedNodeStartsAgain(t *testing.T) {
	h := New()
	for _, e := range formed() {
		h.AddEvent(e)
	}
	h.AddMark(schema.Mark{Time: at(300), Kind: schema.KindStop, Spec: "3"})
	h.AddEvent(ev(310, 3, 1, N, 9, 3, 3)) // shutting down: not checked (it would be S1)
	h.AddMark(schema.Mark{Time: at(400), Kind: schema.KindWipe, Spec: "3"})
	h.AddMark(schema.Mark{Time: at(500), Kind: schema.KindStart, Spec: "3"})
	h.AddEvent(ev(600, 3, 1, N, 5, 3, 3))
	res := h.Replay()
	if !res.OK() || res.Stale != 1 || res.Restarts != 1 || res.Crashes != 1 {
		t.Fatalf("%+v", res)
	}
	if v := h.Events(at(550), time.Time{}); len(v) != 1 || v[0].New.Group.Seq != 5 {
		t.Errorf("events after the start: %v", v)
	}
	// An end mark ends the replay: the shutdown after it is not checked.
	h.AddMark(schema.Mark{Time: at(700), Kind: schema.KindEnd, Spec: "teardown"})
	h.AddEvent(ev(800, 3, 1, N, 2, 3, 3)) // would be S1 (2.3 again)
	if res := h.Replay(); !res.OK() {
		t.Errorf("an event after the end was checked: %v", res.Safety)
	}
}

// TestMemberPriority: a member's priority is its own report, and the
// highest-ranked node is found by (priority, id), not by ID.
func TestMemberPriority(t *testing.T) {
	a := ev(0, 1, 1, N, 4, 1, 1, 2)
	b := ev(0, 2, 1, N, 4, 1, 1, 2)
	a.New.Priority = 200
	sts := Views([]schema.Status{a.New, b.New})
	if sts[0].Members[0].Priority != 200 || sts[1].Members[0].Priority != 200 || sts[0].Members[1].Priority != 100 {
		t.Fatalf("member priorities: %v %v", sts[0].Members, sts[1].Members)
	}
	if !invariant.IsConverged(sts) || invariant.Highest(sts) != 1 {
		t.Errorf("node 1 (priority 200) coordinating 1 and 2 is converged: %v", invariant.Converged(time.Time{}, sts))
	}
	// A view that carries its members' priorities is taken at its word,
	// even where a member's own report is missing or differs.
	c := ev(0, 2, 1, N, 4, 1, 1, 2)
	c.New.MemberPriorities = []uint8{150, 7}
	if got := ToStatus(c.New, map[wire.NodeID]uint8{1: 200}).Members; got[0].Priority != 150 || got[1].Priority != 7 {
		t.Errorf("member_priorities ignored: %v", got)
	}
}

func TestParseFormatIDs(t *testing.T) {
	for spec, want := range map[string][]wire.NodeID{"3": {3}, "1,2,5": {1, 2, 5}, "3-5": {3, 4, 5}, "1, 4-6": {1, 4, 5, 6}} {
		got, err := schema.ParseIDs(spec)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("schema.ParseIDs(%q) = %v, %v", spec, got, err)
		}
	}
	for _, bad := range []string{"", "0", "a", "5-3", "1,1", "1-2,2", "-3"} {
		if _, err := schema.ParseIDs(bad); err == nil {
			t.Errorf("schema.ParseIDs(%q) accepted", bad)
		}
	}
	if s := schema.FormatIDs([]wire.NodeID{1, 2, 3, 5, 7, 8}); s != "1-3,5,7,8" {
		t.Errorf("FormatIDs = %q", s)
	}
}

// TestConcurrentUse: recorders add while the lab replays (run with -race).
func TestConcurrentUse(t *testing.T) {
	h := New()
	var wg sync.WaitGroup
	for n := uint64(1); n <= 4; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				b, _ := json.Marshal(ev(i, n, 1, N, 1, n, wire.NodeID(n)))
				if err := h.AddLine(wire.NodeID(n), b); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for range 10 {
		h.Replay()
	}
	wg.Wait()
	if err := h.AddLine(2, []byte(`{"time":"2026-11-21T10:00:00Z","node":3,"new":{"id":3,"state":"normal"}}`)); err == nil {
		t.Error("node 2's stream carried node 3's event and it was accepted")
	}
	if res := h.Replay(); res.Events != 200 || res.Created != 4 || len(h.Bad()) != 1 {
		t.Errorf("%+v, bad %v", res, h.Bad())
	}
}

// TestBackdatedLeaderStop: a daemon stamps a leader-stop after a lapse
// with the lease's end, a moment before the events it sent just before
// it, while the view it carries is its current one. Sorted by time, that
// view would come before the older one it followed: node 5 would go back
// to 10.5 and create 20.5 twice. The replay takes the view from the
// node's events at their own times and only the leadership's end from the
// leader-stop.
func TestBackdatedLeaderStop(t *testing.T) {
	stop := ev(20, 5, 1, E, 20, 5)
	stop.Reason = schema.ReasonLeaderStop
	res := load(t, []schema.Event{
		ev(0, 5, 1, N, 10, 5, 5),
		ev(25, 5, 1, E, 10, 5, 5), // a merge begins
		ev(30, 5, 1, E, 20, 5),    // in a new number
		stop,                      // sent after it, stamped with the lease's end
		ev(40, 5, 1, N, 20, 5, 5),
	}, nil)
	if len(res.Safety) != 0 {
		t.Errorf("a backdated leader-stop gave violations: %v", res.Safety)
	}
	if res.Created != 2 || res.Events != 5 {
		t.Errorf("created %d numbers in %d events, want 2 in 5", res.Created, res.Events)
	}
}
