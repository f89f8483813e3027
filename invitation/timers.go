package invitation

import (
	"time"

	"github.com/groupd/groupd/wire"
)

// This file holds the node's timers, in one table: when each is due and
// what a Tick does then. tick runs the table and NextDeadline reads it, so
// the time a runtime wakes the node for and the work it then finds cannot
// disagree. A timer is armed by the state it reads its time from (a round
// open, a number saved), never by a call of its own.

// timer is one of the node's timers.
type timer struct {
	name  string
	phase phase
	// due is when the timer is next due, read from the node's state; zero
	// when it is not armed.
	due func(n *Node) time.Time
	// fire is the timer's work at now. stop ends the Tick: the rest of
	// the phase's timers no longer apply. Nil for a timer that only wakes
	// the node: what it waits for is done by Step after every input
	// (updateLease, payOwed).
	fire func(n *Node, now time.Time) (why Reason, stop bool)
	// poll runs fire on every Tick of the timer's phase, due or not, and
	// fire decides whether there is work: it depends on more than a time
	// (whether a higher node is still heard, whether this node still
	// outranks its coordinator). due is then when the node must wake for
	// it at the latest.
	poll bool
}

// phase is the part of a node's life a timer belongs to. A Tick runs the
// timers of every phase (anyPhase), then those of the node's phase.
type phase uint8

const (
	anyPhase            phase = iota
	detachedPhase             // without a group (boot.go)
	savingPhase               // waiting for a new number's save: no role timer runs
	electionPhase             // bully or ring among a failed coordinator's survivors
	coordinatorPhase          // coordinating a group, in any state
	reorganizationPhase       // a participant that accepted, waiting for Ready
	participantPhase          // a Normal participant
	idlePhase                 // none of the above: no role timer
)

// phase returns the phase the node is in.
func (n *Node) phase() phase {
	switch {
	case n.group.IsZero():
		return detachedPhase
	case n.store.pending != nil && n.store.pending.purpose != forTakeover:
		return savingPhase
	case n.part.election != nil:
		return electionPhase
	case n.isCoordinator():
		return coordinatorPhase
	case n.state == wire.StateReorganization:
		return reorganizationPhase
	case n.state == wire.StateNormal:
		return participantPhase
	}
	return idlePhase
}

// timers is every timer of the node, in the order a Tick runs them. The
// order is part of the protocol: a coordinator's Ready round ends before a
// held-back member list goes out, which goes before the round's
// retransmission (which it makes moot).
var timers = [...]timer{
	{name: "beacon", due: func(n *Node) time.Time { return n.disc.nextBeacon }, fire: work((*Node).sendPeriodicBeacon)},
	{name: "sweep", due: func(n *Node) time.Time { return n.nextSweep }, fire: work((*Node).sweep)},
	{name: "save-retry", due: func(n *Node) time.Time {
		if n.degraded() && n.store.saving == nil {
			return n.store.retryAt
		}
		return time.Time{}
	}, fire: work((*Node).retrySave)},

	{name: "boot-window", phase: detachedPhase, poll: true, due: (*Node).bootWindowDue, fire: ends((*Node).tickDetached)},

	{name: "election", phase: electionPhase, due: func(n *Node) time.Time {
		if !n.part.electAt.IsZero() {
			return n.part.electAt
		}
		return n.afterStall(n.part.election.Deadline())
	}, fire: ends((*Node).tickElection)},

	{name: "accept-window", phase: coordinatorPhase, due: func(n *Node) time.Time {
		if m := n.coord.merge; m != nil {
			return n.afterStall(m.deadline)
		}
		return time.Time{}
	}, fire: ends((*Node).closeAcceptWindow)},
	{name: "invitation-resend", phase: coordinatorPhase, due: func(n *Node) time.Time {
		if m := n.coord.merge; m != nil {
			return m.resendAt
		}
		return time.Time{}
	}, fire: work((*Node).resendInvitations)},
	{name: "ready-round", phase: coordinatorPhase, due: func(n *Node) time.Time {
		if r := n.coord.ready; r != nil && n.coord.merge == nil {
			return n.afterStall(r.deadline)
		}
		return time.Time{}
	}, fire: (*Node).endReadyRound},
	{name: "member-list", phase: coordinatorPhase, due: func(n *Node) time.Time {
		if n.coord.staleVersion && n.coord.merge == nil {
			return n.coord.nextVersionAt
		}
		return time.Time{}
	}, fire: (*Node).publishHeld},
	{name: "ready-resend", phase: coordinatorPhase, due: func(n *Node) time.Time {
		if r := n.coord.ready; r != nil && n.coord.merge == nil {
			return r.resendAt
		}
		return time.Time{}
	}, fire: work((*Node).resendReady)},
	{name: "late-acks", phase: coordinatorPhase, due: func(n *Node) time.Time {
		if n.state == wire.StateNormal && n.coord.members.size() > 1 && !n.coord.nextLate.IsZero() {
			return n.afterStall(n.coord.nextLate)
		}
		return time.Time{}
	}, fire: work((*Node).scanLate)},
	{name: "check-answers", phase: coordinatorPhase, due: func(n *Node) time.Time {
		if c := n.coord.check; c != nil && n.state == wire.StateNormal {
			return c.deadline
		}
		return time.Time{}
	}, fire: (*Node).endCheck},
	{name: "merge-delay", phase: coordinatorPhase, due: func(n *Node) time.Time {
		if n.state == wire.StateNormal {
			return n.coord.mergeAt
		}
		return time.Time{}
	}, fire: ends((*Node).endMergeDelay)},
	{name: "check", phase: coordinatorPhase, due: func(n *Node) time.Time {
		if n.state == wire.StateNormal {
			return n.coord.nextCheck
		}
		return time.Time{}
	}, fire: work((*Node).startCheck)},
	{name: "ack-retry", phase: coordinatorPhase, due: func(n *Node) time.Time {
		if n.state == wire.StateNormal {
			return n.lease.ackRetryAt
		}
		return time.Time{}
	}, fire: work((*Node).retryAcks)},
	{name: "lease", phase: coordinatorPhase, due: (*Node).leaseDeadline},

	{name: "reorganization", phase: reorganizationPhase, due: func(n *Node) time.Time {
		return n.afterStall(n.part.reorgUntil)
	}, fire: ends((*Node).endReorganization)},
	{name: "accept-resend", phase: reorganizationPhase, due: func(n *Node) time.Time {
		return n.part.resendAcc
	}, fire: work((*Node).resendAccept)},

	{name: "alive", phase: participantPhase, due: func(n *Node) time.Time {
		return n.afterStall(n.part.lastYes.Add(n.aliveTimeout() + 1))
	}, fire: ends((*Node).startElection)},
	{name: "probe", phase: participantPhase, due: func(n *Node) time.Time {
		return n.afterStall(n.part.probeUntil)
	}, fire: ends((*Node).endProbe)},
	{name: "are-you-there", phase: participantPhase, due: (*Node).askDue, fire: work((*Node).askCoordinator)},
	{name: "takeover", phase: participantPhase, poll: true, due: func(n *Node) time.Time {
		if !n.part.outrankSince.IsZero() && n.store.pending == nil {
			return n.part.outrankSince.Add(n.t.CheckInterval)
		}
		return time.Time{}
	}, fire: ends((*Node).maybeTakeOver)},
	{name: "owed-grant", phase: participantPhase, due: func(n *Node) time.Time {
		if n.lease.owe {
			if f := n.grantFreeAt(n.group.ID); f.After(n.now) {
				return f
			}
		}
		return time.Time{}
	}},
}

// work is the fire of a timer whose work reports nothing.
func work(f func(*Node, time.Time)) func(*Node, time.Time) (Reason, bool) {
	return func(n *Node, now time.Time) (Reason, bool) {
		f(n, now)
		return "", false
	}
}

// ends is the fire of a timer whose work, when it reports a reason, has
// moved the node out of its phase.
func ends(f func(*Node, time.Time) Reason) func(*Node, time.Time) (Reason, bool) {
	return func(n *Node, now time.Time) (Reason, bool) {
		why := f(n, now)
		return why, why != ""
	}
}

// byPhase is the table by phase, in its order: what tick and NextTimer
// walk, so that a node's input costs only its phase's timers.
var byPhase = func() (b [idlePhase + 1][]*timer) {
	for i := range timers {
		t := &timers[i]
		b[t.phase] = append(b[t.phase], t)
	}
	return b
}()

// tick runs the timers due at now, in the table's order: those of every
// phase, then those of the phase the node is in once they ran. Each reads
// its time after the ones before it ran, as their work may have moved it.
// It returns the reason for the view change the last of them reported.
func (n *Node) tick(now time.Time) Reason {
	why, stop := n.fire(now, byPhase[anyPhase])
	if !stop {
		w, _ := n.fire(now, byPhase[n.phase()])
		if w != "" {
			why = w
		}
	}
	return why
}

// fire runs the timers of ts due at now, in order, until one stops the
// Tick.
func (n *Node) fire(now time.Time, ts []*timer) (why Reason, stop bool) {
	for _, t := range ts {
		if t.fire == nil {
			continue
		}
		if !t.poll {
			if at := t.due(n); at.IsZero() || now.Before(at) {
				continue
			}
		}
		w, stop := t.fire(n, now)
		if w != "" {
			why = w
		}
		if stop {
			return why, true
		}
	}
	return why, false
}

// NextDeadline returns the earliest time at which a Tick has work to do:
// the earliest due of the timers of every phase and of the node's. A
// runtime may tick on a fixed period instead; the simulator uses this to
// jump its clock. A node that yielded its ID has no deadline (zero).
func (n *Node) NextDeadline() time.Time {
	_, at := n.NextTimer()
	return at
}

// NextTimer returns NextDeadline and the name of the timer due then (the
// first in the table, of several): what a runtime names when a node's
// deadline stays due however often it ticks.
func (n *Node) NextTimer() (name string, at time.Time) {
	if n.start.stopped {
		return "", time.Time{}
	}
	for _, ts := range [2][]*timer{byPhase[anyPhase], byPhase[n.phase()]} {
		for _, t := range ts {
			if d := t.due(n); !d.IsZero() && (at.IsZero() || d.Before(at)) {
				name, at = t.name, d
			}
		}
	}
	return name, at
}
