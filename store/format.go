package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/groupd/groupd/wire"
)

// State is a node's durable state.
type State struct {
	// NodeID is the node's ID (never 0).
	NodeID wire.NodeID
	// Counter is the highest group-number Seq this node may have used. A
	// node saves it before it announces a new group number, so after any
	// crash its next number is above every number it ever announced.
	Counter uint64
	// Incarnation is the boot incarnation, bumped and saved at each start
	// (LoadOrInit) and carried in every message header.
	Incarnation uint64
	// LastGroup is the group the node was last in (zero if none).
	LastGroup wire.GroupNumber
	// Term is the highest leadership term the node has seen (zero if
	// none): it grants no lease to a leader with a lower one, across
	// restarts too (docs/design.md §8). Format version 2 added it; a
	// version-1 file loads with a zero Term.
	Term wire.GroupNumber
	// RuleVoters and RuleTie are the quorum rule the node last applied
	// when it was stricter than its settings (zero: as configured): of
	// how many voters a majority, and the tie-breaker it honoured. A
	// restarted node holds to it for a while, so that a restart during a
	// partition does not forget the voters it knew of (docs/design.md
	// §8). Format version 3 added them; older files load with zero.
	RuleVoters uint32
	RuleTie    wire.NodeID
}

// String describes the state in one line for logs.
func (st State) String() string {
	s := fmt.Sprintf("id=%d counter=%d incarnation=%d last=%s",
		st.NodeID, st.Counter, st.Incarnation, st.LastGroup)
	if !st.Term.IsZero() {
		s += " term=" + st.Term.String()
	}
	if st.RuleVoters != 0 {
		s += fmt.Sprintf(" rule=%d/%d", st.RuleVoters, st.RuleTie)
	}
	return s
}

// validate checks what Save refuses to write and Load refuses to accept.
func (st State) validate() error {
	if st.NodeID == 0 {
		return fmt.Errorf("node ID is 0")
	}
	if st.LastGroup.ID == st.NodeID && st.LastGroup.Seq > st.Counter {
		return fmt.Errorf("last group %s was created by this node but is above the counter %d",
			st.LastGroup, st.Counter)
	}
	return nil
}

const (
	magic         = "GRPD"
	formatVersion = 3
	recordSize    = 88 // version 3
	crcOffset     = recordSize - 4
	// Version 2 (before the quorum rule): the same fields up to Term.
	recordSizeV2 = 76
	// Version 1 (before the term): the same fields up to LastGroup.
	recordSizeV1 = 60
)

// sizeOf returns the record size of format version v, or 0 for an
// unknown version.
func sizeOf(v uint32) int {
	switch v {
	case 1:
		return recordSizeV1
	case 2:
		return recordSizeV2
	case 3:
		return recordSize
	}
	return 0
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode returns the slot record of st at generation gen, in the current
// format version.
func encode(gen uint64, st State) []byte { return encodeVersion(formatVersion, gen, st) }

// encodeVersion returns the slot record of st at generation gen in format
// version v (1 drops the term, 2 the rule): decode's inverse, for every
// version.
func encodeVersion(v uint32, gen uint64, st State) []byte {
	b := make([]byte, 0, sizeOf(v))
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint32(b, v)
	b = binary.BigEndian.AppendUint64(b, gen)
	b = binary.BigEndian.AppendUint64(b, uint64(st.NodeID))
	b = binary.BigEndian.AppendUint64(b, st.Counter)
	b = binary.BigEndian.AppendUint64(b, st.Incarnation)
	b = binary.BigEndian.AppendUint64(b, st.LastGroup.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(st.LastGroup.ID))
	if v >= 2 {
		b = binary.BigEndian.AppendUint64(b, st.Term.Seq)
		b = binary.BigEndian.AppendUint64(b, uint64(st.Term.ID))
	}
	if v >= 3 {
		b = binary.BigEndian.AppendUint32(b, st.RuleVoters)
		b = binary.BigEndian.AppendUint64(b, uint64(st.RuleTie))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decode parses a slot record. The error says what is wrong, for an
// operator; it wraps one of the err* reasons.
func decode(b []byte) (gen uint64, st State, err error) {
	gen, st, _, err = decodeVersion(b)
	return gen, st, err
}

// decodeVersion is decode, also returning the record's format version.
func decodeVersion(b []byte) (gen uint64, st State, version uint32, err error) {
	switch {
	case len(b) == 0:
		return 0, State{}, 0, errEmpty
	case !strings.HasPrefix(magic, string(b[:min(len(b), len(magic))])):
		return 0, State{}, 0, fmt.Errorf("%w %q, want %q: not a groupd state file", errMagic, b[:min(len(b), len(magic))], magic)
	case len(b) < 8:
		return 0, State{}, 0, fmt.Errorf("%w: %d of %d bytes", errShort, len(b), recordSize)
	}
	version = binary.BigEndian.Uint32(b[4:])
	size := sizeOf(version)
	if size == 0 {
		return 0, State{}, 0, fmt.Errorf("%w %d: this groupd reads versions 1 to %d (written by a newer groupd?)",
			errVersion, version, formatVersion)
	}
	switch {
	case len(b) < size:
		return 0, State{}, 0, fmt.Errorf("%w: %d of %d bytes", errShort, len(b), size)
	case len(b) > size:
		return 0, State{}, 0, fmt.Errorf("%w: %d bytes, want %d", errLong, len(b), size)
	}
	crcAt := size - 4
	if stored, sum := binary.BigEndian.Uint32(b[crcAt:]), crc32.Checksum(b[:crcAt], castagnoli); stored != sum {
		return 0, State{}, 0, fmt.Errorf("%w: stored %#08x, computed %#08x", errChecksum, stored, sum)
	}
	gen = binary.BigEndian.Uint64(b[8:])
	st = State{
		NodeID:      wire.NodeID(binary.BigEndian.Uint64(b[16:])),
		Counter:     binary.BigEndian.Uint64(b[24:]),
		Incarnation: binary.BigEndian.Uint64(b[32:]),
		LastGroup: wire.GroupNumber{
			Seq: binary.BigEndian.Uint64(b[40:]),
			ID:  wire.NodeID(binary.BigEndian.Uint64(b[48:])),
		},
	}
	if version >= 2 {
		st.Term = wire.GroupNumber{Seq: binary.BigEndian.Uint64(b[56:]), ID: wire.NodeID(binary.BigEndian.Uint64(b[64:]))}
	}
	if version >= 3 {
		st.RuleVoters = binary.BigEndian.Uint32(b[72:])
		st.RuleTie = wire.NodeID(binary.BigEndian.Uint64(b[76:]))
	}
	if gen == 0 {
		return 0, State{}, 0, fmt.Errorf("%w: generation 0", errContent)
	}
	if err := st.validate(); err != nil {
		return 0, State{}, 0, fmt.Errorf("%w: %v", errContent, err)
	}
	return gen, st, version, nil
}
