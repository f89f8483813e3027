package group

import (
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// Reach is this node's own evidence that a member reaches it (Member.Reach).
type Reach = schema.Reach

// States of a Reach.
const (
	ReachSelf    = schema.ReachSelf
	ReachUp      = schema.ReachUp
	ReachLost    = schema.ReachLost
	ReachUnknown = schema.ReachUnknown
)

// pktKind is the kind of a peer's last accepted wire packet, as far as
// reachability cares: whether it belongs to a stream the peer keeps up.
type pktKind uint8

const (
	kindOther     pktKind = iota // any other protocol message
	kindBeacon                   // a beacon that is not a heartbeat (discovery; paced)
	kindHeartbeat                // a coordinator's numbered beacon: every AliveInterval to its members
	kindAck                      // a member's BeatAck: every AckEvery to its coordinator
)

// kindOf classifies msg. A heartbeat is a beacon that carries a beat
// number from the coordinator of the group it announces (invitation numbers
// a beacon only as a heartbeat to members; a lone coordinator's and every
// other node's beacons carry none).
func kindOf(msg wire.Message) pktKind {
	switch b := msg.Body.(type) {
	case wire.BeatAck:
		return kindAck
	case wire.Beacon:
		if b.Beat != 0 && msg.IsCoordinator() {
			return kindHeartbeat
		}
		return kindBeacon
	}
	return kindOther
}

// basis names k as a Reach basis.
func (k pktKind) basis() string {
	switch k {
	case kindBeacon:
		return schema.BasisBeacon
	case kindHeartbeat:
		return schema.BasisHeartbeat
	case kindAck:
		return schema.BasisAck
	}
	return schema.BasisPacket
}

// evidence is the last accepted wire packet of a node: who sent it, when
// it arrived (zero: never heard) and its kind.
type evidence struct {
	from wire.NodeID
	at   time.Time
	kind pktKind
}

func (e evidence) heard() bool { return !e.at.IsZero() }

// relation is what a peer is to this node, which decides what traffic
// this node expects from it.
type relation uint8

const (
	relOutside     relation = iota // not in this node's group: owes it nothing
	relSelf                        // this node
	relMember                      // this node coordinates, the peer is in its list: it acknowledges heartbeats
	relCoordinator                 // the peer coordinates this node's group: it heartbeats
	relFellow                      // another member of this node's group: silent, vouched for by the coordinator
)

// relationOf returns what id is to a node whose status is st: inGroup
// reports whether id is in st's member list.
func relationOf(st Status, self, id wire.NodeID, inGroup bool) relation {
	switch {
	case id == self:
		return relSelf
	case st.Group.IsZero():
		return relOutside
	case st.Role == wire.RoleCoordinator:
		if inGroup {
			return relMember
		}
	case id == st.Coordinator:
		return relCoordinator
	case inGroup:
		return relFellow
	}
	return relOutside
}

// reachOf is the rule of Member.Reach: what this node's own wire evidence
// says of a peer that is rel to it, as of now. direct is the peer's last
// packet; coord is the last packet of this node's coordinator (used for
// relFellow only); t is this node's timing and quorum whether it runs in
// quorum mode (--expect).
//
//   - relMember: the peer acknowledges every AckEvery; up while its last
//     packet is within the coordinator's ack lateness (Timing.AckLate), else
//     lost.
//   - relCoordinator: it heartbeats every AliveInterval; up within
//     AliveTimeout, else lost.
//   - relFellow: members do not talk to each other. Up on the peer's own
//     packet if it is fresher than the coordinator's and within
//     AliveTimeout (or if the coordinator was never heard); else on the
//     coordinator's (basis "coordinator", Via): the coordinator, heard
//     that long ago, still lists it. Lost past AliveTimeout.
//   - relOutside: a last packet that was a heartbeat or an
//     acknowledgement is a stream that should go on: up within
//     AliveTimeout or Timing.AckLate, else lost, and unknown once PeerTimeout
//     has passed (the sender may have stopped being a coordinator or a
//     member, as merges and splits do). Anything else (a beacon, an
//     invitation, an election message) promises nothing: up within
//     PeerTimeout, else unknown.
//
// A peer never heard is unknown (basis "none", age -1). Memberlist's view
// is no input: gossip alive does not make a peer up (it stays alive for
// seconds after a cut, issue 26), and gossip dead or left does not make a
// peer lost while a wire packet within the window says otherwise: packets
// are newer evidence than a suspicion round.
func reachOf(rel relation, direct, coord evidence, now time.Time, t invitation.Timing, quorum bool) schema.Reach {
	switch rel {
	case relSelf:
		return schema.Reach{State: schema.ReachSelf, Basis: schema.BasisNone, AgeMS: -1}
	case relMember:
		return judge(direct, now, t.AckLate(quorum), schema.ReachLost)
	case relCoordinator:
		return judge(direct, now, t.AliveTimeout, schema.ReachLost)
	case relFellow:
		if !coord.heard() || direct.at.After(coord.at) && now.Sub(direct.at) <= t.AliveTimeout {
			return judge(direct, now, t.AliveTimeout, schema.ReachLost)
		}
		r := judge(coord, now, t.AliveTimeout, schema.ReachLost)
		r.Basis, r.Via = schema.BasisCoordinator, coord.from
		return r
	}
	switch {
	case !direct.heard():
		return judge(direct, now, 0, schema.ReachUnknown)
	case direct.kind == kindHeartbeat || direct.kind == kindAck:
		window := t.AliveTimeout
		if direct.kind == kindAck {
			window = t.AckLate(quorum)
		}
		r := judge(direct, now, window, schema.ReachLost)
		if r.State == schema.ReachLost && now.Sub(direct.at) > max(t.PeerTimeout, window) {
			// The stream ended long ago: roles change (a coordinator
			// joins another group and stops heartbeating), so past
			// PeerTimeout, when the protocol forgets a coordinator too,
			// its end says nothing of the network.
			r.State = schema.ReachUnknown
		}
		return r
	}
	return judge(direct, now, t.PeerTimeout, schema.ReachUnknown)
}

// judge returns up if e is at most window old at now, else stale.
func judge(e evidence, now time.Time, window time.Duration, stale string) schema.Reach {
	r := schema.Reach{State: schema.ReachUnknown, Basis: schema.BasisNone, AgeMS: -1, WindowMS: window.Milliseconds()}
	if !e.heard() {
		return r
	}
	age := max(now.Sub(e.at), 0) // a packet noted after now was taken
	// Rounded up, so that (with whole-millisecond timings) an answer is
	// up exactly when its age_ms is at most its window_ms.
	r.Basis, r.AgeMS, r.State = e.kind.basis(), int64((age+time.Millisecond-1)/time.Millisecond), stale
	if age <= window {
		r.State = schema.ReachUp
	}
	return r
}
