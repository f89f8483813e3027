package store

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrNoState is returned by Load (wrapped) when the data directory has no
	// state file yet: a first start. LoadOrInit handles it by creating the
	// state.
	ErrNoState = errors.New("no state yet")

	// ErrLocked is wrapped by the error Open returns when another process
	// (another groupd) holds the data directory's lock.
	ErrLocked = errors.New("data dir locked")

	// ErrClosed is returned by the methods of a closed Store.
	ErrClosed = errors.New("store: closed")
)

// Reasons a slot is invalid, wrapped by SlotError.Err.
var (
	errEmpty    = errors.New("empty file")
	errShort    = errors.New("truncated")
	errLong     = errors.New("trailing bytes")
	errMagic    = errors.New("bad magic")
	errVersion  = errors.New("unsupported format version")
	errChecksum = errors.New("checksum mismatch")
	errContent  = errors.New("invalid content")
	errMissing  = errors.New("missing")
)

// SlotError says why one state file (slot) was rejected.
type SlotError struct {
	Path string // the slot's file
	Err  error  // what is wrong with it
}

func (e *SlotError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the reason.
func (e *SlotError) Unwrap() error { return e.Err }

// CorruptError is returned by Load when state files exist but none of them
// is valid. The store does not reset the counter on its own: the operator
// has to restore the files or choose a new counter (see the package
// documentation). Load leaves the files untouched.
type CorruptError struct {
	Dir   string       // the data directory
	Slots []*SlotError // one per slot, in order A, B; a missing slot says so
}

func (e *CorruptError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "store: no valid state in %s (", e.Dir)
	for i, s := range e.Slots {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s.Error())
	}
	b.WriteString("). groupd will not reset the group-number counter by itself, because" +
		" reusing a group number the LAN has seen breaks the protocol." +
		" To recover, either restore state.a and state.b from a backup," +
		" or move them out of " + e.Dir + " and start groupd with a counter above" +
		" every group number this node has created (--min-counter N; take N above the" +
		" Seq of any number ending in .<node id> in the logs, or generously high)")
	return b.String()
}

// Unwrap returns the slot errors, so errors.Is can test for a reason.
func (e *CorruptError) Unwrap() []error {
	errs := make([]error, len(e.Slots))
	for i, s := range e.Slots {
		errs[i] = s
	}
	return errs
}
