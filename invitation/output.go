package invitation

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/wire"
)

// Input is one thing that happens to a node: a message from the network
// (Receive), the passing of time (Tick), the failure detector's verdict
// (PeerDown), or the outcome of a save (Saved, SaveFailed). Every input
// takes the one path, Node.Step, so a run can be logged and replayed.
type Input interface{ isInput() }

// Receive delivers a message from the network.
type Receive struct{ Msg wire.Message }

// Tick tells the node what time it is: timers due by then fire. Due is
// the deadline the runtime armed the tick for (the machine's
// NextDeadline), or zero if it ticks on a period of its own: a tick long
// after its Due shows that the node itself was not running (a stalled
// process on a loaded host, a long pause of the runtime), and the node
// then gives its peers a round trip before it judges them (Node.afterStall).
type Tick struct{ Due time.Time }

// PeerDown tells the node that the failure detector (memberlist) declared
// node ID dead or gone. Left says it left gracefully (it stopped): it no
// longer counts as a voter (design §8).
type PeerDown struct {
	ID   wire.NodeID
	Left bool
}

// Saved tells the node that the runtime durably saved Durable, as an
// Output.Save asked.
type Saved struct{ Durable Durable }

// SaveFailed tells the node that saving Durable failed, with the error's
// text (a string, so that an input log can be replayed).
type SaveFailed struct {
	Durable Durable
	Err     string
}

func (Receive) isInput()    {}
func (Tick) isInput()       {}
func (PeerDown) isInput()   {}
func (Saved) isInput()      {}
func (SaveFailed) isInput() {}

func (i Receive) String() string { return "recv " + i.Msg.String() }
func (Tick) String() string      { return "tick" }
func (i PeerDown) String() string {
	if i.Left {
		return "peer-left " + strconv.FormatUint(uint64(i.ID), 10)
	}
	return "peer-down " + strconv.FormatUint(uint64(i.ID), 10)
}
func (i Saved) String() string      { return "saved " + i.Durable.String() }
func (i SaveFailed) String() string { return "save-failed " + i.Durable.String() + ": " + i.Err }

func (d Durable) String() string {
	s := fmt.Sprintf("counter=%d last=%s", d.Counter, d.LastGroup)
	if !d.Term.IsZero() {
		s += " term=" + d.Term.String()
	}
	if d.Rule.Voters != 0 {
		s += fmt.Sprintf(" rule=%d", d.Rule.Voters)
		if d.Rule.Tie != 0 {
			s += fmt.Sprintf("/tb%d", d.Rule.Tie)
		}
	}
	return s
}

// Output is what the machine asks its runtime to do. Messages may be sent
// in any order. If Save is set, the runtime saves it durably and then
// delivers Saved (or SaveFailed); the machine sends nothing that carries a
// new group number before the save that covers it is confirmed, and it
// asks for one save at a time.
type Output struct {
	Messages []wire.Envelope
	Save     *Durable
	Events   []Event
	// Created lists the group numbers the node adopted as their creator,
	// in order: each only once its sequence was saved.
	Created []wire.GroupNumber
	// Notices are things an operator should hear about (see Notice).
	Notices []Notice
}

// Empty reports whether there is nothing to do.
func (o Output) Empty() bool {
	return len(o.Messages) == 0 && o.Save == nil && len(o.Events) == 0 && len(o.Created) == 0 && len(o.Notices) == 0
}

// Role is a node's role in its group (wire.Role, shared with the API's
// records).
type Role = wire.Role

const (
	Participant = wire.RoleParticipant
	Coordinator = wire.RoleCoordinator
)

// Status is a node's view of its group.
type Status struct {
	ID       wire.NodeID
	Priority uint8
	State    wire.State
	// Group is the node's current group. In Election it is still the old
	// group while the new number is being saved; zero while the node has
	// no group yet (it booted, or lost its group, and listens for an
	// invitation before it creates a number).
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
	// Counter is the highest saved group-number sequence.
	Counter uint64
	// PersistError is the last failure to save, empty once a save
	// succeeds. While it is set the node is degraded: it creates no
	// numbers and ranks below every other node.
	PersistError string
	// Leader is set from when the node first coordinates a Normal group
	// until it stops coordinating (it is invited into another group,
	// yields its ID, or stops): merges it leads, members coming and
	// going, and its group being renumbered leave it set.
	Leader bool
	// Term is the group number at which the current leadership began (a
	// fencing number: a later leadership begins at a later number); zero
	// when not Leader.
	Term wire.GroupNumber
	// LeaderSince is when the current leadership began.
	LeaderSince time.Time
	// Primary reports whether the node's group is the primary partition
	// as of the last input: without a quorum every Normal node is; with
	// one, a leader is while a majority holds its lease, and a
	// participant while its member list holds a majority. A leader's
	// primary ends at LeaseUntil even if no input comes: readers must
	// check it (PrimaryAt).
	Primary bool
	// Expect is the quorum's expected cluster size (Config.Quorum), 0
	// when primary-partition mode is off.
	Expect int
	// LeaseUntil is when a primary leader's lease ends unless renewed,
	// on the clock the machine is given; zero when the node is not a
	// primary leader in quorum mode, or its lease cannot end (a quorum
	// of one).
	LeaseUntil time.Time
	// Incumbent reports that the node ranks above every node that does
	// not lead (Config.NoPreempt, wire.FlagIncumbent).
	Incumbent bool
}

// PrimaryAt reports whether the node is primary at now: Primary, and
// before LeaseUntil when a lease bounds it. A runtime reads it at the
// moment it answers, so that a process that wakes from a pause never
// reports a lease that ran out meanwhile.
func (s Status) PrimaryAt(now time.Time) bool {
	return s.Primary && (s.LeaseUntil.IsZero() || now.Before(s.LeaseUntil))
}

// PrimaryLeader reports whether the node is a leader and primary at now:
// the one signal on which an application should act alone.
func (s Status) PrimaryLeader(now time.Time) bool { return s.Leader && s.PrimaryAt(now) }

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

// Degraded reports whether the node cannot save its state.
func (s Status) Degraded() bool { return s.PersistError != "" }

// Rank is the node's rank, degraded included.
func (s Status) Rank() wire.Rank {
	return wire.Rank{Degraded: s.Degraded(), Incumbent: s.Incumbent, Priority: s.Priority, ID: s.ID}
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
	extra := ""
	if s.Leader {
		extra += " leader(term " + s.Term.String() + ")"
	}
	if s.Primary && s.Expect > 0 {
		extra += " primary"
	}
	if s.Degraded() {
		extra += " degraded"
	}
	return fmt.Sprintf("%d %s %s g=%s v%d [%s]%s", s.ID, s.State, s.Role(), s.Group, s.Version, strings.Join(ids, " "), extra)
}

// Reason says why a node's view changed.
type Reason string

const (
	ReasonRecovery      Reason = "recovery"       // lost its group, or formed one while it had none
	ReasonElection      Reason = "election"       // coordinator failed: election started; its winner formed a group
	ReasonMerge         Reason = "merge"          // started merging other groups, formed the new one; or took over (§3.5)
	ReasonInvited       Reason = "invited"        // accepted an invitation
	ReasonReady         Reason = "ready"          // the group formed (Ready done)
	ReasonMembers       Reason = "members"        // member list changed in place
	ReasonConfirmed     Reason = "confirmed"      // Normal again in the same group: after a merge, or a false suspicion
	ReasonPersistFailed Reason = "persist-failed" // could not save
	ReasonSaved         Reason = "saved"          // a save succeeded after failures
	ReasonYielded       Reason = "yielded"        // another process holds this node's ID
	ReasonLease         Reason = "lease"          // a leader's lease began or ended (quorum mode), or its term grew
)

// Event reports a change of the node's view: state, group, role, member
// list, leadership or persistence. Old and New are the views before and
// after.
type Event struct {
	Time   time.Time
	Reason Reason
	Old    Status
	New    Status
}

func (e Event) String() string {
	return fmt.Sprintf("%s: %s -> %s", e.Reason, e.Old, e.New)
}

// NoticeKind says what a Notice is about.
type NoticeKind uint8

const (
	// NoticeDuplicateID: a message carried this node's ID and another
	// boot: a second process uses the ID. Yield says whether this node
	// gives way (it stops: its runtime should exit); the other process's
	// boot is Boot.
	NoticeDuplicateID NoticeKind = iota + 1
	// NoticeStateBehind: a peer knows a group number of this node's
	// above everything the state file says it created (Group): the state
	// was lost or restored from an older copy. The node jumps above it.
	NoticeStateBehind
	// NoticeTimingMismatch: a peer (Peer) announced timing (Theirs) that
	// differs from this node's (Ours). Reported once per peer and value.
	NoticeTimingMismatch
	// NoticeQuorumMismatch: a peer (Peer) announced quorum settings
	// (TheirQuorum: --expect, --tie-breaker) that differ from this
	// node's (OurQuorum). Reported once per peer and value, and once
	// more, with TheirQuorum equal to OurQuorum, when the peer agrees
	// again. Both count by the stricter rule (design §8).
	NoticeQuorumMismatch
	// NoticeQuorumRule: the rule this node counts a quorum by changed
	// (Voters, Tie): a majority of more voters than Expect (it knows of
	// more processes, or a larger Expect: Extra lists the IDs it knows
	// more than one process of), or no tie-breaker where one is set (a
	// node disagrees on it); or back to the configured rule.
	NoticeQuorumRule
)

func (k NoticeKind) String() string {
	switch k {
	case NoticeDuplicateID:
		return "duplicate-id"
	case NoticeStateBehind:
		return "state-behind"
	case NoticeTimingMismatch:
		return "timing-mismatch"
	case NoticeQuorumMismatch:
		return "quorum-mismatch"
	case NoticeQuorumRule:
		return "quorum-rule"
	}
	return "notice(" + strconv.Itoa(int(k)) + ")"
}

// Notice is something the runtime should tell the operator: each is
// reported once, at the input that revealed it.
type Notice struct {
	Kind NoticeKind
	Time time.Time
	Peer wire.NodeID // the peer concerned (the node's own ID for a duplicate)
	// NoticeDuplicateID.
	Boot  uint64 // the other process's boot
	Yield bool   // this node gives way
	// NoticeStateBehind.
	Group   wire.GroupNumber // the number the peer knows
	Counter uint64           // what the state file said
	// NoticeTimingMismatch.
	Ours, Theirs wire.Timing
	// NoticeQuorumMismatch (and NoticeQuorumRule: OurQuorum, the
	// node's settings).
	OurQuorum, TheirQuorum wire.Quorum
	// NoticeQuorumRule.
	Voters int
	Tie    wire.NodeID
	Extra  []wire.NodeID
}

func (n Notice) String() string {
	switch n.Kind {
	case NoticeDuplicateID:
		who := "keeps running"
		if n.Yield {
			who = "yields"
		}
		return fmt.Sprintf("duplicate ID %d: another process (boot %016x) uses it; this one %s", n.Peer, n.Boot, who)
	case NoticeStateBehind:
		return fmt.Sprintf("node %d reports group %s, above this node's counter %d: state lost or rolled back; jumping above it", n.Peer, n.Group, n.Counter)
	case NoticeTimingMismatch:
		return fmt.Sprintf("node %d announces timing %s, this node %s", n.Peer, n.Theirs, n.Ours)
	case NoticeQuorumMismatch:
		if n.TheirQuorum == n.OurQuorum {
			return fmt.Sprintf("node %d announces quorum %s, as this node does", n.Peer, n.TheirQuorum)
		}
		return fmt.Sprintf("node %d announces quorum %s, this node %s", n.Peer, n.TheirQuorum, n.OurQuorum)
	case NoticeQuorumRule:
		s := fmt.Sprintf("quorum rule: a majority of %d (--expect %d)", n.Voters, n.OurQuorum.Expect)
		switch {
		case n.Tie != 0:
			s += fmt.Sprintf(", or half holding %d", n.Tie)
		case n.OurQuorum.TieBreaker != 0:
			s += fmt.Sprintf("; tie-breaker %d not in force", n.OurQuorum.TieBreaker)
		}
		if len(n.Extra) > 0 {
			s += fmt.Sprintf("; more than one process of %v", n.Extra)
		}
		return s
	}
	return n.Kind.String()
}
