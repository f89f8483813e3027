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
}

// String describes the state in one line for logs.
func (st State) String() string {
	return fmt.Sprintf("id=%d counter=%d incarnation=%d last=%s",
		st.NodeID, st.Counter, st.Incarnation, st.LastGroup)
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
	formatVersion = 1
	recordSize    = 60
	crcOffset     = recordSize - 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode returns the slot record of st at generation gen.
func encode(gen uint64, st State) []byte {
	b := make([]byte, 0, recordSize)
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint32(b, formatVersion)
	b = binary.BigEndian.AppendUint64(b, gen)
	b = binary.BigEndian.AppendUint64(b, uint64(st.NodeID))
	b = binary.BigEndian.AppendUint64(b, st.Counter)
	b = binary.BigEndian.AppendUint64(b, st.Incarnation)
	b = binary.BigEndian.AppendUint64(b, st.LastGroup.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(st.LastGroup.ID))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decode parses a slot record. The error says what is wrong, for an
// operator; it wraps one of the err* reasons.
func decode(b []byte) (gen uint64, st State, err error) {
	switch {
	case len(b) == 0:
		return 0, State{}, errEmpty
	case !strings.HasPrefix(magic, string(b[:min(len(b), len(magic))])):
		return 0, State{}, fmt.Errorf("%w %q, want %q: not a groupd state file", errMagic, b[:min(len(b), len(magic))], magic)
	case len(b) < 8:
		return 0, State{}, fmt.Errorf("%w: %d of %d bytes", errShort, len(b), recordSize)
	}
	if v := binary.BigEndian.Uint32(b[4:]); v != formatVersion {
		return 0, State{}, fmt.Errorf("%w %d: this groupd reads version %d (written by a newer groupd?)",
			errVersion, v, formatVersion)
	}
	switch {
	case len(b) < recordSize:
		return 0, State{}, fmt.Errorf("%w: %d of %d bytes", errShort, len(b), recordSize)
	case len(b) > recordSize:
		return 0, State{}, fmt.Errorf("%w: %d bytes, want %d", errLong, len(b), recordSize)
	}
	if stored, sum := binary.BigEndian.Uint32(b[crcOffset:]), crc32.Checksum(b[:crcOffset], castagnoli); stored != sum {
		return 0, State{}, fmt.Errorf("%w: stored %#08x, computed %#08x", errChecksum, stored, sum)
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
	if gen == 0 {
		return 0, State{}, fmt.Errorf("%w: generation 0", errContent)
	}
	if err := st.validate(); err != nil {
		return 0, State{}, fmt.Errorf("%w: %v", errContent, err)
	}
	return gen, st, nil
}
