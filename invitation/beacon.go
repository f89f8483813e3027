package invitation

import (
	"time"

	"github.com/groupd/groupd/wire"
)

// This file holds the periodic beacon: where it goes (to every node or to
// the one that will invite this node), how often (by state, paced by the
// LAN's beacon budget), and a coordinator's heartbeat to its members by
// unicast.

// beaconTarget is where the node's periodic beacon goes: wire.Broadcast,
// or, for a node that only needs to be heard by the one that will invite
// it, that node alone. Two kinds of node are in that case, as long as a
// higher-ranked node that would invite them was heard within PeerTimeout:
//
//   - a node without a group, after its first beacon (which every node
//     hears, and coordinators answer with their high-water marks);
//   - a coordinator alone in its group (it has no members to heartbeat),
//     or that heartbeats them by unicast (unicast: unicastHeartbeat's
//     answer, which the caller has), Normal and merging nothing, below a
//     Normal coordinator.
//
// Everyone else on the LAN learns nothing from such a beacon, and when
// every node of a cold start multicast, each of N nodes woke for N
// beacons per interval: at N = 256 on one host, a storm that never let
// the nodes hear each other within their windows, so they formed more
// groups, which beaconed more. Silent for PeerTimeout, the higher node no
// longer counts, and the beacon is multicast again (a partition cut it
// off).
func (n *Node) beaconTarget(now time.Time, unicast bool) wire.NodeID {
	a := n.disc.above
	if a.id == 0 || now.Sub(a.heard) > n.t.PeerTimeout {
		return wire.Broadcast
	}
	switch {
	case n.group.IsZero():
		if n.disc.announced {
			return a.id
		}
	case n.isCoordinator() && (len(n.members) <= 1 || unicast) && n.state == wire.StateNormal &&
		n.store.pending == nil && n.coord.merge == nil && a.coord:
		return a.id
	}
	return wire.Broadcast
}

// unicastHeartbeat reports whether this coordinator sends its heartbeat to
// each member by unicast rather than to the whole LAN by multicast: when
// its members are at most a quarter of the nodes it knows of (its group,
// the groups whose coordinators it hears, by their beacons' sizes, and the
// nodes without a group). A multicast heartbeat wakes every node of the
// LAN; while a cold start or a heal leaves G groups, G heartbeats per
// AliveInterval woke each node, and on one host of 256 lab nodes (G near
// 100) that storm alone used more than its two cores. Unicast costs the
// coordinator one datagram per member instead of one; a quarter bounds that
// cost, and a group of most of the LAN (the steady state: one group)
// multicasts as before. Its discovery beacon then goes every
// BeaconInterval, as a lone coordinator's does (beaconTarget).
func (n *Node) unicastHeartbeat() bool {
	k := len(n.members)
	if !n.isCoordinator() || k <= 1 {
		return false
	}
	lan := k + len(n.disc.fresh)
	for id, p := range n.disc.coords {
		if p.isCoordinator(id) && p.group != n.group {
			lan += max(1, int(p.size))
			if 4*k <= lan {
				return true
			}
		}
	}
	return 4*k <= lan
}

// heartbeatMembers sends the coordinator's heartbeat hb to each member by
// unicast (unicastHeartbeat).
func (n *Node) heartbeatMembers(hb beatFields) {
	for _, m := range n.members {
		if m.ID != n.id {
			n.sendBeacon(m.ID, hb)
		}
	}
}

// beaconBudget is how many nodes may broadcast beacons at their base
// period before each slows down: the LAN's broadcast beacons, heartbeats
// aside, stay near this many per base period however many nodes send
// them. maxPace caps the slowdown, so that a node is still heard within a
// minute or so.
const (
	beaconBudget = 16
	maxPace      = 64
)

// paced stretches d, the period of a beacon to every node, by this node's
// share of the LAN's beacon budget: the nodes heard broadcasting beacons
// lately, and itself, over beaconBudget. It is RTCP's rule (RFC 3550
// §6.2: each of N members reports every N·C/B seconds) applied to
// beacons. A node that hears up to beaconBudget broadcasters, the common
// case, is not slowed at all.
//
// In a 256-node lab on two cores, nodes in Election or Reorganization,
// lone coordinators and nodes whose higher node fell silent each
// multicast a beacon a second: every node received about 290 beacons a
// second, each a wake-up of its process and a copy to its veth, which
// kept the host at a load of 600 and every node's queue full, so that
// merges collected one or two Accepts in their windows and their members
// timed out and formed groups of their own. Paced, the broadcasts grow
// with N rather than with N², and the nodes that must be heard still are.
//
// How long a peer counts as heard (PeerTimeout) is not stretched with it:
// a node that falls back to broadcasting is paced anyway, and with both
// stretched none of three of the simulator's loaded-host starts (256
// nodes, 300 µs a delivery) converged within a minute.
func (n *Node) paced(d time.Duration) time.Duration {
	k := len(n.disc.loud) + 1
	if k <= beaconBudget {
		return d
	}
	return d * time.Duration(min(k, beaconBudget*maxPace)) / beaconBudget
}

// paceable reports whether a beacon to to would be paced: one to every
// node that is not a heartbeat.
func (n *Node) paceable(to wire.NodeID) bool {
	return to == wire.Broadcast && !(n.isCoordinator() && len(n.members) > 1)
}

// gate is the earliest time the node may broadcast its next paced beacon,
// whatever its state: one paced BeaconInterval after the last, while it
// hears more broadcasters than the budget (zero otherwise). The period
// bounds the periodic beacons; the gate bounds those a change of state
// brings forward (a new group, a lost one, the end of a reorganization),
// which on an overloaded host come faster than any period.
func (n *Node) gate(now time.Time) time.Time {
	if n.disc.lastLoud.IsZero() || len(n.disc.loud)+1 <= beaconBudget || !n.paceable(n.beaconTarget(now, n.unicastHeartbeat())) {
		return time.Time{}
	}
	return n.disc.lastLoud.Add(n.paced(n.t.BeaconInterval))
}

// beaconPeriod is how often the node beacons in its current state: a
// coordinator with members every AliveInterval (its beacon is its group's
// heartbeat), a node without a group every AnswerTimeout during its boot
// window, an idle participant never (0), anyone else, a coordinator alone
// in its group among them, every BeaconInterval. A beacon to every node
// that is not a heartbeat is paced (paced).
//
// An idle participant's beacons would tell nobody anything it needs: its
// coordinator learns of its failure from memberlist, and of its leaving
// from its beacons once it is no longer an idle participant. Silent, it
// costs its peers nothing, where N participants beaconing every few
// seconds woke every node of the LAN N times as often.
func (n *Node) beaconPeriod(now time.Time) time.Duration {
	p := n.basePeriod(now)
	if p == 0 || !n.paceable(n.beaconTarget(now, false)) {
		// None, a heartbeat (its members wait for it), or a quiet
		// beacon (it wakes one node).
		return p
	}
	return n.paced(p)
}

// basePeriod is beaconPeriod before pacing.
func (n *Node) basePeriod(now time.Time) time.Duration {
	switch {
	case n.group.IsZero() && n.start.offer != nil:
		// An inviter heard it (the invitation waits for the end of the
		// boot window): beaconing again tells nobody anything.
		return n.t.BeaconInterval
	case n.group.IsZero() && now.Before(n.start.attachAt):
		return n.t.AnswerTimeout
	case n.group.IsZero():
		// Past its window, waiting for a higher node's invitation or
		// for its own number's save: the window's beacons were heard,
		// or lost to a network or a host so loaded that ten more a
		// second (to the node it waits for, each answered with an
		// invitation) only add to the load.
		return n.t.BeaconInterval
	case n.isCoordinator() && len(n.members) > 1:
		return n.t.AliveInterval
	case n.isCoordinator():
		// Alone: nobody waits for its heartbeat, and a cold start of N
		// nodes on one host can leave many such groups for a while.
		return n.t.BeaconInterval
	case n.state == wire.StateNormal:
		return 0
	}
	return n.t.BeaconInterval
}

// armBeacon keeps the beacon schedule in step with the state after each
// input: none for an idle participant; for a node that just left that
// state (an election, an invitation), a first beacon within its period.
//
// Only a change of state brings a scheduled beacon forward, not a change
// of pace (a broadcaster more or less heard, a higher node heard that
// makes the next beacon a quiet one): a beacon received that makes the
// machine send nothing must not move its deadline earlier, which the
// simulator's lazy deadlines rely on (sim.Config.LazyDeadlines).
func (n *Node) armBeacon(now time.Time) {
	base := n.basePeriod(now)
	shorter := base < n.disc.armedBase
	n.disc.armedBase = base
	p := n.beaconPeriod(now)
	switch {
	case p == 0:
		n.disc.nextBeacon = time.Time{}
	case n.disc.nextBeacon.IsZero(), shorter && n.disc.nextBeacon.After(later(now.Add(p), n.gate(now))):
		// None due, or due later than the new, shorter period allows (a
		// coordinator that was alone has members to heartbeat now).
		n.disc.nextBeacon = now.Add(n.jitter(p))
	}
}

// beacon sends the node's beacon now, to every node.
func (n *Node) beacon(now time.Time) { n.beaconTo(now, wire.Broadcast) }

// beaconTo sends the node's periodic beacon now, to every node or to one,
// and schedules the next.
func (n *Node) beaconTo(now time.Time, to wire.NodeID) {
	n.sendBeacon(to, beatFields{})
	n.beaconSent(now, to)
}

// beaconSent notes that the periodic beacon went to to, and schedules
// the next.
func (n *Node) beaconSent(now time.Time, to wire.NodeID) {
	if to == wire.Broadcast && n.group.IsZero() {
		n.disc.announced = true
	}
	n.scheduleBeacon(now)
}

// scheduleBeacon sets the next periodic beacon one period from now.
func (n *Node) scheduleBeacon(now time.Time) {
	n.disc.nextBeacon = time.Time{}
	n.disc.armedBase = n.basePeriod(now)
	if p := n.beaconPeriod(now); p > 0 {
		n.disc.nextBeacon = now.Add(p)
	}
}

// sendBeacon sends the node's beacon to every node or to one; hb makes it
// a numbered heartbeat (heartbeat).
func (n *Node) sendBeacon(to wire.NodeID, hb beatFields) {
	b := wire.Beacon{HighWater: max(n.store.maxSeen, n.store.want.Counter, n.store.durable.Counter), Timing: n.t.announce(n.alg)}
	if n.isCoordinator() {
		b.Version, b.Size = n.version, uint32(len(n.members))
		b.Timing = n.gt.announce(n.galg)
		b.Beat, b.AckReq, b.Term = hb.no, hb.ack, n.lease.term
		b.Quorum = n.announceQuorum(n.leaderRule())
	} else {
		b.Quorum = n.announceQuorum(n.ownRule())
	}
	n.send(to, b)
}

// sendPeriodicBeacon is the beacon timer's work: the heartbeat of a
// coordinator that beats its members by unicast (and, every
// BeaconInterval, its discovery beacon), or the node's beacon, unless the
// beacon budget holds it back until its gate.
func (n *Node) sendPeriodicBeacon(now time.Time) {
	if n.unicastHeartbeat() {
		n.heartbeatMembers(n.heartbeat(now))
		if !now.Before(n.disc.nextDiscovery) {
			to, p := n.beaconTarget(now, true), n.t.BeaconInterval
			if to == wire.Broadcast {
				// Not a heartbeat: its members get theirs by
				// unicast. A period of its own bounds it.
				p = n.paced(p)
			}
			n.disc.nextDiscovery = now.Add(n.jitter(p))
			n.sendBeacon(to, beatFields{})
		}
		n.scheduleBeacon(now)
	} else if g := n.gate(now); now.Before(g) {
		n.disc.nextBeacon = g
	} else {
		to := n.beaconTarget(now, false)
		if n.paceable(to) {
			n.disc.lastLoud = now
		}
		n.sendBeacon(to, n.heartbeat(now))
		n.beaconSent(now, to)
	}
}
