package group

import (
	"encoding/binary"
	"fmt"

	"github.com/groupd/groupd/wire"
)

// nodeMeta is what a node announces in its memberlist meta: enough for
// another node to rank it and reach its wire port before it has heard a
// single wire packet from it, and to show its group in /v1/members.
type nodeMeta struct {
	Priority uint8
	Port     uint16 // wire-protocol UDP port; the IP is memberlist's
	Group    wire.GroupNumber
	State    wire.State
}

// Meta encoding, big-endian:
//
//	offset size field
//	     0    1 metaVersion (1)
//	     1    1 Priority
//	     2    2 Port
//	     4    8 Group.Seq
//	    12    8 Group.ID
//	    20    1 State (1..3)
//
// 21 bytes, far below memberlist's 512-byte MetaMaxSize. Fields are
// append-only: a later version adds bytes after these, and a decoder of
// this version reads the prefix it knows.
const (
	metaVersion = 1
	metaSize    = 21
)

// encodeMeta returns m's encoding.
func encodeMeta(m nodeMeta) []byte {
	b := make([]byte, 0, metaSize)
	b = append(b, metaVersion, m.Priority)
	b = binary.BigEndian.AppendUint16(b, m.Port)
	b = binary.BigEndian.AppendUint64(b, m.Group.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Group.ID))
	return append(b, byte(m.State))
}

// decodeMeta decodes another node's meta. It never panics: memberlist
// hands us whatever bytes a peer announced. A version-1 meta must be
// exactly metaSize bytes (so the encoding is canonical); a later version
// must at least hold the version-1 fields, which it extends.
func decodeMeta(b []byte) (nodeMeta, error) {
	if len(b) == 0 {
		return nodeMeta{}, fmt.Errorf("group: empty node meta")
	}
	switch v := b[0]; {
	case v == 0:
		return nodeMeta{}, fmt.Errorf("group: node meta version 0")
	case v == metaVersion && len(b) != metaSize:
		return nodeMeta{}, fmt.Errorf("group: node meta is %d bytes, want %d", len(b), metaSize)
	case len(b) < metaSize:
		return nodeMeta{}, fmt.Errorf("group: node meta version %d is %d bytes, want at least %d", v, len(b), metaSize)
	}
	m := nodeMeta{
		Priority: b[1],
		Port:     binary.BigEndian.Uint16(b[2:]),
		Group: wire.GroupNumber{
			Seq: binary.BigEndian.Uint64(b[4:]),
			ID:  wire.NodeID(binary.BigEndian.Uint64(b[12:])),
		},
		State: wire.State(b[20]),
	}
	if !m.State.Valid() {
		return nodeMeta{}, fmt.Errorf("group: node meta has invalid state %d", b[20])
	}
	return m, nil
}
