package group

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// Status is a node's view of its group. Its JSON form is the contract's
// (GET /v1/status, `groupd status --json`):
//
//	{"id":3,"priority":100,"state":"normal","role":"coordinator","group":"17.3","coordinator":3,
//	 "members":[1,2,3],"version":2,"since":"...","counter":17,"incarnation":5,
//	 "persist_error":"","time":"..."}
type Status struct {
	// ID is the node's ID.
	ID wire.NodeID
	// Priority is the node's priority, the first part of its rank.
	Priority uint8
	// State is the invitation algorithm's state: Normal, Election or
	// Reorganization. An agent that has not run yet is in Election.
	State wire.State
	// Role is Coordinator when the node coordinates Group.
	Role invitation.Role
	// Group is the node's group number; zero before the first group.
	Group wire.GroupNumber
	// Coordinator is Group's coordinator (the node that created it).
	Coordinator wire.NodeID
	// Members are the IDs in the group's member list, sorted; empty while
	// the node waits for a Ready.
	Members []wire.NodeID
	// Version is the member list's version within Group.
	Version uint64
	// Since is when Group last changed.
	Since time.Time
	// Counter is the highest group-number sequence saved in the data dir.
	Counter uint64
	// Incarnation is this boot's incarnation (bumped at every start).
	Incarnation uint64
	// PersistError is the last failure to save the counter, empty once a
	// save succeeds. While it is set the node cannot create groups.
	PersistError string
	// Time is when this status was taken.
	Time time.Time
	// Primary reports whether the node's group is the primary partition
	// (see Quorum); with Expect 0 every Normal group is.
	Primary bool
	// Expect is the configured cluster size (--expect), 0 when
	// primary-partition mode is off.
	Expect int
}

// IsCoordinator reports whether the node is Normal and coordinates its
// group: the state in which it is the group's settled coordinator.
func (s Status) IsCoordinator() bool {
	return s.State == wire.StateNormal && s.Role == invitation.Coordinator
}

// String describes the status in one line for logs and tests.
func (s Status) String() string {
	return fmt.Sprintf("%d %s %s g=%s v%d %v", s.ID, s.State, s.Role, s.Group, s.Version, s.Members)
}

// statusJSON is the contract's JSON shape of Status.
type statusJSON struct {
	ID           wire.NodeID   `json:"id"`
	Priority     uint8         `json:"priority"`
	State        string        `json:"state"`
	Role         string        `json:"role"`
	Group        string        `json:"group"`
	Coordinator  wire.NodeID   `json:"coordinator"`
	Members      []wire.NodeID `json:"members"`
	Version      uint64        `json:"version"`
	Since        time.Time     `json:"since"`
	Counter      uint64        `json:"counter"`
	Incarnation  uint64        `json:"incarnation"`
	PersistError string        `json:"persist_error"`
	Time         time.Time     `json:"time"`
	Primary      bool          `json:"primary"`
	Expect       int           `json:"expect"`
}

// MarshalJSON encodes s in the contract's shape: state, role and group as
// strings, members as a (never null) array.
func (s Status) MarshalJSON() ([]byte, error) {
	members := s.Members
	if members == nil {
		members = []wire.NodeID{}
	}
	return json.Marshal(statusJSON{
		ID:           s.ID,
		Priority:     s.Priority,
		State:        s.State.String(),
		Role:         s.Role.String(),
		Group:        s.Group.String(),
		Coordinator:  s.Coordinator,
		Members:      members,
		Version:      s.Version,
		Since:        s.Since.UTC(),
		Counter:      s.Counter,
		Incarnation:  s.Incarnation,
		PersistError: s.PersistError,
		Time:         s.Time.UTC(),
		Primary:      s.Primary,
		Expect:       s.Expect,
	})
}

// UnmarshalJSON decodes the contract's shape, so that clients of the API
// (the CLI, tests) can read a Status back.
func (s *Status) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil // encoding/json's convention: null leaves the value alone
	}
	var j statusJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	st, err := parseState(j.State)
	if err != nil {
		return err
	}
	var role invitation.Role
	switch j.Role {
	case "coordinator":
		role = invitation.Coordinator
	case "participant", "":
		role = invitation.Participant
	default:
		return fmt.Errorf("group: unknown role %q", j.Role)
	}
	var g wire.GroupNumber
	if j.Group != "" {
		if g, err = wire.ParseGroupNumber(j.Group); err != nil {
			return err
		}
	}
	*s = Status{
		ID: j.ID, Priority: j.Priority, State: st, Role: role, Group: g,
		Coordinator: j.Coordinator, Members: j.Members, Version: j.Version,
		Since: j.Since, Counter: j.Counter, Incarnation: j.Incarnation,
		PersistError: j.PersistError, Time: j.Time,
		Primary: j.Primary, Expect: j.Expect,
	}
	return nil
}

func parseState(s string) (wire.State, error) {
	for _, st := range []wire.State{wire.StateNormal, wire.StateElection, wire.StateReorganization} {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("group: unknown state %q", s)
}

// fromNode converts the state machine's view into a Status.
func fromNode(s invitation.Status, incarnation uint64, now time.Time) Status {
	return Status{
		ID:           s.ID,
		Priority:     s.Priority,
		State:        s.State,
		Role:         s.Role(),
		Group:        s.Group,
		Coordinator:  s.Coordinator(),
		Members:      s.MemberIDs(),
		Version:      s.Version,
		Since:        s.Since,
		Counter:      s.Counter,
		Incarnation:  incarnation,
		PersistError: s.PersistError,
		Time:         now,
	}
}

// Gossip states of a Member: memberlist's view of the node.
const (
	GossipAlive   = "alive"
	GossipSuspect = "suspect"
	GossipDead    = "dead"
	GossipLeft    = "left"
)

// Member is one node this agent knows of (GET /v1/members, `groupd members
// --json`): the nodes memberlist knows, the members of the group, and the
// agent itself.
type Member struct {
	ID       wire.NodeID `json:"id"`
	Priority uint8       `json:"priority"`
	// Addr is the node's wire-protocol address (host:port): the source
	// of its last authenticated packet, else what its memberlist meta
	// announces. Empty if unknown.
	Addr string `json:"addr"`
	// Gossip is memberlist's view: GossipAlive, GossipSuspect, GossipDead
	// or GossipLeft ("dead" also for a group member memberlist does not
	// know).
	Gossip string `json:"gossip"`
	// InGroup reports whether the node is in this agent's current member
	// list.
	InGroup bool `json:"in_group"`
}

// Event reasons besides invitation's (recovery, election, merge, invited,
// ready, members, confirmed, persist-failed).
const (
	// ReasonSnapshot is the first event of a stream: the current status,
	// with no Old.
	ReasonSnapshot = "snapshot"
)

// Event reports a change of the node's view (GET /v1/events, one JSON
// object per line):
//
//	{"time":"...","node":3,"reason":"merge","old":{...status...},"new":{...status...}}
type Event struct {
	Time time.Time   `json:"time"`
	Node wire.NodeID `json:"node"`
	// Reason is one of invitation's reasons ("recovery", "election",
	// "merge", "invited", "ready", "members", "confirmed",
	// "persist-failed") or ReasonSnapshot.
	Reason string `json:"reason"`
	// Old is the view before the change; nil in a snapshot.
	Old *Status `json:"old"`
	// New is the view after the change.
	New Status `json:"new"`
}

// String describes the event in one line.
func (e Event) String() string {
	old := "-"
	if e.Old != nil {
		old = e.Old.String()
	}
	return fmt.Sprintf("%s: %s -> %s", e.Reason, old, e.New)
}
