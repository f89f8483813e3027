package group

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestOnEventAndBeforeLeave: OnEvent gets every event a subscriber gets
// (but the snapshot), in the same order; when Run stops, a lone leader's
// leader-stop reaches OnEvent before BeforeLeave is called, and
// BeforeLeave's context ends within a second.
func TestOnEventAndBeforeLeave(t *testing.T) {
	cfg := newTestConfig(t)
	var mu sync.Mutex
	var seen []string
	var atLeave []string
	var leaveBudget time.Duration
	cfg.OnEvent = func(e Event) {
		mu.Lock()
		seen = append(seen, e.Reason)
		mu.Unlock()
	}
	cfg.BeforeLeave = func(ctx context.Context) {
		dl, _ := ctx.Deadline()
		mu.Lock()
		atLeave, leaveBudget = slices.Clone(seen), time.Until(dl)
		mu.Unlock()
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	events, _ := a.Subscribe()
	var subbed []string
	subDone := make(chan struct{})
	go func() {
		defer close(subDone)
		for e := range events {
			if e.Reason != ReasonSnapshot {
				subbed = append(subbed, e.Reason)
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitFor(t, 10*time.Second, "leader-start", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(seen, ReasonLeaderStart)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-subDone
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, subbed) {
		t.Errorf("OnEvent got %v; the subscriber %v", seen, subbed)
	}
	if len(atLeave) == 0 || atLeave[len(atLeave)-1] != ReasonLeaderStop {
		t.Errorf("BeforeLeave was called after %v, want the leader-stop last", atLeave)
	}
	if leaveBudget <= 0 || leaveBudget > beforeLeaveTimeout {
		t.Errorf("BeforeLeave's context ends in %v, want within %v", leaveBudget, beforeLeaveTimeout)
	}
}
