package group

import (
	"fmt"
	"slices"

	"github.com/groupd/groupd/wire"
)

// Quorum decides which side of a split may act: a group is primary when
// it holds more than half of the expected cluster. Operators of small LANs
// use it to keep the minority side of a partition passive (`groupd status`
// exits 3 there, and hooks see GROUPD_PRIMARY=0).
//
// Primary is a view, not a lease: a participant cut off from its
// coordinator keeps its last member list, and so reports primary, until it
// detects the failure (at most AliveInterval + AliveTimeout); a hook that
// must never overlap should also wait out that time.
type Quorum struct {
	// Expect is the expected cluster size; 0 turns primary-partition
	// mode off, and then every Normal group counts as primary.
	Expect int
	// TieBreaker, in an exact half split (possible when Expect is even),
	// makes the side holding this node primary. Zero: neither side is.
	TieBreaker wire.NodeID
}

// Enabled reports whether primary-partition mode is on.
func (q Quorum) Enabled() bool { return q.Expect > 0 }

// Primary reports whether a node with status st is in the primary group.
// Only a Normal node is: one forming or leaving a group may not act yet.
func (q Quorum) Primary(st Status) bool {
	if st.State != wire.StateNormal {
		return false
	}
	if q.Expect <= 0 {
		return true
	}
	n := len(st.Members)
	switch {
	case 2*n > q.Expect:
		return true
	case 2*n == q.Expect && q.TieBreaker != 0:
		return slices.Contains(st.Members, q.TieBreaker)
	}
	return false
}

func (q Quorum) validate() error {
	if q.Expect < 0 {
		return configErrorf("group: --expect must be >= 0, got %d", q.Expect)
	}
	if q.TieBreaker != 0 && q.Expect == 0 {
		return configErrorf("group: --tie-breaker needs --expect")
	}
	return nil
}

func (q Quorum) String() string {
	if !q.Enabled() {
		return "off"
	}
	if q.TieBreaker != 0 {
		return fmt.Sprintf("expect %d, tie-breaker %d", q.Expect, q.TieBreaker)
	}
	return fmt.Sprintf("expect %d", q.Expect)
}
