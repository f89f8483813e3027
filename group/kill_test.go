package group

import (
	"context"
	"testing"
	"time"
)

// TestKill: Kill stops an agent as kill -9 stops the daemon. The survivor
// takes over as the coordinator's failure detector says, memberlist
// declares the killed node dead (never "left": no Leave was sent) within
// the bounds memberlistDeadAfter gives for the configuration the agent
// built, and the killed agent ends as Run does: its leadership callback
// stops, its channels close, Run and Err return nil.
func TestKill(t *testing.T) {
	t.Parallel()
	c := newCluster(t, udpLoopback)
	c.start(1, "")
	stopped := make(chan struct{}, 1)
	c.tweak = func(cfg *Config) {
		cfg.Leader.OnStoppedLeading = func() { stopped <- struct{}{} }
	}
	n2 := c.start(2, "")
	c.tweak = nil
	c.waitConverged(convergeBound(c))
	c.waitGossip(5 * time.Second)
	if !n2.a.Status().IsLeader() {
		t.Fatalf("node 2 does not lead: %v", n2.a.Status())
	}
	watch, _ := n2.a.WatchLeader()
	<-watch // the current value

	n1 := c.node(1)
	killed := time.Now()
	n2.a.Kill()
	select {
	case err := <-n2.runErr:
		if err != nil {
			t.Errorf("Run after Kill = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Kill")
	}
	if err := n2.a.Err(); err != nil {
		t.Errorf("Err after Kill = %v", err)
	}
	select {
	case <-stopped:
	default:
		t.Error("OnStoppedLeading was not called when the leader was killed")
	}
	for l := range watch {
		t.Errorf("WatchLeader sent %+v after Kill; want the channel closed", l)
	}
	n2.a.Kill() // a second Kill does nothing
	c.mu.Lock()
	delete(c.nodes, 2)
	c.mu.Unlock()

	mc := memberlistConfig(c.timing)
	lo := memberlistDeadAfter(mc, 2) - 50*time.Millisecond
	// One other node to probe: the first missed probe comes within a
	// ProbeInterval. Later is a figure (a loaded machine), failing only
	// past the outer limit.
	bound := memberlistDeadAfter(mc, 2) + mc.ProbeInterval
	hi := outerLimit(bound)
	leads := time.Duration(0)
	for {
		took := time.Since(killed)
		if leads == 0 && n1.a.Status().IsLeader() {
			leads = took
		}
		gossip := ""
		for _, m := range n1.a.Members() {
			if m.ID == 2 {
				gossip = m.Gossip
			}
		}
		if gossip == GossipLeft {
			t.Fatalf("node 1 sees node 2 as left %v after Kill: a Leave was sent", took)
		}
		if gossip == GossipDead {
			for _, m := range n1.a.Members() {
				if m.ID == 2 && m.Leader {
					t.Errorf("Members lists the killed leader, dead, as leader: %+v", m)
				}
			}
			t.Logf("node 1 led %v after the kill (design bound T_failover %v); memberlist declared node 2 dead after %v (design bounds %v..%v, outer limit %v)",
				leads, c.timing.FailoverBound(), took, lo, bound, hi)
			if took < lo || took > hi {
				t.Errorf("memberlist declared the killed node dead after %v, want %v..%v (the upper one an outer limit)", took, lo, hi)
			}
			break
		}
		if took > 2*hi {
			t.Fatalf("node 1 still sees node 2 as %q %v after Kill", gossip, took)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if leads == 0 || leads > outerLimit(c.timing.FailoverBound()) {
		t.Errorf("node 1 led %v after the kill, want within the outer limit %v (T_failover %v)", leads, outerLimit(c.timing.FailoverBound()), c.timing.FailoverBound())
	}
}

// TestKillBeforeRun: a Kill before Run makes Run stop as it starts.
func TestKillBeforeRun(t *testing.T) {
	t.Parallel()
	c := newCluster(t, memMulticast)
	a, err := New(c.config(1, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Err(); err != nil {
		t.Errorf("Err before Run = %v", err)
	}
	a.Kill()
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after Kill = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run after Kill did not return")
	}
}
