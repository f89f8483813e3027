package invitation

import (
	"time"

	"github.com/groupd/groupd/wire"
)

// This file holds Step, the one path of every input, and its dispatch: a
// message to its handler, a Tick to the timers (timers.go), a failure
// detector's verdict, a save's outcome; and the stall rule that makes
// judgments wait for what a late node has not read yet.

// Step feeds the node one input at time now. Messages from the node
// itself (the same boot), from node 0 or without a body are ignored; so
// are stale, duplicate and reordered ones, by the rules of each handler. A
// node that yielded its ID ignores everything.
func (n *Node) Step(now time.Time, in Input) {
	if n.start.stopped {
		return
	}
	n.now = now
	if !n.start.settled && !now.Before(n.start.bootEnd) {
		n.start.settled = true
	}
	// The lease may have run out since the last input: decide on the
	// flag this input's messages carry.
	n.updateLease(now)
	if _, tick := in.(Tick); !tick && !now.Before(n.nextSweep.Add(-n.t.sweepInterval()/2)) {
		// Early, on whatever input comes (a heartbeat, mostly), rather
		// than on a timer of its own: an idle node then wakes only for
		// its heartbeats. An early sweep still forgets only the peers
		// already silent for PeerTimeout.
		n.sweep(now)
	}
	why := Reason("")
	switch in := in.(type) {
	case Receive:
		why = n.receive(now, in.Msg)
	case Tick:
		n.noteStall(now, in.Due)
		why = n.tick(now)
	case PeerDown:
		if in.Left && n.q.Enabled() {
			n.quorum.roll.Left(in.ID)
		}
		why = n.peerDown(now, in.ID)
	case Saved:
		why = n.saved(now, in.Durable)
	case SaveFailed:
		why = n.saveFailed(now, in.Durable, in.Err)
	}
	if w := n.maybeReterm(now); why == "" {
		why = w
	}
	n.payOwed(now)
	n.updateLease(now)
	if why == "" {
		why = ReasonMembers
		if n.lease.primary != n.last.Primary && n.group == n.last.Group && n.state == n.last.State {
			why = ReasonLease
		}
	}
	n.armBeacon(now)
	n.report(now, why)
}

// noteStall notices that this node was not running when its timers came
// due: a Tick more than AnswerTimeout after its Due. What the node was
// told meanwhile may still be waiting in its socket or its runtime's
// queue, behind the timer. Judged now, a coordinator whose heartbeats
// waited there would look silent, and so would members whose
// acknowledgements did; a participant would start an election, a joiner
// give up its invitation, a coordinator drop its members, each on
// evidence it has not read. So every such judgment waits one round trip
// (AnswerTimeout) past the stall, while the probes and retransmissions
// that precede it go out as usual: a peer that is alive answers them
// (docs/design.md §3.10). A node that runs on time is unaffected.
//
// A stall earns that round trip only if it is an exception: the node ran
// on time, since its last late tick, for at least twice as long as this
// tick is late. On a host so loaded that every tick comes late, each
// would otherwise push the judgment past the next late tick, and a
// participant whose coordinator really died would never elect; there the
// first stall gets its round trip and the judgments that follow are made
// on what the node has read.
func (n *Node) noteStall(now, due time.Time) {
	if due.IsZero() {
		return
	}
	at := n.gt.AnswerTimeout // the group's round trip (its own when it coordinates or has none)
	late := now.Sub(due)
	if late <= at {
		return
	}
	if n.lastLate.IsZero() || now.Sub(n.lastLate) > 2*late {
		n.judgeAfter = now.Add(at)
	}
	n.lastLate = now
}

// afterStall returns when a judgment due at t may be made: t, or the end
// of the round trip that follows a stall (noteStall).
func (n *Node) afterStall(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return later(t, n.judgeAfter)
}

// peerDown handles the failure detector's verdict on id.
func (n *Node) peerDown(now time.Time, id wire.NodeID) Reason {
	n.forgetCoord(id)
	delete(n.disc.fresh, id)
	delete(n.disc.loud, id)
	switch {
	case id == n.id:
	case n.isCoordinator() && n.state == wire.StateNormal:
		if n.coord.members.has(id) {
			n.dropMembers(now, []wire.NodeID{id})
		}
	case !n.isCoordinator() && n.state == wire.StateNormal && id == n.group.ID:
		return n.startElection(now)
	}
	return ""
}

// receive handles one message from the network.
func (n *Node) receive(now time.Time, m wire.Message) Reason {
	if m.From == 0 || m.Body == nil {
		return ""
	}
	if m.From == n.id {
		if m.Boot == n.boot || m.Boot == 0 {
			return "" // my own multicast, looped back
		}
		return n.onDuplicate(now, m)
	}
	n.observe(now, m)
	switch b := m.Body.(type) {
	case wire.Beacon:
		n.onBeacon(now, m, b)
	case wire.AreYouCoordinator:
		n.onAreYouCoordinator(now, m)
	case wire.Yes:
		return n.onYes(now, m, b)
	case wire.No:
		return n.onNo(now, m, b)
	case wire.AreYouThere:
		n.onAreYouThere(now, m, b)
	case wire.Invitation:
		return n.onInvitation(now, m, b)
	case wire.Accept:
		n.onAccept(now, m, b)
	case wire.Ready:
		return n.onReady(now, m, b)
	case wire.ReadyAck:
		n.onReadyAck(now, m, b)
	case wire.BeatAck:
		n.onBeatAck(now, m, b)
	case wire.Decline:
		return n.onDecline(now, m, b)
	case wire.Election, wire.Answer, wire.RingElection, wire.RingElected, wire.RingAck:
		return n.onElectionMessage(now, m)
	}
	return ""
}
