package group

import (
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// The types an embedder needs, reachable from package group alone.
type (
	// NodeID identifies a node (wire.NodeID).
	NodeID = wire.NodeID
	// GroupNumber names a group: a sequence and its coordinator's ID
	// (wire.GroupNumber), printed seq.id.
	GroupNumber = wire.GroupNumber
	// State is a node's state in the invitation algorithm (wire.State).
	State = wire.State
	// Role is a node's role in its group (wire.Role).
	Role = wire.Role
)

// States and roles.
const (
	StateNormal         = wire.StateNormal
	StateElection       = wire.StateElection
	StateReorganization = wire.StateReorganization

	Participant = wire.RoleParticipant
	Coordinator = wire.RoleCoordinator
)

// The records the agent hands out and its API serves. They are defined,
// with their JSON, in package schema, which readers of a status or of an
// event stream import without linking the agent's dependencies; here they
// keep the names embedders know.
type (
	// Status is a node's view of its group (GET /v1/status).
	Status = schema.Status
	// DuplicateID describes another process seen with this node's ID.
	DuplicateID = schema.DuplicateID
	// TimingMismatch is a peer whose announced intervals differ from
	// this node's.
	TimingMismatch = schema.TimingMismatch
	// QuorumRule is the rule a quorum is counted by (quorum mode).
	QuorumRule = schema.QuorumRule
	// QuorumMismatch is a peer whose quorum settings differ from this
	// node's.
	QuorumMismatch = schema.QuorumMismatch
	// Member is one node this agent knows of (GET /v1/members).
	Member = schema.Member
	// Event reports a change of the node's view (GET /v1/events).
	Event = schema.Event
	// LeaderAnswer is the body of GET /v1/leader.
	LeaderAnswer = schema.LeaderAnswer
)

// Gossip states of a Member: memberlist's view of the node.
const (
	GossipAlive   = schema.GossipAlive
	GossipSuspect = schema.GossipSuspect
	GossipDead    = schema.GossipDead
	GossipLeft    = schema.GossipLeft
)

// Event reasons besides invitation's (see schema.ReasonSnapshot,
// schema.ReasonLeaderStart).
const (
	ReasonSnapshot    = schema.ReasonSnapshot
	ReasonLeaderStart = schema.ReasonLeaderStart
	ReasonLeaderStop  = schema.ReasonLeaderStop
	ReasonLeaderTerm  = schema.ReasonLeaderTerm
)
