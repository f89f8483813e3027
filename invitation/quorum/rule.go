// Package quorum is the arithmetic of the leader lease (docs/design.md
// §8): the rule a quorum is counted by, the roll of voters a node knows
// of, and the lease a leader holds while a quorum of grants is in. It is
// pure: times come in as arguments, and nothing here sends, saves or
// reads a clock. invitation.Node holds one Roll and asks it for the rule
// and the grants it may count; the lease itself is Lease.
//
// Expect and TieBreaker are the operator's, one unit file per node, and
// nodes can disagree: a typo, a rolling change of --expect, a machine
// added before the others were reconfigured, or a second process with an
// ID already in use. Counted by each node's own settings, two sides of a
// split could both hold "a majority": four nodes with --expect 3 split two
// and two, or two halves each holding the tie-breaker its own nodes name.
// So every node announces its settings and the rule it applies
// (wire.Quorum), remembers the voters it has heard of (the Roll), and
// applies the strictest rule it knows of:
//
//   - a majority of the largest of its Expect, every Expect announced to
//     it, and the number of processes it knows of (itself included);
//   - an exact half decides only when every voter it heard announces the
//     same Expect and TieBreaker, and it knows of no more voters than
//     that Expect.
//
// A member grants a leader only if the leader's announced rule covers its
// own, and tells the leader its own rule in every acknowledgement; a
// leader counts by the strictest of its own rule and its members' (Join).
// Two quorums counted this way by two leaders therefore share a process,
// whatever the settings, as long as each leader knows of every process
// that may grant: what it cannot know is a process it has never heard
// (one started on the other side of a partition with an --expect that is
// too small), which is why Expect must still be at least the number of
// nodes that may run.
package quorum

import "github.com/groupd/groupd/wire"

// Rule is a quorum rule: more than half of Voters, or exactly half
// holding Tie (0: no tie-breaker).
type Rule struct {
	Voters int
	Tie    wire.NodeID
}

// Of is the rule a node announced.
func Of(q wire.Quorum) Rule { return Rule{Voters: int(q.Voters), Tie: q.Tie} }

// Holds reports whether k voters, holding the tie-breaker or not, are a
// quorum under r.
func (r Rule) Holds(k int, hasTie bool) bool {
	return 2*k > r.Voters || (2*k == r.Voters && r.Tie != 0 && hasTie)
}

// Covers reports whether r is at least as strict as o: a majority of at
// least as many voters, and no tie-breaker that o does not honour.
func (r Rule) Covers(o Rule) bool {
	return r.Voters >= o.Voters && (r.Tie == 0 || r.Tie == o.Tie)
}

// Join is the strictest rule of r and o: the larger number of voters, and
// a tie-breaker only when both name the same one. It covers both.
func (r Rule) Join(o Rule) Rule {
	j := Rule{Voters: max(r.Voters, o.Voters), Tie: r.Tie}
	if o.Tie != r.Tie {
		j.Tie = 0
	}
	return j
}
