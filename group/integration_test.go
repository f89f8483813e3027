package group

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// convergeBound is how long 5 fresh agents may take to form one group:
// T_heal (invitation.Timing.HealBound) plus memberlist's join and the
// start-up of 5 agents under the race detector.
func convergeBound(c *cluster) time.Duration {
	return c.timing.HealBound() + 5*time.Second
}

// failoverSlack is the margin over T_failover (Timing.FailoverBound) the
// failover test allows: scheduling of 5 agents under the race detector on
// a small machine, and the memberlist leave broadcast.
const failoverSlack = time.Second

func TestIntegration(t *testing.T) {
	for _, mode := range []struct {
		name      string
		multicast bool
	}{{"multicast", true}, {"seeds", false}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Run("ConvergeFailoverRestart", func(t *testing.T) { testConvergeFailoverRestart(t, mode.multicast) })
			t.Run("CrashedDataDir", func(t *testing.T) { testCrashedDataDir(t, mode.multicast) })
		})
	}
}

// testConvergeFailoverRestart: 5 agents converge to one group coordinated
// by the highest rank; stopping the coordinator leaves the survivors in
// one new group within T_failover plus slack; a restarted agent (same
// data dir) rejoins.
func testConvergeFailoverRestart(t *testing.T, multicast bool) {
	c := newCluster(t, multicast)
	for id := wire.NodeID(1); id <= 5; id++ {
		c.start(id, "")
	}
	g1, _ := c.waitConverged(convergeBound(c))
	if g1.ID != 5 {
		t.Fatalf("group %s: want coordinator 5", g1)
	}
	t.Logf("converged in group %s", g1)
	// Memberlist lists everyone alive everywhere: in multicast mode no
	// node has seeds, so only beacon-prompted joins can have done it.
	c.waitGossip(10 * time.Second)

	// Failover: stop the coordinator.
	stopAt := time.Now()
	c.stop(5)
	bound := c.timing.FailoverBound() + failoverSlack
	g2, at := c.waitConverged(bound + 5*time.Second)
	took := at.Sub(stopAt)
	t.Logf("failover to %s took %v (T_failover %v, asserted bound %v)", g2, took, c.timing.FailoverBound(), bound)
	if took > bound {
		t.Errorf("failover took %v, over T_failover %v + slack %v", took, c.timing.FailoverBound(), failoverSlack)
	}
	if g2.ID != 4 || !g1.Less(g2) {
		t.Errorf("after failover: group %s, want a group of node 4 newer than %s", g2, g1)
	}

	// Restart a participant on its data dir: it rejoins.
	n2 := c.live()[1]
	dir, inc := n2.dir, n2.a.Status().Incarnation
	c.stop(n2.id)
	seen := n2.maxSeenSeq()
	c.waitConverged(convergeBound(c))
	r := c.start(n2.id, dir)
	if got := r.a.Status().Incarnation; got <= inc {
		t.Errorf("restarted incarnation %d, want more than %d", got, inc)
	}
	g3, _ := c.waitConverged(convergeBound(c))
	t.Logf("restarted node %d rejoined group %s", n2.id, g3)
	// Its first group (a singleton, at start) is newer than any it was
	// in before: the final save recorded the last one.
	if created := r.createdSeqs(); len(created) == 0 || created[0] <= seen {
		t.Errorf("restarted node %d created %v, want above %d (seen before the restart)", n2.id, created, seen)
	}

	// Restart the old coordinator: it takes over again.
	c.start(5, "")
	g4, _ := c.waitConverged(convergeBound(c))
	if g4.ID != 5 {
		t.Errorf("after node 5 came back: group %s, want coordinator 5", g4)
	}
}

// testCrashedDataDir: an agent started on the data dir of a crashed agent
// (stopped without Leave or final save, like kill -9) never reuses a group
// number: each number it creates is above every number the crashed one
// created.
func testCrashedDataDir(t *testing.T, multicast bool) {
	c := newCluster(t, multicast)
	for id := wire.NodeID(1); id <= 3; id++ {
		c.start(id, "")
	}
	c.waitConverged(convergeBound(c))
	old := c.live()[2] // node 3, the coordinator: it created the numbers
	usedBefore := old.createdSeqs()
	if len(usedBefore) == 0 {
		t.Fatal("node 3 created no group")
	}
	crashAt := time.Now()
	c.crash(3)
	// Without a Leave, the survivors detect the crash themselves
	// (AreYouThere timeouts, memberlist's probes): L2 still holds.
	g, at := c.waitConverged(convergeBound(c))
	bound := c.timing.FailoverBound() + failoverSlack
	t.Logf("failover after a crash to %s took %v (T_failover %v, asserted bound %v)", g, at.Sub(crashAt), c.timing.FailoverBound(), bound)
	if took := at.Sub(crashAt); took > bound {
		t.Errorf("failover after a crash took %v, over T_failover %v + slack %v", took, c.timing.FailoverBound(), failoverSlack)
	}

	r := c.start(3, old.dir)
	c.waitConverged(convergeBound(c))
	// Every number it used, its own or not, is below its new ones.
	maxOld := old.maxSeenSeq()
	newSeqs := r.createdSeqs()
	if len(newSeqs) == 0 {
		t.Fatal("restarted node 3 created no group")
	}
	for _, s := range newSeqs {
		if s <= maxOld {
			t.Errorf("restarted node 3 created %d.3, not above seq %d used before the crash (created before: %v, after: %v)",
				s, maxOld, usedBefore, newSeqs)
		}
	}
	t.Logf("before crash: %v; after: %v", fmt.Sprint(usedBefore), fmt.Sprint(newSeqs))
}

// TestIntegrationKeyed: nodes sharing a key (sealed wire packets,
// memberlist encryption) converge; a node with another key stays out, and
// its packets are dropped as unauthenticated.
func TestIntegrationKeyed(t *testing.T) {
	c := newCluster(t, loopbackMulticast())
	c.key = bytes.Repeat([]byte{7}, wire.KeySize)
	for id := wire.NodeID(1); id <= 3; id++ {
		c.start(id, "")
	}
	g, _ := c.waitConverged(convergeBound(c))
	if g.ID != 3 {
		t.Fatalf("group %s", g)
	}

	// An intruder with another key, seeded with node 1's gossip address.
	cfg := c.config(9, t.TempDir())
	cfg.Key = bytes.Repeat([]byte{8}, wire.KeySize)
	cfg.Join = []string{c.live()[0].a.Addrs().Gossip}
	x, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Run(ctx) }()
	defer func() { cancel(); <-done }()

	n1 := c.live()[0]
	waitFor(t, 10*time.Second, "node 1 to drop the intruder's packets", func() bool {
		if c.multicast != "" {
			return metricValue(n1.a.metrics.dropped.WithLabelValues("auth")) > 0
		}
		return true // without multicast nothing of the intruder's reaches the wire port
	})
	// The intruder tried to join (its seed is node 1) and failed:
	// memberlist refuses the other key.
	waitFor(t, 10*time.Second, "the intruder's join to fail", func() bool {
		return metricValue(x.metrics.joins.WithLabelValues("error")) > 0
	})
	// The intruder stays alone and the group stays as it was.
	if s := x.Status(); len(s.Members) != 1 || s.Coordinator != 9 {
		t.Errorf("intruder status %v", s)
	}
	if g2, _ := c.waitConverged(convergeBound(c)); g2 != g {
		t.Errorf("the group changed from %s to %s", g, g2)
	}
	for _, m := range n1.a.Members() {
		if m.ID == 9 {
			t.Errorf("node 1 lists the intruder: %+v", m)
		}
	}
}

// TestReconnectLoop: without multicast, a node that crashed and comes back
// on the same address with no seeds of its own is found again by the
// others' reconnect loop, which keeps re-joining failed members.
func TestReconnectLoop(t *testing.T) {
	c := newCluster(t, false)
	for id := wire.NodeID(1); id <= 3; id++ {
		c.start(id, "")
	}
	c.waitConverged(convergeBound(c))
	old := c.live()[2]
	addrs := old.a.Addrs()
	c.crash(3)
	c.waitConverged(convergeBound(c))
	// Wait until memberlist declared it dead: only then is it a failed
	// member for the reconnect loop.
	waitFor(t, 10*time.Second, "node 3 to be dead in memberlist", func() bool {
		for _, m := range c.live()[0].a.Members() {
			if m.ID == 3 {
				return m.Gossip == GossipDead
			}
		}
		return false
	})

	cfg := c.config(3, old.dir)
	cfg.Join = nil
	cfg.Port = portOf(t, addrs.Wire)
	cfg.GossipPort = portOf(t, addrs.Gossip)
	a, err := New(cfg)
	if err != nil {
		t.Skipf("cannot rebind the old ports: %v", err)
	}
	c.run(a, old.dir)
	g, _ := c.waitConverged(convergeBound(c) + c.timing.BeaconInterval*2)
	if g.ID != 3 {
		t.Errorf("group %s, want coordinator 3", g)
	}
	c.waitGossip(10 * time.Second)
}

func portOf(t *testing.T, hostport string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	return atoiOrFail(t, p)
}
