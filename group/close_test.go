package group

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// TestCloseAlongsideRun: Close called while Run starts, from another
// goroutine, either releases an agent that never runs (Run then returns
// ErrClosed) or does nothing (Run runs, and releases everything when its
// context is done); never both, which closed Done twice (a panic) and
// released the sockets and the data dir under a running loop. Run with
// -race, it also checks that the two never touch the agent unsynchronised.
//
// Both sides start at once, spinning on a flag on two processors, and
// Close comes a little later each round, so that some rounds put Run's
// start inside Close's: before the fix most runs of this test panicked.
// It is not parallel, so that it has the processors to itself.
func TestCloseAlongsideRun(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two processors to start Run and Close at the same instant")
	}
	c := newCluster(t, memMulticast)
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	var spin atomic.Int64
	ran, refused := 0, 0
	for i := range rounds {
		a, err := New(c.config(wire.NodeID(i+1), t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var ready, gate atomic.Bool
		runErr := make(chan error, 1)
		go func() {
			ready.Store(true)
			for !gate.Load() {
			}
			runErr <- a.Run(ctx)
		}()
		for !ready.Load() {
		}
		gate.Store(true)
		for range i % 100 {
			spin.Add(1)
		}
		if err := a.Close(); err != nil {
			t.Fatalf("round %d: Close = %v", i, err)
		}
		cancel()
		select {
		case err := <-runErr:
			switch {
			case err == nil:
				ran++
			case errors.Is(err, ErrClosed):
				refused++
			default:
				t.Fatalf("round %d: Run = %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Run did not return", i)
		}
		select {
		case <-a.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Done not closed", i)
		}
		if err := a.Close(); err != nil {
			t.Fatalf("round %d: a second Close = %v", i, err)
		}
	}
	t.Logf("%d rounds: Run ran in %d, Close released the agent first in %d", rounds, ran, refused)
}
