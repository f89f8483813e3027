package schema

import (
	"time"

	"github.com/groupd/groupd/wire"
)

// TermHeader is the header in which GET /v1/leader gives the node's term
// (seq.id), on either answer.
const TermHeader = "X-Groupd-Term"

// LeaderAnswer is the body of GET /v1/leader. The status code says the
// answer alone: 200 while this node is the leader an application may act
// on (Status.IsLeader: in quorum mode, while it holds its lease, checked
// as the request is answered), 503 otherwise; the term is also in the
// TermHeader. Load-balancer health checks and readiness probes
// read the code; `groupd exec` reads the lease.
type LeaderAnswer struct {
	Leader bool        `json:"leader"`
	ID     wire.NodeID `json:"id"`
	Name   string      `json:"name"`
	// Term is the leadership's term ("" when not leader): a fencing
	// number that only grows from one leadership to the next.
	Term    string `json:"term"`
	Group   string `json:"group"`
	Primary bool   `json:"primary"`
	Expect  int    `json:"expect"`
	// LeaseRemainingMS is how long the lease still runs, in
	// milliseconds, as measured when the answer was made (quorum mode,
	// while leader): a reader that stops acting by its own clock's send
	// time plus this never outlives the lease.
	LeaseRemainingMS *int64 `json:"lease_remaining_ms,omitempty"`
	// LeaderID and LeaderName: who leads this node's group (its
	// coordinator once Normal).
	LeaderID   wire.NodeID `json:"leader_id"`
	LeaderName string      `json:"leader_name"`
	Time       time.Time   `json:"time"`
}
