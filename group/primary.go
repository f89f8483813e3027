package group

import (
	"sync"
	"time"

	"github.com/groupd/groupd/invitation"
)

// Quorum decides which side of a split may act (primary-partition mode,
// --expect): a leader is primary only while a majority of Expect nodes,
// itself included, holds its lease (docs/design.md §8), so that two
// leaders are never primary at once; a participant is primary while its
// member list holds a majority and its coordinator says it is primary.
// Operators of small LANs use it to keep the
// minority side of a partition passive (`groupd status` exits 3 there,
// hooks see GROUPD_PRIMARY=0, /v1/leader answers 503). Expect must be at
// least the number of nodes that may run.
type Quorum = invitation.Quorum

func validateQuorum(q Quorum) error {
	if err := q.Validate(); err != nil {
		return configErrorf("group: %s", trimInvitation(err))
	}
	return nil
}

// The clocks a lease is read on: the monotonic clock that time.Now
// carries, which counts a process's pauses (SIGSTOP, a stalled host), and
// Linux's CLOCK_BOOTTIME, which also counts a suspended system, where the
// monotonic clock stops. A lease is valid only while both say so, so that
// neither a process nor a host that wakes answers from a lease that ran
// out meanwhile. The machine computes the lease on the monotonic clock;
// the runtime turns its end into a deadline on the boot clock once, when
// the grant that sets it is counted, and never again from the monotonic
// clock: after a suspend, the monotonic end still lies ahead (the clock
// stood still), and a deadline derived from it anew would make the lease
// valid again for up to a whole lease.
//
// What no clock of the guest sees is a virtual machine paused by its
// host: both clocks stop with it. A paused leader wakes believing its
// lease runs while another node may have led meanwhile; fence what it does
// with the term (docs/design.md §8).

// bootClock maps instants of the monotonic clock (time.Now's) to the boot
// clock. The two run at one rate except across a suspend, where the boot
// clock jumps: the loop samples their offset at every turn (sample), and
// an instant is mapped with the offset of the last sample taken at or
// before it. An instant between the suspend and the first sample after it
// gets the older, smaller offset: an earlier deadline, never a later one.
type bootClock struct {
	mu     sync.Mutex
	origin time.Time // monotonic reference
	off    [8]offsetAt
	n      int // samples held (the newest at off[n-1])
}

// offsetAt is the boot clock's offset from the monotonic clock (ns), in
// force since mono (ns after origin).
type offsetAt struct{ mono, off int64 }

// suspendJitter is the smallest change of offset taken for a suspend:
// reading the two clocks one after the other differs by microseconds.
const suspendJitter = int64(time.Millisecond)

func newBootClock(now time.Time) *bootClock {
	c := &bootClock{origin: now}
	c.sample(now)
	return c
}

// sample records the clocks' offset at now (the monotonic time.Now of the
// loop's turn); it keeps the last few changes.
func (c *bootClock) sample(now time.Time) {
	b := bootNanos()
	if b == 0 {
		return
	}
	mono := int64(now.Sub(c.origin))
	off := b - mono
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n > 0 {
		if d := off - c.off[c.n-1].off; d < suspendJitter && d > -suspendJitter {
			return
		}
	}
	if c.n == len(c.off) {
		copy(c.off[:], c.off[1:])
		c.n--
	}
	c.off[c.n] = offsetAt{mono: mono, off: off}
	c.n++
}

// boot returns the boot clock's reading at monotonic instant t (0: none).
func (c *bootClock) boot(t time.Time) int64 {
	mono := int64(t.Sub(c.origin))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return 0
	}
	off := c.off[0].off
	for _, o := range c.off[1:c.n] {
		if o.mono > mono {
			break
		}
		off = o.off
	}
	return mono + off
}

// lease is a quorum-mode leader's lease as the loop last computed it: the
// machine's LeaseUntil on the monotonic clock, and the same instant on the
// boot clock, fixed when that end was set. Readers check it at the moment
// they read (valid).
type lease struct {
	mu    sync.Mutex
	until time.Time // zero: no lease
	boot  int64     // CLOCK_BOOTTIME at until (0: unknown)
}

// set records the machine's lease end until (zero: none), whose grants
// were counted from basis, the monotonic instant the lease counts from (a
// heartbeat's sending; until minus the leader's lease length). An
// unchanged end keeps its boot deadline: it is never derived again.
func (l *lease) set(clk *bootClock, until, basis time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if until.Equal(l.until) {
		return
	}
	var boot int64
	if !until.IsZero() && clk != nil {
		if b := clk.boot(basis); b != 0 {
			boot = b + int64(until.Sub(basis))
		}
	}
	l.until, l.boot = until, boot
}

// get returns the lease's end and its boot deadline.
func (l *lease) get() (time.Time, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until, l.boot
}

// valid reports whether a lease ending at until (recorded with boot)
// still runs now.
func leaseValid(now, until time.Time, boot int64) bool {
	if until.IsZero() || !now.Before(until) {
		return false
	}
	if boot != 0 {
		if b := bootNanos(); b != 0 && b >= boot {
			return false
		}
	}
	return true
}

// remaining returns how long the lease still runs (0 when it ended or
// there is none).
func (l *lease) remaining(now time.Time) time.Duration {
	until, boot := l.get()
	if !leaseValid(now, until, boot) {
		return 0
	}
	d := until.Sub(now)
	if boot != 0 {
		if b := bootNanos(); b != 0 {
			d = min(d, time.Duration(boot-b))
		}
	}
	return d
}
