package sim

import (
	"fmt"
	"io"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// Epoch is the virtual clock's time zero. Traces print times as clock
// times from it (00:00:01.250000 is 1.25 s into a run).
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Config describes one simulation. The zero value of every field but N
// means its default.
type Config struct {
	// N is the number of nodes. They get IDs 1..N.
	N int
	// Seed seeds the simulator's one random source, from which the
	// network model and every node's jitter source are derived.
	Seed int64
	// Timing is every node's protocol timing; zero means
	// invitation.DefaultTiming().
	Timing invitation.Timing
	// NodeTimings[i], when not zero, is node i+1's timing instead: nodes
	// on different profiles on one LAN (their coordinator's announced
	// timing rules inside a group).
	NodeTimings []invitation.Timing
	// Election is the algorithm survivors run; empty means bully.
	Election invitation.Election
	// NodeElections[i], when not empty, is node i+1's algorithm instead
	// (a group runs its coordinator's).
	NodeElections []invitation.Election
	// ClockOffsets[i] is node i+1's clock offset at its first start
	// (SetClock changes it for later starts). It moves the wall-clock
	// floor of the numbers the node creates.
	ClockOffsets []time.Duration
	// Drift[i] is node i+1's clock-rate error: its clock runs 1+Drift[i]
	// times as fast as real (virtual) time, from each start. The lease
	// assumes rates within invitation.DriftAllowance of each other.
	Drift []float64
	// Quorum runs every node in quorum mode (a leader is primary while a
	// quorum holds its lease): the checker then also verifies that no two
	// nodes are primary leaders at once and that primary leaders' terms
	// grow (invariant.Checker.ExclusiveLeaders). Zero: off.
	Quorum invitation.Quorum
	// NodeQuorums[i], when Expect is not zero, is node i+1's quorum
	// settings instead: operators' settings that disagree (a typo in one
	// unit file, a rolling change of --expect, tie-breakers that differ).
	// The nodes find out and count by the strictest rule (design §8);
	// the checker's LP1 holds as long as every node was heard before the
	// first fault (Schedule's converged start).
	NodeQuorums []invitation.Quorum
	// NoPreempt: every node keeps leading when a higher-priority node
	// returns (invitation.Config.NoPreempt).
	NoPreempt bool
	// ViewPrimary computes a leader's primary flag from its member list
	// alone, without the lease (invitation.Config.ViewPrimary): the
	// negative control of the exclusive-leadership invariant.
	ViewPrimary bool
	// SeedsOnly models discovery without multicast: a broadcast reaches
	// only the nodes its sender knows, as the daemon copies broadcasts by
	// unicast to memberlist's members. A node knows the seeds (nodes 1
	// and 2) from its start, every node it heard from, and every node
	// those knew (memberlist's gossip), for good: memberlist keeps dead
	// members and the daemon keeps retrying them. Memberlist lists one
	// process per node ID, never another with the node's own: two
	// processes with one ID find each other by memberlist's conflict
	// report and the runtime's probes (dupid.go).
	SeedsOnly bool
	// Keyed models a network with a key: a receiver accepts packets of a
	// sender's boot only after verifying it (a Challenge and Response,
	// one round trip; package wire's ReplayWindow).
	Keyed bool
	// Priorities[i] is the priority of node i+1; missing entries (or a
	// nil slice) mean wire.DefaultPriority.
	Priorities []uint8
	// StartSpread staggers start-up: each node starts at a uniform random
	// time in [0, StartSpread]. Zero starts every node at once.
	StartSpread time.Duration
	// Net is the initial network model; Sim's methods change it while
	// running.
	Net Net
	// Host is the CPU the nodes share (see Host); the zero value has CPU
	// to spare. Quiet puts it back after SetHost.
	Host Host
	// SaveLatency is how long a save of the counter takes: uniform in
	// [Min, Max]. Zero means 1–5 ms.
	SaveLatency [2]time.Duration
	// SaveFailure is the probability that a save fails (PersistFailed).
	SaveFailure float64
	// Detect models memberlist's failure detector (see Detect).
	Detect Detect
	// Codec sends every message through wire.Encode and wire.Decode, so a
	// field the codec drops shows up as a protocol failure. Bytes are
	// counted in any case.
	Codec bool
	// VerifyStatus compares each node's Status() with the view its Events
	// reported after every input, so a change reported by no Event is
	// caught. Costs a copy of the member list per input; the default
	// (nil) enables it for N ≤ 64.
	VerifyStatus *bool
	// LazyDeadlines skips NextDeadline after an input to a participant
	// that produced no output (a beacon or a Yes received, typically),
	// keeping the tick already scheduled: most inputs of a large run are
	// such, and each would walk the node's timer table. It assumes such an
	// input never brings the deadline forward (a coordinator's can: a
	// beacon re-jitters its next Check, so coordinators are always
	// asked); when it is off, the simulator checks that assumption and
	// counts the exceptions in Counts.LazyMisses. The default (nil)
	// enables it for N > 64.
	LazyDeadlines *bool
	// TraceLines is the size of the trace ring printed with a violation;
	// zero means 300.
	TraceLines int
	// TraceAll records every input in the trace. By default an input whose
	// only effect is beacons (a beacon received, a timer that sent a
	// beacon) is left out: on a quiet LAN they are most of the traffic.
	TraceAll bool
	// Trace, if set, receives every trace line as it happens.
	Trace io.Writer
	// Repro is printed with a violation as the command that reproduces
	// it, e.g. "go test ./sim -run TestRandomSchedules -seed=12345 -v".
	Repro string
}

// Net is the network model. Delivery delay is Base + uniform[0, Jitter],
// plus uniform[0, ReorderDelay] with probability Reorder. Each delivery is
// independently lost with probability Loss (and with the per-link loss set
// by Sim.SetLinkLoss), and duplicated with probability Dup (the copy gets
// its own delay).
type Net struct {
	Base         time.Duration
	Jitter       time.Duration
	Loss         float64
	Dup          float64
	Reorder      float64
	ReorderDelay time.Duration
}

// LAN is the quiet network of a switched LAN: 100–600 µs, no loss.
func LAN() Net { return Net{Base: 100 * time.Microsecond, Jitter: 500 * time.Microsecond} }

// Detect models memberlist's failure detector, which groupd runs relaxed
// (it reports members; the coordinator's heartbeat is the fast detector):
// Delay after a node crashes, every live node that can reach it gets
// PeerDown for it (each after a further uniform[0, Jitter], as gossip
// spreads). With Partitions, the same happens Delay after a partition or
// cut to every pair of live nodes that can no longer talk both ways.
type Detect struct {
	Off        bool          // no failure detector at all
	Delay      time.Duration // zero means 6 s
	Jitter     time.Duration // zero means 3 s
	Partitions bool
}

func (c *Config) fill() error {
	if c.N < 1 {
		return fmt.Errorf("sim: N must be ≥ 1, got %d", c.N)
	}
	if c.Timing == (invitation.Timing{}) {
		c.Timing = invitation.DefaultTiming()
	}
	if err := c.Timing.Validate(); err != nil {
		return err
	}
	if c.Net == (Net{}) {
		c.Net = LAN()
	}
	if c.Host.On() && c.Host.Backlog <= 0 {
		c.Host.Backlog = DefaultBacklog
	}
	if c.SaveLatency == [2]time.Duration{} {
		c.SaveLatency = [2]time.Duration{time.Millisecond, 5 * time.Millisecond}
	}
	if c.SaveLatency[1] < c.SaveLatency[0] {
		c.SaveLatency[1] = c.SaveLatency[0]
	}
	if c.Detect.Delay == 0 {
		c.Detect.Delay = defaultDetectDelay
	}
	if c.Detect.Jitter == 0 {
		c.Detect.Jitter = defaultDetectJitter
	}
	for i, t := range c.NodeTimings {
		if t == (invitation.Timing{}) {
			continue
		}
		if err := t.Validate(); err != nil {
			return fmt.Errorf("sim: timing of node %d: %w", i+1, err)
		}
	}
	for i, a := range c.NodeElections {
		if _, err := invitation.ParseElection(string(a)); err != nil {
			return fmt.Errorf("sim: election of node %d: %w", i+1, err)
		}
	}
	for i, d := range c.Drift {
		if d <= -0.5 || d >= 0.5 {
			return fmt.Errorf("sim: drift of node %d is %v, want within ±0.5", i+1, d)
		}
	}
	for i, q := range c.NodeQuorums {
		if err := q.Validate(); err != nil {
			return fmt.Errorf("sim: NodeQuorums[%d]: %w", i, err)
		}
	}
	if err := c.Quorum.Validate(); err != nil {
		return err
	}
	if c.TraceLines == 0 {
		c.TraceLines = 300
	}
	if c.VerifyStatus == nil {
		v := c.N <= 64
		c.VerifyStatus = &v
	}
	if c.LazyDeadlines == nil {
		v := c.N > 64
		c.LazyDeadlines = &v
	}
	return nil
}

// The failure detector model's defaults: memberlist as groupd relaxes it
// (lan: a probe every 6 s, suspicion 12 s below 10 nodes), a backstop
// since members are watched by their acknowledgements.
const (
	defaultDetectDelay  = 12 * time.Second
	defaultDetectJitter = 9 * time.Second
)

func (c *Config) timing(id wire.NodeID) invitation.Timing {
	if i := int(id) - 1; i < len(c.NodeTimings) && c.NodeTimings[i] != (invitation.Timing{}) {
		return c.NodeTimings[i]
	}
	return c.Timing
}

func (c *Config) quorum(id wire.NodeID) invitation.Quorum {
	if i := int(id) - 1; i < len(c.NodeQuorums) && c.NodeQuorums[i].Enabled() {
		return c.NodeQuorums[i]
	}
	return c.Quorum
}

// quorumMode reports whether any node runs with a quorum (the checker then
// follows primary leaders: LP1).
func (c *Config) quorumMode() bool {
	if c.Quorum.Enabled() {
		return true
	}
	for _, q := range c.NodeQuorums {
		if q.Enabled() {
			return true
		}
	}
	return false
}

func (c *Config) election(id wire.NodeID) invitation.Election {
	if i := int(id) - 1; i < len(c.NodeElections) && c.NodeElections[i] != "" {
		return c.NodeElections[i]
	}
	return c.Election
}

func (c *Config) clockOffset(id wire.NodeID) time.Duration {
	if i := int(id) - 1; i < len(c.ClockOffsets) {
		return c.ClockOffsets[i]
	}
	return 0
}

func (c *Config) drift(id wire.NodeID) float64 {
	if i := int(id) - 1; i < len(c.Drift) {
		return c.Drift[i]
	}
	return 0
}

func (c *Config) priority(id wire.NodeID) uint8 {
	if i := int(id) - 1; i < len(c.Priorities) && c.Priorities[i] != 0 {
		return c.Priorities[i]
	}
	return wire.DefaultPriority
}
