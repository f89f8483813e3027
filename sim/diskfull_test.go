package sim

import (
	"testing"

	"github.com/groupd/groupd/wire"
)

// TestDiskFullMergeStepsAside: the coordinator's disk fills up while it
// runs; a partition lets the others form a group without it. At the heal
// it must make a number to merge them and cannot save it: it must step
// aside (degraded, it ranks lowest) so that the others absorb it, and the
// LAN is one group within T_heal (design §3.7). Once its disk is freed it
// saves again and takes over (§3.5). The e2e TestFullDisk found it stuck
// in Election with its old group, invited by nobody.
func TestDiskFullMergeStepsAside(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		s := MustNew(Config{N: 5, Seed: seed})
		step := func(what string, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("seed %d: %s: %v", seed, what, err)
			}
		}
		step("start", s.RunFor(s.HealBound()))
		step("converged at start", s.CheckConverged())
		s.SetDiskFull(5, true)
		s.Partition([]wire.NodeID{5}, []wire.NodeID{1, 2, 3, 4})
		step("partition", s.RunFor(s.HealBound()))
		step("nodes 1-4 converged without 5", s.CheckConvergedAmong([]wire.NodeID{1, 2, 3, 4}))
		s.Heal()
		step("heal", s.RunFor(s.HealBound()))
		step("one group after the heal, node 5 degraded", s.CheckConverged())
		if v := s.View(5); !v.Degraded() || v.Group.ID != 4 {
			t.Fatalf("seed %d: node 5 after the heal: %s, want degraded in node 4's group", seed, v)
		}
		s.SetDiskFull(5, false)
		step("disk freed", s.RunFor(s.HealBound()))
		step("one group after the disk was freed", s.CheckConverged())
		if v := s.View(5); v.Degraded() || v.Group.ID != 5 {
			t.Fatalf("seed %d: node 5 after its disk was freed: %s, want healthy and coordinating", seed, v)
		}
	}
}
