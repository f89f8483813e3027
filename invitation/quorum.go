package invitation

import (
	"math"
	"slices"
	"time"

	"github.com/groupd/groupd/wire"
)

// This file holds the quorum's rule (design §8): of how many voters a
// leader's lease needs a majority, and when an exact half may decide.
//
// Expect and TieBreaker are the operator's, one unit file per node, and
// nodes can disagree: a typo, a rolling change of --expect, a machine
// added before the others were reconfigured, or a second process with an
// ID already in use. Counted by each node's own settings, two sides of a
// split could both hold "a majority": four nodes with --expect 3 split two
// and two, or two halves each holding the tie-breaker its own nodes name.
// So every node announces its settings and the rule it applies
// (wire.Quorum), remembers the voters it has heard of (the roll), and
// applies the strictest rule it knows of:
//
//   - a majority of the largest of its Expect, every Expect announced to
//     it, and the number of processes it knows of (itself included);
//   - an exact half decides only when every voter it heard announces the
//     same Expect and TieBreaker, and it knows of no more voters than
//     that Expect.
//
// A member grants a leader only if the leader's announced rule is at least
// as strict as its own, and tells the leader its own rule in every
// acknowledgement; a leader counts by the strictest of its own rule and its
// members'. Two quorums counted this way by two leaders therefore share a
// process, whatever the settings, as long as each leader knows of every
// process that may grant: what it cannot know is a process it has never
// heard (one started on the other side of a partition with an --expect
// that is too small), which is why Expect must still be at least the
// number of nodes that may run.
//
// A voter is a process: an ID and a boot. Every process announces how long
// it has run and where it keeps its state (wire.Quorum: Age, Home; a
// member list carries its members' homes). A new boot of a known ID is the
// same voter restarted when it lives at the same home, or carries the
// node's state (it did not start fresh: wire.FlagFresh), or, for a node
// known only from a member list, started before that list named it.
// Otherwise it is one more process: a second process given an ID in use,
// typically, on another machine or data dir; so is a process a successor
// replaced if it is heard again. Such an ID is disputed: a leader counts
// the grants of its oldest process only, and only when a later one
// started fresh (none when two carry the node's state: a copied data
// dir), and a member grants no other of its processes; so a second
// process started on the other side of a partition cannot make a quorum
// there while the first counts here. The roll forgets a voter that left
// gracefully (memberlist), or that has not been heard for VoterTimeout;
// what the rule was is saved with the node's state (Durable.Rule), and a
// restarted node holds to it for VoterTimeout.

// maxBootsPerID bounds the processes the roll keeps for one ID: each one
// beyond the first counts as one more voter, and a flood of made-up boots
// must not grow the roll without bound.
const maxBootsPerID = 4

// voter is one process of the roll.
type voter struct {
	boot uint64 // 0: known only from a member list
	home uint32 // where it keeps its state (0: unknown)
	// prev is the boot this one replaced (a restart), which started at
	// prevStarted: heard again, saying it ran after this one started, it
	// is one more process.
	prev        uint64
	prevStarted time.Time
	fresh       bool // it started without a saved state (wire.FlagFresh)
	// started is when it started, as its announced age says (zero for a
	// node known only from a member list: it ran before).
	started time.Time
	// q is the settings it last announced; heardQ whether it announced
	// any (a node known only from a member list has not).
	q      wire.Quorum
	heardQ bool
	// heard is when it was last heard: a packet of its boot, or, for the
	// newest process of its ID, a member list that names the ID. listed
	// is when a member list that named its ID last arrived, while its
	// boot was unknown: the process that list named started before it.
	heard, listed time.Time
}

// rule is a quorum rule: more than half of voters, or exactly half holding
// tie (0: no tie-breaker).
type rule struct {
	voters int
	tie    wire.NodeID
}

// holds reports whether k voters, holding the tie-breaker or not, are a
// quorum under r.
func (r rule) holds(k int, hasTie bool) bool {
	return 2*k > r.voters || (2*k == r.voters && r.tie != 0 && hasTie)
}

// covers reports whether r is at least as strict as o: a majority of at
// least as many voters, and no tie-breaker that o does not honour.
func (r rule) covers(o rule) bool {
	return r.voters >= o.voters && (r.tie == 0 || r.tie == o.tie)
}

// ruleOf is the rule a node announced.
func ruleOf(q wire.Quorum) rule { return rule{voters: int(q.Voters), tie: q.Tie} }

// announceQuorum is what this node tells others of its quorum: its
// settings and r, the rule it applies (zero without a quorum).
func (n *Node) announceQuorum(r rule) wire.Quorum {
	if !n.q.Enabled() {
		return wire.Quorum{}
	}
	age := min(n.now.Sub(n.born)/time.Millisecond, math.MaxUint32)
	return wire.Quorum{Expect: uint32(n.q.Expect), TieBreaker: n.q.TieBreaker, Voters: uint32(r.voters), Tie: r.tie,
		Age: uint32(max(age, 0)), Home: n.start.home}
}

// ownRule is the rule this node's own knowledge gives: its settings and
// its roll.
func (n *Node) ownRule() rule {
	if !n.quorum.ruleDirty {
		return n.quorum.rule
	}
	q := n.q
	// Every process counts: a second process of an ID is one more voter
	// (its grants count for nothing, see countsGrant).
	voters := max(q.Expect, n.quorum.rollSize+1)
	agree := true
	for _, ps := range n.quorum.roll {
		for _, v := range ps {
			if !v.heardQ {
				continue
			}
			voters = max(voters, int(v.q.Expect))
			if int(v.q.Expect) != q.Expect || v.q.TieBreaker != q.TieBreaker {
				agree = false
			}
		}
	}
	r := rule{voters: voters, tie: q.TieBreaker}
	if !agree || voters != q.Expect {
		r.tie = 0
	}
	if m := n.quorum.remembered; m.voters > 0 && n.now.Before(n.born.Add(n.t.VoterTimeout)) {
		// What the rule was before a restart, for VoterTimeout.
		r.voters = max(r.voters, m.voters)
		if m.tie != r.tie {
			r.tie = 0
		}
	}
	n.quorum.rule, n.quorum.ruleDirty = r, false
	n.noteRule(r)
	return r
}

// configured is the rule of this node's own settings.
func (n *Node) configured() rule { return rule{voters: n.q.Expect, tie: n.q.TieBreaker} }

// leaderRule is the rule a leader counts its lease by: its own, made as
// strict as every member's announced one.
func (n *Node) leaderRule() rule {
	r := n.ownRule()
	for id, mb := range n.coord.up {
		if id == n.id || !mb.claimed {
			continue
		}
		c := ruleOf(mb.claim)
		r.voters = max(r.voters, c.voters)
		if c.tie != r.tie {
			r.tie = 0
		}
	}
	return r
}

// noteRule reports a rule that counts more voters than Expect, or no
// longer honours the tie-breaker: the operator should know why a
// partition that would have been primary is not.
func (n *Node) noteRule(r rule) {
	extra := n.extraVoters()
	if r == n.quorum.reportedRule && slices.Equal(extra, n.quorum.reportedExtra) || !n.q.Enabled() {
		n.quorum.reportedRule, n.quorum.reportedExtra = r, extra
		return
	}
	n.quorum.reportedRule, n.quorum.reportedExtra = r, extra
	// Saved, so that a restart does not forget it (a rule as configured
	// saves as zero).
	saved := wire.Quorum{}
	if r != n.configured() {
		saved = wire.Quorum{Voters: uint32(r.voters), Tie: r.tie}
	}
	if n.store.want.Rule != saved {
		n.store.want.Rule = saved
		n.requestSave(n.now)
	}
	n.notice(Notice{Kind: NoticeQuorumRule, Time: n.now, Peer: n.id, Voters: r.voters, Tie: r.tie,
		Extra: extra, OurQuorum: wire.Quorum{Expect: uint32(n.q.Expect), TieBreaker: n.q.TieBreaker}})
}

// disputed reports whether the roll holds more than one process of id.
func (n *Node) disputed(id wire.NodeID) bool { return len(n.quorum.roll[id]) > 1 }

// countsGrant reports whether a leader counts the grants of process
// (id, boot): of a disputed ID only its oldest process, when a later one
// started fresh (a second process given the ID, or the node after its data
// dir was lost); none when every later one carried the node's state (a
// copied data dir, say).
func (n *Node) countsGrant(id wire.NodeID, boot uint64) bool {
	ps := n.quorum.roll[id]
	if len(ps) <= 1 {
		return true
	}
	oldest := ps[0]
	for _, p := range ps[1:] {
		if p.started.Before(oldest.started) {
			oldest = p
		}
	}
	if oldest.boot != boot {
		return false
	}
	for _, p := range ps {
		if p != oldest && !p.fresh {
			return false
		}
	}
	return true
}

// extraVoters lists the IDs the roll holds more than one process of.
func (n *Node) extraVoters() []wire.NodeID {
	var ids []wire.NodeID
	for id, ps := range n.quorum.roll {
		if len(ps) > 1 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// noteVoter records a packet of process (id, boot) in the roll: fresh
// says it started without a saved state, q is the settings, age and home
// it announced (hasQ). It runs only in quorum mode.
func (n *Node) noteVoter(now time.Time, id wire.NodeID, boot uint64, fresh bool, q wire.Quorum, hasQ bool) {
	if id == n.id || id == 0 {
		return
	}
	var v *voter
	for _, p := range n.quorum.roll[id] {
		if p.boot == boot {
			v = p
			break
		}
	}
	if v == nil {
		v = n.newBoot(now, id, process{boot: boot, fresh: fresh, q: q, hasQ: hasQ})
		if v == nil {
			return
		}
	}
	v.heard = now
	if hasQ && q.Home != 0 {
		v.home = q.Home
	}
	if hasQ && (!v.heardQ || v.q.Expect != q.Expect || v.q.TieBreaker != q.TieBreaker) {
		n.quorum.ruleDirty = true
		v.q, v.heardQ = q, true
	}
}

// process is what a packet tells of the process that sent it.
type process struct {
	boot  uint64
	fresh bool
	q     wire.Quorum // its Age and Home, when hasQ
	hasQ  bool
}

// newBoot judges a boot of id the roll does not hold: the process a member
// list named, a process of the ID restarted (it takes its place), or one
// more process. It returns the process, or nil when the roll is full or
// the packet proves nothing (a late packet of a process since replaced, or
// one that does not say when and where its sender started).
func (n *Node) newBoot(now time.Time, id wire.NodeID, p process) *voter {
	started := now // not announced: as if it started now
	if p.hasQ {
		started = now.Add(-time.Duration(p.q.Age) * time.Millisecond)
	}
	home := p.q.Home
	ps := n.quorum.roll[id]
	if len(ps) > 0 && !p.hasQ {
		// A packet that says nothing of its sender's age and home
		// (a Ready, a Yes): not judged until one that does.
		return nil
	}
	for i := len(ps) - 1; i >= 0; i-- {
		v := ps[i]
		if v.prev == p.boot && p.boot != 0 {
			// The process a successor replaced: a packet it sent
			// before its successor started (delayed, duplicated,
			// held by a paused process) proves nothing; one sent
			// since, that it still runs.
			sent := v.prevStarted.Add(time.Duration(p.q.Age) * time.Millisecond)
			if !p.hasQ || !sent.After(v.started.Add(n.t.AnswerTimeout)) {
				return nil
			}
			return n.addProcess(id, p.boot, p.fresh, started)
		}
		sameHome := home != 0 && v.home == home
		listed := v.boot == 0 && v.home == 0 && started.Before(v.listed.Add(n.t.AnswerTimeout))
		if sameHome || listed {
			n.replace(v, p.boot, p.fresh, started)
			return v
		}
	}
	if len(ps) > 0 && !p.fresh {
		// It carries the node's state from elsewhere (its data dir
		// moved): the newest process restarted.
		n.replace(ps[len(ps)-1], p.boot, false, started)
		return ps[len(ps)-1]
	}
	v := n.addProcess(id, p.boot, p.fresh, started)
	if v != nil {
		v.home = home
	}
	return v
}

// replace makes v the process (boot, fresh, started): the one it was
// restarted.
func (n *Node) replace(v *voter, boot uint64, fresh bool, started time.Time) {
	if v.boot != 0 {
		v.prev, v.prevStarted = v.boot, v.started
	}
	v.boot, v.fresh, v.started = boot, fresh, started
}

// addProcess adds a process of id to the roll: a first one, or one more
// (id is then disputed). It returns nil when the roll is full.
func (n *Node) addProcess(id wire.NodeID, boot uint64, fresh bool, started time.Time) *voter {
	ps := n.quorum.roll[id]
	if len(ps) == 0 && len(n.quorum.roll) >= MaxGroupSize {
		return nil
	}
	v := &voter{boot: boot, fresh: fresh, started: started}
	if len(ps) >= maxBootsPerID {
		ps = slices.Delete(ps, 0, 1)
		n.quorum.rollSize--
	}
	n.quorum.roll[id] = append(ps, v)
	n.quorum.rollSize++
	n.quorum.ruleDirty = true
	return v
}

// listVoters records the members of a member list this node holds, with
// their homes where the list carries them: known by ID, their newest
// process is heard now.
func (n *Node) listVoters(now time.Time, ms []wire.Member, homes []uint32) {
	if !n.q.Enabled() {
		return
	}
	for i, m := range ms {
		if m.ID == n.id {
			continue
		}
		home := uint32(0)
		if i < len(homes) {
			home = homes[i]
		}
		ps := n.quorum.roll[m.ID]
		if len(ps) == 0 {
			if len(n.quorum.roll) >= MaxGroupSize {
				continue
			}
			n.quorum.roll[m.ID] = []*voter{{heard: now, listed: now, home: home}}
			n.quorum.rollSize++
			n.quorum.ruleDirty = true
			continue
		}
		v := ps[len(ps)-1]
		v.heard = now
		if v.boot == 0 {
			v.listed = now
		}
		if v.home == 0 {
			v.home = home
		}
	}
}

// voterLeft forgets a node that left gracefully: it no longer runs, and
// counting it would only take primary away from the rest.
func (n *Node) voterLeft(id wire.NodeID) {
	if ps, ok := n.quorum.roll[id]; ok {
		n.quorum.rollSize -= len(ps)
		delete(n.quorum.roll, id)
		n.quorum.ruleDirty = true
	}
}

// sweepVoters forgets the processes not heard for VoterTimeout. The
// newest process of an ID in this node's member list is heard: its group
// vouches for it.
func (n *Node) sweepVoters(now time.Time) {
	for id, ps := range n.quorum.roll {
		if n.hasMember(id) {
			ps[len(ps)-1].heard = now
		}
		kept := ps[:0]
		for _, v := range ps {
			if now.Sub(v.heard) < n.t.VoterTimeout {
				kept = append(kept, v)
			}
		}
		if len(kept) == len(ps) {
			continue
		}
		n.quorum.rollSize -= len(ps) - len(kept)
		n.quorum.ruleDirty = true
		if len(kept) == 0 {
			delete(n.quorum.roll, id)
		} else {
			n.quorum.roll[id] = kept
		}
	}
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
		n.noteVoter(now, m.From, m.Boot, m.Flags&wire.FlagFresh != 0, q, hasQ)
	}
}
