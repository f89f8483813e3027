package group

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/groupd/groupd/invitation"
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
	// Role is a node's role in its group (invitation.Role).
	Role = invitation.Role
)

// States and roles.
const (
	StateNormal         = wire.StateNormal
	StateElection       = wire.StateElection
	StateReorganization = wire.StateReorganization

	Participant = invitation.Participant
	Coordinator = invitation.Coordinator
)

// Status is a node's view of its group. Its JSON form is the API's
// (GET /v1/status, `groupd status --json`):
//
//	{"id":3,"name":"db3","priority":100,"state":"normal","role":"coordinator","group":"1795430400123.3",
//	 "coordinator":3,"coordinator_name":"db3","members":[1,2,3],"member_priorities":[100,100,100],
//	 "version":2,"since":"...","counter":1795430400123,"incarnation":5,"boot":"8a1f...","persist_error":"",
//	 "degraded":false,"time":"...","primary":true,"expect":0,"leader":true,"leader_since":"...",
//	 "term":"1795430400123.3","tags":{"endpoint":"10.0.0.3:5432"}}
type Status struct {
	// ID is the node's ID, Name its name (Config.Name).
	ID   NodeID
	Name string
	// Priority is the node's priority, the first part of its rank.
	Priority uint8
	// State is the invitation algorithm's state: Normal, Election or
	// Reorganization. An agent that has not run yet, or a node without a
	// group (it boots, or lost its group and waits to be invited), is in
	// Election with a zero Group.
	State State
	// Role is Coordinator when the node coordinates Group.
	Role Role
	// Group is the node's group number; zero without a group. Its
	// sequence is at least the Unix time in milliseconds at which the
	// group was formed (GroupFormed).
	Group GroupNumber
	// Coordinator is Group's coordinator (the node that created it), and
	// CoordinatorName its name. Another node's name comes with its
	// memberlist meta, which can arrive shortly after the group settled:
	// until then CoordinatorName is "", and the status gets it then.
	Coordinator     NodeID
	CoordinatorName string
	// Members are the IDs in the group's member list, sorted; empty while
	// the node waits for a Ready. MemberPriorities[i] is the priority of
	// Members[i], so that a reader can rank them.
	Members          []NodeID
	MemberPriorities []uint8
	// Version is the member list's version within Group.
	Version uint64
	// Since is when Group last changed.
	Since time.Time
	// Counter is the highest group-number sequence saved in the data dir.
	Counter uint64
	// Incarnation counts this node's starts (from the data dir).
	Incarnation uint64
	// Boot is this start's boot nonce: random, different at every start.
	Boot uint64
	// PersistError is the last failure to save the node's state, empty
	// once a save succeeds. While it is set the node is Degraded: it
	// creates no group numbers, ranks below every other node, and joins
	// any group that invites it.
	PersistError string
	Degraded     bool
	// Time is when this status was taken.
	Time time.Time
	// Primary reports whether the node's group is the primary partition
	// (see Quorum); with Expect 0 every Normal group is. A leader is
	// primary only while its lease runs: the agent checks it when the
	// status is read (Agent.Status), so a process that wakes from a pause
	// never reports a lease that ran out meanwhile.
	Primary bool
	// LeaseUntil is when a primary leader's lease ends unless members
	// renew it (quorum mode); zero otherwise.
	LeaseUntil time.Time
	// Expect is the configured cluster size (--expect), 0 when
	// primary-partition mode is off.
	Expect int
	// Leader is set from when the node first coordinates a Normal group
	// until it stops coordinating: it is invited into another group,
	// gives way to another process with its ID, or stops. Merges it
	// leads, members joining or leaving and its group being renumbered
	// leave it leader. LeaderSince is when the leadership began, and Term
	// its term: a fencing number, higher for every leadership that
	// follows this one (docs/design.md §8). A leader that learns of a
	// higher term takes a new one.
	//
	// In quorum mode a leader may act only while it is also Primary:
	// IsLeader says that.
	Leader      bool
	LeaderSince time.Time
	Term        GroupNumber
	// Tags are this node's tags (Config.Tags).
	Tags map[string]string
	// DuplicateID is set while another process uses this node's ID (this
	// one kept running; the other gave way, or should): from its first
	// packet until none has arrived for MemberTimeout.
	DuplicateID *DuplicateID
	// TimingMismatches lists peers that announced intervals other than
	// this node's (at most 16; see TimingMismatch).
	TimingMismatches []TimingMismatch
}

// DuplicateID describes another process seen with this node's ID.
type DuplicateID struct {
	Boot  uint64    `json:"boot"`
	Addr  string    `json:"addr"` // where its packet came from
	Since time.Time `json:"since"`
}

// TimingMismatch is a peer whose announced intervals differ from this
// node's: inside a group the coordinator's rule, so a mixed LAN works, but
// an operator should know.
type TimingMismatch struct {
	Peer   NodeID      `json:"peer"`
	Theirs wire.Timing `json:"-"`
	Ours   wire.Timing `json:"-"`
	Detail string      `json:"detail"` // "theirs: ...; ours: ..."
}

// IsCoordinator reports whether the node is Normal and coordinates its
// group: the state in which it is the group's settled coordinator.
func (s Status) IsCoordinator() bool {
	return s.State == StateNormal && s.Role == Coordinator
}

// IsLeader reports whether the node is the leader an application may act
// on: it leads (Status.Leader) and, in quorum mode (Expect > 0), is
// primary, that is, holds its lease as of when the status was read. Two
// nodes are never such leaders at once (docs/design.md §8). Unlike
// IsCoordinator, without a quorum it stays true while the node merges
// other groups into its own or members come and go.
func (s Status) IsLeader() bool { return s.Leader && (s.Expect == 0 || s.Primary) }

// GroupFormed returns the time the group number says its group was formed
// at (its sequence read as Unix milliseconds), or zero without a group.
// It is a floor set by the creator's clock: a number may run ahead of it.
func (s Status) GroupFormed() time.Time {
	if s.Group.IsZero() {
		return time.Time{}
	}
	return time.UnixMilli(int64(min(s.Group.Seq, 1<<62))).UTC()
}

// String describes the status in one line for logs and tests.
func (s Status) String() string {
	lead := ""
	if s.Leader {
		lead = " leader(term " + s.Term.String() + ")"
	}
	if s.Expect > 0 && s.Primary {
		lead += " primary"
	}
	return fmt.Sprintf("%d %s %s g=%s v%d %v%s", s.ID, s.State, s.Role, s.Group, s.Version, s.Members, lead)
}

// statusJSON is the API's JSON shape of Status.
type statusJSON struct {
	ID               NodeID            `json:"id"`
	Name             string            `json:"name"`
	Priority         uint8             `json:"priority"`
	State            string            `json:"state"`
	Role             string            `json:"role"`
	Group            string            `json:"group"`
	Coordinator      NodeID            `json:"coordinator"`
	CoordinatorName  string            `json:"coordinator_name"`
	Members          []NodeID          `json:"members"`
	MemberPriorities []int             `json:"member_priorities"`
	Version          uint64            `json:"version"`
	Since            time.Time         `json:"since"`
	Counter          uint64            `json:"counter"`
	Incarnation      uint64            `json:"incarnation"`
	Boot             string            `json:"boot"`
	PersistError     string            `json:"persist_error"`
	Degraded         bool              `json:"degraded"`
	Time             time.Time         `json:"time"`
	Primary          bool              `json:"primary"`
	LeaseUntil       *time.Time        `json:"lease_until"`
	Expect           int               `json:"expect"`
	Leader           bool              `json:"leader"`
	LeaderSince      *time.Time        `json:"leader_since"`
	Term             string            `json:"term"`
	Tags             map[string]string `json:"tags"`
	DuplicateID      *DuplicateID      `json:"duplicate_id"`
	TimingMismatches []TimingMismatch  `json:"timing_mismatches"`
}

// MarshalJSON encodes s in the API's shape: state, role, group and term
// as strings, members as a (never null) array.
func (s Status) MarshalJSON() ([]byte, error) {
	j := statusJSON{
		ID: s.ID, Name: s.Name, Priority: s.Priority, State: s.State.String(), Role: s.Role.String(),
		Group: s.Group.String(), Coordinator: s.Coordinator, CoordinatorName: s.CoordinatorName,
		Members: s.Members, MemberPriorities: make([]int, len(s.MemberPriorities)), Version: s.Version,
		Since: s.Since.UTC(), Counter: s.Counter, Incarnation: s.Incarnation,
		Boot: strconv.FormatUint(s.Boot, 16), PersistError: s.PersistError, Degraded: s.Degraded,
		Time: s.Time.UTC(), Primary: s.Primary, Expect: s.Expect, Leader: s.Leader, Tags: s.Tags,
		DuplicateID: s.DuplicateID, TimingMismatches: s.TimingMismatches,
	}
	if j.Members == nil {
		j.Members = []NodeID{}
	}
	for i, p := range s.MemberPriorities {
		j.MemberPriorities[i] = int(p) // []uint8 would marshal as base64
	}
	if j.Tags == nil {
		j.Tags = map[string]string{}
	}
	if j.TimingMismatches == nil {
		j.TimingMismatches = []TimingMismatch{}
	}
	if s.Leader {
		t := s.LeaderSince.UTC()
		j.LeaderSince = &t
		j.Term = s.Term.String()
	}
	if !s.LeaseUntil.IsZero() {
		t := s.LeaseUntil.UTC()
		j.LeaseUntil = &t
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes the API's shape, so that clients of the API (the
// CLI, tests) can read a Status back. Fields a daemon of another version
// does not send stay zero.
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
	var role Role
	switch j.Role {
	case "coordinator":
		role = Coordinator
	case "participant", "":
		role = Participant
	default:
		return fmt.Errorf("group: unknown role %q", j.Role)
	}
	parseGroup := func(v string) (GroupNumber, error) {
		if v == "" {
			return GroupNumber{}, nil
		}
		return wire.ParseGroupNumber(v)
	}
	g, err := parseGroup(j.Group)
	if err != nil {
		return err
	}
	term, err := parseGroup(j.Term)
	if err != nil {
		return err
	}
	var boot uint64
	if j.Boot != "" {
		if boot, err = strconv.ParseUint(j.Boot, 16, 64); err != nil {
			return fmt.Errorf("group: bad boot %q: %w", j.Boot, err)
		}
	}
	*s = Status{
		ID: j.ID, Name: j.Name, Priority: j.Priority, State: st, Role: role, Group: g,
		Coordinator: j.Coordinator, CoordinatorName: j.CoordinatorName,
		Members: j.Members, Version: j.Version,
		Since: j.Since, Counter: j.Counter, Incarnation: j.Incarnation, Boot: boot,
		PersistError: j.PersistError, Degraded: j.Degraded || j.PersistError != "", Time: j.Time,
		Primary: j.Primary, Expect: j.Expect, Leader: j.Leader, Term: term, Tags: j.Tags,
		DuplicateID: j.DuplicateID, TimingMismatches: j.TimingMismatches,
	}
	if j.LeaderSince != nil {
		s.LeaderSince = *j.LeaderSince
	}
	if j.LeaseUntil != nil {
		s.LeaseUntil = *j.LeaseUntil
	}
	if len(j.MemberPriorities) > 0 {
		s.MemberPriorities = make([]uint8, len(j.MemberPriorities))
		for i, p := range j.MemberPriorities {
			if p < 0 || p > 255 {
				return fmt.Errorf("group: member priority %d out of range", p)
			}
			s.MemberPriorities[i] = uint8(p)
		}
	}
	if len(s.Tags) == 0 {
		s.Tags = nil
	}
	if len(s.TimingMismatches) == 0 {
		s.TimingMismatches = nil
	}
	return nil
}

// Rank returns the node's rank as the protocol orders it.
func (s Status) Rank() wire.Rank {
	return wire.Rank{Degraded: s.Degraded, Priority: s.Priority, ID: s.ID}
}

// Machine returns the view in the state machine's terms, for the
// invariant checker of recorded histories. Member priorities come from
// MemberPriorities when the daemon sent them (else the node's own).
func (s Status) Machine() invitation.Status {
	ms := make([]wire.Member, len(s.Members))
	for i, id := range s.Members {
		p := s.Priority
		if i < len(s.MemberPriorities) {
			p = s.MemberPriorities[i]
		}
		ms[i] = wire.Member{ID: id, Priority: p}
	}
	return invitation.Status{
		ID: s.ID, Priority: s.Priority, State: s.State, Group: s.Group, Members: ms,
		Version: s.Version, Since: s.Since, Counter: s.Counter, PersistError: s.PersistError,
		Leader: s.Leader, Term: s.Term, LeaderSince: s.LeaderSince,
		Primary: s.Primary, Expect: s.Expect, LeaseUntil: s.LeaseUntil,
	}
}

func parseState(s string) (State, error) {
	for _, st := range []State{StateNormal, StateElection, StateReorganization} {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("group: unknown state %q", s)
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
// agent itself, with what their gossip meta says.
type Member struct {
	ID       NodeID `json:"id"`
	Name     string `json:"name"`
	Priority uint8  `json:"priority"`
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
	// Group, State, Leader and Degraded are what the node last announced
	// in its gossip meta (zero when unknown); Leader is false for a node
	// memberlist declared dead or left, which leads nothing whatever it
	// said before.
	Group    string `json:"group"`
	State    string `json:"state"`
	Leader   bool   `json:"leader"`
	Degraded bool   `json:"degraded"`
	// Tags are the node's tags (Config.Tags), from its gossip meta.
	Tags map[string]string `json:"tags"`
}

// Event reasons besides invitation's (recovery, election, merge, invited,
// ready, members, confirmed, persist-failed, saved, yielded, lease).
const (
	// ReasonSnapshot is the first event of a stream: the current status,
	// with no Old.
	ReasonSnapshot = "snapshot"
	// ReasonLeaderStart and ReasonLeaderStop follow the event in which the
	// node became the leader an application may act on, or stopped being
	// it (Status.IsLeader: in quorum mode, while its lease runs), once per
	// transition; a new term is a new leadership (a stop, then a start).
	// A lease that runs out ends the leadership by a local timer, even if
	// the loop is blocked: that ReasonLeaderStop is stamped with the
	// lease's end. A leader that stops the daemon gets ReasonLeaderStop
	// before it exits.
	ReasonLeaderStart = "leader-start"
	ReasonLeaderStop  = "leader-stop"
)

// Event reports a change of the node's view (GET /v1/events, one JSON
// object per line):
//
//	{"time":"...","node":3,"name":"db3","reason":"merge","old":{...status...},"new":{...status...}}
type Event struct {
	Time time.Time `json:"time"`
	Node NodeID    `json:"node"`
	Name string    `json:"name"`
	// Reason is one of invitation's reasons ("recovery", "election",
	// "merge", "invited", "ready", "members", "confirmed",
	// "persist-failed", "saved", "yielded", "lease"), ReasonLeaderStart,
	// ReasonLeaderStop or ReasonSnapshot.
	Reason string `json:"reason"`
	// Old is the view before the change; nil in a snapshot.
	Old *Status `json:"old"`
	// New is the view after the change.
	New Status `json:"new"`
	// Missed counts events this subscriber lost just before this one
	// (it fell behind; see Agent.Subscribe). Omitted when zero.
	Missed uint64 `json:"missed,omitempty"`
}

// String describes the event in one line.
func (e Event) String() string {
	old := "-"
	if e.Old != nil {
		old = e.Old.String()
	}
	return fmt.Sprintf("%s: %s -> %s", e.Reason, old, e.New)
}
