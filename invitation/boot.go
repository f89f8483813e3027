package invitation

import (
	"time"

	"github.com/groupd/groupd/wire"
)

// This file holds a node without a group: one that just started, or lost
// its group (the paper's Recovery), and a second process with the node's
// ID.
//
// Such a node does not create a singleton number at once. For a boot
// window (two AnswerTimeouts) it beacons every AnswerTimeout with its
// group zero and listens:
//
//   - A Normal coordinator that outranks it invites it into its current
//     group: no new number, and the coordinator stays Normal (joining a
//     group does not disturb its leader).
//   - Every node with a group answers with a beacon of its own, which
//     carries the highest sequence it has seen: a node whose state was lost
//     or restored creates numbers above those (besides the wall-clock
//     floor, see nextSeq).
//   - Another process with this node's ID answers too, and one of the two
//     gives way (onDuplicate) before this one has announced any number.
//
// At the end of the window, the highest-ranked node among those heard
// without a group (and the lower-ranked coordinators it heard) creates one
// number and invites them all: N nodes started together form one group
// with one number. A node that heard a higher-ranked node waits a little
// longer for its invitation, then creates a number of its own. A degraded
// node (it cannot save) never creates one: it waits to be invited.

// detach leaves the node without a group and starts its listening window.
func (n *Node) detach(now time.Time) {
	n.resetRoles()
	n.setMembers(nil)
	n.version = 0
	n.state = wire.StateElection
	n.setGroup(now, wire.GroupNumber{})
	n.gt, n.galg = n.t, n.alg
	n.start.attachAt = now.Add(n.t.bootWindow())
	n.disc.nextBeacon = now
	n.disc.announced = false
}

// bootWindowDue is when a node without a group must next weigh the nodes
// it heard: at the end of its listening window, then at the end of its
// wait for a higher node's invitation. A node waiting for its number's
// save, or degraded (it waits to be invited), has nothing to weigh.
func (n *Node) bootWindowDue() time.Time {
	switch {
	case n.store.pending != nil || n.degraded():
		return time.Time{}
	case n.start.waitUntil.IsZero():
		return n.start.attachAt
	}
	return n.start.waitUntil
}

// tickDetached runs the listening window of a node without a group. It
// polls (it runs on every Tick from the window's end): the higher node it
// waits for may have gone silent or joined a group since the last, and
// then it need not wait for the end of its wait.
func (n *Node) tickDetached(now time.Time) Reason {
	if now.Before(n.start.attachAt) || n.store.pending != nil {
		return ""
	}
	if o := n.start.offer; o != nil {
		// Invited while the node was still booting: it waited for the
		// end of its boot window, to be sure no other process holds its
		// ID, before it joined.
		n.start.offer = nil
		if why := n.onInvitation(now, *o, o.Body.(wire.Invitation)); why != "" {
			return why
		}
	}
	if n.degraded() {
		return ""
	}
	me := n.rank()
	higher := false
	// How long to wait for a higher-ranked node's invitation is a timeout
	// on that node's phases (its boot window, save and accept window), so
	// it follows the timing it announced (design §3.8); the longest of
	// those heard, and this node's own for one that announced none.
	var wait time.Duration
	waitFor := func(w time.Duration) {
		if w == 0 {
			w = n.t.inviteWait()
		}
		wait = max(wait, w)
	}
	var fresh []freshTarget
	for _, id := range sortedIDs(n.disc.fresh) {
		f := n.disc.fresh[id]
		if me.Less(f.rank) {
			higher = true
			waitFor(f.wait)
		} else {
			fresh = append(fresh, freshTarget{id: id, boot: f.boot})
		}
	}
	var targets []wire.NodeID
	for _, id := range sortedIDs(n.disc.coords) {
		p := n.disc.coords[id]
		if !p.isCoordinator(id) || p.state != wire.StateNormal {
			continue
		}
		if me.Less(p.rank(id)) {
			higher = true
			waitFor(p.wait)
		} else {
			targets = append(targets, id)
		}
	}
	if higher {
		if until := n.start.attachAt.Add(wait); until.After(n.start.waitUntil) {
			n.start.waitUntil = until
		}
		if now.Before(n.start.waitUntil) {
			return "" // a higher-ranked node will invite me
		}
	}
	n.newGroup(now, &pendingGroup{purpose: forRecovery, targets: targets, fresh: fresh})
	return ReasonRecovery
}

// inviteFresh invites a node without a group into this coordinator's
// current group, which needs no new number, if this node outranks it. A
// node is invited at most once per AnswerTimeout per boot.
func (n *Node) inviteFresh(now time.Time, m wire.Message) {
	f := n.disc.fresh[m.From]
	if f == nil || !n.isCoordinator() || n.store.pending != nil || n.start.stopped {
		return
	}
	if !f.rank.Less(n.rank()) || now.Sub(f.invited) < n.t.AnswerTimeout {
		return
	}
	switch {
	case n.coord.merge != nil:
		if _, ok := n.coord.merge.invited[m.From]; !ok {
			n.coord.merge.invited[m.From] = false
			n.coord.merge.fresh[m.From] = f.boot
			if n.coord.merge.expect > 0 {
				n.coord.merge.expect++
			}
		}
	case n.state != wire.StateNormal:
		return // a Ready round of a new group: its late-Accept path takes the node then
	}
	f.invited = now
	n.sendBoot(m.From, f.boot, wire.Invitation{Group: n.group, Timing: n.t.announce(n.alg)})
}

// replyFresh answers a node without a group (from) with a beacon of its
// own, to that node alone and at most once per AnswerTimeout: it tells
// that node this node exists, which group it is in, and the highest number
// it has seen. Coordinators answer, and so do the members of a group whose
// coordinator is the booting node: a coordinator speaks and invites for
// its group, and its high-water mark covers its members', except when it
// is the node that restarted, possibly without its state, before its
// members gave up on it; then they are the ones who know its numbers.
// When every node answered, a cold start of N nodes cost O(N²) beacons;
// when the coordinators answered by multicast, G groups woke every node of
// the LAN G times per AnswerTimeout while any node booted (at N = 256 on
// one host, with nodes booting and losing their groups for minutes, that
// storm kept the top node's queue full).
func (n *Node) replyFresh(now time.Time, from wire.NodeID) {
	if !(n.isCoordinator() || from == n.group.ID) {
		return
	}
	last := &n.disc.replied
	if f := n.disc.fresh[from]; f != nil {
		last = &f.replied
	}
	if now.Sub(*last) < n.t.AnswerTimeout {
		return
	}
	*last = now
	n.sendBeacon(from, beatFields{})
}

// onDuplicate handles a message carrying this node's ID from another boot:
// a second process uses the ID. Of the two, a process still in its boot
// window gives way to one that has run longer; between two alike, the one
// with the lower boot nonce gives way. A booting node holds invitations
// until its window ends, so it has joined nothing when it gives way. Both decide alike from what the
// other's header says, so exactly one yields. A node that gives way stops
// at once and does nothing more; the other announces itself now, so that
// the newcomer hears it before it creates any number.
func (n *Node) onDuplicate(now time.Time, m wire.Message) Reason {
	theirs := m.Flags&wire.FlagSettled != 0
	yield := (!n.start.settled && theirs) || (n.start.settled == theirs && n.boot < m.Boot)
	if n.start.dups == nil {
		n.start.dups = make(map[uint64]bool)
	}
	if !n.start.dups[m.Boot] && len(n.start.dups) < 64 {
		n.start.dups[m.Boot] = true
		n.notice(Notice{Kind: NoticeDuplicateID, Time: now, Peer: n.id, Boot: m.Boot, Yield: yield})
	}
	if yield {
		n.start.stopped = true
		n.resetRoles()
		n.out.Messages = nil // nothing more leaves this process
		return ReasonYielded
	}
	if now.Sub(n.disc.replied) >= n.t.AnswerTimeout {
		n.disc.replied = now
		n.beacon(now)
	}
	return ""
}
