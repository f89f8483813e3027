package group

import (
	"encoding/binary"
	"fmt"
	"regexp"
	"sort"

	"github.com/groupd/groupd/wire"
)

// nodeMeta is what a node announces in its memberlist meta: enough for
// another node to rank it and reach its wire port before it has heard a
// single wire packet from it, and to show its group, name and tags in
// /v1/members, watch and the live view.
type nodeMeta struct {
	Priority uint8
	Port     uint16 // wire-protocol UDP port; the IP is memberlist's
	Group    wire.GroupNumber
	State    wire.State
	Leader   bool
	Degraded bool
	Name     string
	Tags     map[string]string
}

// Meta encoding, big-endian:
//
//	offset size field
//	     0    1 metaVersion (2)
//	     1    1 Priority
//	     2    2 Port
//	     4    8 Group.Seq
//	    12    8 Group.ID
//	    20    1 State (1..3)
//	    21    1 flags: bit 0 leader, bit 1 degraded
//	    22    1 len(Name), then Name
//	     .    1 number of tags, then per tag: len(key), key, len(value), value
//
// At most metaMax bytes, within memberlist's 512-byte MetaMaxSize. Fields
// are append-only: a later version adds bytes after these, and a decoder of
// this version reads the prefix it knows.
const (
	metaVersion = 2
	metaFixed   = 23 // up to and including len(Name)
	metaMax     = 512
	maxTagBytes = metaMax - metaFixed - MaxNameLen - 1
)

// Limits of Config.Name and Config.Tags: every node announces its name and
// tags to the others in memberlist's node meta, which holds at most 512
// bytes. Config.Validate (and New) refuse a name or tags beyond them: a
// name of more than MaxNameLen bytes or with a control character; more
// than MaxTags tags; a key that is empty, longer than MaxTagKeyLen or has
// other characters than letters, digits, '_', '.' and '-'; a value longer
// than MaxTagValueLen or with a control character; or tags of more than 424 bytes in all (each key and
// value with a length byte).
const (
	MaxNameLen     = 64
	MaxTags        = 16
	MaxTagKeyLen   = 32
	MaxTagValueLen = 128
)

// tagKey is what a tag's key may look like: what a shell variable or a
// label would accept, so that tags are safe to print and pass on.
var tagKey = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)

// checkNameTags validates Config.Name and Config.Tags.
func checkNameTags(name string, tags map[string]string) error {
	if len(name) > MaxNameLen {
		return configErrorf("group: Config.Name is %d bytes, over the %d-byte limit", len(name), MaxNameLen)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return configErrorf("group: Config.Name %q has a control character", name)
		}
	}
	if len(tags) > MaxTags {
		return configErrorf("group: Config.Tags has %d tags, over the limit of %d", len(tags), MaxTags)
	}
	total := 0
	for k, v := range tags {
		switch {
		case len(k) == 0 || len(k) > MaxTagKeyLen || !tagKey.MatchString(k):
			return configErrorf("group: Config.Tags %q: the key must be 1-%d letters, digits, '_', '.' or '-'", k+"="+v, MaxTagKeyLen)
		case len(v) > MaxTagValueLen:
			return configErrorf("group: Config.Tags %s: the value is %d bytes, over the %d-byte limit", k, len(v), MaxTagValueLen)
		}
		for _, r := range v {
			if r < 0x20 || r == 0x7f {
				return configErrorf("group: Config.Tags %s: the value has a control character", k)
			}
		}
		total += 2 + len(k) + len(v)
	}
	if total > maxTagBytes {
		return configErrorf("group: Config.Tags take %d bytes, over the %d bytes the gossip meta has room for", total, maxTagBytes)
	}
	return nil
}

// encodeMeta returns m's encoding. Name and tags were validated
// (checkNameTags), so they fit.
func encodeMeta(m nodeMeta) []byte {
	b := make([]byte, 0, metaFixed+len(m.Name)+64)
	b = append(b, metaVersion, m.Priority)
	b = binary.BigEndian.AppendUint16(b, m.Port)
	b = binary.BigEndian.AppendUint64(b, m.Group.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Group.ID))
	var flags byte
	if m.Leader {
		flags |= 1
	}
	if m.Degraded {
		flags |= 2
	}
	b = append(b, byte(m.State), flags, byte(len(m.Name)))
	b = append(b, m.Name...)
	keys := make([]string, 0, len(m.Tags))
	for k := range m.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = append(b, byte(len(keys)))
	for _, k := range keys {
		b = append(b, byte(len(k)))
		b = append(b, k...)
		b = append(b, byte(len(m.Tags[k])))
		b = append(b, m.Tags[k]...)
	}
	return b
}

// decodeMeta decodes another node's meta. It never panics: memberlist
// hands us whatever bytes a peer announced. A version-2 meta must be
// exactly as long as its fields (so the encoding is canonical); a later
// version must at least hold them, which it extends.
func decodeMeta(b []byte) (nodeMeta, error) {
	if len(b) == 0 {
		return nodeMeta{}, fmt.Errorf("group: empty node meta")
	}
	if v := b[0]; v < metaVersion {
		return nodeMeta{}, fmt.Errorf("group: node meta version %d (this groupd reads %d)", v, metaVersion)
	}
	if len(b) < metaFixed || len(b) > metaMax {
		return nodeMeta{}, fmt.Errorf("group: node meta is %d bytes", len(b))
	}
	m := nodeMeta{
		Priority: b[1],
		Port:     binary.BigEndian.Uint16(b[2:]),
		Group: wire.GroupNumber{
			Seq: binary.BigEndian.Uint64(b[4:]),
			ID:  wire.NodeID(binary.BigEndian.Uint64(b[12:])),
		},
		State:    wire.State(b[20]),
		Leader:   b[21]&1 != 0,
		Degraded: b[21]&2 != 0,
	}
	if !m.State.Valid() {
		return nodeMeta{}, fmt.Errorf("group: node meta has invalid state %d", b[20])
	}
	off := metaFixed
	str := func(n int) (string, bool) {
		if off+n > len(b) {
			return "", false
		}
		s := string(b[off : off+n])
		off += n
		return s, true
	}
	var ok bool
	if m.Name, ok = str(int(b[22])); !ok {
		return nodeMeta{}, fmt.Errorf("group: node meta: name runs past the end")
	}
	if off >= len(b) {
		return nodeMeta{}, fmt.Errorf("group: node meta: no tag count")
	}
	count := int(b[off])
	off++
	if count > 0 {
		m.Tags = make(map[string]string, min(count, MaxTags))
	}
	for range count {
		if off >= len(b) {
			return nodeMeta{}, fmt.Errorf("group: node meta: tag runs past the end")
		}
		kl := int(b[off])
		off++
		k, ok := str(kl)
		if !ok || off >= len(b) {
			return nodeMeta{}, fmt.Errorf("group: node meta: tag runs past the end")
		}
		vl := int(b[off])
		off++
		v, ok := str(vl)
		if !ok {
			return nodeMeta{}, fmt.Errorf("group: node meta: tag runs past the end")
		}
		m.Tags[k] = v
	}
	if b[0] == metaVersion && off != len(b) {
		return nodeMeta{}, fmt.Errorf("group: node meta has %d trailing bytes", len(b)-off)
	}
	return m, nil
}
