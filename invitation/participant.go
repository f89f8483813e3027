package invitation

import (
	"time"

	"github.com/groupd/groupd/wire"
)

// This file holds the participant's side: liveness of the coordinator,
// invitations, Ready, and the bully election among a failed coordinator's
// survivors.

func (n *Node) tickParticipant(now time.Time) Reason {
	c := n.group.ID
	if now.Sub(n.lastYes) > n.t.AliveTimeout {
		n.startElection(now)
		return ReasonElection
	}
	if !n.probeUntil.IsZero() && !now.Before(n.probeUntil) {
		n.probeUntil = time.Time{}
		if !n.lastYes.After(n.probeSince) {
			n.startElection(now)
			return ReasonElection
		}
	}
	if !now.Before(n.nextAYT) {
		n.send(c, wire.AreYouThere{Group: n.group})
		// Once a reply is overdue, ask again every round trip instead
		// of every AliveInterval: on a lossy link that doubles the
		// attempts before AliveTimeout without delaying detection of a
		// real failure.
		next := n.t.AliveInterval
		if now.Sub(n.lastYes) >= n.t.AliveInterval {
			next = min(next, n.t.AnswerTimeout)
		}
		n.nextAYT = now.Add(next)
	}
	return ""
}

func (n *Node) tickReorganization(now time.Time) Reason {
	if !now.Before(n.reorgUntil) {
		// The new coordinator never sent Ready: Recovery.
		n.recover(now)
		return ReasonRecovery
	}
	if !now.Before(n.resendAcc) {
		n.send(n.group.ID, wire.Accept{Group: n.group})
		n.resendAcc = now.Add(n.t.AnswerTimeout)
	}
	return ""
}

func (n *Node) onAliveYes(now time.Time, m wire.Message, b wire.Yes) {
	if m.From != n.group.ID || m.Group != n.group || n.isCoordinator() {
		return
	}
	if e := n.election; e != nil && n.state == wire.StateElection && e.Group() == n.group {
		// Bully was started on a false suspicion and the coordinator
		// still counts me as a member: return to Normal.
		n.election = nil
		n.state = wire.StateNormal
		n.nextAYT = now.Add(n.t.AliveInterval)
	}
	if n.state == wire.StateNormal {
		n.lastYes = now
	}
}

func (n *Node) onNo(now time.Time, m wire.Message, b wire.No) Reason {
	if b.Query != wire.TypeAreYouThere || m.From != n.group.ID || n.isCoordinator() || n.state != wire.StateNormal {
		return ""
	}
	// My coordinator is alive but no longer has me in this group (it
	// restarted, or dropped me): carry on with the other survivors.
	n.startElection(now)
	return ReasonElection
}

// startElection runs the configured election (bully by default) among the
// survivors of my group, without the coordinator I lost.
func (n *Node) startElection(now time.Time) {
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
		n.recover(now)
		return
	}
	n.resetRoles()
	n.state = wire.StateElection
	n.election = e
	n.electAt = time.Time{}
	if top, ok := n.highest(cands); ok && n.alg == ElectionBully {
		// Every survivor usually learns of the failure at once (the
		// failure detector's gossip), and bully among n of them then
		// costs up to n² messages. The highest survivor wins at once
		// and invites the others, so the rest hold back for one
		// AnswerTimeout and join it; they run bully only if no
		// invitation came, e.g. because the highest survivor died too.
		// Meanwhile an Election from a lower survivor is answered.
		// One Election goes to the highest survivor at once: if it has
		// not noticed the failure yet, it probes the coordinator now
		// rather than at its own timeout, as it did when every lower
		// survivor sent it one.
		n.electAt = now.Add(n.t.AnswerTimeout)
		n.send(top, wire.Election{Group: n.group})
		return
	}
	e.Start(now)
	n.afterElection(now)
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

func (n *Node) tickElection(now time.Time) Reason {
	switch {
	case n.electAt.IsZero():
		n.election.Tick(now)
	case now.Before(n.electAt):
		return "" // still holding back
	default:
		n.electAt = time.Time{}
		n.election.Start(now)
	}
	return n.afterElection(now)
}

// afterElection sends what the election queued and acts on its result.
func (n *Node) afterElection(now time.Time) Reason {
	e := n.election
	e.drain(n.send)
	switch e.outcome() {
	case won:
		n.election = nil
		var invite []wire.NodeID
		for _, m := range n.members {
			if m.ID != n.id && m.ID != n.group.ID {
				invite = append(invite, m.ID)
			}
		}
		n.newGroup(now, &pendingGroup{purpose: forFailover, members: invite})
		return ReasonElection
	case failed:
		n.recover(now)
		return ReasonRecovery
	}
	return ""
}

// onElectionMessage routes bully's Election/Answer and the ring's messages.
func (n *Node) onElectionMessage(now time.Time, m wire.Message) Reason {
	g, ours := n.electionGroup(m.Body)
	if !ours {
		return ""
	}
	if e := n.election; e != nil && e.Group() == g {
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
			if n.up[m.From] != nil {
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
			if n.probeUntil.IsZero() {
				n.probeSince = now
				n.probeUntil = now.Add(n.t.AnswerTimeout)
				n.send(n.group.ID, wire.AreYouThere{Group: n.group})
			}
		}
		return ""
	}
	if n.isCoordinator() && g == n.prevGroup && n.prevMembers[m.From] {
		// A survivor of my previous group, unaware I won: invite it.
		n.reinvite(now, m.From)
	}
	return ""
}

// onInvitation is the paper's Invitation handler, with the rules that keep
// ranks ordered: a coordinator joins only a higher-ranked inviter; a
// participant follows its own coordinator (which forwards invitations it
// accepted) or an inviter ranked above that coordinator; a bully survivor
// joins any higher-ranked inviter. Nodes in the middle of forming a group
// ignore invitations, as in the paper.
func (n *Node) onInvitation(now time.Time, m wire.Message, b wire.Invitation) Reason {
	g := b.Group
	if g.ID == 0 || g.ID == n.id {
		return ""
	}
	if g == n.group {
		// A duplicate: repeat the Accept in case it was lost.
		if !n.isCoordinator() {
			n.send(g.ID, wire.Accept{Group: g})
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
	case n.pending != nil:
		// Creating a number that nothing carries yet: give it up for a
		// higher-ranked inviter.
		accept = direct && higher
	case n.election != nil:
		accept = higher || m.From == n.group.ID
	case n.state != wire.StateNormal:
		accept = false
	case n.isCoordinator():
		accept = direct && higher
	default:
		mine := n.group.ID
		accept = m.From == mine || (direct && n.memberRank(mine).Less(m.Rank()))
	}
	if !accept {
		return ""
	}
	// Bring my whole group along: my members if I coordinate, or the
	// survivors I was about to invite as bully winner.
	var forward []wire.NodeID
	switch {
	case n.isCoordinator() && n.merge == nil && n.ready == nil:
		forward = sortedIDs(n.up)
	case n.pending != nil && n.pending.purpose == forFailover:
		forward = n.pending.members
	}
	for _, id := range forward {
		if id != n.id && id != g.ID {
			n.send(id, wire.Invitation{Group: g})
		}
	}
	n.join(now, g)
	return ReasonInvited
}

// memberRank returns the rank of a member of my current group.
func (n *Node) memberRank(id wire.NodeID) wire.Rank {
	for _, m := range n.members {
		if m.ID == id {
			return m.Rank()
		}
	}
	if p := n.coords[id]; p != nil {
		return p.rank(id)
	}
	return wire.Rank{ID: id}
}

// join accepts an invitation into g.
func (n *Node) join(now time.Time, g wire.GroupNumber) {
	n.resetRoles()
	n.state = wire.StateReorganization
	n.setGroup(now, g)
	n.setMembers(nil)
	n.version = 0
	n.reorgUntil = now.Add(n.t.reorgTimeout())
	n.resendAcc = now.Add(n.t.AnswerTimeout)
	n.send(g.ID, wire.Accept{Group: g})
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
	a := n.asm
	if a == nil || a.group != b.Group || a.version != b.Version || len(a.members) != int(b.Total) {
		a = &assembly{group: b.Group, version: b.Version, members: make([]wire.Member, b.Total), have: make([]bool, b.Total), missing: int(b.Total)}
		n.asm = a
	}
	for i, mb := range b.Members {
		k := int(b.Offset) + i
		if !a.have[k] {
			a.have[k] = true
			a.missing--
		}
		a.members[k] = mb
	}
	if a.missing > 0 {
		return ""
	}
	n.asm = nil
	in := false
	for _, mb := range a.members {
		if mb.ID == n.id {
			in = true
		}
	}
	if !in {
		if n.state == wire.StateNormal {
			// The coordinator dropped me: start again alone, and let
			// it merge me back.
			n.recover(now)
			return ReasonRecovery
		}
		// My Accept has not reached it yet; keep repeating it.
		return ""
	}
	sortMembers(a.members)
	n.setMembers(a.members)
	n.version = b.Version
	why := ReasonMembers
	if n.state != wire.StateNormal {
		why = ReasonReady
		n.state = wire.StateNormal
		n.election, n.pending = nil, nil
		n.reorgUntil, n.resendAcc = time.Time{}, time.Time{}
		n.nextAYT = now.Add(n.t.AliveInterval)
	}
	n.lastYes = now
	n.send(m.From, wire.ReadyAck{Group: b.Group, Version: b.Version})
	return why
}
