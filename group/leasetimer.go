package group

import (
	"sync"
	"time"
)

// leaseTimer calls a function when a lease ends: at its end on the
// monotonic clock, or on the boot clock where the lease has a boot
// deadline and the platform a timer on that clock (Linux's timerfd on
// CLOCK_BOOTTIME), whichever comes first. A monotonic timer does not
// count a suspended host: set before a suspend, it fires up to a whole
// lease after the resume, while another node may already lead; the boot
// timer fires at the resume.
type leaseTimer struct {
	f func()

	mu    sync.Mutex
	mono  *time.Timer
	boot  bootAlarm // nil where there is no boot-clock timer
	close bool
}

// bootAlarm is a one-shot timer on the boot clock (leasetimer_linux.go).
type bootAlarm interface {
	// at arms it for boot-clock instant ns (0 disarms it).
	at(ns int64) error
	stop()
}

func newLeaseTimer(f func()) *leaseTimer {
	t := &leaseTimer{f: f}
	t.boot = newBootAlarm(f)
	return t
}

// arm makes the timer fire at until (monotonic) or at boot (boot clock,
// 0: unknown), whichever comes first; a zero until disarms it.
func (t *leaseTimer) arm(now, until time.Time, boot int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.close {
		return
	}
	if until.IsZero() {
		if t.mono != nil {
			t.mono.Stop()
		}
		if t.boot != nil {
			t.boot.at(0)
		}
		return
	}
	d := until.Sub(now)
	if t.mono == nil {
		t.mono = time.AfterFunc(d, t.f)
	} else {
		t.mono.Reset(d)
	}
	if t.boot != nil && boot != 0 {
		if err := t.boot.at(boot); err != nil {
			t.boot.stop()
			t.boot = nil // the monotonic timer alone from now on
		}
	}
}

// stop disarms the timer for good.
func (t *leaseTimer) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.close = true
	if t.mono != nil {
		t.mono.Stop()
	}
	if t.boot != nil {
		t.boot.stop()
	}
}
