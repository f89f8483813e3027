package group

import (
	"bytes"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/groupd/groupd/wire"
)

// fullTags are the largest tags Config allows: MaxTags tags whose keys and
// values together fill the meta's room.
func fullTags() map[string]string {
	tags := map[string]string{}
	for i := range MaxTags {
		tags[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", (maxTagBytes-MaxTags*5)/MaxTags)
	}
	return tags
}

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []nodeMeta{
		{Priority: 100, Port: 7950, Group: wire.GroupNumber{Seq: 17, ID: 3}, State: wire.StateNormal, Name: "db3"},
		{Priority: 0, Port: 0, State: wire.StateElection},
		{Priority: 255, Port: 65535, Group: wire.GroupNumber{Seq: 1<<64 - 1, ID: 1<<64 - 1}, State: wire.StateReorganization,
			Leader: true, Degraded: true, Name: strings.Repeat("n", MaxNameLen), Tags: fullTags()},
		{Priority: 7, State: wire.StateNormal, Tags: map[string]string{"endpoint": "10.0.0.3:5432", "zone": ""}},
	} {
		if err := checkNameTags(m.Name, m.Tags); err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		b := encodeMeta(m)
		if len(b) > memberlist.MetaMaxSize {
			t.Fatalf("meta is %d bytes, over memberlist's %d", len(b), memberlist.MetaMaxSize)
		}
		got, err := decodeMeta(b)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("decode(encode(%+v)) = %+v, %v", m, got, err)
		}
	}
}

func TestCheckNameTags(t *testing.T) {
	for _, tc := range []struct {
		name string
		tags map[string]string
		err  string
	}{
		{"db1", map[string]string{"endpoint": "10.0.0.1:5432"}, ""},
		{strings.Repeat("n", MaxNameLen+1), nil, "over the 64-byte limit"},
		{"a\nb", nil, "control character"},
		{"", map[string]string{"": "x"}, "the key must be"},
		{"", map[string]string{"a b": "x"}, "the key must be"},
		{"", map[string]string{"k": strings.Repeat("v", MaxTagValueLen+1)}, "over the 128-byte limit"},
		{"", map[string]string{"k": "a\tb"}, "control character"},
		{"", fullTags(), ""},
	} {
		err := checkNameTags(tc.name, tc.tags)
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("checkNameTags(%q, %v) = %v, want %q", tc.name, tc.tags, err, tc.err)
		}
	}
	tooMany := map[string]string{}
	for i := range MaxTags + 1 {
		tooMany[fmt.Sprint("k", i)] = ""
	}
	if err := checkNameTags("", tooMany); err == nil {
		t.Error("too many tags accepted")
	}
}

func TestMetaDecodeErrors(t *testing.T) {
	good := encodeMeta(nodeMeta{Priority: 1, Port: 2, Group: wire.GroupNumber{Seq: 3, ID: 4}, State: wire.StateNormal})
	badState := bytes.Clone(good)
	badState[20] = 9
	v3 := append(bytes.Clone(good), 0xAA, 0xBB)
	v3[0] = 3
	badTag := encodeMeta(nodeMeta{State: wire.StateNormal, Tags: map[string]string{"k": "v"}})
	badTag[len(badTag)-2] = 9 // the value's length runs past the end
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"empty", nil, false},
		{"version 1", append([]byte{1}, good[1:]...), false},
		{"truncated", good[:20], false},
		{"no tag count", good[:len(good)-1], false},
		{"trailing v2", append(bytes.Clone(good), 0), false},
		{"bad state", badState, false},
		{"short", []byte{2, 1, 2}, false},
		{"tag past the end", badTag, false},
		{"v3 extends v2", v3, true},
		{"good", good, true},
		{"too long", append(bytes.Clone(good), make([]byte, metaMax)...), false},
	} {
		_, err := decodeMeta(tc.b)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// FuzzMeta checks that decodeMeta never panics on what a peer announces,
// and that what it accepts re-encodes to a meta that decodes the same.
func FuzzMeta(f *testing.F) {
	f.Add(encodeMeta(nodeMeta{Priority: 100, Port: 7950, Group: wire.GroupNumber{Seq: 17, ID: 3}, State: wire.StateNormal}))
	f.Add([]byte{})
	f.Add([]byte{2, 0, 0})
	f.Add(encodeMeta(nodeMeta{State: wire.StateNormal, Name: "x", Tags: map[string]string{"a": "b", "c": ""}}))
	f.Add(bytes.Repeat([]byte{0xff}, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b)
		if err != nil {
			return
		}
		if !m.State.Valid() {
			t.Fatalf("accepted invalid state %d", m.State)
		}
		enc := encodeMeta(m)
		again, err := decodeMeta(enc)
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("round trip: %x -> %+v -> %x -> %+v, %v", b, m, enc, again, err)
		}
	})
}

// FuzzReceive feeds arbitrary datagrams to the agent's receive path (what
// the socket readers call), keyed and not: it must never panic, and only
// decodable messages from other nodes may reach the loop.
func FuzzReceive(f *testing.F) {
	beacon, _ := wire.Encode(wire.Message{Header: wire.Header{From: 2, Priority: 100, State: wire.StateNormal,
		Group: wire.GroupNumber{Seq: 1, ID: 2}}, Body: wire.Beacon{Addr: "127.0.0.1:7951"}})
	f.Add(beacon, false)
	f.Add(beacon, true)
	f.Add([]byte{}, false)
	f.Add(bytes.Repeat([]byte{0x81}, 60), true)
	cfg := DefaultFastConfig()
	cfg.Bind, cfg.Port, cfg.Multicast, cfg.API, cfg.DataDir = "127.0.0.1", 0, "off", "", f.TempDir()
	plain, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { plain.Close() })
	cfg.DataDir, cfg.Key = f.TempDir(), bytes.Repeat([]byte{1}, wire.KeySize)
	keyed, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { keyed.Close() })
	f.Fuzz(func(t *testing.T, pkt []byte, useKey bool) {
		a := plain
		if useKey {
			a = keyed
		}
		src := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
		a.receive(pkt, src, false)
		for {
			select {
			case in := <-a.inbox:
				if in.msg.From == a.id || in.msg.Body == nil {
					t.Fatalf("loop got %v", in.msg)
				}
				continue
			case in := <-a.beacons:
				if in.msg.From == a.id || in.msg.Body == nil {
					t.Fatalf("loop got %v", in.msg)
				}
				b := in.msg.Body.(wire.Beacon)
				a.maybeJoin(in.msg.From, b.Addr, in.msg.Group.ID == in.msg.From, time.Now())
				continue
			default:
			}
			break
		}
	})
}
