package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func mustSealer(t testing.TB, primary []byte, others ...[]byte) *Sealer {
	t.Helper()
	s, err := NewSealer(primary, others...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// countingReader yields 0, 1, 2... so that sealed packets are reproducible.
type countingReader struct{ n byte }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.n
		r.n++
	}
	return len(p), nil
}

func TestSealRoundTrip(t *testing.T) {
	s := mustSealer(t, testKey(1))
	for _, typ := range Types() {
		plain := readGolden(t, typ)
		sealed, err := s.Seal([]byte("pre"), plain)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(sealed, []byte("pre")) || len(sealed) != 3+len(plain)+SealOverhead {
			t.Fatalf("%s: sealed %d bytes into %d", typ, len(plain), len(sealed))
		}
		sealed = sealed[3:]
		if !IsSealed(sealed) || IsSealed(plain) {
			t.Fatalf("IsSealed is wrong")
		}
		got, err := s.Open([]byte("x"), sealed)
		if err != nil {
			t.Fatalf("%s: Open: %v", typ, err)
		}
		if !bytes.Equal(got, append([]byte("x"), plain...)) {
			t.Fatalf("%s: Open = %x, want %x", typ, got, plain)
		}
	}
}

func TestSealNoncesDiffer(t *testing.T) {
	s := mustSealer(t, testKey(1))
	plain := readGolden(t, TypeBeacon)
	a, _ := s.Seal(nil, plain)
	b, _ := s.Seal(nil, plain)
	if bytes.Equal(a[1:1+nonceSize], b[1:1+nonceSize]) {
		t.Fatal("two packets sealed with the same nonce")
	}
}

// TestSealGolden pins the sealed format (marker, nonce, ciphertext, tag)
// with a fixed key (32 bytes of 0x01) and nonce (00 01 02 ... 0b).
func TestSealGolden(t *testing.T) {
	s := mustSealer(t, testKey(1))
	s.Rand = &countingReader{}
	plain := readGolden(t, TypeReadyAck)
	sealed, err := s.Seal(nil, plain)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden", "sealed-ReadyAck.hex")
	if *update {
		text := "# golden ReadyAck sealed with key 01×32 and nonce 000102…0b\n" +
			"# marker, nonce, ciphertext, tag\n" +
			hex.EncodeToString(sealed[:1]) + "\n" +
			hex.EncodeToString(sealed[1:1+nonceSize]) + "\n" +
			hex.EncodeToString(sealed[1+nonceSize:len(sealed)-tagSize]) + "\n" +
			hex.EncodeToString(sealed[len(sealed)-tagSize:]) + "\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	want, err := parseGolden(text)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sealed, want) {
		t.Fatalf("sealed format changed:\n got %x\nwant %x", sealed, want)
	}
	if got, err := s.Open(nil, want); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open(golden) = %x, %v", got, err)
	}
}

func TestOpenWrongKey(t *testing.T) {
	sealed, _ := mustSealer(t, testKey(1)).Seal(nil, readGolden(t, TypeReady))
	_, err := mustSealer(t, testKey(2)).Open(nil, sealed)
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("Open with the wrong key: %v", err)
	}
	if DropReason(err) != "auth" {
		t.Fatalf("DropReason = %s", DropReason(err))
	}
}

func TestOpenTruncated(t *testing.T) {
	s := mustSealer(t, testKey(1))
	sealed, _ := s.Seal(nil, readGolden(t, TypeBeacon))
	for n := range len(sealed) {
		if _, err := s.Open(nil, sealed[:n:n]); !errors.Is(err, ErrAuth) {
			t.Fatalf("Open of %d-byte prefix: %v, want ErrAuth", n, err)
		}
	}
}

func TestOpenFlippedBits(t *testing.T) {
	s := mustSealer(t, testKey(1))
	sealed, _ := s.Seal(nil, readGolden(t, TypeBeacon))
	buf := make([]byte, 0, MaxPacketSize)
	for i := range len(sealed) * 8 {
		bad := bytes.Clone(sealed)
		bad[i/8] ^= 1 << (i % 8)
		out, err := s.Open(buf[:0], bad)
		if err == nil {
			t.Fatalf("bit %d flipped: Open succeeded", i)
		}
		if i/8 == 0 {
			// The marker byte: the packet is no longer recognised as
			// sealed, which is still a refusal.
			if !errors.Is(err, ErrAuth) && !errors.Is(err, ErrVersion) {
				t.Fatalf("bit %d flipped: %v", i, err)
			}
		} else if !errors.Is(err, ErrAuth) {
			t.Fatalf("bit %d flipped: %v, want ErrAuth", i, err)
		}
		if len(out) != 0 {
			t.Fatalf("bit %d flipped: Open returned %d bytes", i, len(out))
		}
	}
}

func TestKeyRotation(t *testing.T) {
	oldKey, newKey := testKey(1), testKey(2)
	oldOnly := mustSealer(t, oldKey)
	both := mustSealer(t, newKey, oldKey) // step 2: new primary, old still accepted
	newOnly := mustSealer(t, newKey)
	plain := readGolden(t, TypeReady)

	fromOld, _ := oldOnly.Seal(nil, plain)
	fromBoth, _ := both.Seal(nil, plain)
	if got, err := both.Open(nil, fromOld); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("rotating node cannot open old-key packet: %v", err)
	}
	if got, err := newOnly.Open(nil, fromBoth); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("new node cannot open rotating node's packet: %v", err)
	}
	if _, err := oldOnly.Open(nil, fromBoth); !errors.Is(err, ErrAuth) {
		t.Fatalf("old-key node opened a new-key packet: %v", err)
	}
	if _, err := newOnly.Open(nil, fromOld); !errors.Is(err, ErrAuth) {
		t.Fatalf("new-key node opened an old-key packet: %v", err)
	}
}

func TestPlainSealedConfusion(t *testing.T) {
	s := mustSealer(t, testKey(1))
	plain := readGolden(t, TypeBeacon)
	sealed, _ := s.Seal(nil, plain)

	_, err := Decode(sealed)
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "sealed") {
		t.Fatalf("plain receiver, sealed packet: %v", err)
	}
	big, _ := s.Seal(nil, make([]byte, MaxPacketSize))
	if _, err := Decode(big); !errors.Is(err, ErrAuth) {
		t.Fatalf("plain receiver, full-size sealed packet: %v", err)
	}
	_, err = s.Open(nil, plain)
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "not sealed") {
		t.Fatalf("sealed receiver, plain packet: %v", err)
	}
	bad := bytes.Clone(sealed)
	bad[0] = 0x82
	if _, err := s.Open(nil, bad); !errors.Is(err, ErrVersion) {
		t.Fatalf("unknown sealing format: %v", err)
	}
}

func TestSealLimits(t *testing.T) {
	s := mustSealer(t, testKey(1))
	if _, err := s.Seal(nil, make([]byte, MaxPacketSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Seal of MaxPacketSize+1: %v", err)
	}
	sealed, err := s.Seal(nil, make([]byte, MaxPacketSize))
	if err != nil || len(sealed) != MaxDatagramSize {
		t.Fatalf("Seal of MaxPacketSize: %d bytes, %v", len(sealed), err)
	}
	if _, err := s.Open(nil, append(sealed, 0)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Open of MaxDatagramSize+1: %v", err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestSealRandFailure(t *testing.T) {
	s := mustSealer(t, testKey(1))
	s.Rand = failingReader{}
	out, err := s.Seal([]byte("pre"), []byte{1})
	if err == nil || string(out) != "pre" {
		t.Fatalf("Seal with a failing nonce source: %q, %v", out, err)
	}
}

func TestNewSealerKeySize(t *testing.T) {
	_, err := NewSealer(make([]byte, 16))
	if err == nil || err.Error() != "wire: key must be 32 bytes, got 16" {
		t.Fatalf("16-byte key: %v", err)
	}
	_, err = NewSealer(testKey(1), testKey(2), make([]byte, 31))
	if err == nil || err.Error() != "wire: key 3 must be 32 bytes, got 31" {
		t.Fatalf("31-byte third key: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	key := testKey(9)
	enc := base64.StdEncoding.EncodeToString(key)
	tests := []struct {
		in   string
		err  string
		want []byte
	}{
		{enc, "", key},
		{"  " + enc + "\n", "", key},
		{"\t" + enc + "\r\n\n", "", key},
		{"", "wire: key is empty: want 32 bytes in base64", nil},
		{" \n", "wire: key is empty: want 32 bytes in base64", nil},
		{base64.StdEncoding.EncodeToString(make([]byte, 16)), "wire: key must be 32 bytes, got 16", nil},
		{base64.StdEncoding.EncodeToString(make([]byte, 33)), "wire: key must be 32 bytes, got 33", nil},
		{"not base64!", "wire: key is not valid base64: illegal base64 data at input byte 3", nil},
		{base64.RawStdEncoding.EncodeToString(key), "wire: key is not valid base64: illegal base64 data at input byte 40", nil},
	}
	for _, tt := range tests {
		got, err := ParseKey([]byte(tt.in))
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParseKey(%q) = %v; want error %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, tt.want) {
			t.Errorf("ParseKey(%q) = %x, %v", tt.in, got, err)
		}
	}
}

// TestSealTo: a packet sealed for one node opens there (and not at any
// other node, nor as a broadcast); a broadcast packet opens everywhere.
func TestSealTo(t *testing.T) {
	s := mustSealer(t, testKey(1), testKey(2))
	plain := readGolden(t, TypeInvitation)
	for3, err := s.SealTo(nil, plain, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.OpenFor(nil, for3, 3); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("OpenFor(3) of a packet for 3: %x, %v", got, err)
	}
	for _, self := range []NodeID{1, 2, 4, 1 << 40, Broadcast} {
		if _, err := s.OpenFor(nil, for3, self); !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "another node") {
			t.Fatalf("OpenFor(%d) of a packet for 3: %v", self, err)
		}
	}
	if _, err := s.Open(nil, for3); !errors.Is(err, ErrAuth) {
		t.Fatalf("Open of a packet for 3: %v", err)
	}
	all, _ := s.SealTo(nil, plain, Broadcast)
	for _, self := range []NodeID{1, 3, Broadcast} {
		if got, err := s.OpenFor(nil, all, self); err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("OpenFor(%d) of a broadcast packet: %v", self, err)
		}
	}
	// Seal is SealTo(Broadcast): same bytes with the same nonces.
	a, b := mustSealer(t, testKey(1)), mustSealer(t, testKey(1))
	a.Rand, b.Rand = &countingReader{}, &countingReader{}
	x, _ := a.Seal(nil, plain)
	y, _ := b.SealTo(nil, plain, Broadcast)
	if !bytes.Equal(x, y) {
		t.Fatalf("Seal and SealTo(Broadcast) differ")
	}
	// The secondary key opens addressed packets too (rotation).
	old := mustSealer(t, testKey(2))
	fromOld, _ := old.SealTo(nil, plain, 7)
	if got, err := s.OpenFor(nil, fromOld, 7); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("secondary key, addressed packet: %v", err)
	}
}

func TestParseKeys(t *testing.T) {
	k1, k2 := testKey(1), testKey(2)
	e1, e2 := base64.StdEncoding.EncodeToString(k1), base64.StdEncoding.EncodeToString(k2)
	tests := []struct {
		in      string
		err     string
		primary []byte
		others  [][]byte
	}{
		{e1 + "\n", "", k1, nil},
		{"# new key first\n" + e2 + "\n\n  " + e1 + "  \r\n", "", k2, [][]byte{k1}},
		{"", "wire: key is empty: want 32 bytes in base64", nil, nil},
		{"# only a comment\n\n", "wire: key is empty: want 32 bytes in base64", nil, nil},
		{e1 + "\nnot base64!\n", "wire: key is not valid base64: illegal base64 data at input byte 3 (line 2)", nil, nil},
		{e1 + "\n" + base64.StdEncoding.EncodeToString(make([]byte, 16)), "wire: key must be 32 bytes, got 16 (line 2)", nil, nil},
	}
	for _, tt := range tests {
		p, o, err := ParseKeys([]byte(tt.in))
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParseKeys(%q) = %v; want error %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !bytes.Equal(p, tt.primary) || len(o) != len(tt.others) {
			t.Errorf("ParseKeys(%q) = %x, %x, %v", tt.in, p, o, err)
			continue
		}
		for i := range o {
			if !bytes.Equal(o[i], tt.others[i]) {
				t.Errorf("ParseKeys(%q): other %d = %x", tt.in, i, o[i])
			}
		}
	}
}
