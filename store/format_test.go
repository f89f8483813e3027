package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/groupd/groupd/wire"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

var goldenState = State{
	NodeID:      7,
	Counter:     42,
	Incarnation: 5,
	LastGroup:   wire.GroupNumber{Seq: 41, ID: 7},
	Term:        wire.GroupNumber{Seq: 40, ID: 9},
	RuleVoters:  6,
	RuleTie:     3,
}

// TestGoldenV1 reads a file of format version 1, written before the term
// existed: it loads with a zero term, and re-encodes in version 1 to the
// very same bytes.
func TestGoldenV1(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "state-v1.golden"))
	if err != nil {
		t.Fatal(err)
	}
	want := goldenState
	want.Term = wire.GroupNumber{}
	want.RuleVoters, want.RuleTie = 0, 0
	gen, st, v, err := decodeVersion(b)
	if err != nil || gen != 3 || st != want || v != 1 {
		t.Fatalf("decode(v1 golden) = %d, %v, version %d, %v; want 3, %v, version 1", gen, st, v, err, want)
	}
	if got := encodeVersion(1, gen, st); !bytes.Equal(got, b) {
		t.Errorf("encodeVersion(1) = %x\nwant               %x", got, b)
	}
}

// TestGoldenV2 reads a file of format version 2, written before the quorum
// rule was saved: it loads with a zero rule, and re-encodes in version 2 to
// the very same bytes.
func TestGoldenV2(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "state-v2.golden"))
	if err != nil {
		t.Fatal(err)
	}
	want := goldenState
	want.RuleVoters, want.RuleTie = 0, 0
	gen, st, v, err := decodeVersion(b)
	if err != nil || gen != 3 || st != want || v != 2 {
		t.Fatalf("decode(v2 golden) = %d, %v, version %d, %v; want 3, %v, version 2", gen, st, err, v, want)
	}
	if got := encodeVersion(2, gen, st); !bytes.Equal(got, b) {
		t.Errorf("encodeVersion(2) = %x\nwant               %x", got, b)
	}
}

// TestGolden pins format version 3: a change of the encoding fails here
// instead of making existing state files unreadable.
func TestGolden(t *testing.T) {
	path := filepath.Join("testdata", "state-v3.golden")
	got := encode(3, goldenState)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("encode = %x\nwant     %x", got, want)
	}
	gen, st, err := decode(want)
	if err != nil || gen != 3 || st != goldenState {
		t.Errorf("decode(golden) = %d, %v, %v; want 3, %v", gen, st, err, goldenState)
	}
}

// TestLayout checks the byte table of the package documentation.
func TestLayout(t *testing.T) {
	b := encode(0x0102030405060708, State{
		NodeID: 0x11, Counter: 0x22, Incarnation: 0x33,
		LastGroup: wire.GroupNumber{Seq: 0x44, ID: 0x55}, Term: wire.GroupNumber{Seq: 0x66, ID: 0x77},
		RuleVoters: 0x88, RuleTie: 0x99,
	})
	be := binary.BigEndian
	fields := []struct {
		name      string
		got, want uint64
	}{
		{"size", uint64(len(b)), 88},
		{"magic", uint64(be.Uint32(b[0:])), uint64(be.Uint32([]byte("GRPD")))},
		{"version", uint64(be.Uint32(b[4:])), 3},
		{"generation", be.Uint64(b[8:]), 0x0102030405060708},
		{"node ID", be.Uint64(b[16:]), 0x11},
		{"counter", be.Uint64(b[24:]), 0x22},
		{"incarnation", be.Uint64(b[32:]), 0x33},
		{"last group seq", be.Uint64(b[40:]), 0x44},
		{"last group ID", be.Uint64(b[48:]), 0x55},
		{"term seq", be.Uint64(b[56:]), 0x66},
		{"term ID", be.Uint64(b[64:]), 0x77},
		{"rule voters", uint64(be.Uint32(b[72:])), 0x88},
		{"rule tie-breaker", be.Uint64(b[76:]), 0x99},
		{"crc32c", uint64(be.Uint32(b[84:])), uint64(crc32.Checksum(b[:84], crc32.MakeTable(crc32.Castagnoli)))},
	}
	for _, f := range fields {
		if f.got != f.want {
			t.Errorf("%s = %#x, want %#x", f.name, f.got, f.want)
		}
	}
}

// FuzzLoad writes arbitrary bytes to either or both slot files. Load must
// not panic, and must agree with decoding each file on its own: it returns
// the newest validly encoded state (whose record re-encodes to the very same
// bytes), a *CorruptError when files exist but none is valid, or ErrNoState
// when there are none.
func FuzzLoad(f *testing.F) {
	a := encode(1, goldenState)
	next := goldenState
	next.Counter++
	b := encode(2, next)
	f.Add(a, b, uint8(3))
	f.Add(a, b, uint8(1))
	f.Add(a, b, uint8(2))
	f.Add(a, b, uint8(0))
	f.Add(b, a, uint8(3))
	f.Add(a[:75], b, uint8(3))
	f.Add(a, b[:30], uint8(3))
	f.Add(a[:75], b[:8], uint8(3))
	f.Add(encodeVersion(1, 1, goldenState), b, uint8(3))
	f.Add([]byte{}, []byte("GRPD"), uint8(3))
	f.Add(append(append([]byte{}, a...), 0), b, uint8(3))
	for _, c := range corruptions {
		f.Add(c.corrupt(encode(4, goldenState)), b, uint8(3))
		f.Add(c.corrupt(encode(4, goldenState)), c.corrupt(encode(5, goldenState)), uint8(3))
	}
	f.Fuzz(func(t *testing.T, a, b []byte, present uint8) {
		dir := t.TempDir()
		files := [2][]byte{a, b}
		var (
			gens   [2]uint64
			sts    [2]State
			valid  [2]bool
			exists bool
		)
		for i := range files {
			if present&(1<<i) == 0 {
				continue
			}
			exists = true
			writeSlot(t, dir, i, files[i])
			gen, st, v, err := decodeVersion(files[i])
			if err != nil {
				continue
			}
			if !bytes.Equal(encodeVersion(v, gen, st), files[i]) {
				t.Fatalf("slot %d decodes to %d, %v, which encodes to different bytes", i, gen, st)
			}
			gens[i], sts[i], valid[i] = gen, st, true
		}

		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		st, err := s.Load()
		switch {
		case !exists:
			if !errors.Is(err, ErrNoState) {
				t.Fatalf("no files: Load = %v, %v; want ErrNoState", st, err)
			}
		case !valid[0] && !valid[1]:
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("no valid file: Load = %v, %v; want *CorruptError", st, err)
			}
		default:
			if err != nil {
				t.Fatalf("Load: %v, but a slot is valid", err)
			}
			best := 0
			if !valid[0] || (valid[1] && (gens[1] > gens[0] || gens[1] == gens[0] && sts[1].Counter > sts[0].Counter)) {
				best = 1
			}
			if st != sts[best] {
				t.Fatalf("Load = %v, want slot %d: %v", st, best, sts[best])
			}
			wantWarnings := 0
			if present&3 == 3 && !valid[1-best] {
				wantWarnings = 1
			}
			if w := s.Warnings(); len(w) != wantWarnings {
				t.Fatalf("warnings %v, want %d", w, wantWarnings)
			}
		}
	})
}
