package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/groupd/groupd/wire"
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
	// ID is the node's ID, Name its name (group.Config.Name).
	ID   wire.NodeID
	Name string
	// Priority is the node's priority, the first part of its rank.
	Priority uint8
	// State is the invitation algorithm's state: Normal, Election or
	// Reorganization. An agent that has not run yet, or a node without a
	// group (it boots, or lost its group and waits to be invited), is in
	// Election with a zero Group.
	State wire.State
	// Role is Coordinator when the node coordinates Group.
	Role wire.Role
	// Group is the node's group number; zero without a group. Its
	// sequence is at least the Unix time in milliseconds at which the
	// group was formed (GroupFormed).
	Group wire.GroupNumber
	// Coordinator is Group's coordinator (the node that created it), and
	// CoordinatorName its name. Another node's name comes with its
	// memberlist meta, which can arrive shortly after the group settled:
	// until then CoordinatorName is "", and the status gets it then.
	Coordinator     wire.NodeID
	CoordinatorName string
	// Members are the IDs in the group's member list, sorted; empty while
	// the node waits for a Ready. MemberPriorities[i] is the priority of
	// Members[i], so that a reader can rank them.
	Members          []wire.NodeID
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
	// (see group.Config.Quorum); with Expect 0 every Normal group is. A leader is
	// primary only while its lease runs: the agent checks it when the
	// status is read (group.Agent.Status), so a process that wakes from a pause
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
	Term        wire.GroupNumber
	// Tags are this node's tags (group.Config.Tags).
	Tags map[string]string
	// DuplicateID is set while another process uses this node's ID (this
	// one kept running; the other gave way, or should): from its first
	// packet until none has arrived for MemberTimeout.
	DuplicateID *DuplicateID
	// TimingMismatches lists peers that announced intervals other than
	// this node's (at most 16; see TimingMismatch).
	TimingMismatches []TimingMismatch
	// TieBreaker is the configured tie-breaker (--tie-breaker), 0 when
	// none is set.
	TieBreaker wire.NodeID
	// Rule is the rule a quorum is counted by (quorum mode; nil
	// otherwise): as configured, or stricter when nodes' settings
	// disagree or more nodes are known than Expect (see QuorumRule).
	Rule *QuorumRule
	// QuorumMismatches lists peers whose --expect or --tie-breaker differ
	// from this node's (at most 16; see QuorumMismatch).
	QuorumMismatches []QuorumMismatch
}

// QuorumRule is the rule a node counts a quorum by (docs/design.md §8):
// more than half of Voters, or exactly half holding TieBreaker (0: an
// exact half never decides). It is the configured one (Expect and
// --tie-breaker) unless a node announced a larger --expect or another
// tie-breaker, or more processes are known than Expect: every node counts
// by the strictest rule any announces, so that disagreeing settings cannot
// make two primary leaders. Extra lists the IDs known to run more than one
// process (a second process given the ID, or a node whose data dir was
// lost): a leader counts the grants of none but the first.
type QuorumRule struct {
	Voters     int           `json:"voters"`
	TieBreaker wire.NodeID   `json:"tie_breaker"`
	Extra      []wire.NodeID `json:"extra,omitempty"`
}

// QuorumMismatch is a peer that announced quorum settings other than
// this node's: both count by the stricter rule, but the operator should
// make them agree.
type QuorumMismatch struct {
	Peer       wire.NodeID `json:"peer"`
	Expect     int         `json:"expect"`
	TieBreaker wire.NodeID `json:"tie_breaker"`
	Detail     string      `json:"detail"` // "--expect 5 (this node 3)"
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
	Peer   wire.NodeID `json:"peer"`
	Theirs wire.Timing `json:"-"`
	Ours   wire.Timing `json:"-"`
	Detail string      `json:"detail"` // "theirs: ...; ours: ..."
}

// IsCoordinator reports whether the node is Normal and coordinates its
// group: the state in which it is the group's settled coordinator.
func (s Status) IsCoordinator() bool {
	return s.State == wire.StateNormal && s.Role == wire.RoleCoordinator
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
	ID               wire.NodeID       `json:"id"`
	Name             string            `json:"name"`
	Priority         uint8             `json:"priority"`
	State            string            `json:"state"`
	Role             string            `json:"role"`
	Group            string            `json:"group"`
	Coordinator      wire.NodeID       `json:"coordinator"`
	CoordinatorName  string            `json:"coordinator_name"`
	Members          []wire.NodeID     `json:"members"`
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
	TieBreaker       wire.NodeID       `json:"tie_breaker,omitempty"`
	Rule             *QuorumRule       `json:"quorum_rule,omitempty"`
	QuorumMismatches []QuorumMismatch  `json:"quorum_mismatches,omitempty"`
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
		TieBreaker: s.TieBreaker, Rule: s.Rule, QuorumMismatches: s.QuorumMismatches,
	}
	if j.Members == nil {
		j.Members = []wire.NodeID{}
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
	var role wire.Role
	switch j.Role {
	case "coordinator":
		role = wire.RoleCoordinator
	case "participant", "":
		role = wire.RoleParticipant
	default:
		return fmt.Errorf("schema: unknown role %q", j.Role)
	}
	parseGroup := func(v string) (wire.GroupNumber, error) {
		if v == "" {
			return wire.GroupNumber{}, nil
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
			return fmt.Errorf("schema: bad boot %q: %w", j.Boot, err)
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
		TieBreaker: j.TieBreaker, Rule: j.Rule, QuorumMismatches: j.QuorumMismatches,
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
				return fmt.Errorf("schema: member priority %d out of range", p)
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

// Clone returns a copy of s that shares nothing with it: members, member
// priorities, tags, mismatches, the quorum rule and the duplicate are
// copied. The
// agent hands every caller and every subscriber a clone, so that one that
// changes what it got changes nobody else's view, the agent's included.
func (s Status) Clone() Status {
	s.Members = slices.Clone(s.Members)
	s.MemberPriorities = slices.Clone(s.MemberPriorities)
	s.Tags = maps.Clone(s.Tags)
	s.TimingMismatches = slices.Clone(s.TimingMismatches)
	s.QuorumMismatches = slices.Clone(s.QuorumMismatches)
	if s.Rule != nil {
		r := *s.Rule
		r.Extra = slices.Clone(r.Extra)
		s.Rule = &r
	}
	if s.DuplicateID != nil {
		d := *s.DuplicateID
		s.DuplicateID = &d
	}
	return s
}

// Rank returns the node's rank as the protocol orders it.
func (s Status) Rank() wire.Rank {
	return wire.Rank{Degraded: s.Degraded, Priority: s.Priority, ID: s.ID}
}

func parseState(s string) (wire.State, error) {
	for _, st := range []wire.State{wire.StateNormal, wire.StateElection, wire.StateReorganization} {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("schema: unknown state %q", s)
}
