package wire

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

type pkt struct {
	from       NodeID
	inc, ctr   uint64
	wantReplay bool
}

func hdr(p pkt) Header { return Header{From: p.from, Incarnation: p.inc, Counter: p.ctr} }

func TestReplayWindow(t *testing.T) {
	const W = ReplayWindowSize
	tests := []struct {
		name string
		pkts []pkt
	}{
		{"in order", []pkt{{1, 1, 0, false}, {1, 1, 1, false}, {1, 1, 2, false}}},
		{"duplicate", []pkt{{1, 1, 5, false}, {1, 1, 5, true}}},
		{"duplicate after more", []pkt{{1, 1, 5, false}, {1, 1, 6, false}, {1, 1, 100, false}, {1, 1, 6, true}, {1, 1, 5, true}}},
		{"gaps", []pkt{{1, 1, 10, false}, {1, 1, 20, false}, {1, 1, 30, false}}},
		{"reordered within window", []pkt{{1, 1, 10, false}, {1, 1, 13, false}, {1, 1, 11, false}, {1, 1, 12, false}, {1, 1, 11, true}, {1, 1, 14, false}}},
		{"first packet not counter 0", []pkt{{1, 1, 1000, false}, {1, 1, 999, false}, {1, 1, 1000, true}}},
		{"edge of window", []pkt{{1, 1, W + 100, false}, {1, 1, 100, false}, {1, 1, 99, true}, {1, 1, 100, true}}},
		{"older than window", []pkt{{1, 1, 0, false}, {1, 1, W + 1, false}, {1, 1, 0, true}, {1, 1, 1, false}}},
		{"big jump clears ring", []pkt{{1, 1, 5, false}, {1, 1, 5 + 64*replayBlocks, false}, {1, 1, 5 + 64*replayBlocks - W, false}, {1, 1, 5 + 64*(replayBlocks-1), false}}},
		{"jump of one block", []pkt{{1, 1, 63, false}, {1, 1, 64, false}, {1, 1, 63, true}, {1, 1, 127, false}, {1, 1, 64, true}}},
		{"huge counters", []pkt{{1, 1, ^uint64(0) - 1, false}, {1, 1, ^uint64(0), false}, {1, 1, ^uint64(0) - 1, true}, {1, 1, ^uint64(0) - 2, false}}},
		{"new incarnation resets", []pkt{{1, 1, 500, false}, {1, 2, 0, false}, {1, 2, 1, false}, {1, 2, 0, true}, {1, 2, 500, false}}},
		{"old incarnation rejected", []pkt{{1, 2, 0, false}, {1, 1, 1000, true}, {1, 1, 0, true}, {1, 2, 1, false}}},
		{"senders are independent", []pkt{{1, 1, 5, false}, {2, 1, 5, false}, {2, 1, 5, true}, {1, 2, 0, false}, {2, 1, 6, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewReplayWindow(10)
			for i, p := range tt.pkts {
				h := hdr(p)
				checkErr := w.Check(h)
				err := w.Accept(h)
				if (err != nil) != p.wantReplay {
					t.Fatalf("packet %d %+v: Accept = %v, want replay=%v", i, p, err, p.wantReplay)
				}
				if (checkErr != nil) != (err != nil) {
					t.Fatalf("packet %d %+v: Check = %v but Accept = %v", i, p, checkErr, err)
				}
				if err != nil && (!errors.Is(err, ErrReplay) || DropReason(err) != "replay") {
					t.Fatalf("packet %d: error %v does not wrap ErrReplay", i, err)
				}
			}
		})
	}
}

func TestReplayMessages(t *testing.T) {
	w := NewReplayWindow(1)
	_ = w.Accept(Header{From: 5, Incarnation: 4, Counter: 2000})
	for _, tt := range []struct {
		h    Header
		want string
	}{
		{Header{From: 5, Incarnation: 3, Counter: 9000}, "wire: replay from node 5: incarnation 3 is older than 4"},
		{Header{From: 5, Incarnation: 4, Counter: 2000}, "wire: replay from node 5: counter 2000 already seen (incarnation 4)"},
		{Header{From: 5, Incarnation: 4, Counter: 17}, "wire: replay from node 5: counter 17 is older than the window (highest 2000, window 960)"},
	} {
		if err := w.Accept(tt.h); err == nil || err.Error() != tt.want {
			t.Errorf("Accept(%+v) = %v, want %q", tt.h, err, tt.want)
		}
	}
}

func TestReplayCheckDoesNotRecord(t *testing.T) {
	w := NewReplayWindow(4)
	h := Header{From: 1, Incarnation: 1, Counter: 1}
	for range 3 {
		if err := w.Check(h); err != nil {
			t.Fatal(err)
		}
	}
	if w.Len() != 0 {
		t.Fatalf("Check recorded a sender")
	}
	if err := w.Accept(h); err != nil {
		t.Fatal(err)
	}
	if err := w.Check(h); !errors.Is(err, ErrReplay) {
		t.Fatalf("Check after Accept: %v", err)
	}
}

func TestReplayEviction(t *testing.T) {
	const max = 3
	w := NewReplayWindow(max)
	for id := NodeID(1); id <= max; id++ {
		if err := w.Accept(Header{From: id, Incarnation: 1, Counter: 1}); err != nil {
			t.Fatal(err)
		}
	}
	// Node 1 is used again, so node 2 becomes the least recently used.
	if err := w.Accept(Header{From: 1, Incarnation: 1, Counter: 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Accept(Header{From: 4, Incarnation: 1, Counter: 1}); err != nil {
		t.Fatal(err)
	}
	if w.Len() != max {
		t.Fatalf("Len = %d, want %d", w.Len(), max)
	}
	// Node 2 was evicted: its old packet is accepted again (the price of a
	// bound). Nodes 1, 3 and 4 are still remembered.
	if err := w.Check(Header{From: 2, Incarnation: 1, Counter: 1}); err != nil {
		t.Fatalf("evicted node 2 still remembered: %v", err)
	}
	for _, id := range []NodeID{1, 3, 4} {
		if err := w.Check(Header{From: id, Incarnation: 1, Counter: 1}); !errors.Is(err, ErrReplay) {
			t.Fatalf("node %d forgotten: %v", id, err)
		}
	}
	// A rejected packet does not refresh its sender: 3 is now the oldest.
	_ = w.Accept(Header{From: 3, Incarnation: 1, Counter: 1})
	_ = w.Accept(Header{From: 1, Incarnation: 1, Counter: 3})
	_ = w.Accept(Header{From: 4, Incarnation: 1, Counter: 2})
	_ = w.Accept(Header{From: 5, Incarnation: 1, Counter: 1})
	if err := w.Check(Header{From: 3, Incarnation: 1, Counter: 1}); err != nil {
		t.Fatalf("node 3 should have been evicted: %v", err)
	}

	// Many senders never grow the window past its bound.
	for id := NodeID(100); id < 1100; id++ {
		_ = w.Accept(Header{From: id, Incarnation: 1, Counter: 1})
		if w.Len() > max {
			t.Fatalf("Len = %d after sender %d", w.Len(), id)
		}
	}

	w.Forget(1099)
	if w.Len() != max-1 {
		t.Fatalf("Len after Forget = %d", w.Len())
	}
	if err := w.Accept(Header{From: 1099, Incarnation: 1, Counter: 1}); err != nil {
		t.Fatalf("forgotten sender: %v", err)
	}
}

func TestReplayMinimumSize(t *testing.T) {
	w := NewReplayWindow(0)
	_ = w.Accept(Header{From: 1, Counter: 1})
	_ = w.Accept(Header{From: 2, Counter: 1})
	if w.Len() != 1 {
		t.Fatalf("Len = %d", w.Len())
	}
}

// TestReplayConcurrent: each counter of each sender is accepted exactly
// once, whatever the interleaving (run with -race).
func TestReplayConcurrent(t *testing.T) {
	w := NewReplayWindow(8)
	var mu sync.Mutex
	accepted := map[string]int{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				h := Header{From: NodeID(1 + i%4), Incarnation: 1, Counter: uint64(i / 4)}
				if g%2 == 0 {
					_ = w.Check(h)
				}
				if w.Accept(h) == nil {
					mu.Lock()
					accepted[fmt.Sprint(h.From, h.Counter)]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for k, n := range accepted {
		if n != 1 {
			t.Fatalf("%s accepted %d times", k, n)
		}
	}
}

// TestReplayWindowStrict: with Strict, a sender's first packet (and the
// first of each new incarnation) is a floor, while reordering after it is
// accepted as without Strict.
func TestReplayWindowStrict(t *testing.T) {
	const W = ReplayWindowSize
	tests := []struct {
		name string
		pkts []pkt
	}{
		{"in order", []pkt{{1, 1, 0, false}, {1, 1, 1, false}, {1, 1, 2, false}}},
		{"below the first is refused", []pkt{{1, 1, 1000, false}, {1, 1, 999, true}, {1, 1, 1, true}, {1, 1, 1000, true}}},
		{"reordered after the first", []pkt{{1, 1, 1000, false}, {1, 1, 1003, false}, {1, 1, 1002, false}, {1, 1, 1001, false}, {1, 1, 1002, true}}},
		{"end of a block", []pkt{{1, 1, 63, false}, {1, 1, 62, true}, {1, 1, 65, false}, {1, 1, 64, false}, {1, 1, 63, true}}},
		{"far ahead", []pkt{{1, 1, 10, false}, {1, 1, 10 + 5*64, false}, {1, 1, 11, false}, {1, 1, 10 + 3*64, false}, {1, 1, 9, true}}},
		{"past the window", []pkt{{1, 1, 5, false}, {1, 1, 5 + W + 64, false}, {1, 1, 5 + W + 10, false}, {1, 1, 5 + 64, false}, {1, 1, 5 + 63, true}}},
		{"new incarnation is a new floor", []pkt{{1, 1, 500, false}, {1, 2, 7, false}, {1, 2, 6, true}, {1, 2, 8, false}, {1, 1, 501, true}}},
		{"huge counters", []pkt{{1, 1, ^uint64(0) - 1, false}, {1, 1, ^uint64(0) - 2, true}, {1, 1, ^uint64(0), false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewReplayWindow(10)
			w.Strict = true
			for i, p := range tt.pkts {
				h := hdr(p)
				checkErr := w.Check(h)
				err := w.Accept(h)
				if (err != nil) != p.wantReplay {
					t.Fatalf("packet %d %+v: Accept = %v, want replay=%v", i, p, err, p.wantReplay)
				}
				if (checkErr != nil) != (err != nil) {
					t.Fatalf("packet %d %+v: Check = %v but Accept = %v", i, p, checkErr, err)
				}
			}
		})
	}
}
