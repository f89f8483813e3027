package invitation

import (
	"time"

	"github.com/groupd/groupd/wire"
)

// This file holds group numbers and their persistence: a new number is
// picked above every number saved or seen and the wall clock, saved, and
// carried by nothing until the save is confirmed (createGroup); a failed
// save degrades the node and is retried.

// purpose says what a new group number is being created for.
type purpose uint8

const (
	forRecovery purpose = iota + 1 // a node without a group: singleton, or inviting the nodes it heard
	forMerge                       // merge lower coordinators' groups into mine
	forFailover                    // bully winner inviting the old members
	forTakeover                    // a participant that outranks its coordinator
)

// reason is how the view change in which a node adopts a number created
// for p is reported: why the number was made. A takeover is reported as a
// merge: the participant's new group absorbs its coordinator's.
func (p purpose) reason() Reason {
	switch p {
	case forMerge, forTakeover:
		return ReasonMerge
	case forFailover:
		return ReasonElection
	}
	return ReasonRecovery
}

// pendingGroup is a group number waiting for its save.
type pendingGroup struct {
	seq     uint64
	purpose purpose
	targets []wire.NodeID // coordinators to invite
	members []wire.NodeID // members of the old group to invite
	fresh   []freshTarget // nodes without a group to invite, by boot
}

// freshTarget is a node without a group, invited at the boot it announced.
type freshTarget struct {
	id   wire.NodeID
	boot uint64
}

// wallMS is the wall clock in Unix milliseconds (0 before 1970): the floor
// under every new sequence, so that a node whose state was lost or rolled
// back still creates numbers above those it made before, on a sane clock.
func wallMS(now time.Time) uint64 { return uint64(max(now.UnixMilli(), 0)) }

// nextSeq is the sequence of a new number: above every number saved,
// seen, or being saved, and above the wall clock in milliseconds.
func (n *Node) nextSeq(now time.Time) uint64 {
	s := max(n.store.durable.floor(), n.store.want.floor(), n.store.maxSeen, n.store.behind, wallMS(now))
	if n.store.saving != nil {
		s = max(s, n.store.saving.floor())
	}
	return s + 1
}

// newGroup asks for a new group number for p. Nothing carrying it is sent
// until a save covering it is confirmed.
func (n *Node) newGroup(now time.Time, p *pendingGroup) {
	n.store.pending = p
	if p.purpose != forTakeover {
		// A participant taking over stays in its group until the number
		// is saved: if the save fails, it has lost nothing.
		n.state = wire.StateElection
	}
	n.reserve(now)
}

// reserve picks the pending number's sequence and asks to save it.
func (n *Node) reserve(now time.Time) {
	p := n.store.pending
	p.seq = n.nextSeq(now)
	n.store.want.Counter = max(n.store.want.Counter, p.seq)
	if n.degraded() && n.store.saving == nil {
		n.retrySave(now) // a new reason to try the disk again
		return
	}
	n.requestSave(now)
}

// requestSave asks the runtime to save want, one save at a time, unless a
// failed save waits for its retry.
func (n *Node) requestSave(now time.Time) {
	if n.store.saving != nil || n.store.want == n.store.durable || n.degraded() {
		return
	}
	n.save()
}

func (n *Node) save() {
	s := n.store.want
	n.store.saving = &s
	n.out.Save = &s
}

// retrySave tries a failed save again, once per CheckInterval: the pending
// number's, or what should be saved, or (with nothing new to save) the
// saved state itself, to find out whether the disk works again.
func (n *Node) retrySave(now time.Time) {
	n.store.retryAt = now.Add(n.t.CheckInterval)
	if n.store.pending != nil {
		n.store.pending.seq = n.nextSeq(now)
		n.store.want.Counter = max(n.store.want.Counter, n.store.pending.seq)
	}
	n.save()
}

// saved handles a confirmed save.
func (n *Node) saved(now time.Time, d Durable) Reason {
	if n.store.saving != nil && *n.store.saving == d {
		n.store.saving = nil
	}
	n.store.durable.Counter = max(n.store.durable.Counter, d.Counter)
	if n.store.durable.LastGroup.Less(d.LastGroup) {
		n.store.durable.LastGroup = d.LastGroup
	}
	if n.store.durable.Term.Less(d.Term) {
		n.store.durable.Term = d.Term
	}
	n.store.durable.Rule = d.Rule // the latest: saves go one at a time, in order
	why := Reason("")
	if n.degraded() {
		n.store.persistErr, n.store.retryAt = "", time.Time{}
		why = ReasonSaved
	}
	if p := n.store.pending; p != nil && n.store.durable.Counter >= p.seq {
		// The group changes: that is the news, even when this save
		// also ended a failure (the new view shows no error).
		n.store.pending = nil
		n.createGroup(now, p)
		why = p.purpose.reason()
	}
	n.requestSave(now)
	return why
}

// saveFailed handles a failed save. No number it covered is used; the node
// is degraded (it ranks below every other node and accepts invitations from
// any of them) and retries after a CheckInterval. A takeover or a merge it
// was for is given up: the node stays what it was, where the nodes that
// now outrank it find it and invite it.
func (n *Node) saveFailed(now time.Time, d Durable, err string) Reason {
	if n.store.saving != nil && *n.store.saving == d {
		n.store.saving = nil
	}
	if err == "" {
		err = "save failed"
	}
	n.store.persistErr = err
	n.store.retryAt = now.Add(n.t.CheckInterval)
	if p := n.store.pending; p != nil {
		switch p.purpose {
		case forTakeover:
			n.store.pending = nil // stay the participant we are
		case forMerge:
			// Stay the Normal coordinator of the group we have: nothing
			// carrying the number left. Degraded, we now rank below the
			// coordinators we meant to merge, and they invite us; left
			// in Election with a group of our own, we would be invited
			// by no one, and the LAN would stay split.
			n.store.pending = nil
			n.state = wire.StateNormal
		}
	}
	return ReasonPersistFailed
}

// createGroup adopts the saved number of p and invites whom p names; with
// no one to invite, the group is the node alone, Normal at once.
func (n *Node) createGroup(now time.Time, p *pendingGroup) {
	prev := n.group
	prevMembers := n.members
	n.resetRoles()
	g := wire.GroupNumber{Seq: p.seq, ID: n.id}
	if !n.lease.leader && !n.quorumMode() && n.store.want.Term.Less(g) {
		// Its term once the group is Normal (updateLeader): saved with
		// the group (setGroup asks), in one write.
		n.store.want.Term = g
	}
	n.setGroup(now, g)
	n.out.Created = append(n.out.Created, g)
	n.gt, n.galg = n.t, n.alg
	n.coord.members.put(n.id, &member{m: n.self(), heard: now})
	n.coord.nextCheck = now.Add(n.jitter(n.t.CheckInterval))
	n.disc.nextBeacon = now // announce the new group (and beat) at once

	n.coord.prevGroup = prev
	n.coord.prevMembers = make(map[wire.NodeID]bool, len(prevMembers))
	for _, m := range prevMembers {
		if m.ID != n.id {
			n.coord.prevMembers[m.ID] = true
		}
	}

	invite := make(map[wire.NodeID]bool)
	fresh := make(map[wire.NodeID]uint64)
	expect := 0
	for _, id := range p.members {
		if id != n.id && !invite[id] {
			invite[id] = false
			expect++
		}
	}
	for _, f := range p.fresh {
		if _, ok := invite[f.id]; !ok && f.id != n.id {
			invite[f.id] = false
			fresh[f.id] = f.boot
			expect++
		}
	}
	var targets []wire.NodeID
	for _, id := range p.targets {
		if _, ok := invite[id]; ok || id == n.id {
			continue
		}
		invite[id] = false
		targets = append(targets, id)
		// The invited coordinator forwards to its members, who accept
		// too: its beacon said how many.
		if c := n.disc.coords[id]; c != nil && c.size > 0 && expect >= 0 {
			expect += int(c.size)
		} else {
			expect = -1
		}
	}
	if len(invite) == 0 {
		n.setMembers([]wire.Member{n.self()})
		n.version = 1
		n.state = wire.StateNormal
		return
	}
	n.state = wire.StateElection
	n.setMembers(nil)
	n.version = 0
	n.coord.merge = &mergeRound{
		invited:  invite,
		targets:  targets,
		fresh:    fresh,
		deadline: now.Add(n.t.AcceptWindow),
		resendAt: now.Add(n.t.AnswerTimeout),
		expect:   max(expect, 0),
	}
	n.sendInvitations(n.coord.merge)
}

// sendInvitations sends the current group's invitation to everyone in m
// who has not accepted yet.
func (n *Node) sendInvitations(m *mergeRound) {
	inv := wire.Invitation{Group: n.group, Timing: n.t.announce(n.alg)}
	for _, id := range sortedIDs(m.invited) {
		if !m.invited[id] {
			n.sendBoot(id, m.fresh[id], inv)
		}
	}
}
