package store

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"sync"

	"github.com/groupd/groupd/wire"
)

const (
	lockName = "LOCK"
	dirPerm  = 0o700
	filePerm = 0o600
)

// slotNames are the two slots, A and B.
var slotNames = [2]string{"state.a", "state.b"}

// Store is an open data directory. It holds the directory's lock until
// Close. Its methods are safe for concurrent use.
type Store struct {
	dir string
	fs  fsys

	mu       sync.Mutex
	lock     io.Closer // nil once closed
	loaded   bool      // gens and last reflect the slots on disk
	gens     [2]uint64 // generation of each valid slot; 0 if missing, invalid or unknown
	last     State     // newest saved (or loaded) state, if haveLast
	haveLast bool
	warnings []error
}

// Open opens the data directory dir, creating it (mode 0700) if it does not
// exist, checks that it is a writable directory and locks it. If another
// process holds the lock, the error wraps ErrLocked and gives that process's
// PID. Open reads no state: call Load or LoadOrInit.
func Open(dir string) (*Store, error) { return open(dir, osFS{}) }

func open(dir string, files fsys) (*Store, error) {
	if dir == "" {
		return nil, errors.New("store: no data dir given")
	}
	dir = filepath.Clean(dir)
	if err := mkdir(files, dir); err != nil {
		return nil, err
	}
	fi, err := files.stat(dir)
	if err != nil {
		return nil, fmt.Errorf("store: data dir %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("store: data dir %s is not a directory", dir)
	}
	if err := files.writable(dir); err != nil {
		return nil, fmt.Errorf("store: data dir %s is not writable: %w", dir, err)
	}
	lockPath := filepath.Join(dir, lockName)
	l, err := files.lock(lockPath)
	if err != nil {
		var held *heldError
		if errors.As(err, &held) {
			who := "another groupd"
			if held.pid > 0 {
				who = fmt.Sprintf("another groupd (pid %d)", held.pid)
			}
			return nil, fmt.Errorf("store: data dir %s is in use by %s; stop it or give this one another data dir: %w",
				dir, who, ErrLocked)
		}
		return nil, fmt.Errorf("store: lock %s: %w", lockPath, err)
	}
	return &Store{dir: dir, fs: files, lock: l}, nil
}

// mkdir creates dir and its missing parents with mode 0700, and fsyncs the
// parent of every directory it creates so that the new directory survives a
// power loss along with the state saved in it.
func mkdir(files fsys, dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := files.stat(d); !errors.Is(err, fs.ErrNotExist) {
			break // exists, or an error MkdirAll will report
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := files.mkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("store: create data dir: %w", err)
	}
	for _, d := range missing {
		if err := files.syncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("store: fsync %s: %w", filepath.Dir(d), err)
		}
	}
	return nil
}

// Dir returns the data directory.
func (s *Store) Dir() string { return s.dir }

// Close releases the lock. Closing a closed Store does nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close()
	s.lock = nil
	if err != nil {
		return fmt.Errorf("store: close %s: %w", filepath.Join(s.dir, lockName), err)
	}
	return nil
}

// Load reads both slots and returns the state in the valid one with the
// higher generation. It never writes.
//
//   - If no slot file exists (a first start), it returns an error wrapping
//     ErrNoState.
//   - If slot files exist but none is valid, it returns a *CorruptError
//     that tells the operator what to do. It never resets the state.
//   - If one slot is invalid and the other valid, it returns the valid one
//     and reports the invalid one in Warnings; the caller should log it.
//   - If a slot cannot be read (an I/O or permission error, not bad
//     content), it returns that error.
func (s *Store) Load() (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == nil {
		return State{}, ErrClosed
	}
	return s.load()
}

// Warnings returns one error per invalid slot the last Load (or
// LoadOrInit) skipped because the other slot was valid. Each wraps a
// *SlotError; the caller should log them.
func (s *Store) Warnings() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.warnings...)
}

func (s *Store) load() (State, error) {
	s.loaded = false
	var (
		gens    [2]uint64
		states  [2]State
		bad     []*SlotError
		present int
	)
	for i, name := range slotNames {
		path := filepath.Join(s.dir, name)
		b, err := s.fs.readFile(path, recordSize+1)
		if errors.Is(err, fs.ErrNotExist) {
			bad = append(bad, &SlotError{Path: path, Err: errMissing})
			continue
		}
		if err != nil {
			return State{}, fmt.Errorf("store: read %s: %w", path, err)
		}
		present++
		gen, st, err := decode(b)
		if err != nil {
			bad = append(bad, &SlotError{Path: path, Err: err})
			continue
		}
		gens[i], states[i] = gen, st
	}
	if present == 0 {
		s.gens, s.last, s.haveLast, s.warnings, s.loaded = [2]uint64{}, State{}, false, nil, true
		return State{}, fmt.Errorf("store: %s: %w", s.dir, ErrNoState)
	}
	if gens[0] == 0 && gens[1] == 0 {
		return State{}, &CorruptError{Dir: s.dir, Slots: bad}
	}
	// The newer generation wins. Equal generations never come from Save;
	// if they do, the higher counter is the safe choice.
	best := 0
	if gens[1] > gens[0] || (gens[1] == gens[0] && states[1].Counter > states[0].Counter) {
		best = 1
	}
	s.warnings = nil
	for _, e := range bad {
		if e.Err != errMissing {
			s.warnings = append(s.warnings, fmt.Errorf(
				"store: ignored invalid %w; loaded %s (generation %d, counter %d) instead, and the next save overwrites the invalid file",
				e, slotNames[best], gens[best], states[best].Counter))
		}
	}
	s.gens, s.last, s.haveLast, s.loaded = gens, states[best], true, true
	return states[best], nil
}

// Save makes st durable: when it returns nil, st survives a crash or power
// loss. It writes the next generation to a temporary file, fsyncs it,
// renames it over the older slot and fsyncs the directory, so the newest
// saved state stays intact in the other slot whatever happens meanwhile.
//
// If Save returns an error, st may or may not have reached the disk, and the
// caller must not act on it (for example, must not use a group number above
// the previous counter); the previously saved state is still loadable, and a
// later Save may be tried again.
//
// Save refuses a state whose Counter is below the last saved or loaded one
// (counters only grow), a NodeID of 0, and a LastGroup created by this node
// with a Seq above Counter. If nothing was loaded yet, Save loads first, and
// it refuses to overwrite corrupt slots (it returns the *CorruptError).
func (s *Store) Save(st State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == nil {
		return ErrClosed
	}
	return s.save(st)
}

func (s *Store) save(st State) error {
	if !s.loaded {
		if _, err := s.load(); err != nil && !errors.Is(err, ErrNoState) {
			return err
		}
	}
	if err := st.validate(); err != nil {
		return fmt.Errorf("store: refusing to save %v: %w", st, err)
	}
	if s.haveLast && st.Counter < s.last.Counter {
		return fmt.Errorf("store: refusing to lower the counter from %d to %d", s.last.Counter, st.Counter)
	}
	// Overwrite the older slot (a missing or invalid slot counts as
	// generation 0). Until the write is known to be complete the slot's
	// content is unknown, so it stays the target of the next Save and the
	// other slot, with the newest saved state, is never touched.
	i := 0
	if s.gens[1] < s.gens[0] {
		i = 1
	}
	gen := max(s.gens[0], s.gens[1]) + 1
	s.gens[i] = 0
	path := filepath.Join(s.dir, slotNames[i])
	if err := s.write(path, encode(gen, st)); err != nil {
		return err
	}
	s.gens[i], s.last, s.haveLast = gen, st, true
	return nil
}

// write replaces path with data durably: temp file, fsync, rename, fsync of
// the directory.
func (s *Store) write(path string, data []byte) (err error) {
	tmp := path + ".tmp"
	f, err := s.fs.create(tmp, filePerm)
	if err != nil {
		return fmt.Errorf("store: create %s: %w", tmp, err)
	}
	defer func() {
		if err != nil && f != nil {
			f.Close()
			s.fs.remove(tmp) // best effort; a leftover is truncated next time
		}
	}()
	n, err := f.Write(data)
	if err == nil && n < len(data) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("store: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("store: fsync %s: %w", tmp, err)
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		s.fs.remove(tmp)
		return fmt.Errorf("store: close %s: %w", tmp, cerr)
	}
	if err := s.fs.rename(tmp, path); err != nil {
		s.fs.remove(tmp)
		return fmt.Errorf("store: rename %s to %s: %w", tmp, path, err)
	}
	if err := s.fs.syncDir(s.dir); err != nil {
		return fmt.Errorf("store: fsync %s: %w", s.dir, err)
	}
	return nil
}

// InitOptions are the operator's choices for LoadOrInit.
type InitOptions struct {
	// ID is the node ID to use (--id). Zero keeps the stored ID, or on a
	// first start generates a random one. A non-zero ID that differs from
	// the stored one replaces it (the counter is kept; Boot.PrevID reports
	// the old ID).
	ID wire.NodeID
	// MinCounter raises the counter to at least this value (--min-counter).
	// Operators use it to start again after the state was lost or corrupt:
	// it must be above every group number this node has created.
	MinCounter uint64
	// MinIncarnation is a floor for the new incarnation: LoadOrInit sets
	// Incarnation to max(stored + 1, MinIncarnation). The daemon passes
	// the current Unix time in seconds, so that a state file restored
	// from a backup, or lost and recreated, does not make the node reuse
	// an incarnation its peers have already seen (their replay windows
	// would drop its packets); the stored value still makes incarnations
	// strictly increase when the clock is wrong. Zero: stored + 1.
	MinIncarnation uint64
}

// Boot is what LoadOrInit found and saved.
type Boot struct {
	// State is the state saved for this boot, with Incarnation bumped.
	State State
	// Fresh is true when there was no state: this is the node's first start
	// with this data dir.
	Fresh bool
	// PrevID is the stored node ID when InitOptions.ID replaced it, else 0.
	PrevID wire.NodeID
	// Warnings are the invalid slots skipped while loading (see Load); the
	// daemon should log them.
	Warnings []error
}

// LoadOrInit is what the daemon calls once at start-up. It loads the state,
// or on a first start (ErrNoState) creates one with the given or a random
// node ID and counter InitOptions.MinCounter; applies opts; bumps
// Incarnation (so the first boot has incarnation 1, or
// InitOptions.MinIncarnation if higher); and saves the result before
// returning it. Any Load error other than ErrNoState, notably a
// *CorruptError, is returned as is and nothing is written.
func (s *Store) LoadOrInit(opts InitOptions) (Boot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == nil {
		return Boot{}, ErrClosed
	}
	var boot Boot
	st, err := s.load()
	switch {
	case errors.Is(err, ErrNoState):
		boot.Fresh = true
		st = State{NodeID: opts.ID}
		if st.NodeID == 0 {
			if st.NodeID, err = randomID(); err != nil {
				return Boot{}, err
			}
		}
	case err != nil:
		return Boot{}, err
	case opts.ID != 0 && opts.ID != st.NodeID:
		boot.PrevID, st.NodeID = st.NodeID, opts.ID
	}
	st.Counter = max(st.Counter, opts.MinCounter)
	if st.Incarnation == math.MaxUint64 {
		return Boot{}, fmt.Errorf("store: incarnation %d cannot grow", st.Incarnation)
	}
	st.Incarnation = max(st.Incarnation+1, opts.MinIncarnation)
	if err := s.save(st); err != nil {
		return Boot{}, err
	}
	boot.State = st
	boot.Warnings = append([]error(nil), s.warnings...)
	return boot, nil
}

// randomID returns a random node ID in [1, 2^53). IDs stay below 2^53 so
// that JSON tools which read numbers as doubles (jq, JavaScript) print them
// exactly.
func randomID() (wire.NodeID, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("store: random node ID: %w", err)
		}
		if id := binary.BigEndian.Uint64(b[:]) & (1<<53 - 1); id != 0 {
			return wire.NodeID(id), nil
		}
	}
}
