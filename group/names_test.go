package group

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// TestLeaderNames: every report of a leader other than this node carries
// its name, which comes from memberlist's meta and may arrive after the
// group settles. OnNewLeader is never called with "", NameOf finds the
// coordinator's name of every change OnEvent is told of (as groupd's
// --on-change hook asks it, for GROUPD_COORDINATOR_NAME), and the status
// names the coordinator: at the cold start (multicast: memberlist joins
// only once a coordinator beacons, after the group formed), and after a
// failover.
func TestLeaderNames(t *testing.T) {
	t.Parallel()
	for _, mode := range []netMode{memMulticast, udpLoopback} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, mode)
			type leader struct {
				node, id wire.NodeID
				name     string
			}
			var mu sync.Mutex
			var leaders []leader
			var hookLines []string // "node event state coordinator name", as a hook would see them
			agents := map[wire.NodeID]*Agent{}
			c.tweak = func(cfg *Config) {
				node := cfg.ID
				cfg.OnEvent = func(e Event) {
					// What the hook runner does: a change waits,
					// off the loop, for a name it lacks; a
					// leadership event does not.
					go func() {
						var a *Agent
						for a == nil { // Run may start before c.start returns
							mu.Lock()
							a = agents[node]
							mu.Unlock()
							time.Sleep(time.Millisecond)
						}
						name := e.New.CoordinatorName
						if name == "" && !strings.HasPrefix(e.Reason, "leader-") {
							name = a.NameOf(context.Background(), e.New.Coordinator)
						}
						mu.Lock()
						hookLines = append(hookLines, strings.TrimSpace(fmt.Sprintf("%d %s %s %d %s", node, e.Reason, e.New.State, e.New.Coordinator, name)))
						mu.Unlock()
					}()
				}
				cfg.Leader.OnNewLeader = func(id NodeID, name string) {
					mu.Lock()
					leaders = append(leaders, leader{node, id, name})
					mu.Unlock()
				}
			}
			for id := wire.NodeID(1); id <= 3; id++ {
				n := c.start(id, "")
				mu.Lock()
				agents[id] = n.a
				mu.Unlock()
			}
			c.waitConverged(convergeBound(c))
			seenLeaders, seenHooks := 0, 0
			check := func(when string, coord wire.NodeID) {
				t.Helper()
				deadline := time.Now().Add(3 * time.Second)
				for _, n := range c.live() {
					for {
						st := n.a.Status()
						if st.Coordinator == coord && st.CoordinatorName == fmt.Sprintf("n%d", coord) {
							break
						}
						if time.Now().After(deadline) {
							t.Errorf("%s: node %d's status names coordinator %d %q", when, n.id, st.Coordinator, st.CoordinatorName)
							break
						}
						time.Sleep(5 * time.Millisecond)
					}
				}
				// The hooks and callbacks of the change have run.
				time.Sleep(2 * (c.timing.BeaconInterval + c.timing.AliveInterval))
				mu.Lock()
				defer mu.Unlock()
				got := map[wire.NodeID]bool{}
				for _, l := range leaders[seenLeaders:] {
					if l.name != fmt.Sprintf("n%d", l.id) {
						t.Errorf("%s: node %d: OnNewLeader(%d, %q)", when, l.node, l.id, l.name)
					}
					if l.id == coord {
						got[l.node] = true
					}
				}
				for _, n := range c.live() {
					if !got[n.id] {
						t.Errorf("%s: node %d was not told its leader is %d: %v", when, n.id, coord, leaders)
					}
				}
				lines := slices.Clone(hookLines)
				defer func() { seenLeaders, seenHooks = len(leaders), len(lines) }()
				for _, line := range lines[seenHooks:] {
					f := strings.Fields(line)
					if len(f) < 4 || f[3] == "0" {
						continue // no coordinator, no name
					}
					if strings.HasPrefix(f[1], "leader-") && len(f) == 4 {
						continue // a leader event runs at once, within the lease: the name may not be in yet
					}
					if len(f) != 5 || f[4] != "n"+f[3] {
						t.Errorf("%s: hook run %q: GROUPD_COORDINATOR_NAME is not the coordinator's name", when, line)
					}
				}
			}
			check("cold start", 3)
			c.crash(3)
			c.waitConverged(convergeBound(c))
			check("failover", 2)
		})
	}
}
