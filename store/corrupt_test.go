package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// reseal recomputes a record's checksum, so that a test can change one
// field and nothing else.
func reseal(b []byte) []byte {
	binary.BigEndian.PutUint32(b[crcOffset:], crc32.Checksum(b[:crcOffset], castagnoli))
	return b
}

var corruptions = []struct {
	name    string
	corrupt func(valid []byte) []byte
	reason  error
	text    string // in the message
}{
	{"zero length", func([]byte) []byte { return nil }, errEmpty, "empty file"},
	{"truncated to 3", func(b []byte) []byte { return b[:3] }, errShort, "3 of 88 bytes"},
	{"short garbage", func([]byte) []byte { return []byte("hi") }, errMagic, "not a groupd state file"},
	{"truncated to 8", func(b []byte) []byte { return b[:8] }, errShort, "8 of 88 bytes"},
	{"truncated to 87", func(b []byte) []byte { return b[:87] }, errShort, "87 of 88 bytes"},
	{"trailing byte", func(b []byte) []byte { return append(b, 0) }, errLong, "89 bytes, want 88"},
	{"wrong magic", func(b []byte) []byte { copy(b, "GRPX"); return b }, errMagic, `"GRPX"`},
	{"all zeros", func(b []byte) []byte { return make([]byte, len(b)) }, errMagic, "not a groupd state file"},
	{"text", func([]byte) []byte { return []byte("id=7 counter=9\n") }, errMagic, "not a groupd state file"},
	{"wrong version", func(b []byte) []byte { binary.BigEndian.PutUint32(b[4:], 4); return reseal(b) }, errVersion, "version 4"},
	{"version 0", func(b []byte) []byte { binary.BigEndian.PutUint32(b[4:], 0); return reseal(b) }, errVersion, "version 0"},
	{"bit flip in counter", func(b []byte) []byte { b[30] ^= 0x10; return b }, errChecksum, "checksum mismatch"},
	{"bit flip in checksum", func(b []byte) []byte { b[87] ^= 1; return b }, errChecksum, "checksum mismatch"},
	{"version 1 with version 3's length", func(b []byte) []byte { binary.BigEndian.PutUint32(b[4:], 1); return reseal(b) }, errLong, "88 bytes, want 60"},
	{"version 2 with version 3's length", func(b []byte) []byte { binary.BigEndian.PutUint32(b[4:], 2); return reseal(b) }, errLong, "88 bytes, want 76"},
	{"generation 0", func(b []byte) []byte { clear(b[8:16]); return reseal(b) }, errContent, "generation 0"},
	{"node ID 0", func(b []byte) []byte { clear(b[16:24]); return reseal(b) }, errContent, "node ID is 0"},
}

// snapshot returns every file in dir with its content.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		if e.Name() == lockName {
			continue // rewritten with the PID by each Open
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

func equalSnapshots(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			return false
		}
	}
	return true
}

func TestCorruption(t *testing.T) {
	stA := State{NodeID: 6, Counter: 10, Incarnation: 1}
	stB := State{NodeID: 6, Counter: 20, Incarnation: 2}
	for _, c := range corruptions {
		t.Run(c.name, func(t *testing.T) {
			// A has generation 1, B the newer generation 2.
			setup := func(t *testing.T, badA, badB, missingA bool) string {
				dir := t.TempDir()
				a, b := encode(1, stA), encode(2, stB)
				if badA {
					a = c.corrupt(a)
				}
				if badB {
					b = c.corrupt(b)
				}
				if !missingA {
					writeSlot(t, dir, 0, a)
				}
				writeSlot(t, dir, 1, b)
				return dir
			}

			t.Run("A", func(t *testing.T) {
				dir := setup(t, true, false, false)
				checkOneBad(t, dir, 0, stB, c.reason, c.text)
			})
			t.Run("B", func(t *testing.T) {
				dir := setup(t, false, true, false)
				checkOneBad(t, dir, 1, stA, c.reason, c.text)
			})
			t.Run("both", func(t *testing.T) {
				dir := setup(t, true, true, false)
				checkAllBad(t, dir, c.reason, c.text, "")
			})
			t.Run("B and A missing", func(t *testing.T) {
				dir := setup(t, false, true, true)
				checkAllBad(t, dir, c.reason, c.text, filepath.Join(dir, "state.a")+": missing")
			})
		})
	}
}

// checkOneBad checks that with slot bad invalid, Load returns want from the
// other slot and warns about bad, and that the next Save overwrites bad.
func checkOneBad(t *testing.T, dir string, bad int, want State, reason error, text string) {
	t.Helper()
	s := openT(t, dir)
	got, err := s.Load()
	if err != nil || got != want {
		t.Fatalf("Load = %v, %v; want %v", got, err, want)
	}
	w := s.Warnings()
	badPath := filepath.Join(dir, slotNames[bad])
	var se *SlotError
	if len(w) != 1 || !errors.As(w[0], &se) || se.Path != badPath || !errors.Is(w[0], reason) ||
		!strings.Contains(w[0].Error(), text) || !strings.Contains(w[0].Error(), "loaded "+slotNames[1-bad]) {
		t.Fatalf("warnings %v, want one *SlotError for %s: %v (%q)", w, badPath, reason, text)
	}
	goodBytes, err := os.ReadFile(filepath.Join(dir, slotNames[1-bad]))
	if err != nil {
		t.Fatal(err)
	}
	boot, err := s.LoadOrInit(InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(boot.Warnings) != 1 {
		t.Errorf("boot warnings %v, want 1", boot.Warnings)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, slotNames[1-bad])); !bytes.Equal(after, goodBytes) {
		t.Errorf("Save overwrote the valid slot %s", slotNames[1-bad])
	}
	if g, want := slotGen(t, dir, bad), slotGen(t, dir, 1-bad)+1; g != want {
		t.Errorf("Save wrote generation %d to %s, want %d", g, slotNames[bad], want)
	}
	if got := mustLoad(t, dirAfterClose(t, s)); got != boot.State {
		t.Errorf("Load after repair = %v, want %v", got, boot.State)
	}
}

// checkAllBad checks that Load, Save and LoadOrInit all refuse with a
// helpful *CorruptError, and leave the files as they are.
func checkAllBad(t *testing.T, dir string, reason error, texts ...string) {
	t.Helper()
	before := snapshot(t, dir)
	s := openT(t, dir)
	_, err := s.Load()
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("Load: %v, want *CorruptError", err)
	}
	if !errors.Is(err, reason) {
		t.Errorf("errors.Is(%v, %v) = false", err, reason)
	}
	if ce.Dir != dir || len(ce.Slots) != 2 {
		t.Errorf("CorruptError{Dir: %q, Slots: %v}, want dir %q and 2 slots", ce.Dir, ce.Slots, dir)
	}
	msg := err.Error()
	wants := append([]string{
		filepath.Join(dir, "state.a"), filepath.Join(dir, "state.b"),
		"will not reset", "restore", "backup", "move them out", "--min-counter",
	}, texts...)
	for _, want := range wants {
		if want != "" && !strings.Contains(msg, want) {
			t.Errorf("message does not say %q:\n%s", want, msg)
		}
	}
	if err := s.Save(State{NodeID: 6, Counter: 1000}); !errors.As(err, &ce) {
		t.Errorf("Save over corrupt slots: %v, want *CorruptError", err)
	}
	if _, err := s.LoadOrInit(InitOptions{MinCounter: 1000}); !errors.As(err, &ce) {
		t.Errorf("LoadOrInit over corrupt slots: %v, want *CorruptError", err)
	}
	if after := snapshot(t, dir); !equalSnapshots(before, after) {
		t.Errorf("files changed:\nbefore %q\nafter  %q", before, after)
	}
}

func TestCorruptRecovery(t *testing.T) {
	// The documented recovery: move the files away, start with a higher
	// counter.
	dir := t.TempDir()
	writeSlot(t, dir, 0, []byte("garbage"))
	writeSlot(t, dir, 1, nil)
	s := openT(t, dir)
	if _, err := s.LoadOrInit(InitOptions{ID: 3}); err == nil {
		t.Fatal("LoadOrInit accepted corrupt state")
	}
	backup := t.TempDir()
	for _, name := range slotNames {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(backup, name)); err != nil {
			t.Fatal(err)
		}
	}
	boot, err := s.LoadOrInit(InitOptions{ID: 3, MinCounter: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if !boot.Fresh || boot.State.Counter != 5000 || boot.State.NodeID != 3 {
		t.Errorf("boot %+v, want fresh with counter 5000", boot)
	}
}

func TestReadErrorDoesNotFallBack(t *testing.T) {
	// A slot that cannot be read might hold the newest state: Load must
	// fail rather than return the other, possibly older, slot.
	dir := t.TempDir()
	writeSlot(t, dir, 0, encode(1, State{NodeID: 1, Counter: 1}))
	writeSlot(t, dir, 1, encode(2, State{NodeID: 1, Counter: 2}))
	s, f := openFault(t, dir)
	f.inject("readFile state.b", syscall.EIO)
	st, err := s.Load()
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "state.b") {
		t.Fatalf("Load = %v, %v; want an EIO error naming state.b", st, err)
	}
	if err := s.Save(State{NodeID: 1, Counter: 3}); !errors.Is(err, syscall.EIO) {
		t.Errorf("Save after a failed Load = %v, want the read error", err)
	}
	f.reset()
	if st, err := s.Load(); err != nil || st.Counter != 2 {
		t.Errorf("Load after the fault = %v, %v; want counter 2", st, err)
	}

	// A directory where a slot should be is a read error too.
	dir2 := t.TempDir()
	writeSlot(t, dir2, 0, encode(1, State{NodeID: 1, Counter: 1}))
	if err := os.Mkdir(filepath.Join(dir2, "state.b"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := loadFresh(t, dir2); err == nil || errors.As(err, new(*CorruptError)) {
		t.Errorf("Load with a directory as state.b = %v, want a read error", err)
	}
}
