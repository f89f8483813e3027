package invitation

import (
	"time"

	"github.com/groupd/groupd/wire"
)

// This file holds the node's timers: what a Tick does, and when the next
// one is due.

// tick advances the node's timers to now.
func (n *Node) tick(now time.Time) Reason {
	if !n.nextBeacon.IsZero() && !n.nextBeacon.After(now) {
		if n.unicastHeartbeat() {
			n.heartbeatMembers(n.heartbeat(now))
			if !now.Before(n.nextDiscovery) {
				to, p := n.beaconTarget(now, true), n.t.BeaconInterval
				if to == wire.Broadcast {
					// Not a heartbeat: its members get theirs by
					// unicast. A period of its own bounds it.
					p = n.paced(p)
				}
				n.nextDiscovery = now.Add(n.jitter(p))
				n.sendBeacon(to, beatFields{})
			}
			n.scheduleBeacon(now)
		} else if g := n.gate(now); now.Before(g) {
			n.nextBeacon = g
		} else {
			to := n.beaconTarget(now, false)
			if n.paceable(to) {
				n.lastLoud = now
			}
			n.sendBeacon(to, n.heartbeat(now))
			n.beaconSent(now, to)
		}
	}
	sweep := !now.Before(n.nextSweep)
	if sweep {
		n.sweep(now)
	}
	if n.degraded() && n.saving == nil && !now.Before(n.retryAt) {
		n.retrySave(now)
	}
	switch {
	case n.group.IsZero():
		return n.tickDetached(now)
	case n.pending != nil && n.pending.purpose != forTakeover:
		// Waiting for a save; nothing else runs until it is confirmed.
		return ""
	case n.election != nil:
		return n.tickElection(now)
	case n.isCoordinator():
		return n.tickCoordinator(now)
	case n.state == wire.StateReorganization:
		return n.tickReorganization(now)
	case n.state == wire.StateNormal:
		return n.tickParticipant(now)
	}
	return ""
}

// NextDeadline returns the earliest time at which a Tick has work to do. A
// runtime may tick on a fixed period instead; the simulator uses this to
// jump its clock. A node that yielded its ID has no deadline (zero).
func (n *Node) NextDeadline() time.Time {
	if n.stopped {
		return time.Time{}
	}
	var d time.Time
	add := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	add(n.nextBeacon)
	add(n.nextSweep)
	if n.degraded() && n.saving == nil {
		add(n.retryAt)
	}
	if n.group.IsZero() {
		switch {
		case n.pending != nil || n.degraded():
			// Waiting for a save, or for an invitation.
		case n.waitUntil.IsZero():
			add(n.attachAt)
		default:
			add(n.waitUntil)
		}
		return d
	}
	if p := n.pending; p != nil && p.purpose != forTakeover {
		return d
	}
	if n.election != nil {
		if !n.electAt.IsZero() {
			add(n.electAt)
		} else {
			add(n.afterStall(n.election.Deadline()))
		}
		return d
	}
	if n.isCoordinator() {
		if n.merge != nil {
			add(n.merge.resendAt)
			add(n.afterStall(n.merge.deadline))
		}
		if n.ready != nil {
			add(n.ready.resendAt)
			add(n.afterStall(n.ready.deadline))
		}
		if n.staleVersion {
			add(n.nextVersionAt)
		}
		if n.state == wire.StateNormal {
			add(n.nextCheck)
			if n.merge == nil && len(n.up) > 1 && !n.nextLate.IsZero() {
				add(n.afterStall(n.nextLate))
			}
			add(n.leaseDeadline())
			if n.check != nil {
				add(n.check.deadline)
			}
			add(n.mergeAt)
		}
		return d
	}
	switch n.state {
	case wire.StateReorganization:
		add(n.resendAcc)
		add(n.afterStall(n.reorgUntil))
	case wire.StateNormal:
		add(n.afterStall(n.lastYes.Add(n.aliveTimeout() + 1)))
		ask := later(n.lastYes.Add(n.gt.AliveInterval+n.gt.AnswerTimeout), n.nextAYT)
		if !n.behindSince.IsZero() {
			if stale := later(n.behindSince.Add(n.behindLimit()), n.nextAYT); stale.Before(ask) {
				ask = stale
			}
		}
		add(ask)
		add(n.afterStall(n.probeUntil))
		if !n.outrankSince.IsZero() && n.pending == nil {
			add(n.outrankSince.Add(n.t.CheckInterval))
		}
		if n.owe {
			if f := n.grantFreeAt(n.group.ID); f.After(n.now) {
				add(f)
			}
		}
	}
	return d
}
