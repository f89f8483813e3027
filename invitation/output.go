package invitation

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/wire"
)

// Output is what the machine asks its runtime to do. Messages may be sent
// in any order. If Persist is set, the runtime saves Persist.Counter durably
// and then calls Persisted (or PersistFailed); the machine sends nothing
// that carries the new group number before that.
type Output struct {
	Messages []wire.Envelope
	Persist  *Persist
	Events   []Event
}

// Empty reports whether there is nothing to do.
func (o Output) Empty() bool {
	return len(o.Messages) == 0 && o.Persist == nil && len(o.Events) == 0
}

// Persist asks the runtime to save the group-number counter.
type Persist struct {
	Counter uint64
}

func (p Persist) String() string { return "persist counter=" + strconv.FormatUint(p.Counter, 10) }

// Role is a node's role in its group.
type Role uint8

const (
	Participant Role = iota
	Coordinator
)

func (r Role) String() string {
	if r == Coordinator {
		return "coordinator"
	}
	return "participant"
}

// Status is a node's view of its group.
type Status struct {
	ID       wire.NodeID
	Priority uint8
	State    wire.State
	// Group is the node's current group. In Election it is still the old
	// group while the new number is being saved.
	Group wire.GroupNumber
	// Members is the member list of Version, sorted by ID. Empty while
	// Reorganization waits for Ready. It is shared with the machine (and
	// with every Event and Status that reports the same list), which
	// replaces the list rather than editing it: read it, never modify it.
	// Sharing keeps a report O(1) in the group size.
	Members []wire.Member
	Version uint64
	// Since is when Group last changed.
	Since time.Time
	// Counter is the highest persisted group-number sequence.
	Counter uint64
	// PersistError is the last failure to save the counter, empty once a
	// save succeeds.
	PersistError string
}

// Coordinator is the coordinator of the node's group: the node that
// created the group number.
func (s Status) Coordinator() wire.NodeID { return s.Group.ID }

// Role says whether the node coordinates its group.
func (s Status) Role() Role {
	if s.Group.ID == s.ID && s.ID != 0 {
		return Coordinator
	}
	return Participant
}

// MemberIDs returns the member IDs in order.
func (s Status) MemberIDs() []wire.NodeID {
	ids := make([]wire.NodeID, len(s.Members))
	for i, m := range s.Members {
		ids[i] = m.ID
	}
	return ids
}

func (s Status) String() string {
	ids := make([]string, len(s.Members))
	for i, m := range s.Members {
		ids[i] = strconv.FormatUint(uint64(m.ID), 10)
	}
	return fmt.Sprintf("%d %s %s g=%s v%d [%s]", s.ID, s.State, s.Role(), s.Group, s.Version, strings.Join(ids, " "))
}

// Reason says why a node's view changed.
type Reason string

const (
	ReasonRecovery      Reason = "recovery"       // formed a singleton group
	ReasonElection      Reason = "election"       // coordinator failed; bully started
	ReasonMerge         Reason = "merge"          // started merging other groups
	ReasonInvited       Reason = "invited"        // accepted an invitation
	ReasonReady         Reason = "ready"          // the group formed (Ready done)
	ReasonMembers       Reason = "members"        // member list changed in place
	ReasonConfirmed     Reason = "confirmed"      // coordinator again after a merge
	ReasonPersistFailed Reason = "persist-failed" // could not save a new group number
)

// Event reports a change of the node's view: state, group, role or member
// list. Old and New are the views before and after.
type Event struct {
	Time   time.Time
	Reason Reason
	Old    Status
	New    Status
}

func (e Event) String() string {
	return fmt.Sprintf("%s: %s -> %s", e.Reason, e.Old, e.New)
}
