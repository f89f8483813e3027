package group

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/groupd/groupd/invitation"
)

// Quorum decides which side of a split may act (primary-partition mode,
// --expect): a leader is primary only while a majority of Expect nodes,
// itself included, holds its lease (docs/design.md §8), so that two
// leaders are never primary at once; a participant is primary while its
// member list holds a majority. Operators of small LANs use it to keep the
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

// leaseClock is the clock a lease is read on: the monotonic clock that
// time.Now carries, which counts a process's pauses (SIGSTOP, a stalled
// host), and Linux's CLOCK_BOOTTIME, which also counts a suspended
// system, where the monotonic clock stops. A lease is valid only while
// both say so, so that neither a process nor a host that wakes answers
// from a lease that ran out meanwhile.
func bootNanos() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0 // not Linux, or no BOOTTIME: the monotonic clock alone
	}
	return ts.Nano()
}

// lease is a quorum-mode leader's lease as the loop last computed it: the
// machine's LeaseUntil on the monotonic clock, and the same instant on the
// boot clock. Readers check it at the moment they read (valid).
type lease struct {
	mu    sync.Mutex
	until time.Time // zero: no lease
	boot  int64     // CLOCK_BOOTTIME at until (0: unknown)
}

// set records the machine's lease after an input at now (zero until: no
// lease).
func (l *lease) set(now, until time.Time) {
	var boot int64
	if !until.IsZero() {
		if b := bootNanos(); b != 0 {
			boot = b + int64(until.Sub(now))
		}
	}
	l.mu.Lock()
	l.until, l.boot = until, boot
	l.mu.Unlock()
}

// get returns the lease's end.
func (l *lease) get() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
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
	l.mu.Lock()
	until, boot := l.until, l.boot
	l.mu.Unlock()
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
