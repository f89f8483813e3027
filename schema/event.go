package schema

import (
	"fmt"
	"time"

	"github.com/groupd/groupd/wire"
)

// Event reasons besides invitation's (recovery, election, merge, invited,
// ready, members, confirmed, persist-failed, saved, yielded, lease).
const (
	// ReasonSnapshot is the first event of a stream: the current status,
	// with no Old.
	ReasonSnapshot = "snapshot"
	// ReasonLeaderStart and ReasonLeaderStop follow the event in which the
	// node became the leader an application may act on, or stopped being
	// it (Status.IsLeader: in quorum mode, while its lease runs), once per
	// transition. A lease that runs out ends the leadership by a local
	// timer, even if the loop is blocked: that ReasonLeaderStop is stamped
	// with the lease's end. A leader that stops the daemon gets
	// ReasonLeaderStop before it exits.
	ReasonLeaderStart = "leader-start"
	ReasonLeaderStop  = "leader-stop"
	// ReasonLeaderTerm: a leader that goes on leading under a new term
	// (without a quorum: its members saw a higher term, after a heal),
	// one event, neither a stop nor a start; Old.Term is the term that
	// ended, New.Term the new one. Fence writes with the new term.
	ReasonLeaderTerm = "leader-term"
)

// Event reports a change of the node's view (GET /v1/events, one JSON
// object per line):
//
//	{"time":"...","node":3,"name":"db3","reason":"merge","old":{...status...},"new":{...status...}}
type Event struct {
	Time time.Time   `json:"time"`
	Node wire.NodeID `json:"node"`
	Name string      `json:"name"`
	// Reason is one of invitation's reasons ("recovery", "election",
	// "merge", "invited", "ready", "members", "confirmed",
	// "persist-failed", "saved", "yielded", "lease"), ReasonLeaderStart,
	// ReasonLeaderStop, ReasonLeaderTerm or ReasonSnapshot.
	Reason string `json:"reason"`
	// Old is the view before the change; nil in a snapshot.
	Old *Status `json:"old"`
	// New is the view after the change.
	New Status `json:"new"`
	// Missed counts events this subscriber lost just before this one
	// (it fell behind; see group.Agent.Subscribe). Omitted when zero.
	Missed uint64 `json:"missed,omitempty"`
}

// Clone returns a copy of e whose views share nothing with e's (see
// Status.Clone).
func (e Event) Clone() Event {
	if e.Old != nil {
		old := e.Old.Clone()
		e.Old = &old
	}
	e.New = e.New.Clone()
	return e
}

// String describes the event in one line.
func (e Event) String() string {
	old := "-"
	if e.Old != nil {
		old = e.Old.String()
	}
	return fmt.Sprintf("%s: %s -> %s", e.Reason, old, e.New)
}
