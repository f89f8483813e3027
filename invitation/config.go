package invitation

import (
	"errors"
	"fmt"
	"time"

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
	// MemberTimeout bounds how long a failed member stays in its group's
	// member list: the failure detector (memberlist, the slow, cheap one)
	// reports it within this time. Idle participants send nothing; the
	// fast detector is the coordinator's heartbeat.
	MemberTimeout time.Duration
}

// TimingField describes one field of Timing: its flag name (without
// dashes), what it bounds, and where it lives.
type TimingField struct {
	Name  string
	Usage string
	Field func(*Timing) *time.Duration
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
		{"member-timeout", "a failed member leaves the member list within `DURATION` (memberlist's pace; the coordinator's roll call)",
			func(t *Timing) *time.Duration { return &t.MemberTimeout }},
	}
}

// DefaultTiming returns the lan profile. The values not fixed by the
// design follow from it: ElectionTimeout covers a survivor's probe, the
// winner's save and one invitation round trip; MergeDelay covers a higher
// coordinator's Check and invitation; MemberTimeout leaves memberlist's
// relaxed failure detector (see group.DefaultLANConfig) time to report a
// dead member, while idle members beacon only every 5 s.
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
		MemberTimeout:   15 * time.Second,
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
// relation the protocol relies on. Messages name the flags.
func (t Timing) Validate() error {
	for _, f := range TimingFields() {
		if d := *f.Field(&t); d <= 0 {
			return fmt.Errorf("invitation: %s must be > 0, got %v", f.Name, d)
		}
		if d := *f.Field(&t); d%time.Millisecond != 0 {
			// Other nodes are told these values in whole milliseconds.
			return fmt.Errorf("invitation: %s must be a whole number of milliseconds, got %v", f.Name, d)
		}
	}
	if t.AliveTimeout < t.AliveInterval+t.AnswerTimeout {
		return fmt.Errorf("invitation: alive-timeout (%v) must be >= alive-interval + answer-timeout (%v)", t.AliveTimeout, t.AliveInterval+t.AnswerTimeout)
	}
	if t.MemberTimeout < 3*t.AliveInterval {
		return fmt.Errorf("invitation: member-timeout (%v) must be >= 3 × alive-interval (%v)", t.MemberTimeout, 3*t.AliveInterval)
	}
	if t.PeerTimeout < t.BeaconInterval {
		return fmt.Errorf("invitation: peer-timeout (%v) must be >= beacon-interval (%v)", t.PeerTimeout, t.BeaconInterval)
	}
	if t.PeerTimeout < 2*t.AliveInterval {
		return fmt.Errorf("invitation: peer-timeout (%v) must be >= 2 × alive-interval (%v)", t.PeerTimeout, 2*t.AliveInterval)
	}
	return nil
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
// meanwhile is reported within MemberTimeout by the failure detector, or
// found silent by the coordinator's roll call (every MemberTimeout, then
// ReadyTimeout), and its coordinator then publishes a list without it.
func (t Timing) HealBound() time.Duration {
	settle := t.FailoverBound() + 2*(t.AnswerTimeout+t.ElectionTimeout) + t.bootWindow() + t.inviteWait()
	round := t.CheckInterval + t.AnswerTimeout + t.mergeTime()
	return max(settle+t.AliveInterval+2*round, t.MemberTimeout+t.ReadyTimeout+t.mergeTime())
}

// announce is what a node tells others of its timing (wire.Timing).
func (t Timing) announce(alg Election) wire.Timing {
	a := wire.Timing{
		AliveInterval: t.AliveInterval, AliveTimeout: t.AliveTimeout, AnswerTimeout: t.AnswerTimeout,
		AcceptWindow: t.AcceptWindow, ReadyTimeout: t.ReadyTimeout, ElectionTimeout: t.ElectionTimeout,
		MemberTimeout: t.MemberTimeout, Election: wire.AlgBully,
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
	// it belonged to, even across a restart.
	LastGroup wire.GroupNumber
}

// floor is the lowest sequence a new number may take given what was saved.
func (d Durable) floor() uint64 { return max(d.Counter, d.LastGroup.Seq) }

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
	return c.Timing.Validate()
}
