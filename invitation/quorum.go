package invitation

import (
	"math"
	"slices"
	"time"

	"github.com/groupd/groupd/invitation/quorum"
	"github.com/groupd/groupd/wire"
)

// This file holds what the node does with the quorum's rule (design §8;
// the arithmetic and the roll of voters are package quorum's): the rule
// it announces and applies, the rule a leader counts its lease by, the
// notices an operator reads when settings disagree, and what a message
// tells of its sender's quorum.

// announceQuorum is what this node tells others of its quorum: its
// settings and r, the rule it applies (zero without a quorum).
func (n *Node) announceQuorum(r quorum.Rule) wire.Quorum {
	if !n.q.Enabled() {
		return wire.Quorum{}
	}
	age := min(n.now.Sub(n.born)/time.Millisecond, math.MaxUint32)
	return wire.Quorum{Expect: uint32(n.q.Expect), TieBreaker: n.q.TieBreaker, Voters: uint32(r.Voters), Tie: r.Tie,
		Age: uint32(max(age, 0)), Home: n.start.home}
}

// ownRule is the rule this node's own knowledge gives: its settings, its
// roll, and for VoterTimeout after a restart the rule it saved before.
func (n *Node) ownRule() quorum.Rule {
	if !n.quorum.roll.Changed() {
		return n.quorum.rule
	}
	r := n.quorum.roll.Rule(n.q.Expect, n.q.TieBreaker)
	if m := n.quorum.remembered; m.Voters > 0 && n.now.Before(n.born.Add(n.t.VoterTimeout)) {
		r = r.Join(m)
	}
	n.quorum.rule = r
	n.noteRule(r)
	return r
}

// configured is the rule of this node's own settings.
func (n *Node) configured() quorum.Rule {
	return quorum.Rule{Voters: n.q.Expect, Tie: n.q.TieBreaker}
}

// leaderRule is the rule a leader counts its lease by: its own, made as
// strict as every member's announced one.
func (n *Node) leaderRule() quorum.Rule {
	r := n.ownRule()
	for id, mb := range n.coord.members.all() {
		if id != n.id && mb.claimed {
			r = r.Join(quorum.Of(mb.claim))
		}
	}
	return r
}

// noteRule reports a rule that counts more voters than Expect, or no
// longer honours the tie-breaker: the operator should know why a
// partition that would have been primary is not.
func (n *Node) noteRule(r quorum.Rule) {
	extra := n.quorum.roll.Extra()
	if r == n.quorum.reportedRule && slices.Equal(extra, n.quorum.reportedExtra) || !n.q.Enabled() {
		n.quorum.reportedRule, n.quorum.reportedExtra = r, extra
		return
	}
	n.quorum.reportedRule, n.quorum.reportedExtra = r, extra
	// Saved, so that a restart does not forget it (a rule as configured
	// saves as zero).
	saved := wire.Quorum{}
	if r != n.configured() {
		saved = wire.Quorum{Voters: uint32(r.Voters), Tie: r.Tie}
	}
	if n.store.want.Rule != saved {
		n.store.want.Rule = saved
		n.requestSave(n.now)
	}
	n.notice(Notice{Kind: NoticeQuorumRule, Time: n.now, Peer: n.id, Voters: r.Voters, Tie: r.Tie,
		Extra: extra, OurQuorum: wire.Quorum{Expect: uint32(n.q.Expect), TieBreaker: n.q.TieBreaker}})
}

// checkQuorum reports, once per peer and value, a peer whose quorum
// settings differ from this node's.
func (n *Node) checkQuorum(now time.Time, from wire.NodeID, q wire.Quorum) {
	ours := wire.Quorum{Expect: uint32(n.q.Expect), TieBreaker: n.q.TieBreaker}
	if int(q.Expect) == n.q.Expect && q.TieBreaker == n.q.TieBreaker {
		if _, ok := n.quorum.qmismatch[from]; ok {
			// It agrees now (a rolling change went past it): the
			// runtime forgets what it reported.
			delete(n.quorum.qmismatch, from)
			n.notice(Notice{Kind: NoticeQuorumMismatch, Time: now, Peer: from, TheirQuorum: ours, OurQuorum: ours})
		}
		return
	}
	if prev, ok := n.quorum.qmismatch[from]; ok && prev.Expect == q.Expect && prev.TieBreaker == q.TieBreaker {
		return
	}
	if len(n.quorum.qmismatch) >= MaxGroupSize {
		return
	}
	n.quorum.qmismatch[from] = q
	theirs := q
	theirs.Voters, theirs.Tie = 0, 0
	n.notice(Notice{Kind: NoticeQuorumMismatch, Time: now, Peer: from, TheirQuorum: theirs, OurQuorum: ours})
}

// observeQuorum records what a message says of its sender's quorum: the
// settings it announces (reported when they differ from this node's),
// and, in quorum mode, the process as a voter with its term floor.
func (n *Node) observeQuorum(now time.Time, m wire.Message) {
	var q wire.Quorum
	hasQ := false
	switch b := m.Body.(type) {
	case wire.Beacon:
		q, hasQ = b.Quorum, true
	case wire.Accept:
		q, hasQ = b.Quorum, true
	case wire.BeatAck:
		q, hasQ = b.Quorum, true
	}
	if hasQ && (n.q.Enabled() || !q.IsZero()) {
		n.checkQuorum(now, m.From, q)
	}
	if n.q.Enabled() {
		n.quorum.roll.Heard(now, m.From, m.Boot, m.Flags&wire.FlagFresh != 0, q, hasQ)
	}
}
