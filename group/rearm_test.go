package group

import (
	"testing"
	"time"
)

func TestRearm(t *testing.T) {
	for _, tc := range []struct {
		name     string
		armedIn  time.Duration // the armed deadline from now; 0: it fired
		wait     time.Duration
		newTimer bool // a new timer replaces the old one
		keep     bool // the armed time stays as it was
	}{
		{"fired: reset", 0, time.Minute, false, false},
		{"earlier: reset", time.Hour, time.Minute, false, false},
		{"later: a new timer", time.Hour, 2 * time.Hour, true, false},
		{"within a millisecond: left alone", time.Hour, time.Hour, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := time.NewTimer(time.Hour)
			defer old.Stop()
			var armed time.Time
			if tc.armedIn > 0 {
				armed = time.Now().Add(tc.armedIn)
			}
			got, at := rearm(old, armed, tc.wait)
			if (got != old) != tc.newTimer {
				t.Errorf("new timer: %v, want %v", got != old, tc.newTimer)
			}
			if got != old {
				got.Stop()
			}
			if tc.keep {
				if !at.Equal(armed) {
					t.Errorf("armed %v, want it kept at %v", at, armed)
				}
				return
			}
			if want := time.Now().Add(tc.wait); at.Before(want.Add(-time.Second)) || at.After(want) {
				t.Errorf("armed %v, want about %v", at, want)
			}
		})
	}
}

// TestRearmFires checks the timer rearm returns fires at the new time,
// whichever way it was re-armed, and never at the old one.
func TestRearmFires(t *testing.T) {
	t.Parallel()
	tm := time.NewTimer(20 * time.Millisecond)
	armed := time.Now().Add(20 * time.Millisecond)
	tm, _ = rearm(tm, armed, 200*time.Millisecond) // later: new timer
	start := time.Now()
	<-tm.C
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("fired after %v; want the new deadline (200ms), not the old one (20ms)", d)
	}
	tm, _ = rearm(tm, time.Time{}, 10*time.Millisecond) // fired and drained: reset
	select {
	case <-tm.C:
	case <-time.After(5 * time.Second):
		t.Fatal("a re-armed timer never fired")
	}
}
