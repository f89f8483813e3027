package invitation

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/groupd/groupd/wire"
)

// This file holds the participant's side: liveness of the coordinator,
// invitations, Ready, and the bully election among a failed coordinator's
// survivors.
//
// An idle participant sends nothing at all: its coordinator's heartbeat (a beacon every AliveInterval, to the whole
// group at once) tells it the coordinator is alive. Only when a heartbeat
// is late (AliveInterval + AnswerTimeout) does it ask AreYouThere, again
// every AnswerTimeout, and it gives up AliveTimeout after the last sign of
// life. All of these are its coordinator's intervals, announced in Ready.

// assembly collects the chunks of a split Ready.
type assembly struct {
	group   wire.GroupNumber
	version uint64
	members []wire.Member
	homes   []uint32 // the members' homes, where the coordinator sent them
	have    []bool
	missing int
}

// endProbe ends a suspicion probe: without a sign of life of the
// coordinator since it began, the participant starts an election.
func (n *Node) endProbe(now time.Time) Reason {
	n.part.probeUntil = time.Time{}
	if !n.part.lastYes.After(n.part.probeSince) {
		return n.startElection(now)
	}
	return ""
}

// askDue is when a participant next asks its coordinator AreYouThere:
// once a heartbeat is late, or the coordinator announced a newer member
// list than the participant has for behindLimit, at most once per
// AnswerTimeout.
func (n *Node) askDue() time.Time {
	at := n.part.lastYes.Add(n.gt.AliveInterval + n.gt.AnswerTimeout)
	if !n.part.behindSince.IsZero() {
		if stale := n.part.behindSince.Add(n.behindLimit()); stale.Before(at) {
			at = stale
		}
	}
	return later(at, n.part.nextAYT)
}

// askCoordinator asks the coordinator whether it is alive and still
// counts this node as a member.
func (n *Node) askCoordinator(now time.Time) {
	n.send(n.group.ID, wire.AreYouThere{Group: n.group})
	n.part.nextAYT = now.Add(n.gt.AnswerTimeout)
}

// beatDecay weighs the heartbeat loss estimate towards the last ~16
// heartbeats: a quiet network brings the timeout back to AliveTimeout
// within a few seconds.
const beatDecay = 15.0 / 16

// noteBeat counts a heartbeat of my coordinator, and the ones missed since
// the last (the coordinator beacons every AliveInterval of its own).
//
// The estimate is of the link to this group's coordinator: a node that
// joins another group starts afresh. Carried over, the misses counted
// while it was cut off from its old coordinator stretched its timeout in
// the new group for seconds, past T_failover.
func (n *Node) noteBeat(now time.Time) {
	if n.part.beatGroup != n.group {
		n.part.beatRecv, n.part.beatMiss = 0, 0
	}
	if n.part.beatGroup == n.group && !n.part.lastBeat.IsZero() {
		gap := now.Sub(n.part.lastBeat)
		missed := float64(max(0, (gap+n.gt.AliveInterval/2)/n.gt.AliveInterval-1))
		n.part.beatRecv = n.part.beatRecv*beatDecay + 1
		n.part.beatMiss = n.part.beatMiss*beatDecay + min(missed, 16)
	}
	n.part.lastBeat, n.part.beatGroup = now, n.group
}

// aliveTimeout is how long a participant waits for a sign of life of its
// coordinator before it suspects it: AliveTimeout, stretched when the
// heartbeats it hears show loss. With a heartbeat lost with probability
// p, a run of k losses (and the AreYouThere round trips between them)
// happens about every p^-k heartbeats; a false suspicion costs the LAN
// two group numbers (the survivor's, then the coordinator's merge), so
// the timeout covers the k with p^k < 1e-4, up to 4·AliveTimeout: under
// 30 % loss 2.1 s instead of 0.75 s. Failover in a lossy network is that
// much slower; in a quiet one (p < 5 %) nothing changes, and so T_failover
// holds as stated for a connected, quiet network.
func (n *Node) aliveTimeout() time.Duration {
	gt := n.gt
	p := 0.0
	if t := n.part.beatRecv + n.part.beatMiss; t >= 4 {
		p = n.part.beatMiss / t
	}
	if p < 0.05 {
		return gt.AliveTimeout
	}
	k := math.Ceil(math.Log(1e-4) / math.Log(min(p, 0.9)))
	d := time.Duration(k)*gt.AliveInterval + gt.AnswerTimeout
	return min(max(d, gt.AliveTimeout), 4*gt.AliveTimeout)
}

// behindLimit is how long a participant lets its coordinator announce a
// newer member list than the one it has before it asks: the Ready round's
// retransmissions should reach it well within this.
func (n *Node) behindLimit() time.Duration {
	return n.gt.ReadyTimeout + 2*n.gt.AnswerTimeout
}

// coordRank is my coordinator's rank as I know it: its priority from the
// member list, degraded as its last message said.
func (n *Node) coordRank() wire.Rank {
	r := n.memberRank(n.group.ID)
	r.Degraded = n.part.coordDegraded
	r.Incumbent = n.part.coordIncumbent
	return r
}

// noteOutrank records since when this participant outranks its (degraded)
// coordinator, and reports whether it does. It runs on every heartbeat as
// well as on ticks: an idle participant has no periodic tick to notice it
// on.
func (n *Node) noteOutrank(now time.Time) bool {
	if n.degraded() || !n.coordRank().Less(n.rank()) || n.lease.noPreempt && !n.part.coordDegraded {
		// With NoPreempt a higher node in the group is the norm (it
		// returned and joined): only a coordinator that cannot save is
		// taken over.
		n.part.outrankSince = time.Time{}
		return false
	}
	if n.part.outrankSince.IsZero() {
		n.part.outrankSince = now
	}
	return true
}

// maybeTakeOver starts a takeover when this participant has outranked its
// coordinator for a CheckInterval: the coordinator cannot save (its disk
// is full) while this node can, or this node came back from such a state.
// The group should be led by a node that can create numbers; the paper's
// merge rule would never move it, as only coordinators merge. The
// participant stays Normal in its group until its new number is saved.
func (n *Node) maybeTakeOver(now time.Time) Reason {
	if !n.noteOutrank(now) || now.Sub(n.part.outrankSince) < n.t.CheckInterval || n.store.pending != nil {
		return ""
	}
	var members []wire.NodeID
	for _, m := range n.members {
		if m.ID != n.id {
			members = append(members, m.ID)
		}
	}
	n.part.outrankSince = time.Time{}
	n.newGroup(now, &pendingGroup{purpose: forTakeover, members: members})
	return ""
}

// endReorganization gives up on a group whose new coordinator never sent
// Ready: Recovery.
func (n *Node) endReorganization(now time.Time) Reason {
	n.detach(now)
	return ReasonRecovery
}

// resendAccept repeats the Accept until Ready comes.
func (n *Node) resendAccept(now time.Time) {
	n.send(n.group.ID, wire.Accept{Group: n.group, Term: n.store.want.Term, Quorum: n.announceQuorum(n.ownRule())})
	n.part.resendAcc = now.Add(n.gt.AnswerTimeout)
}

// onHeartbeat handles my coordinator's beacon: an unsolicited Yes. Unlike
// a Yes to AreYouThere it does not say I am still a member, so it does not
// end an election started on a suspicion: a Yes does (the election's
// probe, or the coordinator's answer to the Election).
func (n *Node) onHeartbeat(now time.Time, m wire.Message, b wire.Beacon) {
	if m.Group != n.group {
		return // it is forming another group: its invitation will come, or its No
	}
	if n.state == wire.StateNormal {
		n.part.lastYes = now
		n.noteBeat(now)
		n.onMemberHeartbeat(now, m.Boot, b)
	}
	switch {
	case n.state != wire.StateNormal || b.Version <= n.version:
		n.part.behindSince = time.Time{}
	case n.part.behindSince.IsZero():
		// It announces a newer member list: its Ready should be on its
		// way; ask if it does not come.
		n.part.behindSince = now
	}
}

// onAliveYes handles my coordinator's Yes to AreYouThere (or to an
// Election): it is alive and counts me as a member. An election started
// on a false suspicion ends, and that is reported as "confirmed".
func (n *Node) onAliveYes(now time.Time, m wire.Message, b wire.Yes) Reason {
	if m.From != n.group.ID || m.Group != n.group || n.isCoordinator() {
		return ""
	}
	why := Reason("")
	if n.alive(now) {
		why = ReasonConfirmed
	}
	if b.Version <= n.version {
		n.part.behindSince = time.Time{}
	}
	return why
}

// alive records a sign of life of my coordinator in my current group. It
// reports whether that ended an election started on a false suspicion.
func (n *Node) alive(now time.Time) bool {
	ended := false
	if e := n.part.election; e != nil && n.state == wire.StateElection && e.Group() == n.group {
		// The election started on a false suspicion and the coordinator
		// still counts me as a member: return to Normal.
		n.part.election, n.part.electAt = nil, time.Time{}
		n.state = wire.StateNormal
		n.part.nextAYT = time.Time{}
		ended = true
	}
	if n.state == wire.StateNormal {
		n.part.lastYes = now
	}
	return ended
}

func (n *Node) onNo(now time.Time, m wire.Message, b wire.No) Reason {
	if b.Query != wire.TypeAreYouThere || m.From != n.group.ID || n.isCoordinator() || n.state != wire.StateNormal {
		return ""
	}
	switch {
	case m.Group == n.group:
		// My coordinator still runs my group but dropped me (a Ready I
		// never acknowledged): go without a group; it invites me back
		// into it, without a new number.
		n.detach(now)
		return ReasonRecovery
	case m.Group.IsZero():
		// My coordinator has no group: it restarted and is in its boot
		// window (or lost its group). It forms or joins a group soon;
		// an election would spend a number that its group then merges
		// away. Go without a group too: at the end of its window it
		// invites the nodes it heard without one, or the highest of us
		// does if it cannot (design §3.2).
		n.detach(now)
		return ReasonRecovery
	}
	// My coordinator has moved on to another group: carry on with the
	// other survivors. (One that formed a group of its own invites me
	// instead of answering No: onAreYouThere.)
	return n.startElection(now)
}

// startElection runs the group's election (its coordinator's choice,
// bully by default) among the survivors of my group, without the
// coordinator I lost, and returns the reason to report: election. A
// degraded node does not: it could not create the winner's number, so it
// goes without a group and waits to be invited (recovery).
func (n *Node) startElection(now time.Time) Reason {
	if n.degraded() {
		n.detach(now)
		return ReasonRecovery
	}
	old := n.group.ID
	var cands []wire.Member
	for _, m := range n.members {
		if m.ID != old {
			cands = append(cands, m)
		}
	}
	e, err := n.newElection(n.group, cands)
	if err != nil {
		// Only invalid timing makes an election refuse, and Config was
		// validated; fall back to the paper's Recovery regardless.
		n.detach(now)
		return ReasonRecovery
	}
	n.resetRoles()
	n.state = wire.StateElection
	n.part.election = e
	if top, ok := n.highest(cands); ok && n.galg == ElectionBully {
		// Every survivor usually learns of the failure at once (the
		// heartbeat stops for all), and bully among n of them then costs
		// up to n² messages. The highest survivor wins at once and
		// invites the others, so the rest hold back for one
		// AnswerTimeout and join it; they run bully only if no invitation
		// came, e.g. because the highest survivor died too. Meanwhile an
		// Election from a lower survivor is answered. One Election goes
		// to the highest survivor at once: if it has not noticed the
		// failure yet, it probes the coordinator now rather than at its
		// own timeout.
		n.part.electAt = now.Add(n.gt.AnswerTimeout)
		n.send(top, wire.Election{Group: n.group})
		return ReasonElection
	}
	e.Start(now)
	if why := n.afterElection(now); why != "" {
		return why
	}
	return ReasonElection
}

// highest returns the highest-ranked candidate, and whether it outranks me.
func (n *Node) highest(cands []wire.Member) (wire.NodeID, bool) {
	best := n.rank()
	for _, m := range cands {
		if best.Less(m.Rank()) {
			best = m.Rank()
		}
	}
	return best.ID, best.ID != n.id
}

// tickElection is the election timer's work: the end of a survivor's
// hold-back (it runs the election now), or the embedded election's own
// deadline, past a stall's round trip (noteStall).
func (n *Node) tickElection(now time.Time) Reason {
	if n.part.electAt.IsZero() {
		n.part.election.Tick(now)
	} else {
		// The hold-back is over and no invitation came: run it.
		n.part.electAt = time.Time{}
		n.part.election.Start(now)
	}
	return n.afterElection(now)
}

// afterElection sends what the election queued and acts on its result.
func (n *Node) afterElection(now time.Time) Reason {
	e := n.part.election
	e.drain(n.send)
	switch e.outcome() {
	case won:
		n.part.election = nil
		var invite []wire.NodeID
		for _, m := range n.members {
			if m.ID != n.id && m.ID != n.group.ID {
				invite = append(invite, m.ID)
			}
		}
		n.newGroup(now, &pendingGroup{purpose: forFailover, members: invite})
		return ReasonElection
	case failed:
		n.detach(now)
		return ReasonRecovery
	}
	return ""
}

// onElectionMessage routes bully's Election/Answer and the ring's messages.
func (n *Node) onElectionMessage(now time.Time, m wire.Message) Reason {
	g, ours := n.electionGroup(m.Body)
	if !ours || n.degraded() {
		// A degraded node takes no part: it must not win, nor answer and
		// so stop a survivor that can.
		return ""
	}
	if e := n.part.election; e != nil && e.Group() == g {
		e.Step(now, m.From, m.Body)
		return n.afterElection(now)
	}
	switch m.Body.(type) {
	case wire.Election, wire.RingElection:
	default:
		return "" // answers and acks for an election I no longer run
	}
	if g == n.group {
		switch {
		case n.isCoordinator():
			// A member thinks I failed. If it still belongs, tell it I
			// am alive; it then returns to Normal.
			if n.coord.members.has(m.From) {
				n.send(m.From, wire.Yes{Query: wire.TypeAreYouThere, Version: n.version})
			}
		case n.state == wire.StateNormal:
			// I still hear my coordinator. Stop the survivor (bully's
			// Answer; the ring's ack keeps it from skipping me), and
			// check at once whether it is right.
			switch b := m.Body.(type) {
			case wire.Election:
				if !m.Rank().Less(n.rank()) {
					return ""
				}
				n.send(m.From, wire.Answer{Group: b.Group})
			case wire.RingElection:
				n.send(m.From, wire.RingAck{Group: b.Group, Of: wire.TypeRingElection, Round: b.Round, Candidate: b.Candidate})
			}
			if n.part.probeUntil.IsZero() {
				n.part.probeSince = now
				n.part.probeUntil = now.Add(n.gt.AnswerTimeout)
				n.send(n.group.ID, wire.AreYouThere{Group: n.group})
			}
		}
		return ""
	}
	if n.isCoordinator() && g == n.coord.prevGroup && n.coord.prevMembers[m.From] {
		// A survivor of my previous group, unaware I won: invite it.
		n.reinvite(now, m.From)
	}
	return ""
}

// onInvitation is the paper's Invitation handler, with the rules that keep
// ranks ordered: a coordinator joins only a higher-ranked inviter; a
// participant follows its own coordinator (which forwards invitations it
// accepted) or an inviter ranked above that coordinator; a bully survivor
// joins any higher-ranked inviter; a node without a group joins a
// higher-ranked inviter, or any inviter while degraded. Nodes in the middle
// of forming a group ignore invitations, as in the paper.
func (n *Node) onInvitation(now time.Time, m wire.Message, b wire.Invitation) Reason {
	g := b.Group
	if g.ID == 0 || g.ID == n.id {
		return ""
	}
	if g == n.group {
		// A duplicate: repeat the Accept in case it was lost.
		if !n.isCoordinator() {
			n.send(g.ID, wire.Accept{Group: g, Term: n.store.want.Term, Quorum: n.announceQuorum(n.ownRule())})
		}
		return ""
	}
	if g.ID == n.group.ID && g.Seq < n.group.Seq {
		return "" // an old invitation from my coordinator, reordered
	}
	direct := m.From == g.ID
	higher := n.rank().Less(m.Rank())
	accept := false
	switch {
	case n.store.pending != nil && n.store.pending.purpose != forTakeover:
		// Creating a number that nothing carries yet: give it up for a
		// higher-ranked inviter.
		accept = direct && higher
	case n.group.IsZero():
		accept = direct && (higher || n.degraded())
		if accept && !n.start.settled {
			m := m
			n.start.offer = &m // joined at the end of the boot window
			if n.disc.nextBeacon.After(now) {
				// Its first beacon went out (an inviter heard it): the
				// next can wait (see beaconPeriod).
				n.disc.nextBeacon = later(n.disc.nextBeacon, now.Add(n.t.BeaconInterval))
			}
			return ""
		}
	case n.part.election != nil:
		accept = higher || m.From == n.group.ID || n.degraded()
	case n.state == wire.StateReorganization && direct && m.From == n.group.ID && n.group.Less(g):
		// My inviter renumbered its new group (an invitee declined the
		// number, design §4): follow it.
		accept = true
	case n.state != wire.StateNormal:
		accept = false
	case n.isCoordinator():
		accept = direct && higher // a degraded node ranks below any healthy one
	default:
		accept = m.From == n.group.ID || (direct && n.coordRank().Less(m.Rank()))
	}
	if !accept {
		return ""
	}
	if held := n.store.want.LastGroup; g.Less(held) {
		// A node's group numbers only grow (design §4, S5): tell the
		// inviter the number I held; it renumbers above it and invites
		// me again.
		n.send(g.ID, wire.Decline{Group: g, Held: held})
		return ""
	}
	// Bring my whole group along: my members if I coordinate, or the
	// survivors I was about to invite as bully winner.
	var forward []wire.NodeID
	switch {
	case n.isCoordinator() && n.coord.merge == nil && n.coord.ready == nil:
		forward = n.coord.members.ids()
	case n.store.pending != nil && n.store.pending.purpose == forFailover:
		forward = n.store.pending.members
	}
	for _, id := range forward {
		if id != n.id && id != g.ID {
			n.send(id, b)
		}
	}
	n.join(now, g, b.Timing)
	return ReasonInvited
}

// memberRank returns the rank of a member of my current group.
func (n *Node) memberRank(id wire.NodeID) wire.Rank {
	// The list is sorted by ID (setMembers' callers sort it), and this
	// runs on every heartbeat: a scan cost O(N) per heartbeat per node.
	if i, ok := slices.BinarySearchFunc(n.members, id, func(m wire.Member, id wire.NodeID) int { return cmp.Compare(m.ID, id) }); ok {
		return n.members[i].Rank()
	}
	if p := n.disc.coords[id]; p != nil {
		return p.rank(id)
	}
	return wire.Rank{ID: id}
}

// join accepts an invitation into g from an inviter announcing timing a:
// the invitee waits for Ready as long as the inviter's accept window and
// Ready retransmissions take.
func (n *Node) join(now time.Time, g wire.GroupNumber, a wire.Timing) {
	n.resetRoles()
	n.state = wire.StateReorganization
	n.setGroup(now, g)
	n.setMembers(nil)
	n.version = 0
	n.gt, n.galg = n.t.adopt(a), electionOf(a, n.alg)
	n.part.coordDegraded = false
	n.part.reorgUntil = now.Add(n.gt.reorgTimeout())
	n.part.resendAcc = now.Add(n.gt.AnswerTimeout)
	n.send(g.ID, wire.Accept{Group: g, Term: n.store.want.Term, Quorum: n.announceQuorum(n.ownRule())})
}

func (n *Node) onReady(now time.Time, m wire.Message, b wire.Ready) Reason {
	if b.Group != n.group || m.From != n.group.ID || n.isCoordinator() {
		return ""
	}
	if b.Version < n.version {
		return ""
	}
	if b.Version == n.version && n.state == wire.StateNormal {
		n.send(m.From, wire.ReadyAck{Group: b.Group, Version: b.Version})
		return ""
	}
	if b.Total == 0 || b.Total > MaxGroupSize || uint64(b.Offset)+uint64(len(b.Members)) > uint64(b.Total) {
		return ""
	}
	a := n.part.asm
	if a == nil || a.group != b.Group || a.version != b.Version || len(a.members) != int(b.Total) {
		a = &assembly{group: b.Group, version: b.Version, members: make([]wire.Member, b.Total), have: make([]bool, b.Total), missing: int(b.Total)}
		n.part.asm = a
	}
	for i, mb := range b.Members {
		k := int(b.Offset) + i
		if !a.have[k] {
			a.have[k] = true
			a.missing--
		}
		a.members[k] = mb
		if i < len(b.Homes) {
			if a.homes == nil {
				a.homes = make([]uint32, b.Total)
			}
			a.homes[k] = b.Homes[i]
		}
	}
	if a.missing > 0 {
		return ""
	}
	n.part.asm = nil
	in := false
	for _, mb := range a.members {
		if mb.ID == n.id {
			in = true
		}
	}
	if !in {
		if n.state == wire.StateNormal {
			// The coordinator dropped me: start again without a group,
			// and let it invite me back.
			n.detach(now)
			return ReasonRecovery
		}
		// My Accept has not reached it yet; keep repeating it.
		return ""
	}
	if n.q.Enabled() {
		n.quorum.roll.Listed(now, a.members, a.homes)
	}
	sortMembers(a.members)
	n.setMembers(a.members)
	n.version = b.Version
	if !b.Timing.IsZero() {
		n.gt, n.galg = n.t.adopt(b.Timing), electionOf(b.Timing, n.alg)
	}
	why := ReasonMembers
	if n.state != wire.StateNormal {
		why = ReasonReady
		n.state = wire.StateNormal
		n.part.election, n.store.pending = nil, nil
		n.part.reorgUntil, n.part.resendAcc = time.Time{}, time.Time{}
		n.part.nextAYT = time.Time{}
	}
	n.part.lastYes = now
	n.part.behindSince = time.Time{}
	n.send(m.From, wire.ReadyAck{Group: b.Group, Version: b.Version})
	return why
}
