package invitation

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/groupd/groupd/invitation/quorum"
	"github.com/groupd/groupd/wire"
)

// Timing holds every interval of the protocol. DefaultTiming is the lan
// profile (docs/design.md §5); FastTiming divides it for experiments.
// TimingFields lists the fields with their flag names and meanings: Scale,
// Validate and the command line's flags are all driven by that one table.
type Timing struct {
	// BeaconInterval: how often a node that is not a Normal coordinator
	// or participant announces itself on the multicast group (a node in
	// Election or Reorganization).
	BeaconInterval time.Duration
	// CheckInterval: how often a coordinator looks for other coordinators.
	CheckInterval time.Duration
	// AliveInterval: how often a coordinator multicasts its heartbeat (a
	// beacon that tells every member at once that it is alive).
	AliveInterval time.Duration
	// AliveTimeout: a participant that heard neither a heartbeat nor a Yes
	// from its coordinator for this long considers it failed.
	AliveTimeout time.Duration
	// AnswerTimeout is the round-trip bound T = 2·Ttrans + Tprocess: how
	// long bully waits for an Answer, a Check for Yes replies, a suspicion
	// probe for its reply, and the spacing of retransmissions.
	AnswerTimeout time.Duration
	// AcceptWindow: how long a merging coordinator collects Accepts
	// before it sends Ready.
	AcceptWindow time.Duration
	// ReadyTimeout: how long a coordinator retransmits a Ready to members
	// that have not acknowledged it before dropping them.
	ReadyTimeout time.Duration
	// ElectionTimeout is bully's T': after an Answer, how long to wait for
	// the higher survivor's invitation before starting again.
	ElectionTimeout time.Duration
	// MergeDelay is the paper's priority-dependent delay, per
	// higher-ranked coordinator seen, before merging lower ones. It gives
	// the higher coordinator time to invite this one first.
	MergeDelay time.Duration
	// PeerTimeout: a coordinator not heard from for this long is
	// forgotten (coordinators beacon every AliveInterval).
	PeerTimeout time.Duration
	// MemberTimeout is the pace of the slow, cheap failure detector
	// (memberlist), which reports nodes that are not members of this
	// node's group (and members too, as a backstop): it reports a dead
	// node within this time. Members of a group are watched by their
	// acknowledgements (AckInterval).
	MemberTimeout time.Duration
	// AckInterval: how often a coordinator asks its members to
	// acknowledge a heartbeat (a BeatAck). The acknowledgements are the
	// members' signs of life: a member silent for AckInterval +
	// AliveInterval + AnswerTimeout is asked directly and dropped after
	// ReadyTimeout. In quorum mode they are also the lease's grants, and
	// come at most every 5/8 of Lease (see AckEvery).
	AckInterval time.Duration
	// Lease: how long a member's acknowledgement binds it to its leader
	// (design §8). A member that acknowledged a heartbeat supports no
	// other leader for Lease after it; the leader counts the grant for
	// LeaderLease (a little less, for clock-rate drift) from when it sent
	// the heartbeat. In quorum mode a leader is primary only while a
	// majority granted it a lease.
	Lease time.Duration
	// LeaseMargin is the safety margin between the end of a leader's
	// lease, as it counts it, and the earliest moment any member's grant
	// can have run out (and so another leader become primary): the leader
	// counts each grant this much shorter than the drift allowance alone
	// requires. It covers what the drift bound does not: a timer that
	// fires late, a garbage-collection pause between reading the clock
	// and acting, exec's kill taking effect, a leader-stop hook.
	LeaseMargin time.Duration
	// VoterTimeout is how long a node remembers a voter it no longer hears
	// (design §8): a node that announced other quorum settings, or one
	// more process than --expect. The memory is what keeps a partition of
	// a misconfigured cluster from having two primary leaders; it ends
	// this long into a partition, or when the node leaves gracefully.
	VoterTimeout time.Duration
}

// TimingField describes one field of Timing: its flag name (without
// dashes), what it bounds, and where it lives.
type TimingField struct {
	Name  string
	Usage string
	Field func(*Timing) *time.Duration
}

// GoName is the field's name in Timing: AliveTimeout for alive-timeout.
// Errors (Validate) name fields so.
func (f TimingField) GoName() string {
	var b strings.Builder
	for _, w := range strings.Split(f.Name, "-") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// TimingFields lists every field of Timing, in the order of the docs.
func TimingFields() []TimingField {
	return []TimingField{
		{"beacon-interval", "`DURATION` between beacons of a node that is neither a Normal coordinator nor a Normal participant",
			func(t *Timing) *time.Duration { return &t.BeaconInterval }},
		{"check-interval", "`DURATION` between a coordinator's checks for other coordinators to merge with",
			func(t *Timing) *time.Duration { return &t.CheckInterval }},
		{"alive-interval", "`DURATION` between a coordinator's heartbeats to its group",
			func(t *Timing) *time.Duration { return &t.AliveInterval }},
		{"alive-timeout", "a participant that hears nothing from its coordinator for `DURATION` considers it failed",
			func(t *Timing) *time.Duration { return &t.AliveTimeout }},
		{"answer-timeout", "round-trip bound `DURATION`: bully's wait for an Answer, and the retransmission spacing",
			func(t *Timing) *time.Duration { return &t.AnswerTimeout }},
		{"accept-window", "`DURATION` a merging coordinator collects Accepts before sending Ready",
			func(t *Timing) *time.Duration { return &t.AcceptWindow }},
		{"ready-timeout", "`DURATION` a coordinator retransmits Ready to members that have not acknowledged it",
			func(t *Timing) *time.Duration { return &t.ReadyTimeout }},
		{"election-timeout", "after a bully Answer, the `DURATION` to wait for the winner's invitation",
			func(t *Timing) *time.Duration { return &t.ElectionTimeout }},
		{"merge-delay", "`DURATION` to wait per higher-ranked coordinator seen before merging lower-ranked ones",
			func(t *Timing) *time.Duration { return &t.MergeDelay }},
		{"peer-timeout", "a coordinator not heard from for this `DURATION` is forgotten",
			func(t *Timing) *time.Duration { return &t.PeerTimeout }},
		{"member-timeout", "the failure detector (memberlist) reports a dead node within `DURATION`",
			func(t *Timing) *time.Duration { return &t.MemberTimeout }},
		{"ack-interval", "`DURATION` between the acknowledgements a coordinator asks of its members (their signs of life; in quorum mode at most 5/8 of the lease)",
			func(t *Timing) *time.Duration { return &t.AckInterval }},
		{"lease", "a member that acknowledged a leader's heartbeat supports no other leader for `DURATION` (the leader lease; --expect)",
			func(t *Timing) *time.Duration { return &t.Lease }},
		{"lease-margin", "the leader's lease ends at least `DURATION` before any member's grant can have run out: the least gap between two primary leaders (--expect)",
			func(t *Timing) *time.Duration { return &t.LeaseMargin }},
		{"voter-timeout", "a voter that is no longer heard (another node's settings, a process beyond --expect) is remembered for `DURATION` (--expect)",
			func(t *Timing) *time.Duration { return &t.VoterTimeout }},
	}
}

// DefaultTiming returns the lan profile. The values not fixed by the
// design follow from it: ElectionTimeout covers a survivor's probe, the
// winner's save and one invitation round trip; MergeDelay covers a higher
// coordinator's Check and invitation; MemberTimeout (30 s) paces
// memberlist's failure detector (see group.DefaultLANConfig), which only
// has to report nodes outside this node's group: acknowledgements watch
// the members, and heartbeats the coordinator. AckInterval (1 s) keeps an idle member near one packet a
// second while its coordinator learns of its loss within about 1.4 s;
// Lease (1.2 s) lets a cut-off leader step down within about a second of
// the cut, acknowledgements coming every 750 ms in quorum mode and a
// missing one asked for again every AnswerTimeout, so that lost
// acknowledgements do not end a lease (design §8); LeaseMargin (100 ms) is
// the least gap between two primary leaders, ten times a scheduler's time
// slice and the longest pause Go's collector is designed to take; a
// voter no longer heard is remembered for an hour (VoterTimeout), longer
// than most partitions of a LAN.
func DefaultTiming() Timing {
	return Timing{
		BeaconInterval:  1000 * time.Millisecond,
		CheckInterval:   1000 * time.Millisecond,
		AliveInterval:   250 * time.Millisecond,
		AliveTimeout:    750 * time.Millisecond,
		AnswerTimeout:   100 * time.Millisecond,
		AcceptWindow:    200 * time.Millisecond,
		ReadyTimeout:    500 * time.Millisecond,
		ElectionTimeout: 500 * time.Millisecond,
		MergeDelay:      300 * time.Millisecond,
		PeerTimeout:     3500 * time.Millisecond,
		MemberTimeout:   30 * time.Second,
		AckInterval:     1000 * time.Millisecond,
		Lease:           1200 * time.Millisecond,
		LeaseMargin:     100 * time.Millisecond,
		VoterTimeout:    time.Hour,
	}
}

// FastTiming is DefaultTiming divided by five, for experiments on a quiet
// lab network.
func FastTiming() Timing { return DefaultTiming().Scale(1, 5) }

// Scale returns t with every interval multiplied by num/den.
func (t Timing) Scale(num, den int64) Timing {
	for _, f := range TimingFields() {
		p := f.Field(&t)
		*p = *p * time.Duration(num) / time.Duration(den)
	}
	return t
}

// Validate reports the first interval that is not positive or that breaks a
// relation the protocol relies on. Messages name the fields
// (Timing.AliveTimeout); a command line maps them to its flags.
func (t Timing) Validate() error {
	for _, f := range TimingFields() {
		if d := *f.Field(&t); d <= 0 {
			return fmt.Errorf("invitation: Timing.%s must be > 0, got %v", f.GoName(), d)
		}
		if d := *f.Field(&t); d%time.Millisecond != 0 {
			// Other nodes are told these values in whole milliseconds.
			return fmt.Errorf("invitation: Timing.%s must be a whole number of milliseconds, got %v", f.GoName(), d)
		}
	}
	if t.AliveTimeout < t.AliveInterval+t.AnswerTimeout {
		return fmt.Errorf("invitation: Timing.AliveTimeout (%v) must be >= Timing.AliveInterval + Timing.AnswerTimeout (%v)", t.AliveTimeout, t.AliveInterval+t.AnswerTimeout)
	}
	if t.MemberTimeout < 3*t.AliveInterval {
		return fmt.Errorf("invitation: Timing.MemberTimeout (%v) must be >= 3 × Timing.AliveInterval (%v)", t.MemberTimeout, 3*t.AliveInterval)
	}
	if t.PeerTimeout < t.BeaconInterval {
		return fmt.Errorf("invitation: Timing.PeerTimeout (%v) must be >= Timing.BeaconInterval (%v)", t.PeerTimeout, t.BeaconInterval)
	}
	if t.PeerTimeout < 2*t.AliveInterval {
		return fmt.Errorf("invitation: Timing.PeerTimeout (%v) must be >= 2 × Timing.AliveInterval (%v)", t.PeerTimeout, 2*t.AliveInterval)
	}
	if t.AckInterval < t.AliveInterval {
		// Acknowledgements answer heartbeats: none come faster.
		return fmt.Errorf("invitation: Timing.AckInterval (%v) must be >= Timing.AliveInterval (%v)", t.AckInterval, t.AliveInterval)
	}
	if t.Lease < 3*t.AliveInterval {
		// Acknowledgements in quorum mode come every 5/8 of the lease,
		// on heartbeats: at least two heartbeats apart, so that one lost
		// acknowledgement does not end the lease.
		return fmt.Errorf("invitation: Timing.Lease (%v) must be >= 3 × Timing.AliveInterval (%v)", t.Lease, 3*t.AliveInterval)
	}
	if ll, round := t.LeaderLease(), t.AckEvery(true)+t.AnswerTimeout; ll <= round {
		// A lease must outlast one acknowledgement round and a retry of
		// a missing acknowledgement, or one lost packet ends it.
		return fmt.Errorf("invitation: Timing.LeaseMargin (%v) leaves the leader's lease (%v) no longer than an acknowledgement round and a retry (%v): lower it or raise Timing.Lease",
			t.LeaseMargin, ll, round)
	}
	return nil
}

// DriftAllowance bounds how much faster or slower one node's monotonic
// clock may run than another's: 1 %, a hundred times what a crystal
// oscillator drifts (tens of ppm) and twenty times the most NTP ever slews
// a clock (500 ppm). The lease relies on it (LeaderLease).
const DriftAllowance = 0.01

// LeaderLease is how long a leader counts a member's grant, from when it
// sent the heartbeat the member acknowledged: Lease shortened by the drift
// allowance on both clocks, Lease·(1−ε)/(1+ε), and by LeaseMargin. The
// member's grant runs for Lease from when it received that heartbeat,
// later, on its own clock; so with clocks whose rates differ by less than
// ε, every grant the leader counts is still held by its member, in real
// time, LeaseMargin after the leader's lease ends.
func (t Timing) LeaderLease() time.Duration {
	return time.Duration(float64(t.Lease)*(1-DriftAllowance)/(1+DriftAllowance)) - t.LeaseMargin
}

// AckEvery is how often a coordinator asks its members for a BeatAck:
// AckInterval, and in quorum mode at most 5/8 of the Lease, so that a
// lease is renewed twice within LeaderLease less a heartbeat, and one lost
// acknowledgement does not end it.
func (t Timing) AckEvery(quorum bool) time.Duration {
	if quorum {
		return min(t.AckInterval, t.Lease*5/8)
	}
	return t.AckInterval
}

// AckLate is how long a coordinator waits for a member's acknowledgement
// before it asks the member directly (a Ready of the current list): the
// acknowledgement period, the heartbeat that carries the request, and a
// round trip.
func (t Timing) AckLate(quorum bool) time.Duration {
	return t.AckEvery(quorum) + t.AliveInterval + t.AnswerTimeout
}

// MemberLossBound is how long after a member fails, or is cut off, its
// coordinator publishes a member list without it: its acknowledgements
// stop (AckLate), it is asked directly, and dropped after ReadyTimeout;
// AnswerTimeout more for the list's own delivery.
func (t Timing) MemberLossBound(quorum bool) time.Duration {
	return t.AckLate(quorum) + t.ReadyTimeout + t.AnswerTimeout
}

// PrimaryFailoverBound is how long after a primary leader crashes another
// node is a primary leader (quorum mode), in a connected, quiet network:
// the survivors elect within FailoverBound, and the grants they gave the
// dead leader expire at most Lease after its last heartbeat; then one
// heartbeat and its acknowledgements.
func (t Timing) PrimaryFailoverBound() time.Duration {
	return max(t.FailoverBound(), t.Lease) + t.AliveInterval + t.AnswerTimeout
}

// sweepInterval is how often coordinators and nodes without a group not
// heard from for PeerTimeout are looked for: a quarter of it, so that one
// is forgotten at most 25% late, and an idle node does not wake for it
// every heartbeat.
func (t Timing) sweepInterval() time.Duration { return max(t.AliveInterval, t.PeerTimeout/4) }

// bootWindow is how long a node without a group listens for others (and
// for an invitation) before it creates a number of its own: two round trips,
// so a lost beacon is sent again within it.
func (t Timing) bootWindow() time.Duration { return 2 * t.AnswerTimeout }

// inviteWait is how long a node without a group that heard a higher-ranked
// node waits for that node's invitation after its own boot window: the
// other node's boot window (it may have started later), its save, and a
// round trip. These are the other node's phases, so the waiting node
// takes them from the timing that node announced (t.adopt).
func (t Timing) inviteWait() time.Duration { return t.bootWindow() + t.AcceptWindow }

// reorgTimeout is how long an invitee of an inviter with timing t waits for
// Ready: the inviter's accept window, its Ready retransmissions, and a
// round trip of slack.
func (t Timing) reorgTimeout() time.Duration {
	return t.AcceptWindow + t.ReadyTimeout + 2*t.AnswerTimeout
}

// mergeTime bounds one merge once it starts: save, accept window, Ready
// round, and a round trip.
func (t Timing) mergeTime() time.Duration {
	return t.AcceptWindow + t.ReadyTimeout + 2*t.AnswerTimeout
}

// FailoverBound is T_failover (invariant L2): in a connected, quiet network
// the survivors of a crashed coordinator are Normal in one group within this
// time of the crash. The last heartbeat came at most AliveInterval before
// the crash, and a participant gives up AliveTimeout after it; the highest
// survivor wins at once; then one merge runs.
func (t Timing) FailoverBound() time.Duration {
	return t.AliveInterval + t.AliveTimeout + t.AnswerTimeout + t.mergeTime()
}

// FailoverBoundRing is T_failover for the ring election among n
// survivors: the ring's hops are sequential, so a round takes up to
// ringRound(n) instead of one AnswerTimeout.
func (t Timing) FailoverBoundRing(n int) time.Duration {
	return t.FailoverBound() - t.AnswerTimeout + t.ringRound(n)
}

// FailoverBoundFor is T_failover for the given election algorithm among n
// survivors.
func (t Timing) FailoverBoundFor(alg Election, n int) time.Duration {
	if alg == ElectionRing {
		return t.FailoverBoundRing(n)
	}
	return t.FailoverBound()
}

// HealBoundFor is T_heal when the survivors of a failed coordinator run
// alg among up to n nodes: HealBound with that algorithm's failover.
func (t Timing) HealBoundFor(alg Election, n int) time.Duration {
	return t.HealBound() - t.FailoverBound() + t.FailoverBoundFor(alg, n)
}

// HealBound is T_heal (invariant L1): once the network has been connected
// and quiet this long, every live node is Normal in one group coordinated by
// the highest-ranked live node. Any in-flight merge or failed-coordinator
// election finishes (FailoverBound, plus a bully retry, plus a node without
// a group waiting for an invitation); the sides hear each other's
// heartbeats within an AliveInterval; the highest coordinator's next Check
// and merge absorb every coordinator that was Normal; one more Check
// catches any that was busy in a merge of its own. A member that failed
// meanwhile stops acknowledging heartbeats, and its coordinator publishes
// a list without it within MemberLossBound.
func (t Timing) HealBound() time.Duration {
	settle := t.FailoverBound() + 2*(t.AnswerTimeout+t.ElectionTimeout) + t.bootWindow() + t.inviteWait()
	round := t.CheckInterval + t.AnswerTimeout + t.mergeTime()
	return max(settle+t.AliveInterval+2*round, t.MemberLossBound(false)+t.mergeTime())
}

// announce is what a node tells others of its timing (wire.Timing).
func (t Timing) announce(alg Election) wire.Timing {
	a := wire.Timing{
		AliveInterval: t.AliveInterval, AliveTimeout: t.AliveTimeout, AnswerTimeout: t.AnswerTimeout,
		AcceptWindow: t.AcceptWindow, ReadyTimeout: t.ReadyTimeout, ElectionTimeout: t.ElectionTimeout,
		MemberTimeout: t.MemberTimeout, Lease: t.Lease, Election: wire.AlgBully,
	}
	if alg == ElectionRing {
		a.Election = wire.AlgRing
	}
	return a
}

// adopt returns t with the phase intervals another node announced, where
// it announced them: a member times its group's phases by its
// coordinator's clock.
func (t Timing) adopt(a wire.Timing) Timing {
	set := func(dst *time.Duration, v time.Duration) {
		if v > 0 {
			*dst = v
		}
	}
	set(&t.AliveInterval, a.AliveInterval)
	set(&t.AliveTimeout, a.AliveTimeout)
	set(&t.AnswerTimeout, a.AnswerTimeout)
	set(&t.AcceptWindow, a.AcceptWindow)
	set(&t.ReadyTimeout, a.ReadyTimeout)
	set(&t.ElectionTimeout, a.ElectionTimeout)
	set(&t.MemberTimeout, a.MemberTimeout)
	set(&t.Lease, a.Lease)
	return t
}

// electionOf returns the algorithm a Timing announces, or def.
func electionOf(a wire.Timing, def Election) Election {
	switch a.Election {
	case wire.AlgBully:
		return ElectionBully
	case wire.AlgRing:
		return ElectionRing
	}
	return def
}

// Rand is the one source of randomness the machine uses (to spread checks
// over time). *math/rand.Rand satisfies it.
type Rand interface {
	Int63n(n int64) int64
}

// Durable is what the machine keeps in the node's state file: the
// runtime saves it when Output.Save asks and reports the outcome with
// Saved or SaveFailed.
type Durable struct {
	// Counter is the highest group-number sequence the node may have
	// used: a new number is above it, and is saved before it is sent.
	Counter uint64
	// LastGroup is the newest group the node was in. New numbers go
	// above it too, so that the node's groups are newer than any group
	// it belonged to, even across a restart; and the node joins no group
	// numbered below it (design §4, S5).
	LastGroup wire.GroupNumber
	// Term is the highest leadership term the node has seen (its own, its
	// coordinators', its members'). A node grants no lease to a leader
	// whose term is below it, so that terms of primary leaders only grow,
	// across restarts too (design §8).
	Term wire.GroupNumber
	// Rule is the quorum rule the node last applied when it was stricter
	// than its settings (Voters and Tie; zero: as configured): a node
	// that restarts holds to it for VoterTimeout, so that a restart
	// during a partition does not forget the voters it knew of (design
	// §8).
	Rule wire.Quorum
}

// floor is the lowest sequence a new number may take given what was saved.
func (d Durable) floor() uint64 { return max(d.Counter, d.LastGroup.Seq, d.Term.Seq) }

// Config describes one node.
type Config struct {
	ID       wire.NodeID
	Priority uint8
	// Boot is this start's boot nonce: random and non-zero, drawn at every
	// start of the process. Messages carry it, so that a second process
	// with the same ID is noticed (see Notice) and replies reach the
	// process that asked.
	Boot uint64
	// Durable is what the state file holds (zero on a first start, or
	// after the state was lost).
	Durable Durable
	Timing  Timing
	// Election is the algorithm the survivors of a failed coordinator
	// run when this node coordinates; empty means ElectionBully. A member
	// follows its coordinator's choice, announced in Ready.
	Election Election
	// Rand spreads periodic checks; nil means no jitter.
	Rand Rand
	// Quorum turns on primary-partition mode: the node, as a leader, is
	// primary only while a majority of Quorum.Expect holds its lease
	// (design §8). The zero value turns it off: every Normal node is
	// primary.
	Quorum Quorum
	// NoPreempt keeps a leader leading when a node of higher priority
	// returns (keepalived's nopreempt): while it leads a group (in
	// quorum mode: while it is primary) it ranks above every node that
	// does not (wire.FlagIncumbent). The returning node joins its group.
	NoPreempt bool
	// Home identifies where the node keeps its state (a hash of the
	// machine's identity and the data dir; 0: unknown), so that others
	// tell its restart from a second process given its ID (design §8).
	Home uint32
	// ViewPrimary computes a leader's primary flag from its member list
	// alone, as groupd did before the lease: the simulator's negative
	// control, which must find two primary leaders at once. Never set it
	// in a daemon.
	ViewPrimary bool
}

// Quorum is primary-partition mode: a leader is primary while more than
// half of Expect nodes (itself included) hold its lease; in an exact half
// split (Expect even) the half that holds TieBreaker is.
type Quorum struct {
	// Expect is the expected cluster size; 0 turns primary-partition
	// mode off. It must be at least the number of nodes that may run: two
	// disjoint majorities of a smaller Expect could both be primary.
	Expect int
	// TieBreaker makes, in an exact half split, the side holding this
	// node primary. Zero: neither side is.
	TieBreaker wire.NodeID
}

// Enabled reports whether primary-partition mode is on.
func (q Quorum) Enabled() bool { return q.Expect > 0 }

// Holds reports whether n nodes, holding tb (the tie-breaker) or not, are
// a quorum.
func (q Quorum) Holds(n int, tb bool) bool {
	if q.Expect <= 0 {
		return true
	}
	return quorum.Rule{Voters: q.Expect, Tie: q.TieBreaker}.Holds(n, tb)
}

// Validate reports a configuration the quorum cannot work with.
func (q Quorum) Validate() error {
	if q.Expect < 0 {
		return fmt.Errorf("invitation: Quorum.Expect must be >= 0, got %d", q.Expect)
	}
	if q.TieBreaker != 0 && q.Expect == 0 {
		return fmt.Errorf("invitation: Quorum.TieBreaker needs Quorum.Expect")
	}
	return nil
}

func (q Quorum) String() string {
	if !q.Enabled() {
		return "off"
	}
	if q.TieBreaker != 0 {
		return fmt.Sprintf("expect %d, tie-breaker %d", q.Expect, q.TieBreaker)
	}
	return fmt.Sprintf("expect %d", q.Expect)
}

// MaxGroupSize bounds a member list the machine accepts from the network,
// so a forged Ready cannot make it allocate without bound, and the
// coordinators it remembers. It is the largest group groupd forms: 8,192
// leaves room above the 5,000 nodes the simulator converges (BENCHMARKS.md)
// while a Ready for a full group stays at 57 datagrams per retransmission.
const MaxGroupSize = 8192

var (
	errNoID   = errors.New("invitation: node ID must not be 0")
	errNoBoot = errors.New("invitation: boot nonce must not be 0")
)

func (c *Config) validate() error {
	if c.ID == 0 {
		return errNoID
	}
	if c.Boot == 0 {
		return errNoBoot
	}
	alg, err := ParseElection(string(c.Election))
	if err != nil {
		return err
	}
	c.Election = alg
	if err := c.Quorum.Validate(); err != nil {
		return err
	}
	return c.Timing.Validate()
}
