package invitation

import (
	"slices"
	"time"

	"github.com/groupd/groupd/invitation/quorum"
	"github.com/groupd/groupd/wire"
)

// This file holds the leader lease (design §8): numbered heartbeats that
// members acknowledge, the grants those acknowledgements carry, the lease a
// leader holds while a quorum grants it, member liveness read from the same
// acknowledgements, and terms that only grow.
//
// A coordinator numbers its heartbeats and remembers when it sent each of
// the last beatRing. Every AckEvery it asks for an acknowledgement
// (Beacon.AckReq); each member answers with a BeatAck. That answer is the
// member's sign of life, so the coordinator learns of a lost member within
// MemberLossBound, where the failure detector took seconds.
//
// The BeatAck also grants the lease: a member that grants leader C binds
// itself for Lease from the moment it received the heartbeat, and grants
// no other leader until that has run out. The leader counts the grant for
// LeaderLease from the moment it sent the heartbeat: earlier, and shorter
// by the clocks' drift allowance, so every grant it counts is still held
// by the member, in real time. In quorum mode a leader is primary while
// itself and enough members to make a quorum hold grants it counts. Two
// quorums share a node, and a node holds one grant at a time, so two
// leaders are never primary at once. The price is paid at failover: a new
// leader is primary only once the grants its members gave the old one have
// run out, at most Lease after the old one's last heartbeat.
//
// A node that restarted has forgotten the grants it gave, so it grants
// nothing, and counts no vote of its own, for Lease after its start. A
// leader that stops leading keeps a grant to itself until its lease would
// have ended, so whatever it ran as the leader (groupd exec's child) is
// stopped before another leader can be primary.
//
// Terms: every heartbeat carries the leader's term; every Accept and
// BeatAck the member's term floor (saved, Durable.Term). A leader that must
// go above a term takes a new one: its current group number (above every
// number its members held, design §4), or a new number for its group when
// that is not higher. What raises the floor depends on the mode:
//
//   - Without a quorum every leader acts, so every term counts: a node's
//     floor is every term it saw (its coordinators', its own, its
//     members'), and a leader whose members saw a higher term takes a new
//     one at once. Terms grow along every chain of leaderships a node
//     takes part in.
//   - In quorum mode only primary leaders act, so only terms that a
//     quorum may have granted count: a member raises its floor to a term
//     when it first grants it (saved before the grant leaves), a leader to
//     its own when it first becomes primary. A member grants no lease to a
//     leader whose term is below its floor, and a leader that is refused a
//     grant for its term while it is not primary takes a new one. Two
//     quorums share a member, so the terms of successive primary leaders
//     grow, and a store that refuses lower terms never takes a stale
//     leader's write; a leader that absorbs a minority that elected a
//     leader of its own keeps its term as long as it does not need those
//     members' grants (their leader was never primary).

// beatRing is how many of its last heartbeats a coordinator remembers, by
// number, to read a BeatAck's send time: at the lan profile's four
// heartbeats a second, 8 s.
const beatRing = 32

// sentBeat is one heartbeat the coordinator sent.
type sentBeat struct {
	no uint64
	at time.Time
}

// beatFields is what a heartbeat adds to a coordinator's beacon.
type beatFields struct {
	no  uint64
	ack bool
}

// grant is the lease this node granted: to a leader, until a time on its
// own clock.
type grant struct {
	to    wire.NodeID
	until time.Time
}

// quorumMode reports whether a lease decides this node's primary flag.
func (n *Node) quorumMode() bool { return n.q.Enabled() && !n.lease.viewPrimary }

// heartbeat numbers the coordinator's next heartbeat and decides whether it
// asks for acknowledgements: every AckEvery, and on every heartbeat while
// a quorum-mode leader is not primary (it needs its grants now).
func (n *Node) heartbeat(now time.Time) beatFields {
	if !n.isCoordinator() || len(n.members) <= 1 {
		return beatFields{}
	}
	hb := n.nextBeat(now)
	if n.state != wire.StateNormal {
		return hb // members in Reorganization do not acknowledge
	}
	q := n.quorumMode()
	if n.lease.lastAckReq.IsZero() || now.Sub(n.lease.lastAckReq) >= n.t.AckEvery(q)-n.t.AliveInterval/2 || (q && !n.lease.primary) {
		hb.ack = true
		n.lease.lastAckReq = now
		n.lease.lastReqBeat = hb.no
		if q && n.lease.primary {
			n.lease.ackRetryAt = now.Add(n.t.AnswerTimeout)
		}
	}
	return hb
}

// nextBeat numbers a heartbeat sent now.
func (n *Node) nextBeat(now time.Time) beatFields {
	n.lease.beat++
	n.lease.beats[n.lease.beat%beatRing] = sentBeat{no: n.lease.beat, at: now}
	return beatFields{no: n.lease.beat}
}

// retryAcks asks again, by unicast, the members that have not acknowledged
// the last request for acknowledgements, every AnswerTimeout until they
// do or the next request goes out (quorum mode, while primary: a leader
// that is not asks on every heartbeat anyway). A lease counts a grant
// for LeaderLease from the heartbeat it answers, and the requests come
// every AckEvery: without a retry, one lost request or acknowledgement
// left too little of the lease for the next, and at 10 % loss with a bare
// quorum a leader lost primary 11 times a minute. With a retry every
// AnswerTimeout (three within the lease on lan), a lapse needs every
// attempt of a round to fail.
func (n *Node) retryAcks(now time.Time) {
	n.lease.ackRetryAt = time.Time{}
	if !n.quorumMode() || !n.lease.primary || n.state != wire.StateNormal || n.lease.lastReqBeat == 0 {
		return
	}
	var missing []wire.NodeID
	for id, mb := range n.coord.members.all() {
		if id != n.id && mb.acked < n.lease.lastReqBeat {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return
	}
	slices.Sort(missing)
	hb := n.nextBeat(now)
	hb.ack = true
	for _, id := range missing {
		n.sendBeacon(id, hb)
	}
	n.lease.ackRetryAt = now.Add(n.t.AnswerTimeout)
}

// beatSent returns when heartbeat no was sent, if it is remembered.
func (n *Node) beatSent(no uint64) (time.Time, bool) {
	b := n.lease.beats[no%beatRing]
	if no == 0 || b.no != no {
		return time.Time{}, false
	}
	return b.at, true
}

// onBeatAck handles a member's acknowledgement of a heartbeat. Only the
// process the coordinator admitted counts: an acknowledgement from another
// boot of the member's ID (a second process with the ID, or the member
// restarted and not yet admitted again) grants nothing.
func (n *Node) onBeatAck(now time.Time, m wire.Message, b wire.BeatAck) {
	if b.Group != n.group || !n.isCoordinator() {
		return
	}
	mb := n.coord.members.get(m.From)
	if mb == nil || (mb.boot != 0 && mb.boot != m.Boot) {
		return
	}
	mb.heard = now
	mb.acked = max(mb.acked, b.Beat)
	mb.claim, mb.claimed = b.Quorum, true
	n.lease.lastMemberHeard = now
	n.memberTerm(now, b.Term, !b.Grant)
	if !b.Grant {
		return
	}
	if at, ok := n.beatSent(b.Beat); ok && at.After(mb.granted) {
		mb.granted = at
	}
}

// memberTerm handles the term floor a member reported (in an Accept, or a
// BeatAck that granted or was refused): without a quorum, a leader must
// go above every term its members saw; in quorum mode, only above a floor
// that refused it a grant, and only once it needs it (it is not primary).
func (n *Node) memberTerm(now time.Time, t wire.GroupNumber, refused bool) {
	if !n.quorumMode() {
		n.noteTerm(now, t)
		return
	}
	if refused && n.lease.retermAbove.Less(t) {
		n.lease.retermAbove = t
	}
}

// noteTerm raises this node's term floor to t, and saves it.
func (n *Node) noteTerm(now time.Time, t wire.GroupNumber) {
	if n.store.want.Term.Less(t) {
		n.store.want.Term = t
		if t.Seq > n.store.maxSeen {
			n.store.maxSeen = t.Seq
		}
		n.requestSave(now)
	}
}

// onMemberHeartbeat is a participant's part of the lease: it remembers
// the heartbeat's number, term, rule and lease, and acknowledges it when
// asked, or when it owes a grant it can now give.
func (n *Node) onMemberHeartbeat(now time.Time, boot uint64, b wire.Beacon) {
	if b.Beat == 0 {
		return
	}
	n.lease.lastBeatNo = b.Beat
	n.part.coordTerm = b.Term
	n.part.coordBoot = boot
	n.part.coordQ = b.Quorum
	n.part.coordLease = b.Timing.Lease
	if !n.quorumMode() {
		n.noteTerm(now, b.Term) // every leader's term counts (its grants do not)
	}
	if b.AckReq || n.lease.owe {
		n.ackBeat(now, b.AckReq)
	}
}

// ackBeat acknowledges my coordinator's latest heartbeat, granting its
// lease if I may. asked says the coordinator asked; otherwise an
// acknowledgement goes only to give a grant I owe.
func (n *Node) ackBeat(now time.Time, asked bool) {
	c := n.group.ID
	if n.quorumMode() && n.mayGrantTerm(now, c) && n.store.want.Term.Less(n.part.coordTerm) {
		// The first grant of this term raises the floor; it leaves once
		// the floor is saved (mayGrant), so a restart never forgets it.
		n.noteTerm(now, n.part.coordTerm)
	}
	ok := n.mayGrant(now, c)
	if !asked && !ok {
		return
	}
	n.lease.owe = !ok
	own := n.ownRule()
	if ok {
		// Bound for the longest lease anyone may count: mine, my
		// group's, and the one the heartbeat announced.
		n.lease.grant = grant{to: c, until: now.Add(max(n.gt.Lease, n.t.Lease, n.part.coordLease))}
	}
	n.send(c, wire.BeatAck{Group: n.group, Beat: n.lease.lastBeatNo, Grant: ok, Term: n.store.want.Term, Quorum: n.announceQuorum(own)})
}

// mayGrant reports whether this node may grant leader c its lease now: it
// has run for a Lease since it started (it forgot the grants of its
// previous life), holds no grant to another leader and no lease of its own
// that may still run, and c's term is not below the highest it has seen,
// which is saved.
func (n *Node) mayGrant(now time.Time, c wire.NodeID) bool {
	if !n.mayGrantTerm(now, c) {
		return false
	}
	if c == n.id {
		return true
	}
	if n.q.Enabled() && !quorum.Of(n.part.coordQ).Covers(n.ownRule()) {
		// The leader counts by a weaker rule than mine: this
		// acknowledgement tells it mine (BeatAck.Quorum), and its next
		// heartbeat will be stricter.
		return false
	}
	if n.q.Enabled() && !n.quorum.roll.Counts(c, n.part.coordBoot) {
		// The leader is a process of an ID in dispute whose grants I
		// would not count (package quorum): a second process with the ID,
		// perhaps on this side of a partition from the first. I grant
		// it nothing either.
		return false
	}
	return !n.part.coordTerm.Less(n.store.want.Term) && !n.store.durable.Term.Less(n.part.coordTerm)
}

// mayGrantTerm is mayGrant but for the term: the start-up wait, and grants
// to another leader or of its own lease that may still run.
func (n *Node) mayGrantTerm(now time.Time, c wire.NodeID) bool {
	if now.Before(n.born.Add(n.t.Lease)) {
		return false
	}
	if g := n.lease.grant; g.to != 0 && g.to != c && now.Before(g.until) {
		return false
	}
	return c == n.id || !now.Before(n.lease.selfUntil)
}

// grantFreeAt is when mayGrant may next change without an input: the end
// of the start-up wait, of a grant to another leader, or of my own lease.
func (n *Node) grantFreeAt(c wire.NodeID) time.Time {
	t := n.born.Add(n.t.Lease)
	if g := n.lease.grant; g.to != 0 && g.to != c {
		t = later(t, g.until)
	}
	if c != n.id {
		t = later(t, n.lease.selfUntil)
	}
	return t
}

// payOwed sends the grant a participant owes its coordinator once it may:
// once its other grants ran out it raises its term floor if the leader's
// term is above it (ackBeat), and grants once that is saved.
func (n *Node) payOwed(now time.Time) {
	if n.lease.owe && n.idleParticipant() && n.lease.lastBeatNo != 0 && n.mayGrantTerm(now, n.group.ID) {
		n.ackBeat(now, false)
	}
}

// updateLease recomputes whether the node is primary, and until when. The
// end of a lease it published never moves earlier while it leads: the
// grants that made it were held by their members until then whatever
// happened since (a member dropped, its failure detector's verdict, its
// own merge), and a reader told "until then" may act until then. A leader
// that stops leading keeps a grant to itself until that end and
// LeaseMargin past it (see mayGrant), as its members hold theirs, so no
// other leader can be primary within LeaseMargin of it.
func (n *Node) updateLease(now time.Time) {
	n.lease.primary, n.lease.leaseUntil = n.computeLease(now)
	if n.lease.primary && n.lease.leader && n.quorumMode() && n.isCoordinator() && n.store.durable.Term.Less(n.lease.term) {
		// A primary term counts from now on (it raises the floor), and
		// only once saved: restarted, this node must not grant a lower
		// term. The save is asked now; primary once it is done.
		n.noteTerm(now, n.lease.term)
		n.lease.primary, n.lease.leaseUntil = false, time.Time{}
	}
	leading := n.lease.leader && n.isCoordinator() && !n.start.stopped && n.quorumMode()
	switch {
	case !leading:
		// Its own vote is a grant like a member's: it holds it
		// LeaseMargin past the end its readers were told.
		if !n.lease.pubUntil.IsZero() {
			n.lease.selfUntil = later(n.lease.selfUntil, n.lease.pubUntil.Add(n.t.LeaseMargin))
		}
		n.lease.pubUntil = time.Time{}
	case n.lease.pubUntil.After(now) && (!n.lease.primary || n.lease.leaseUntil.Before(n.lease.pubUntil)):
		n.lease.primary, n.lease.leaseUntil = true, n.lease.pubUntil
	case n.lease.primary:
		n.lease.pubUntil = n.lease.leaseUntil
	}
	switch {
	case !n.lease.noPreempt || !n.lease.leader:
		n.lease.incumbent = false
	case n.state != wire.StateNormal:
		// Its own merge or Ready round: an incumbent stays one, or the
		// nodes it invites would rank it below them and refuse.
	case n.quorumMode():
		n.lease.incumbent = n.lease.primary
	default:
		// It leads members it heard lately (a leader that was frozen
		// while its members moved on does not).
		n.lease.incumbent = len(n.members) > 1 && now.Sub(n.lease.lastMemberHeard) < n.t.AckLate(false)
	}
}

// computeLease decides the primary flag (design §8): without a quorum,
// every Normal node is primary; with one, a participant is while its
// member list holds a quorum and its coordinator's last message said the
// coordinator is primary (wire.FlagPrimary: the member list may name a
// process the leader does not count; only a leader's flag is a lease),
// and a leader while itself, free of other grants, and members whose
// grants it counts make a quorum under its rule (package quorum), until the
// grant that completes the quorum runs out.
func (n *Node) computeLease(now time.Time) (bool, time.Time) {
	if n.start.stopped || n.state != wire.StateNormal || n.group.IsZero() {
		return false, time.Time{}
	}
	if !n.q.Enabled() {
		return true, time.Time{}
	}
	if !n.isCoordinator() || n.lease.viewPrimary {
		r := n.ownRule()
		if !n.isCoordinator() && !n.part.coordQ.IsZero() {
			// My coordinator's rule, when stricter, is the group's.
			r = r.Join(quorum.Of(n.part.coordQ))
		}
		held := r.Holds(len(n.members), r.Tie != 0 && n.hasMember(r.Tie))
		return held && (n.isCoordinator() || n.part.coordPrimary), time.Time{}
	}
	if now.Before(n.grantFreeAt(n.id)) {
		return false, time.Time{}
	}
	r := n.leaderRule()
	ll := n.t.LeaderLease()
	grants := n.lease.votes[:0]
	for id, mb := range n.coord.members.all() {
		if id == n.id || mb.granted.IsZero() || !n.quorum.roll.Counts(id, mb.boot) {
			continue
		}
		grants = append(grants, quorum.Grant{Until: mb.granted.Add(ll), Tie: id == r.Tie})
	}
	n.lease.votes = grants
	// A quorum of one is the node's own lease, renewed as time passes,
	// so that a leader that stops keeps its grant to itself for as long
	// as its readers may have read a lease.
	return quorum.Lease(now, r, r.Tie == n.id, ll, grants)
}

// hasMember reports whether id is in the member list.
func (n *Node) hasMember(id wire.NodeID) bool {
	_, ok := slices.BinarySearchFunc(n.members, id, func(m wire.Member, id wire.NodeID) int {
		switch {
		case m.ID < id:
			return -1
		case m.ID > id:
			return 1
		}
		return 0
	})
	return ok
}

// leaseDeadline is when the lease next needs a look without an input: its
// end, or when this node's own vote becomes free.
func (n *Node) leaseDeadline() time.Time {
	if !n.quorumMode() || !n.isCoordinator() {
		return time.Time{}
	}
	if n.lease.primary {
		return n.lease.leaseUntil
	}
	if n.state != wire.StateNormal {
		return time.Time{}
	}
	if f := n.grantFreeAt(n.id); f.After(n.now) {
		return f
	}
	return time.Time{}
}

// maybeReterm gives a leader that must go above a term a new one (see the
// file's comment on terms): its group number, which is above every number
// its members held (they decline lower ones), or, if that is not above the
// term, a new number for its group. The new term begins a new leadership.
func (n *Node) maybeReterm(now time.Time) Reason {
	above := n.store.want.Term
	if n.quorumMode() {
		above = n.lease.retermAbove
		if n.lease.primary {
			return "" // it has its quorum: no need yet
		}
	}
	if !n.lease.leader || !n.isCoordinator() || n.state != wire.StateNormal || n.store.pending != nil || !n.lease.term.Less(above) {
		return ""
	}
	if above.Less(n.group) {
		n.lease.retermAbove = wire.GroupNumber{}
		n.lease.term, n.lease.leaderSince = n.group, now
		if !n.quorumMode() {
			n.noteTerm(now, n.lease.term)
		}
		return ReasonLease
	}
	if n.degraded() {
		return "" // it cannot create a number; a healthy node will invite it
	}
	n.renumber(now, nil)
	return ReasonMerge
}

// renumber gives the coordinator's group a new number, inviting its
// members and extra (nodes that declined the old number): a number above
// everything heard, for a Decline or a term its number is not above.
func (n *Node) renumber(now time.Time, extra []wire.NodeID) {
	members := n.coord.members.others(n.id)
	for _, id := range extra {
		if id != n.id && !n.coord.members.has(id) {
			members = append(members, id)
		}
	}
	slices.Sort(members)
	n.newGroup(now, &pendingGroup{purpose: forMerge, members: members})
}

// onDecline handles an invitee that held a number above the one it was
// invited to. During the accept window the decliners are invited again
// when it closes, with a new number; a Normal coordinator (the invitee was
// a late joiner) renumbers its group now.
func (n *Node) onDecline(now time.Time, m wire.Message, b wire.Decline) Reason {
	if b.Group != n.group || !n.isCoordinator() || n.degraded() || n.store.pending != nil {
		return ""
	}
	if mg := n.coord.merge; mg != nil {
		if mg.declined == nil {
			mg.declined = make(map[wire.NodeID]bool)
		}
		if len(mg.declined) < MaxGroupSize {
			mg.declined[m.From] = true
		}
		return ""
	}
	if n.state != wire.StateNormal {
		return ""
	}
	n.renumber(now, []wire.NodeID{m.From})
	return ReasonMerge
}

// scanLate asks members whose acknowledgements stopped, by a Ready of the
// current list, whether they are there; the Ready round drops them after
// ReadyTimeout. It runs when the earliest member may be late.
func (n *Node) scanLate(now time.Time) {
	late := n.t.AckLate(n.quorumMode())
	var next time.Time
	var silent []wire.NodeID
	for id, mb := range n.coord.members.all() {
		if id == n.id {
			continue
		}
		if due := mb.heard.Add(late); now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
		} else if n.coord.ready == nil || !n.coord.ready.pending[id] {
			silent = append(silent, id)
		}
	}
	if next.IsZero() {
		next = now.Add(late)
	}
	n.coord.nextLate = next
	if len(silent) == 0 {
		return
	}
	slices.Sort(silent)
	if n.coord.ready == nil {
		n.coord.ready = &readyRound{
			version:  n.version,
			pending:  make(map[wire.NodeID]bool, len(silent)),
			deadline: now.Add(n.t.ReadyTimeout),
			resendAt: now.Add(n.t.AnswerTimeout),
		}
	}
	for _, id := range silent {
		n.coord.ready.pending[id] = true
		n.sendReady(id)
	}
}

// Lease returns whether the node is primary and, for a quorum-mode leader,
// when its lease ends unless renewed (zero otherwise), as of the last
// input: what a runtime publishes after every input, cheaply, since a
// lease is renewed without any change of view (no Event).
func (n *Node) Lease() (primary bool, until time.Time) { return n.lease.primary, n.lease.leaseUntil }
