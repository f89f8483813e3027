package wire

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzDecode checks that no input panics Decode, that every error carries a
// drop reason, and that whatever Decode accepts re-encodes to the very same
// bytes and decodes to the same message (the encoding is canonical).
func FuzzDecode(f *testing.F) {
	for _, typ := range Types() {
		g := readGolden(f, typ)
		f.Add(g)
		f.Add(g[:len(g)-1])
	}
	f.Add([]byte{})
	f.Add([]byte{Version})
	f.Add([]byte{sealedMarker})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			if r := DropReason(err); r == "other" || r == "replay" || r == "unverified" {
				t.Fatalf("Decode error %q has drop reason %q", err, r)
			}
			if !reflect.DeepEqual(m, Message{}) {
				t.Fatalf("Decode returned %v with error %v", m, err)
			}
			return
		}
		h, err := DecodeHeader(b)
		if err != nil || h != m.Header {
			t.Fatalf("DecodeHeader = %+v, %v; Decode gave %+v", h, err, m.Header)
		}
		_ = m.String()
		enc, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode(Decode(%x)) = %v", b, err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("not canonical:\n in  %x\n out %x", b, enc)
		}
		m2, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(Decode(b))): %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("unstable round trip:\n %#v\n %#v", m, m2)
		}
	})
}

// FuzzOpen checks that no input panics Open, and that Open fails on
// anything not sealed under the key.
func FuzzOpen(f *testing.F) {
	key := bytes.Repeat([]byte{7}, KeySize)
	s, err := NewSealer(key)
	if err != nil {
		f.Fatal(err)
	}
	for _, typ := range Types() {
		g := readGolden(f, typ)
		sealed, err := s.Seal(nil, g)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(sealed)
		f.Add(g)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := s.Open(nil, b)
		if err != nil {
			if r := DropReason(err); r == "other" {
				t.Fatalf("Open error %q has no drop reason", err)
			}
			return
		}
		// Only a genuine packet opens; re-sealing it must open to the same.
		again, err := s.Seal(nil, out)
		if err != nil {
			t.Fatal(err)
		}
		if out2, err := s.Open(nil, again); err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("reseal: %x, %v", out2, err)
		}
	})
}
