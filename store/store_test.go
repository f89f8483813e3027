package store

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/groupd/groupd/wire"
)

// faultFS is the real file system with errors injected on demand: a key
// "op" fails every call of op, a key "op name" only those on the file
// called name. It also logs every call as "op name", to check the order of
// the durable-write protocol.
type faultFS struct {
	osFS
	mu    sync.Mutex
	errs  map[string]error
	ops   []string
	short bool // file writes write half their data and report no error
}

func newFaultFS() *faultFS { return &faultFS{errs: map[string]error{}} }

func (f *faultFS) inject(key string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[key] = err
}

func (f *faultFS) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs, f.ops, f.short = map[string]error{}, nil, false
}

func (f *faultFS) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ops...)
}

func (f *faultFS) hit(op, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := filepath.Base(path)
	f.ops = append(f.ops, op+" "+name)
	for _, k := range []string{op + " " + name, op} {
		if err, ok := f.errs[k]; ok {
			return &os.PathError{Op: op, Path: path, Err: err}
		}
	}
	return nil
}

func (f *faultFS) mkdirAll(path string, perm os.FileMode) error {
	if err := f.hit("mkdirAll", path); err != nil {
		return err
	}
	return f.osFS.mkdirAll(path, perm)
}

func (f *faultFS) stat(path string) (os.FileInfo, error) {
	if err := f.hit("stat", path); err != nil {
		return nil, err
	}
	return f.osFS.stat(path)
}

func (f *faultFS) writable(dir string) error {
	if err := f.hit("writable", dir); err != nil {
		return err
	}
	return f.osFS.writable(dir)
}

func (f *faultFS) lock(path string) (io.Closer, error) {
	if err := f.hit("lock", path); err != nil {
		return nil, err
	}
	return f.osFS.lock(path)
}

func (f *faultFS) readFile(path string, limit int64) ([]byte, error) {
	if err := f.hit("readFile", path); err != nil {
		return nil, err
	}
	return f.osFS.readFile(path, limit)
}

func (f *faultFS) create(path string, perm os.FileMode) (file, error) {
	if err := f.hit("create", path); err != nil {
		return nil, err
	}
	fl, err := f.osFS.create(path, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{file: fl, fs: f, path: path}, nil
}

func (f *faultFS) rename(oldpath, newpath string) error {
	if err := f.hit("rename", oldpath); err != nil {
		return err
	}
	return f.osFS.rename(oldpath, newpath)
}

func (f *faultFS) remove(path string) error {
	if err := f.hit("remove", path); err != nil {
		return err
	}
	return f.osFS.remove(path)
}

func (f *faultFS) syncDir(dir string) error {
	if err := f.hit("syncDir", dir); err != nil {
		return err
	}
	return f.osFS.syncDir(dir)
}

type faultFile struct {
	file
	fs   *faultFS
	path string
}

func (f *faultFile) Write(b []byte) (int, error) {
	if err := f.fs.hit("write", f.path); err != nil {
		return 0, err
	}
	f.fs.mu.Lock()
	short := f.fs.short
	f.fs.mu.Unlock()
	if short {
		return f.file.Write(b[:len(b)/2])
	}
	return f.file.Write(b)
}

func (f *faultFile) Sync() error {
	if err := f.fs.hit("sync", f.path); err != nil {
		return err
	}
	return f.file.Sync()
}

func (f *faultFile) Close() error {
	err := f.fs.hit("close", f.path)
	if cerr := f.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// openT opens dir with the real file system and closes it at the end of
// the test.
func openT(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openFault opens dir with a faultFS.
func openFault(t testing.TB, dir string) (*Store, *faultFS) {
	t.Helper()
	f := newFaultFS()
	s, err := open(dir, f)
	if err != nil {
		t.Fatalf("open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s, f
}

// loadFresh loads dir through a new Store, as the next boot would.
func loadFresh(t testing.TB, dir string) (State, error) {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	defer s.Close()
	return s.Load()
}

func mustLoad(t testing.TB, dir string) State {
	t.Helper()
	st, err := loadFresh(t, dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return st
}

func mustSave(t testing.TB, s *Store, st State) {
	t.Helper()
	if err := s.Save(st); err != nil {
		t.Fatalf("Save(%v): %v", st, err)
	}
}

// slotGen returns the generation in a slot file, or 0 if it is missing.
func slotGen(t testing.TB, dir string, slot int) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, slotNames[slot]))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	gen, _, err := decode(b)
	if err != nil {
		t.Fatalf("slot %s: %v", slotNames[slot], err)
	}
	return gen
}

func perm(t testing.TB, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestFirstStart(t *testing.T) {
	tests := []struct {
		name        string
		opts        InitOptions
		wantID      wire.NodeID // 0: any random ID
		wantCounter uint64
	}{
		{"random ID", InitOptions{}, 0, 0},
		{"given ID", InitOptions{ID: 42}, 42, 0},
		{"min counter", InitOptions{ID: 3, MinCounter: 1000}, 3, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "var", "lib", "groupd")
			s := openT(t, dir)
			if got := perm(t, dir); got != 0o700 {
				t.Errorf("data dir mode %v, want 0700", got)
			}
			if got := perm(t, filepath.Dir(dir)); got != 0o700 {
				t.Errorf("created parent mode %v, want 0700", got)
			}
			if _, err := s.Load(); !errors.Is(err, ErrNoState) {
				t.Fatalf("Load on empty dir: %v, want ErrNoState", err)
			}
			boot, err := s.LoadOrInit(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !boot.Fresh || boot.PrevID != 0 || len(boot.Warnings) != 0 {
				t.Errorf("boot = %+v, want fresh, no PrevID, no warnings", boot)
			}
			st := boot.State
			if tt.wantID != 0 && st.NodeID != tt.wantID {
				t.Errorf("NodeID %d, want %d", st.NodeID, tt.wantID)
			}
			if st.NodeID == 0 || st.NodeID >= 1<<53 {
				t.Errorf("NodeID %d out of [1, 2^53)", st.NodeID)
			}
			if st.Counter != tt.wantCounter || st.Incarnation != 1 || !st.LastGroup.IsZero() {
				t.Errorf("state %v, want counter %d, incarnation 1, no last group", st, tt.wantCounter)
			}
			for _, name := range []string{"LOCK", "state.a"} {
				if got := perm(t, filepath.Join(dir, name)); got != 0o600 {
					t.Errorf("%s mode %v, want 0600", name, got)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "state.b")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("state.b after one save: %v, want missing", err)
			}
			if got := mustLoadSame(t, s); got != st {
				t.Errorf("Load = %v, want %v", got, st)
			}

			// Second boot: same ID, next incarnation, other slot.
			s.Close()
			s2 := openT(t, dir)
			boot2, err := s2.LoadOrInit(InitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := st
			want.Incarnation = 2
			if boot2.Fresh || boot2.State != want {
				t.Errorf("second boot = %+v, want not fresh, state %v", boot2, want)
			}
			if got := perm(t, filepath.Join(dir, "state.b")); got != 0o600 {
				t.Errorf("state.b mode %v, want 0600", got)
			}
		})
	}
}

func mustLoadSame(t testing.TB, s *Store) State {
	t.Helper()
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestLoadOrInitExisting(t *testing.T) {
	stored := State{NodeID: 5, Counter: 17, Incarnation: 9, LastGroup: wire.GroupNumber{Seq: 17, ID: 5}, Term: wire.GroupNumber{Seq: 16, ID: 3},
		RuleVoters: 6, RuleTie: 0}
	tests := []struct {
		name       string
		opts       InitOptions
		want       State
		wantPrevID wire.NodeID
	}{
		{"keep", InitOptions{}, State{NodeID: 5, Counter: 17, Incarnation: 10, LastGroup: stored.LastGroup, Term: stored.Term, RuleVoters: stored.RuleVoters, RuleTie: stored.RuleTie}, 0},
		{"same ID", InitOptions{ID: 5}, State{NodeID: 5, Counter: 17, Incarnation: 10, LastGroup: stored.LastGroup, Term: stored.Term, RuleVoters: stored.RuleVoters, RuleTie: stored.RuleTie}, 0},
		{"new ID keeps counter", InitOptions{ID: 8}, State{NodeID: 8, Counter: 17, Incarnation: 10, LastGroup: stored.LastGroup, Term: stored.Term, RuleVoters: stored.RuleVoters, RuleTie: stored.RuleTie}, 5},
		{"min counter raises", InitOptions{MinCounter: 500}, State{NodeID: 5, Counter: 500, Incarnation: 10, LastGroup: stored.LastGroup, Term: stored.Term, RuleVoters: stored.RuleVoters, RuleTie: stored.RuleTie}, 0},
		{"min counter never lowers", InitOptions{MinCounter: 3}, State{NodeID: 5, Counter: 17, Incarnation: 10, LastGroup: stored.LastGroup, Term: stored.Term, RuleVoters: stored.RuleVoters, RuleTie: stored.RuleTie}, 0},
		{"min incarnation raises", InitOptions{MinIncarnation: 1_700_000_000}, State{NodeID: 5, Counter: 17, Incarnation: 1_700_000_000, LastGroup: stored.LastGroup, Term: stored.Term, RuleVoters: stored.RuleVoters, RuleTie: stored.RuleTie}, 0},
		{"min incarnation never lowers", InitOptions{MinIncarnation: 4}, State{NodeID: 5, Counter: 17, Incarnation: 10, LastGroup: stored.LastGroup, Term: stored.Term, RuleVoters: stored.RuleVoters, RuleTie: stored.RuleTie}, 0},
		{"min incarnation equal to stored", InitOptions{MinIncarnation: 9}, State{NodeID: 5, Counter: 17, Incarnation: 10, LastGroup: stored.LastGroup, Term: stored.Term, RuleVoters: stored.RuleVoters, RuleTie: stored.RuleTie}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir)
			mustSave(t, s, stored)
			boot, err := s.LoadOrInit(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if boot.Fresh || boot.State != tt.want || boot.PrevID != tt.wantPrevID {
				t.Errorf("boot = %+v, want state %v, PrevID %d", boot, tt.want, tt.wantPrevID)
			}
			if got := mustLoad(t, dirAfterClose(t, s)); got != tt.want {
				t.Errorf("saved %v, want %v", got, tt.want)
			}
		})
	}
}

// dirAfterClose closes s and returns its directory, for loadFresh.
func dirAfterClose(t testing.TB, s *Store) string {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return s.Dir()
}

func TestRoundTrip(t *testing.T) {
	tests := []State{
		{NodeID: 1},
		{NodeID: 7, Counter: 42, Incarnation: 3, LastGroup: wire.GroupNumber{Seq: 42, ID: 7}},
		{NodeID: 7, Counter: 1, Incarnation: 1, LastGroup: wire.GroupNumber{Seq: 1 << 40, ID: 9}}, // someone else's group
		{NodeID: ^wire.NodeID(0), Counter: ^uint64(0), Incarnation: ^uint64(0),
			LastGroup: wire.GroupNumber{Seq: ^uint64(0), ID: ^wire.NodeID(0)}},
	}
	for _, st := range tests {
		t.Run(st.String(), func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir)
			mustSave(t, s, st)
			if got := mustLoadSame(t, s); got != st {
				t.Errorf("Load after Save = %v, want %v", got, st)
			}
			if got := mustLoad(t, dirAfterClose(t, s)); got != st {
				t.Errorf("Load in a new Store = %v, want %v", got, st)
			}
		})
	}
}

func TestGenerationAlternation(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	for gen := uint64(1); gen <= 6; gen++ {
		st := State{NodeID: 2, Counter: gen * 10}
		mustSave(t, s, st)
		// Generation g goes to slot (g-1)%2: A, B, A, B...; the other slot
		// keeps generation g-1.
		slot := int((gen - 1) % 2)
		if got := slotGen(t, dir, slot); got != gen {
			t.Errorf("save %d: %s has generation %d, want %d", gen, slotNames[slot], got, gen)
		}
		if got := slotGen(t, dir, 1-slot); got != gen-1 {
			t.Errorf("save %d: %s has generation %d, want %d", gen, slotNames[1-slot], got, gen-1)
		}
		if got := mustLoadSame(t, s); got != st {
			t.Errorf("save %d: Load = %v, want %v", gen, got, st)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state.a.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp file left behind: %v", err)
	}
}

// writeSlot writes a slot file by hand.
func writeSlot(t testing.TB, dir string, slot int, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, slotNames[slot]), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestNewestValidWins(t *testing.T) {
	st := func(c uint64) State { return State{NodeID: 4, Counter: c} }
	tests := []struct {
		name       string
		aGen, bGen uint64 // 0: slot missing
		aC, bC     uint64
		want       uint64 // counter
		nextSlot   int    // the slot the next Save overwrites
	}{
		{"only A", 1, 0, 10, 0, 10, 1},
		{"only B", 0, 1, 0, 10, 10, 0},
		{"B newer", 4, 5, 40, 50, 50, 0},
		{"A newer", 7, 6, 70, 60, 70, 1},
		{"A newer even with lower counter", 9, 8, 1, 80, 1, 1},
		{"equal generations: higher counter", 3, 3, 30, 31, 31, 0},
		{"far apart", 1, 1 << 60, 5, 6, 6, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.aGen != 0 {
				writeSlot(t, dir, 0, encode(tt.aGen, st(tt.aC)))
			}
			if tt.bGen != 0 {
				writeSlot(t, dir, 1, encode(tt.bGen, st(tt.bC)))
			}
			s := openT(t, dir)
			got, err := s.Load()
			if err != nil || got.Counter != tt.want {
				t.Fatalf("Load = %v, %v; want counter %d", got, err, tt.want)
			}
			if w := s.Warnings(); len(w) != 0 {
				t.Errorf("warnings %v, want none", w)
			}
			other := slotGen(t, dir, 1-tt.nextSlot)
			mustSave(t, s, st(tt.want+1))
			if g := slotGen(t, dir, tt.nextSlot); g != max(tt.aGen, tt.bGen)+1 {
				t.Errorf("next Save wrote generation %d to %s, want %d", g, slotNames[tt.nextSlot], max(tt.aGen, tt.bGen)+1)
			}
			if g := slotGen(t, dir, 1-tt.nextSlot); g != other {
				t.Errorf("next Save touched %s (generation %d → %d)", slotNames[1-tt.nextSlot], other, g)
			}
		})
	}
}

func TestSaveRefuses(t *testing.T) {
	tests := []struct {
		name    string
		st      State
		wantMsg string
	}{
		{"lower counter", State{NodeID: 1, Counter: 9}, "lower the counter from 10 to 9"},
		{"node ID 0", State{Counter: 11}, "node ID is 0"},
		{"own last group above counter", State{NodeID: 1, Counter: 11, LastGroup: wire.GroupNumber{Seq: 12, ID: 1}}, "above the counter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir)
			prev := State{NodeID: 1, Counter: 10}
			mustSave(t, s, prev)
			err := s.Save(tt.st)
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Save(%v) = %v, want error containing %q", tt.st, err, tt.wantMsg)
			}
			if got := mustLoad(t, dirAfterClose(t, s)); got != prev {
				t.Errorf("Load = %v, want %v", got, prev)
			}
		})
	}
	t.Run("lower than loaded", func(t *testing.T) {
		dir := t.TempDir()
		writeSlot(t, dir, 0, encode(1, State{NodeID: 1, Counter: 10}))
		s := openT(t, dir)
		// No Load first: Save loads, and still refuses.
		if err := s.Save(State{NodeID: 1, Counter: 3}); err == nil {
			t.Fatal("Save lowered the counter of a state it had not loaded yet")
		}
	})
}

func TestLockInProcess(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	_, err := Open(dir)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	for _, want := range []string{"in use by another groupd", "pid " + strconv.Itoa(os.Getpid()), dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Load(); !errors.Is(err, ErrClosed) {
		t.Errorf("Load after Close: %v, want ErrClosed", err)
	}
	if err := s.Save(State{NodeID: 1}); !errors.Is(err, ErrClosed) {
		t.Errorf("Save after Close: %v, want ErrClosed", err)
	}
	if _, err := s.LoadOrInit(InitOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("LoadOrInit after Close: %v, want ErrClosed", err)
	}
	s2, err := Open(dir)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, want string
	}{
		{"empty path", "", "no data dir"},
		{"a file", file, "is not a directory"},
		{"under a file", filepath.Join(file, "sub"), "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(tt.dir)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open: %v, want %q", err, tt.want)
			}
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	s := openT(t, t.TempDir())
	mustSave(t, s, State{NodeID: 1, Counter: 1})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 5 {
				// Racing saves may be refused for lowering the counter;
				// the race detector is what this test is about.
				s.Save(State{NodeID: 1, Counter: uint64(2 + i*5 + j)})
				s.Load()
				s.Warnings()
			}
		})
	}
	wg.Wait()
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
}
