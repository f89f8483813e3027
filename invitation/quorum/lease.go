package quorum

import (
	"slices"
	"time"
)

// Grant is one member's grant as a leader counts it: until when it holds
// (on the leader's clock, from the heartbeat's send time, shortened by
// the drift allowance), and whether the member is the rule's tie-breaker.
type Grant struct {
	Until time.Time
	Tie   bool
}

// Lease decides a leader's lease at now under r: the leader's own vote
// (selfTie: the leader is the tie-breaker) and the grants that still hold
// make a quorum until the grant that completes it runs out. A quorum of
// one is the leader's own, for selfLease from now. Lease sorts grants, the
// latest first; it ignores those that ended by now.
func Lease(now time.Time, r Rule, selfTie bool, selfLease time.Duration, grants []Grant) (bool, time.Time) {
	if r.Holds(1, selfTie) {
		return true, now.Add(selfLease)
	}
	slices.SortFunc(grants, func(a, b Grant) int { return b.Until.Compare(a.Until) })
	hasTie := selfTie
	k := 1 // the leader itself
	for _, g := range grants {
		if !g.Until.After(now) {
			break // sorted: no later grant holds
		}
		k++
		hasTie = hasTie || g.Tie
		if r.Holds(k, hasTie) {
			return true, g.Until
		}
	}
	return false, time.Time{}
}
