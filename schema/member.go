package schema

import (
	"github.com/groupd/groupd/wire"
)

// Gossip states of a Member: memberlist's view of the node.
const (
	GossipAlive   = "alive"
	GossipSuspect = "suspect"
	GossipDead    = "dead"
	GossipLeft    = "left"
)

// Member is one node a daemon knows of (GET /v1/members, `groupd members
// --json`): the nodes memberlist knows, the members of the group, and the
// agent itself, with what their gossip meta says.
type Member struct {
	ID       wire.NodeID `json:"id"`
	Name     string      `json:"name"`
	Priority uint8       `json:"priority"`
	// Addr is the node's wire-protocol address (host:port): the source
	// of its last authenticated packet, else what its memberlist meta
	// announces. Empty if unknown.
	Addr string `json:"addr"`
	// Gossip is memberlist's view: GossipAlive, GossipSuspect, GossipDead
	// or GossipLeft ("dead" also for a group member memberlist does not
	// know).
	Gossip string `json:"gossip"`
	// InGroup reports whether the node is in the daemon's current member
	// list.
	InGroup bool `json:"in_group"`
	// Group, State, Leader and Degraded are what the node last announced
	// in its gossip meta (zero when unknown); Leader is false for a node
	// memberlist declared dead or left, which leads nothing whatever it
	// said before.
	Group    string `json:"group"`
	State    string `json:"state"`
	Leader   bool   `json:"leader"`
	Degraded bool   `json:"degraded"`
	// Tags are the node's tags (group.Config.Tags), from its gossip meta.
	Tags map[string]string `json:"tags"`
	// Quorum names the node's quorum settings where they differ from
	// this daemon's ("--expect 5 (this node 3)"); empty when they agree or
	// are unknown (see Status.QuorumMismatches).
	Quorum string `json:"quorum,omitempty"`
	// Reach is whether this daemon has fresh evidence of its own that
	// the node is alive and reaches it. Gossip says what memberlist
	// believes, and memberlist keeps a node "alive" for seconds after it
	// is cut off; Reach rests on the wire packets this daemon received.
	Reach Reach `json:"reach"`
}

// States of a Reach.
const (
	// ReachSelf: the daemon itself.
	ReachSelf = "self"
	// ReachUp: the evidence is within its window.
	ReachUp = "up"
	// ReachLost: traffic from the node is expected (it is in the
	// daemon's group, or it was heartbeating or acknowledging) and the
	// evidence is older than its window.
	ReachLost = "lost"
	// ReachUnknown: no evidence (never heard), or evidence of a node
	// that owes this daemon no traffic (a beacon, an invitation, an
	// election message) and is older than its window.
	ReachUnknown = "unknown"
)

// Bases of a Reach: the kind of evidence its state rests on.
const (
	// BasisNone: no evidence (never heard, or the daemon itself).
	BasisNone = "none"
	// BasisHeartbeat: the node's last packet was a heartbeat (a
	// coordinator's numbered beacon).
	BasisHeartbeat = "heartbeat"
	// BasisAck: the node's last packet was a member's acknowledgement of
	// a heartbeat (wire.BeatAck).
	BasisAck = "ack"
	// BasisBeacon: the node's last packet was a beacon that is not a
	// heartbeat (discovery; beacons are paced and owe nobody a period).
	BasisBeacon = "beacon"
	// BasisPacket: the node's last packet was another protocol message
	// (an invitation, a Ready, an election message, a Hello, ...).
	BasisPacket = "packet"
	// BasisCoordinator: a fellow member of the daemon's group, not heard
	// directly: its coordinator (Reach.Via), heard AgeMS ago, still
	// lists it. That says the coordinator had not dropped it, not that
	// it reaches this daemon.
	BasisCoordinator = "coordinator"
)

// Reach is a daemon's own evidence that a member reaches it: the state
// it concludes, what that rests on, and how old it is when answered.
// Memberlist's view (Member.Gossip) plays no part: gossip "alive" does not
// make a node up, and gossip "dead" or "left" does not make it lost while
// its packets are within the window (packets are newer evidence).
type Reach struct {
	// State is ReachSelf, ReachUp, ReachLost or ReachUnknown.
	State string `json:"state"`
	// Basis is what State rests on: BasisHeartbeat, BasisAck,
	// BasisBeacon, BasisPacket, BasisCoordinator or BasisNone.
	Basis string `json:"basis"`
	// Via is, for BasisCoordinator, the coordinator whose member list
	// vouches for the node.
	Via wire.NodeID `json:"via,omitempty"`
	// AgeMS is the age of the evidence when the answer was made, in
	// milliseconds rounded up; -1 when there is none.
	AgeMS int64 `json:"age_ms"`
	// WindowMS is how old the evidence may be and still count, in
	// milliseconds: past it State is ReachLost if traffic from the node
	// is expected, else ReachUnknown. 0 when there is no evidence and no
	// traffic is expected.
	WindowMS int64 `json:"window_ms"`
}
