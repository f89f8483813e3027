package group

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// TestLeaderNames: every report of a leader other than this node carries
// its name, which comes from memberlist's meta and may arrive after the
// group settles. OnNewLeader is never called with "", a hook never sees
// an empty GROUPD_COORDINATOR_NAME beside a coordinator, and the status
// names the coordinator: at the cold start (multicast: memberlist joins
// only once a coordinator beacons, after the group formed), and after a
// failover.
func TestLeaderNames(t *testing.T) {
	t.Parallel()
	for _, mode := range []netMode{memMulticast, udpLoopback} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, mode)
			hookOut := filepath.Join(t.TempDir(), "hooks")
			type leader struct {
				node, id wire.NodeID
				name     string
			}
			var mu sync.Mutex
			var leaders []leader
			c.tweak = func(cfg *Config) {
				node := cfg.ID
				cfg.OnChange = fmt.Sprintf(`echo "%d $GROUPD_EVENT $GROUPD_STATE $GROUPD_COORDINATOR $GROUPD_COORDINATOR_NAME" >> %s`, node, hookOut)
				cfg.Leader.OnNewLeader = func(id NodeID, name string) {
					mu.Lock()
					leaders = append(leaders, leader{node, id, name})
					mu.Unlock()
				}
			}
			for id := wire.NodeID(1); id <= 3; id++ {
				c.start(id, "")
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
				b, err := os.ReadFile(hookOut)
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
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
