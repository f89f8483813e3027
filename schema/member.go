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
}
