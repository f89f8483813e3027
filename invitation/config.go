package invitation

import (
	"errors"
	"fmt"
	"time"

	"github.com/groupd/groupd/wire"
)

// Timing holds every interval of the protocol. DefaultTiming is the lan
// profile of DESIGN §5; FastTiming divides it for experiments.
type Timing struct {
	// BeaconInterval: how often a node announces itself on the multicast
	// group. Bounds how long after a heal two sides learn of each other.
	BeaconInterval time.Duration
	// CheckInterval: how often a coordinator looks for other coordinators.
	CheckInterval time.Duration
	// AliveInterval: how often a participant asks its coordinator
	// AreYouThere.
	AliveInterval time.Duration
	// AliveTimeout: a participant that got no Yes for this long considers
	// its coordinator failed.
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
	// PeerTimeout: a peer not heard from for this long is forgotten.
	PeerTimeout time.Duration
	// MemberTimeout: a coordinator drops a member it has not heard from
	// for this long.
	MemberTimeout time.Duration
}

// DefaultTiming returns the lan profile of DESIGN §5. The values not fixed
// there follow from it: ElectionTimeout covers a survivor's probe, the
// winner's save and one invitation round trip; MergeDelay covers a higher
// coordinator's Check and invitation; a coordinator drops a member after one
// missed AliveTimeout plus one AliveInterval of slack.
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
		MemberTimeout:   1000 * time.Millisecond,
	}
}

// FastTiming is DefaultTiming divided by five, for experiments on a quiet
// lab network.
func FastTiming() Timing { return DefaultTiming().Scale(1, 5) }

// Scale returns t with every interval multiplied by num/den.
func (t Timing) Scale(num, den int64) Timing {
	s := func(d time.Duration) time.Duration { return d * time.Duration(num) / time.Duration(den) }
	return Timing{
		BeaconInterval:  s(t.BeaconInterval),
		CheckInterval:   s(t.CheckInterval),
		AliveInterval:   s(t.AliveInterval),
		AliveTimeout:    s(t.AliveTimeout),
		AnswerTimeout:   s(t.AnswerTimeout),
		AcceptWindow:    s(t.AcceptWindow),
		ReadyTimeout:    s(t.ReadyTimeout),
		ElectionTimeout: s(t.ElectionTimeout),
		MergeDelay:      s(t.MergeDelay),
		PeerTimeout:     s(t.PeerTimeout),
		MemberTimeout:   s(t.MemberTimeout),
	}
}

// Validate reports the first interval that is not positive or that breaks a
// relation the protocol relies on.
func (t Timing) Validate() error {
	fields := []struct {
		name string
		d    time.Duration
	}{
		{"beacon-interval", t.BeaconInterval},
		{"check-interval", t.CheckInterval},
		{"alive-interval", t.AliveInterval},
		{"alive-timeout", t.AliveTimeout},
		{"answer-timeout", t.AnswerTimeout},
		{"accept-window", t.AcceptWindow},
		{"ready-timeout", t.ReadyTimeout},
		{"election-timeout", t.ElectionTimeout},
		{"merge-delay", t.MergeDelay},
		{"peer-timeout", t.PeerTimeout},
		{"member-timeout", t.MemberTimeout},
	}
	for _, f := range fields {
		if f.d <= 0 {
			return fmt.Errorf("invitation: %s must be > 0, got %v", f.name, f.d)
		}
	}
	if t.AliveTimeout < t.AliveInterval {
		return fmt.Errorf("invitation: alive-timeout (%v) must be >= alive-interval (%v)", t.AliveTimeout, t.AliveInterval)
	}
	if t.MemberTimeout < t.AliveInterval {
		return fmt.Errorf("invitation: member-timeout (%v) must be >= alive-interval (%v)", t.MemberTimeout, t.AliveInterval)
	}
	if t.PeerTimeout < t.BeaconInterval {
		return fmt.Errorf("invitation: peer-timeout (%v) must be >= beacon-interval (%v)", t.PeerTimeout, t.BeaconInterval)
	}
	return nil
}

// sweepInterval is how often silent peers and members are looked for: a
// member is dropped between MemberTimeout and MemberTimeout+AliveInterval
// after it fell silent, a peer forgotten within PeerTimeout+AliveInterval.
func (t Timing) sweepInterval() time.Duration { return t.AliveInterval }

// reorgTimeout is how long an invitee waits for Ready: the inviter's accept
// window, its Ready retransmissions, and a round trip of slack.
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
// time of the crash. Detection takes at most AliveTimeout after the last Yes,
// which came at most AliveInterval before the crash; the highest survivor's
// suspicion probe takes AnswerTimeout; then one merge runs.
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
// election finishes (FailoverBound, plus a bully retry); the sides hear each
// other's beacons within a BeaconInterval; the highest coordinator's next
// Check and merge absorb every coordinator that was Normal; one more Check
// catches any that was busy in a merge of its own.
func (t Timing) HealBound() time.Duration {
	settle := t.FailoverBound() + 2*(t.AnswerTimeout+t.ElectionTimeout)
	round := t.CheckInterval + t.AnswerTimeout + t.mergeTime()
	return settle + t.BeaconInterval + 2*round
}

// Rand is the one source of randomness the machine uses (to spread checks
// over time). *math/rand.Rand satisfies it.
type Rand interface {
	Int63n(n int64) int64
}

// Config describes one node.
type Config struct {
	ID       wire.NodeID
	Priority uint8
	// Counter is the highest group-number sequence this node has ever
	// persisted (from its state file). New numbers are larger.
	Counter uint64
	Timing  Timing
	// Election is the algorithm the survivors of a failed coordinator
	// run; empty means ElectionBully.
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

var errNoID = errors.New("invitation: node ID must not be 0")

func (c *Config) validate() error {
	if c.ID == 0 {
		return errNoID
	}
	alg, err := ParseElection(string(c.Election))
	if err != nil {
		return err
	}
	c.Election = alg
	return c.Timing.Validate()
}
