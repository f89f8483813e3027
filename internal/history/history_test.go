package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// ev builds node's event at ms: state s in group seq.coord with members.
func ev(ms int, node, inc uint64, s wire.State, seq, coord uint64, members ...wire.NodeID) group.Event {
	role := invitation.Participant
	if coord == node {
		role = invitation.Coordinator
	}
	st := group.Status{ID: wire.NodeID(node), Priority: 100, State: s, Role: role,
		Group: wire.GroupNumber{Seq: seq, ID: wire.NodeID(coord)}, Coordinator: wire.NodeID(coord),
		Members: members, Version: 1, Counter: seq, Incarnation: inc, Time: at(ms)}
	if coord != node {
		st.Counter = 1
	}
	return group.Event{Time: at(ms), Node: wire.NodeID(node), Reason: "merge", New: st}
}

type fault struct {
	ms         int
	kind, spec string
}

func load(t *testing.T, events []group.Event, faults []fault) Result {
	t.Helper()
	var eb, fb bytes.Buffer
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		eb.Write(append(b, '\n'))
	}
	eb.WriteString("\nnot json\n")
	for _, f := range faults {
		fmt.Fprintf(&fb, `{"time":%q,"kind":%q,"spec":%q}`+"\n", at(f.ms).Format(time.RFC3339Nano), f.kind, f.spec)
	}
	h := New()
	n, err := h.ReadEvents(&eb)
	if err != nil || n != len(events) {
		t.Fatalf("ReadEvents: %d, %v", n, err)
	}
	if _, err := h.ReadFaults(&fb); err != nil {
		t.Fatal(err)
	}
	if bad := h.Bad(); len(bad) != 1 || !strings.Contains(bad[0], "events line") {
		t.Fatalf("bad lines: %v", bad)
	}
	return h.Replay()
}

const N, E, R = wire.StateNormal, wire.StateElection, wire.StateReorganization

// formed: three singletons merge into 2.3.
func formed() []group.Event {
	return []group.Event{
		ev(0, 1, 1, N, 1, 1, 1), ev(0, 2, 1, N, 1, 2, 2), ev(0, 3, 1, N, 1, 3, 3),
		ev(100, 3, 1, E, 2, 3, 3),
		ev(110, 1, 1, R, 2, 3), ev(110, 2, 1, R, 2, 3),
		ev(200, 3, 1, N, 2, 3, 1, 2, 3), ev(210, 1, 1, N, 2, 3, 1, 2, 3), ev(220, 2, 1, N, 2, 3, 1, 2, 3),
	}
}

func TestCleanHistory(t *testing.T) {
	res := load(t, formed(), []fault{{50, "heal", "all"}, {500, "quiet", "round 1"}})
	if !res.OK() || res.Events != 9 || res.Nodes != 3 || res.Created != 4 {
		t.Fatalf("%+v", res)
	}
	if c := res.Checks[0]; c.Label != "round 1" || len(c.Violations) != 0 || c.ConvergedAfter != 170*time.Millisecond {
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
	snap.Reason = group.ReasonSnapshot
	evs = append(evs, snap)
	res := load(t, evs, []fault{{900, "kill", "3"}, {950, "heal", "all"}, {1500, "quiet", "after kill"}})
	if !res.OK() {
		t.Fatalf("violations: %v %+v", res.Safety, res.Checks)
	}
	if res.Crashes != 1 || res.Restarts != 1 || res.Stale != 1 || res.Restated != 1 || res.Checks[0].ConvergedAfter != 160*time.Millisecond {
		t.Fatalf("%+v", res)
	}
}

// TestViolations: a number created twice across a restart (S1), two
// Normal coordinators of one number... and a failed check point.
func TestViolations(t *testing.T) {
	evs := append(formed(),
		ev(1000, 3, 2, N, 2, 3, 3), // restarted into a number it used before
		ev(1100, 1, 1, N, 7, 1, 1), // node 1 alone
	)
	res := load(t, evs, []fault{{1200, "quiet", "end"}})
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
	res = load(t, []group.Event{bad}, nil)
	if len(res.Safety) == 0 || res.Safety[0].Invariant != "S1" {
		t.Errorf("own number above the counter: %v", res.Safety)
	}
}
