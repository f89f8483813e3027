package sim_test

import (
	"fmt"

	"github.com/groupd/groupd/sim"
	"github.com/groupd/groupd/wire"
)

// Three nodes start on a quiet LAN; within T_heal they form one group
// coordinated by the highest-ranked node, 3.
func Example() {
	s := sim.MustNew(sim.Config{N: 3, Seed: 1})
	if err := s.RunFor(s.HealBound()); err != nil {
		fmt.Println(err)
		return
	}
	if err := s.CheckConverged(); err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range s.Statuses() {
		fmt.Println(st.ID, st.State, st.Role(), st.MemberIDs())
	}
	// Output:
	// 1 normal participant [1 2 3]
	// 2 normal participant [1 2 3]
	// 3 normal coordinator [1 2 3]
}

// A partition splits five nodes; each side forms its own group; after the
// heal they merge again under node 5.
func Example_partition() {
	s := sim.MustNew(sim.Config{N: 5, Seed: 7})
	_ = s.RunFor(s.HealBound())
	s.Partition([]wire.NodeID{1, 2, 5}, []wire.NodeID{3, 4})
	_ = s.RunFor(s.HealBound())
	for _, st := range s.Statuses() {
		fmt.Println(st.ID, "coordinator", st.Group.ID)
	}
	s.Heal()
	_ = s.RunFor(s.HealBound())
	fmt.Println("converged:", s.CheckConverged() == nil, "coordinator", s.Statuses()[0].Group.ID)
	// Output:
	// 1 coordinator 5
	// 2 coordinator 5
	// 3 coordinator 4
	// 4 coordinator 4
	// 5 coordinator 5
	// converged: true coordinator 5
}
