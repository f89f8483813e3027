package group

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/groupd/groupd/wire"
)

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []nodeMeta{
		{Priority: 100, Port: 7950, Group: wire.GroupNumber{Seq: 17, ID: 3}, State: wire.StateNormal},
		{Priority: 0, Port: 0, State: wire.StateElection},
		{Priority: 255, Port: 65535, Group: wire.GroupNumber{Seq: 1<<64 - 1, ID: 1<<64 - 1}, State: wire.StateReorganization},
	} {
		b := encodeMeta(m)
		if len(b) != metaSize || len(b) > memberlist.MetaMaxSize {
			t.Fatalf("meta is %d bytes", len(b))
		}
		got, err := decodeMeta(b)
		if err != nil || got != m {
			t.Errorf("decode(encode(%+v)) = %+v, %v", m, got, err)
		}
	}
}

func TestMetaDecodeErrors(t *testing.T) {
	good := encodeMeta(nodeMeta{Priority: 1, Port: 2, Group: wire.GroupNumber{Seq: 3, ID: 4}, State: wire.StateNormal})
	badState := bytes.Clone(good)
	badState[20] = 9
	v2 := append(bytes.Clone(good), 0xAA, 0xBB)
	v2[0] = 2
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"empty", nil, false},
		{"version 0", append([]byte{0}, good[1:]...), false},
		{"truncated", good[:20], false},
		{"trailing v1", append(bytes.Clone(good), 0), false},
		{"bad state", badState, false},
		{"short v2", []byte{2, 1, 2}, false},
		{"v2 extends v1", v2, true},
		{"good", good, true},
	} {
		_, err := decodeMeta(tc.b)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// FuzzMeta checks that decodeMeta never panics on what a peer announces,
// and that a version-1 meta it accepts re-encodes to the same bytes.
func FuzzMeta(f *testing.F) {
	f.Add(encodeMeta(nodeMeta{Priority: 100, Port: 7950, Group: wire.GroupNumber{Seq: 17, ID: 3}, State: wire.StateNormal}))
	f.Add([]byte{})
	f.Add([]byte{2, 0, 0})
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
		if b[0] == metaVersion && !bytes.Equal(enc, b) {
			t.Fatalf("round trip: %x -> %+v -> %x", b, m, enc)
		}
		if !bytes.Equal(enc[1:], b[1:metaSize]) {
			t.Fatalf("prefix round trip: %x -> %x", b, enc)
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
		a.receive(pkt, src, false, make([]byte, 0, wire.MaxDatagramSize))
		for {
			select {
			case in := <-a.inbox:
				if in.msg.From == a.id || in.msg.Body == nil {
					t.Fatalf("loop got %v", in.msg)
				}
				if b, ok := in.msg.Body.(wire.Beacon); ok {
					a.maybeJoin(in.msg.From, b.Addr, time.Now())
				}
				continue
			default:
			}
			break
		}
	})
}
