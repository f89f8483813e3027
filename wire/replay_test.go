package wire

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// op is one step of a replay-window scenario: a packet to accept, or (with
// verify) a Response that verifies a boot with the given floor.
type op struct {
	from   NodeID
	boot   uint64
	ctr    uint64
	verify bool
	floor  uint64 // with verify
	want   string // "" accepted, or the DropReason label
}

func pk(from NodeID, boot, ctr uint64, want string) op {
	return op{from: from, boot: boot, ctr: ctr, want: want}
}

// vf verifies boot of from by a Response with counter ctr, floor as given.
func vf(from NodeID, boot, ctr, floor uint64) op {
	return op{from: from, boot: boot, ctr: ctr, verify: true, floor: floor}
}

func (o op) header() Header { return Header{From: o.from, Boot: o.boot, Counter: o.ctr} }

func run(t *testing.T, w *ReplayWindow, ops []op) {
	t.Helper()
	for i, o := range ops {
		h := o.header()
		if o.verify {
			w.Verify(h, o.floor)
			continue
		}
		checkErr := w.Check(h)
		err := w.Accept(h)
		if got := DropReason(err); got != o.want {
			t.Fatalf("step %d %+v: Accept = %v (%q), want %q", i, o, err, got, o.want)
		}
		if DropReason(checkErr) != DropReason(err) {
			t.Fatalf("step %d %+v: Check = %v but Accept = %v", i, o, checkErr, err)
		}
	}
}

func TestReplayWindow(t *testing.T) {
	const W = ReplayWindowSize
	const A, B, C = 0xa, 0xb, 0xc // boots
	tests := []struct {
		name string
		ops  []op
	}{
		{"unknown sender is unverified", []op{pk(1, A, 5, "unverified"), pk(1, A, 6, "unverified")}},
		{"in order after verify", []op{vf(1, A, 3, 3), pk(1, A, 4, ""), pk(1, A, 5, ""), pk(1, A, 6, "")}},
		{"the response's own counter is seen", []op{vf(1, A, 3, 3), pk(1, A, 3, "replay")}},
		{"the prompting packet passes once", []op{pk(1, A, 2, "unverified"), vf(1, A, 3, 2), pk(1, A, 2, ""), pk(1, A, 2, "replay")}},
		{"below the floor is refused", []op{vf(1, A, 10, 8), pk(1, A, 7, "replay"), pk(1, A, 1, "replay"), pk(1, A, 9, ""), pk(1, A, 8, "")}},
		{"duplicate", []op{vf(1, A, 4, 4), pk(1, A, 5, ""), pk(1, A, 5, "replay")}},
		{"reordered within window", []op{vf(1, A, 9, 9), pk(1, A, 10, ""), pk(1, A, 13, ""), pk(1, A, 11, ""), pk(1, A, 12, ""), pk(1, A, 11, "replay"), pk(1, A, 14, "")}},
		{"edge of window", []op{vf(1, A, 0, 0), pk(1, A, W+100, ""), pk(1, A, 100, ""), pk(1, A, 99, "replay"), pk(1, A, 100, "replay")}},
		{"big jump clears ring", []op{vf(1, A, 4, 4), pk(1, A, 5, ""), pk(1, A, 5+64*replayBlocks, ""), pk(1, A, 5+64*replayBlocks-W, ""), pk(1, A, 5+64*(replayBlocks-1), "")}},
		{"floor at the end of a block", []op{vf(1, A, 63, 63), pk(1, A, 62, "replay"), pk(1, A, 65, ""), pk(1, A, 64, ""), pk(1, A, 63, "replay")}},
		{"huge counters", []op{vf(1, A, ^uint64(0)-2, ^uint64(0)-2), pk(1, A, ^uint64(0), ""), pk(1, A, ^uint64(0)-1, ""), pk(1, A, ^uint64(0)-1, "replay")}},
		{"a new boot is unverified, the old one stays live until verified", []op{vf(1, A, 1, 1), pk(1, B, 0, "unverified"), pk(1, A, 2, "")}},
		{"a verified new boot makes the old one a replay", []op{vf(1, A, 1, 1), pk(1, A, 2, ""), vf(1, B, 5, 5), pk(1, A, 3, "replay"), pk(1, B, 6, "")}},
		{"a lower-looking boot is fine (boots are not ordered)", []op{vf(1, C, 1, 1), vf(1, A, 1, 1), pk(1, A, 2, ""), pk(1, C, 2, "replay")}},
		{"old boots are remembered", []op{vf(1, 1, 1, 1), vf(1, 2, 1, 1), vf(1, 3, 1, 1), vf(1, 4, 1, 1), vf(1, 5, 1, 1), pk(1, 1, 9, "replay"), pk(1, 4, 9, "replay")}},
		{"coming back to an earlier boot is unverified until verified", []op{vf(1, A, 1, 1), vf(1, B, 1, 1), pk(1, A, 9, "replay"), vf(1, A, 20, 20), pk(1, A, 21, ""), pk(1, B, 2, "replay")}},
		{"a second response for the live boot only records", []op{vf(1, A, 5, 5), pk(1, A, 6, ""), vf(1, A, 9, 0), pk(1, A, 7, ""), pk(1, A, 9, "replay"), pk(1, A, 4, "replay")}},
		{"senders are independent", []op{vf(1, A, 4, 4), vf(2, A, 4, 4), pk(1, A, 5, ""), pk(2, A, 5, ""), pk(2, A, 5, "replay"), pk(3, A, 5, "unverified")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run(t, NewReplayWindow(10), tt.ops)
		})
	}
}

func TestReplayMessages(t *testing.T) {
	w := NewReplayWindow(1)
	w.Verify(Header{From: 5, Boot: 0xb, Counter: 2000}, 2000)
	w.Verify(Header{From: 5, Boot: 0xc, Counter: 2000}, 2000)
	for _, tt := range []struct {
		h    Header
		want string
	}{
		{Header{From: 5, Boot: 0xb, Counter: 9000}, "wire: replay from node 5: boot 000000000000000b is no longer live (live: 000000000000000c)"},
		{Header{From: 5, Boot: 0xd, Counter: 9000}, "wire: node 5: boot 000000000000000d not verified yet (verified: 000000000000000c)"},
		{Header{From: 6, Boot: 0xd, Counter: 9000}, "wire: node 6: boot 000000000000000d not verified yet"},
		{Header{From: 5, Boot: 0xc, Counter: 2000}, "wire: replay from node 5: counter 2000 already seen (boot 000000000000000c)"},
		{Header{From: 5, Boot: 0xc, Counter: 17}, "wire: replay from node 5: counter 17 is older than the window (highest 2000, window 960)"},
	} {
		if err := w.Accept(tt.h); err == nil || err.Error() != tt.want {
			t.Errorf("Accept(%+v) = %v, want %q", tt.h, err, tt.want)
		}
	}
	if b, ok := w.Verified(5); !ok || b != 0xc {
		t.Errorf("Verified(5) = %x, %v", b, ok)
	}
}

func TestReplayCheckDoesNotRecord(t *testing.T) {
	w := NewReplayWindow(4)
	w.Verify(Header{From: 1, Boot: 1, Counter: 0}, 0)
	h := Header{From: 1, Boot: 1, Counter: 1}
	for range 3 {
		if err := w.Check(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Accept(h); err != nil {
		t.Fatal(err)
	}
	if err := w.Check(h); !errors.Is(err, ErrReplay) {
		t.Fatalf("Check after Accept: %v", err)
	}
}

func TestReplaySuperseded(t *testing.T) {
	w := NewReplayWindow(4)
	w.Verify(Header{From: 1, Boot: 0xa, Counter: 5}, 5)
	w.Verify(Header{From: 1, Boot: 0xb, Counter: 1}, 1) // 0xb replaces 0xa
	for _, tc := range []struct {
		h    Header
		want bool
	}{
		{Header{From: 1, Boot: 0xa, Counter: 9}, true},  // verified, then replaced
		{Header{From: 1, Boot: 0xb, Counter: 9}, false}, // the live boot
		{Header{From: 1, Boot: 0xc, Counter: 9}, false}, // never verified
		{Header{From: 2, Boot: 0xa, Counter: 9}, false}, // another sender
	} {
		if got := w.Superseded(tc.h); got != tc.want {
			t.Errorf("Superseded(%+v) = %v, want %v", tc.h, got, tc.want)
		}
	}
	// 0xa proves it is live again (a second process, 0xb, gave way):
	// 0xb's packets are then the superseded ones.
	w.Verify(Header{From: 1, Boot: 0xa, Counter: 10}, 10)
	if err := w.Accept(Header{From: 1, Boot: 0xa, Counter: 11}); err != nil {
		t.Fatalf("0xa after it answered again: %v", err)
	}
	if !w.Superseded(Header{From: 1, Boot: 0xb, Counter: 2}) {
		t.Error("0xb is not superseded after 0xa answered again")
	}
}

func TestReplayEviction(t *testing.T) {
	const max = 3
	w := NewReplayWindow(max)
	verify := func(id NodeID) { w.Verify(Header{From: id, Boot: 1, Counter: 0}, 0) }
	for id := NodeID(1); id <= max; id++ {
		verify(id)
	}
	// Node 1 is used again, so node 2 becomes the least recently used.
	if err := w.Accept(Header{From: 1, Boot: 1, Counter: 2}); err != nil {
		t.Fatal(err)
	}
	verify(4)
	if w.Len() != max {
		t.Fatalf("Len = %d, want %d", w.Len(), max)
	}
	// Node 2 was evicted: it must be verified again (the price of a bound
	// is a challenge, never an accepted replay).
	if err := w.Check(Header{From: 2, Boot: 1, Counter: 5}); !errors.Is(err, ErrUnverified) {
		t.Fatalf("evicted node 2: %v, want unverified", err)
	}
	for _, id := range []NodeID{1, 3, 4} {
		if err := w.Check(Header{From: id, Boot: 1, Counter: 0}); !errors.Is(err, ErrReplay) {
			t.Fatalf("node %d forgotten: %v", id, err)
		}
	}
	// A rejected packet does not refresh its sender: 3 is now the oldest.
	_ = w.Accept(Header{From: 3, Boot: 1, Counter: 0})
	_ = w.Accept(Header{From: 1, Boot: 1, Counter: 3})
	_ = w.Accept(Header{From: 4, Boot: 1, Counter: 2})
	verify(5)
	if err := w.Check(Header{From: 3, Boot: 1, Counter: 1}); !errors.Is(err, ErrUnverified) {
		t.Fatalf("node 3 should have been evicted: %v", err)
	}
	// Many senders never grow the window past its bound.
	for id := NodeID(100); id < 1100; id++ {
		verify(id)
		if w.Len() > max {
			t.Fatalf("Len = %d after sender %d", w.Len(), id)
		}
	}
	w.Forget(1099)
	if w.Len() != max-1 {
		t.Fatalf("Len after Forget = %d", w.Len())
	}
	if err := w.Accept(Header{From: 1099, Boot: 1, Counter: 1}); !errors.Is(err, ErrUnverified) {
		t.Fatalf("forgotten sender: %v", err)
	}
}

func TestReplayMinimumSize(t *testing.T) {
	w := NewReplayWindow(0)
	w.Verify(Header{From: 1, Boot: 1}, 0)
	w.Verify(Header{From: 2, Boot: 1}, 0)
	if w.Len() != 1 {
		t.Fatalf("Len = %d", w.Len())
	}
}

// TestReplayConcurrent: each counter of each sender is accepted exactly
// once, whatever the interleaving (run with -race).
func TestReplayConcurrent(t *testing.T) {
	w := NewReplayWindow(8)
	for id := NodeID(1); id <= 4; id++ {
		w.Verify(Header{From: id, Boot: 7, Counter: 0}, 0)
	}
	var mu sync.Mutex
	accepted := map[string]int{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 4; i < 2000; i++ {
				h := Header{From: NodeID(1 + i%4), Boot: 7, Counter: uint64(i / 4)}
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
	if len(accepted) != 4*499 {
		t.Fatalf("accepted %d distinct packets, want %d", len(accepted), 4*499)
	}
}
