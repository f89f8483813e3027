package group

import (
	"context"
	"testing"
	"time"
)

// TestWatchLeaderLifetime checks what WatchLeader's doc says of its
// channel: a watch started before Run is open, holds "not leading", and
// follows Run; Run's end closes it; a watch started after that is closed
// at once; Close of an agent that never ran closes its watches.
func TestWatchLeaderLifetime(t *testing.T) {
	cfg := DefaultFastConfig()
	cfg.Bind, cfg.Port, cfg.Multicast, cfg.API = "127.0.0.1", 0, "off", ""
	cfg.DataDir = t.TempDir()
	cfg.Logger = newTestLogger(t)
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w, stop := a.WatchLeader()
	defer stop()
	if l, ok := <-w; !ok || l.Leader {
		t.Fatalf("before Run: %+v, open %v; want an open channel saying not leading", l, ok)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	deadline := time.After(20 * time.Second)
	for leading := false; !leading; {
		select {
		case l, ok := <-w:
			if !ok {
				t.Fatal("closed while Run runs")
			}
			leading = l.Leader
		case <-deadline:
			t.Fatal("a node alone did not lead within 20 s")
		}
	}
	cancel()
	for range w { // the last values, then the close
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if w2, _ := a.WatchLeader(); !closedNow(w2) {
		t.Error("WatchLeader after Run returned: want a closed channel")
	}

	cfg.DataDir = t.TempDir()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := b.WatchLeader()
	<-wb
	b.Close()
	if !closedNow(wb) {
		t.Error("Close of an agent that never ran left its watch open")
	}
}

// closedNow reports whether ch is closed (and empty).
func closedNow(ch <-chan Leadership) bool {
	select {
	case _, ok := <-ch:
		return !ok
	case <-time.After(time.Second):
		return false
	}
}
