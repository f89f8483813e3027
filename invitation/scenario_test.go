package invitation

import (
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

func boot(t *testing.T, n int) *net {
	t.Helper()
	nt := newNet(t, DefaultTiming())
	for id := wire.NodeID(1); id <= wire.NodeID(n); id++ {
		nt.add(id, 100)
	}
	nt.mustConverge(DefaultTiming().HealBound())
	return nt
}

func sides(a ...wire.NodeID) map[wire.NodeID]bool {
	m := map[wire.NodeID]bool{}
	for _, id := range a {
		m[id] = true
	}
	return m
}

func TestCrossingInvitations(t *testing.T) {
	// Two coordinators that invite each other at once (possible with stale
	// rank information) both ignore the other's invitation, as the paper
	// prescribes for nodes in Election, and the next Check still merges them.
	nt := newNet(t, DefaultTiming())
	a, b := nt.add(1, 100), nt.add(2, 100)
	nt.drop = func(from, to wire.NodeID, m wire.Message) bool { return true }
	nt.run(10 * time.Millisecond)
	nt.drop = nil
	a.startMerge(nt.now, []wire.NodeID{2})
	b.startMerge(nt.now, []wire.NodeID{1})
	nt.flush(a)
	nt.flush(b)
	nt.run(5 * time.Millisecond)
	if a.state != wire.StateElection || b.state != wire.StateElection {
		t.Fatalf("both should be merging: %s / %s", a.Status(), b.Status())
	}
	nt.run(300 * time.Millisecond)
	if a.Status().Role() != Coordinator || b.Status().Role() != Coordinator {
		t.Fatalf("each should have ignored the other's invitation: %s / %s", a.Status(), b.Status())
	}
	nt.mustConverge(DefaultTiming().HealBound())
}

func TestLostReadyAndLostAccept(t *testing.T) {
	nt := newNet(t, DefaultTiming())
	lostReady, lostAccept := 0, 0
	nt.drop = func(from, to wire.NodeID, m wire.Message) bool {
		switch m.Body.(type) {
		case wire.Ready:
			if to == 1 && lostReady < 2 {
				lostReady++
				return true
			}
		case wire.Accept:
			if from == 2 && lostAccept < 1 {
				lostAccept++
				return true
			}
		}
		return false
	}
	for id := wire.NodeID(1); id <= 3; id++ {
		nt.add(id, 100)
	}
	nt.mustConverge(DefaultTiming().HealBound())
	if lostReady == 0 || lostAccept == 0 {
		t.Fatalf("the scenario dropped %d Ready and %d Accept; want both", lostReady, lostAccept)
	}
}

func TestCoordinatorCrashDuringMerge(t *testing.T) {
	nt := newNet(t, DefaultTiming())
	for id := wire.NodeID(1); id <= 4; id++ {
		nt.add(id, 100)
	}
	// Run until the highest node is in its accept window, then crash it.
	for i := 0; i < 1000 && nt.nodes[4].merge == nil; i++ {
		nt.run(time.Millisecond)
	}
	if nt.nodes[4].merge == nil {
		t.Fatal("node 4 never merged")
	}
	nt.crash(4)
	nt.mustConverge(DefaultTiming().HealBound())
	if c := nt.nodes[1].Status().Coordinator(); c != 3 {
		t.Fatalf("coordinator %d, want 3", c)
	}
}

func TestParticipantOfRestartedCoordinator(t *testing.T) {
	nt := boot(t, 4)
	old := nt.nodes[4].Status().Group
	nt.crash(4)
	nt.add(4, 100) // restarts at once, into a new singleton group
	nt.mustConverge(DefaultTiming().HealBound())
	s := nt.nodes[1].Status()
	if s.Coordinator() != 4 || !old.Less(s.Group) {
		t.Fatalf("after restart: %s, want a group of 4 newer than %s", s, old)
	}
}

func TestRestartWithHigherCounter(t *testing.T) {
	nt := boot(t, 3)
	nt.crash(1)
	nt.durable[1] = 1000
	nt.add(1, 100)
	nt.mustConverge(DefaultTiming().HealBound())
	if s := nt.nodes[3].Status(); s.Group.Seq <= 1001 {
		t.Fatalf("group %s: numbers must grow past every seen sequence (1001)", s.Group)
	}
}

func TestFailoverWithinBound(t *testing.T) {
	tm := DefaultTiming()
	nt := boot(t, 5)
	nt.run(137 * time.Millisecond)
	nt.crash(5)
	start := nt.now
	for nt.now.Sub(start) <= tm.FailoverBound() {
		if nt.converged() == nil {
			t.Logf("failover took %v (bound %v)", nt.now.Sub(start), tm.FailoverBound())
			return
		}
		nt.run(5 * time.Millisecond)
	}
	t.Fatalf("no failover within %v: %v\n%s", tm.FailoverBound(), nt.converged(), nt.dump())
}

func TestSplitAndHeal(t *testing.T) {
	tm := DefaultTiming()
	nt := boot(t, 5)
	left := sides(1, 2)
	nt.drop = func(from, to wire.NodeID, m wire.Message) bool { return left[from] != left[to] }
	nt.run(5 * time.Second)
	a, b := nt.nodes[1].Status(), nt.nodes[5].Status()
	if a.Group == b.Group || a.State != wire.StateNormal || b.State != wire.StateNormal {
		t.Fatalf("during the split: %s / %s, want two Normal groups", a, b)
	}
	if a.Coordinator() != 2 {
		t.Fatalf("left side coordinated by %d, want 2", a.Coordinator())
	}
	nt.drop = nil
	start := nt.now
	nt.mustConverge(tm.HealBound())
	t.Logf("healed in %v (bound %v)", nt.now.Sub(start), tm.HealBound())
}

func TestRingFailover(t *testing.T) {
	tm := DefaultTiming()
	for _, crashAt := range []time.Duration{0, 37 * time.Millisecond, 211 * time.Millisecond} {
		nt := newNet(t, tm)
		nt.alg = ElectionRing
		for id := wire.NodeID(1); id <= 6; id++ {
			nt.add(id, 100)
		}
		nt.mustConverge(tm.HealBound())
		nt.run(crashAt)
		nt.crash(6)
		start := nt.now
		bound := tm.FailoverBoundRing(5)
		for nt.converged() != nil {
			if nt.now.Sub(start) > bound {
				t.Fatalf("ring: no failover within %v: %v\n%s", bound, nt.converged(), nt.dump())
			}
			nt.run(5 * time.Millisecond)
		}
		t.Logf("ring failover took %v (bound %v)", nt.now.Sub(start), bound)
	}
}

func TestRingMessagesRouted(t *testing.T) {
	// A ring-mode participant that still hears its coordinator acks a
	// RingElection and probes, like bully's Answer; bully-mode nodes
	// ignore ring messages.
	n := participant(t, 4, g(5, 7), 2, 4, 7)
	n.alg = ElectionRing
	n.Step(at(10), from(2, g(5, 7), wire.StateElection, wire.RingElection{Group: g(5, 7), Round: 1, Candidate: wire.Member{ID: 2, Priority: 100}}))
	if got := sends(n.Output()); len(got) != 2 || got[0] != "2:RingAck" || got[1] != "7:AreYouThere" {
		t.Fatalf("ring participant sent %v, want [2:RingAck 7:AreYouThere]", got)
	}
	b := participant(t, 4, g(5, 7), 2, 4, 7)
	b.Step(at(10), from(2, g(5, 7), wire.StateElection, wire.RingElection{Group: g(5, 7), Round: 1, Candidate: wire.Member{ID: 2, Priority: 100}}))
	if got := sends(b.Output()); len(got) != 0 {
		t.Fatalf("bully participant answered a ring message: %v", got)
	}
}

func TestParseElection(t *testing.T) {
	for in, want := range map[string]Election{"": ElectionBully, "bully": ElectionBully, "ring": ElectionRing} {
		if got, err := ParseElection(in); err != nil || got != want {
			t.Errorf("ParseElection(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseElection("raft"); err == nil {
		t.Error("ParseElection(raft) accepted")
	}
	if _, err := New(Config{ID: 1, Timing: DefaultTiming(), Election: "raft"}, epoch); err == nil {
		t.Error("New accepted an unknown election")
	}
}
