package store

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// peek loads dir's state without taking the lock, while a Store under test
// still holds it.
func peek(t testing.TB, dir string) State {
	t.Helper()
	st, err := (&Store{dir: dir, fs: osFS{}, lock: nopCloser{}}).Load()
	if err != nil {
		t.Fatalf("peek %s: %v", dir, err)
	}
	return st
}

func readSlot(t testing.TB, dir string, slot int) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, slotNames[slot]))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSaveProtocolOrder(t *testing.T) {
	dir := t.TempDir()
	s, f := openFault(t, dir)
	if _, err := s.Load(); !errors.Is(err, ErrNoState) {
		t.Fatal(err)
	}
	base := filepath.Base(dir)
	for i, slot := range []string{"state.a", "state.b", "state.a"} {
		f.reset()
		mustSave(t, s, State{NodeID: 1, Counter: uint64(i)})
		tmp := slot + ".tmp"
		want := []string{
			"create " + tmp, "write " + tmp, "sync " + tmp, "close " + tmp,
			"rename " + tmp, "syncDir " + base,
		}
		if got := f.log(); !slices.Equal(got, want) {
			t.Errorf("save %d: operations\n%q\nwant\n%q", i, got, want)
		}
	}
}

func TestOpenSyncsCreatedDirs(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "x", "y", "z")
	_, f := openFault(t, dir)
	log := f.log()
	i := slices.Index(log, "mkdirAll z")
	if i < 0 {
		t.Fatalf("operations %q: no mkdirAll", log)
	}
	for _, want := range []string{"syncDir y", "syncDir x", "syncDir " + filepath.Base(root)} {
		if !slices.Contains(log[i:], want) {
			t.Errorf("operations %q: no %q after mkdirAll", log, want)
		}
	}

	// An existing dir is neither created nor synced.
	_, f2 := openFault(t, root)
	for _, op := range f2.log() {
		if strings.HasPrefix(op, "mkdirAll") || strings.HasPrefix(op, "syncDir") {
			t.Errorf("Open of an existing dir did %q", op)
		}
	}
}

// TestReadOnlyDir covers a data dir the process cannot write. The tests run
// as root, and root writes into a mode-0500 directory anyway; only a
// read-only mount stops it. So the read-only cases inject EROFS (what a
// read-only mount returns), and one case makes a real write fail as root by
// putting a directory where the temporary file must go.
func TestReadOnlyDir(t *testing.T) {
	tests := []struct {
		name    string
		op      string // injected at Open
		err     error
		wantMsg string
	}{
		{"read-only mount", "writable", syscall.EROFS, "is not writable"},
		{"lock file not creatable", "lock", syscall.EACCES, "store: lock "},
	}
	for _, tt := range tests {
		t.Run("open/"+tt.name, func(t *testing.T) {
			dir := t.TempDir()
			f := newFaultFS()
			f.inject(tt.op, tt.err)
			s, err := open(dir, f)
			if err == nil {
				s.Close()
				t.Fatal("open succeeded")
			}
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.wantMsg) || !strings.Contains(err.Error(), dir) {
				t.Errorf("open: %v, want %v and %q", err, tt.err, tt.wantMsg)
			}
		})
	}

	t.Run("save/remounted read-only", func(t *testing.T) {
		dir := t.TempDir()
		s, f := openFault(t, dir)
		prev := State{NodeID: 1, Counter: 10}
		mustSave(t, s, prev)
		f.inject("create", syscall.EROFS)
		err := s.Save(State{NodeID: 1, Counter: 11})
		if !errors.Is(err, syscall.EROFS) || !strings.Contains(err.Error(), "state.b.tmp") {
			t.Fatalf("Save: %v, want EROFS naming state.b.tmp", err)
		}
		if got := peek(t, dir); got != prev {
			t.Errorf("Load = %v, want %v", got, prev)
		}
	})

	t.Run("save/real: temp path is a directory", func(t *testing.T) {
		dir := t.TempDir()
		s := openT(t, dir)
		prev := State{NodeID: 1, Counter: 10}
		mustSave(t, s, prev) // slot A; the next Save writes state.b.tmp
		blocker := filepath.Join(dir, "state.b.tmp")
		if err := os.MkdirAll(filepath.Join(blocker, "keep"), 0o700); err != nil {
			t.Fatal(err)
		}
		err := s.Save(State{NodeID: 1, Counter: 11})
		if !errors.Is(err, syscall.EISDIR) {
			t.Fatalf("Save: %v, want EISDIR", err)
		}
		if got := peek(t, dir); got != prev {
			t.Errorf("Load = %v, want %v", got, prev)
		}
		if err := os.RemoveAll(blocker); err != nil {
			t.Fatal(err)
		}
		mustSave(t, s, State{NodeID: 1, Counter: 11})
		if got := peek(t, dir); got.Counter != 11 {
			t.Errorf("Load after the fix = %v, want counter 11", got)
		}
	})

	t.Run("open/real: mode 0500 (not as root)", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes into a mode-0500 directory; covered by the injected EROFS case")
		}
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		s, err := Open(dir)
		if err == nil {
			s.Close()
			t.Fatal("Open succeeded")
		}
		if !errors.Is(err, syscall.EACCES) || !strings.Contains(err.Error(), "is not writable") {
			t.Errorf("Open: %v, want EACCES and \"is not writable\"", err)
		}
	})
}

// TestFullDisk injects ENOSPC into each step of Save: Save must fail with
// an error wrapping it, the last saved counter must still load, the newest
// slot must be untouched, and Save must work again once space is back.
func TestFullDisk(t *testing.T) {
	tests := []struct {
		op          string
		afterRename bool // the new record may be visible
	}{
		{"create", false},
		{"write", false},
		{"sync", false},
		{"close", false},
		{"rename", false},
		{"syncDir", true},
	}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			dir := t.TempDir()
			s, f := openFault(t, dir)
			mustSave(t, s, State{NodeID: 1, Counter: 10}) // A, generation 1
			prev := State{NodeID: 1, Counter: 20}
			mustSave(t, s, prev) // B, generation 2
			newest := readSlot(t, dir, 1)

			f.inject(tt.op, syscall.ENOSPC)
			for try := range 2 { // failing twice in a row changes nothing
				err := s.Save(State{NodeID: 1, Counter: uint64(30 + try)})
				if !errors.Is(err, syscall.ENOSPC) || !strings.HasPrefix(err.Error(), "store: ") {
					t.Fatalf("Save: %v, want a store error wrapping ENOSPC", err)
				}
				got := peek(t, dir)
				if got.Counter < prev.Counter || (!tt.afterRename && got != prev) {
					t.Errorf("Load after failed Save = %v, want %v", got, prev)
				}
				if !bytes.Equal(readSlot(t, dir, 1), newest) {
					t.Errorf("failed Save touched the newest slot")
				}
				if _, err := os.Stat(filepath.Join(dir, "state.a.tmp")); !tt.afterRename && !errors.Is(err, os.ErrNotExist) {
					t.Errorf("temp file left behind: %v", err)
				}
			}

			f.reset()
			next := State{NodeID: 1, Counter: 40}
			mustSave(t, s, next)
			if got := peek(t, dir); got != next {
				t.Errorf("Load after recovery = %v, want %v", got, next)
			}
			if g := slotGen(t, dir, 0); g != 3 {
				t.Errorf("state.a generation %d, want 3", g)
			}
			mustSave(t, s, State{NodeID: 1, Counter: 50})
			if g := slotGen(t, dir, 1); g != 4 {
				t.Errorf("state.b generation %d, want 4", g)
			}
		})
	}

	t.Run("short write", func(t *testing.T) {
		dir := t.TempDir()
		s, f := openFault(t, dir)
		prev := State{NodeID: 1, Counter: 10}
		mustSave(t, s, prev)
		f.short = true
		if err := s.Save(State{NodeID: 1, Counter: 11}); !errors.Is(err, io.ErrShortWrite) {
			t.Fatalf("Save: %v, want io.ErrShortWrite", err)
		}
		if got := peek(t, dir); got != prev {
			t.Errorf("Load = %v, want %v", got, prev)
		}
	})

	t.Run("failures of different steps in a row", func(t *testing.T) {
		dir := t.TempDir()
		s, f := openFault(t, dir)
		mustSave(t, s, State{NodeID: 1, Counter: 10})
		mustSave(t, s, State{NodeID: 1, Counter: 20})
		newest := readSlot(t, dir, 1)
		for _, op := range []string{"syncDir", "write", "rename", "syncDir", "sync"} {
			f.reset()
			f.inject(op, syscall.ENOSPC)
			if err := s.Save(State{NodeID: 1, Counter: 25}); err == nil {
				t.Fatalf("Save with %s failing succeeded", op)
			}
			if got := peek(t, dir); got.Counter < 20 {
				t.Fatalf("after %s failed: Load = %v, want counter ≥ 20", op, got)
			}
			if !bytes.Equal(readSlot(t, dir, 1), newest) {
				t.Fatalf("after %s failed: the newest slot changed", op)
			}
		}
	})
}
