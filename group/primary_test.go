package group

import (
	"errors"
	"testing"
	"time"
)

func TestQuorumValidateIsConfigError(t *testing.T) {
	for _, q := range []Quorum{{Expect: -1}, {TieBreaker: 3}} {
		if err := validateQuorum(q); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want a configuration error", q, err)
		}
	}
	if err := validateQuorum(Quorum{Expect: 4, TieBreaker: 3}); err != nil {
		t.Error(err)
	}
}

// TestLeaseReadAtReadTime: a lease is valid only before its end, on the
// monotonic clock and on the boot clock alike, and reports what remains.
func TestLeaseReadAtReadTime(t *testing.T) {
	var l lease
	now := time.Now()
	if r := l.remaining(now); r != 0 {
		t.Fatalf("no lease: remaining %v", r)
	}
	l.set(now, now.Add(300*time.Millisecond))
	if r := l.remaining(now.Add(100 * time.Millisecond)); r <= 0 || r > 200*time.Millisecond {
		t.Fatalf("remaining after 100ms of 300ms = %v", r)
	}
	if r := l.remaining(now.Add(300 * time.Millisecond)); r != 0 {
		t.Fatalf("remaining at the end = %v, want 0", r)
	}
	// The boot clock bounds it too: a lease recorded as ending on the
	// boot clock already passed is over, whatever the monotonic clock
	// says (a host that was suspended).
	l.mu.Lock()
	l.boot = bootNanos() - 1
	l.mu.Unlock()
	if bootNanos() != 0 {
		if r := l.remaining(now); r != 0 {
			t.Fatalf("boot clock past the end: remaining %v, want 0", r)
		}
	}
	l.set(now, time.Time{})
	if r := l.remaining(now); r != 0 {
		t.Fatalf("cleared: remaining %v", r)
	}
}
