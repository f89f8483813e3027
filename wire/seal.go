package wire

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
)

// Sealing layout. A sealed packet is
//
//	marker (1 byte, 0x81) | nonce (12 bytes) | AES-256-GCM(encoded message) | tag (16 bytes)
//
// The marker is the first byte, where a plain packet has its protocol
// version. Versions stay below 0x80, so a receiver tells the two apart from
// the first byte and gives a clear error when only one side has a key. The
// marker is also authenticated (as GCM additional data).
const (
	// KeySize is the size of a sealing key: AES-256.
	KeySize = 32

	// SealOverhead is how many bytes Seal adds to a packet.
	SealOverhead = 1 + nonceSize + tagSize

	// MaxDatagramSize is the largest datagram the runtime can receive,
	// sealed or not: the size of its read buffer. Longer datagrams are
	// not ours.
	MaxDatagramSize = MaxPacketSize + SealOverhead

	sealedMarker byte = 0x81
	nonceSize         = 12
	tagSize           = 16
)

// Sealer seals and opens packets with AES-256-GCM under a shared key. It
// seals with its primary key and opens with any of its keys, so that a key
// can be rotated without a flag day: first give every node the new key as a
// secondary, then make it primary everywhere, then drop the old one.
//
// Each packet gets a fresh random 96-bit nonce. A nonce repeated under one
// key breaks GCM, and with random nonces the chance of a repeat after n
// packets sealed under a key (by all nodes together) is about n²/2⁹⁷: below
// 2⁻²⁵ after a year at 2000 packets per second. Rotate the key well before
// 2³² packets (NIST SP 800-38D's limit for random nonces).
//
// A Sealer is safe for concurrent use once built, provided Rand is (the
// default, crypto/rand.Reader, is).
type Sealer struct {
	// Rand is the source of nonces. Nil means crypto/rand.Reader. Tests
	// set it to get reproducible packets; nothing else should.
	Rand io.Reader

	aeads []cipher.AEAD // primary first
}

// NewSealer returns a Sealer that seals with primary and opens with primary
// or any of others. Every key must be KeySize bytes (see ParseKey).
func NewSealer(primary []byte, others ...[]byte) (*Sealer, error) {
	s := &Sealer{aeads: make([]cipher.AEAD, 0, 1+len(others))}
	for i, key := range append([][]byte{primary}, others...) {
		if len(key) != KeySize {
			which := "key" // the primary: the message the operator sees most
			if i > 0 {
				which = fmt.Sprintf("key %d", i+1)
			}
			return nil, fmt.Errorf("wire: %s must be %d bytes, got %d", which, KeySize, len(key))
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("wire: key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("wire: key %d: %w", i+1, err)
		}
		s.aeads = append(s.aeads, aead)
	}
	return s, nil
}

// Seal appends the sealed form of plaintext, an encoded message, to dst and
// returns the extended buffer; with enough capacity in dst it does not
// allocate (SealTo a single node allocates a few bytes). dst must not overlap plaintext. It fails if plaintext is over
// MaxPacketSize or if the nonce source fails. The packet is sealed for every
// node (SealTo with Broadcast).
func (s *Sealer) Seal(dst, plaintext []byte) ([]byte, error) {
	return s.SealTo(dst, plaintext, Broadcast)
}

// SealTo is Seal for a packet meant for node to only. The destination is
// authenticated (GCM additional data: the marker, then to as 8 big-endian
// bytes; the marker alone for Broadcast), so that a packet recorded on its
// way to one node and replayed to another does not open there (see
// OpenFor). It costs no byte on the wire. Broadcast seals the packet for
// every node, exactly like Seal.
func (s *Sealer) SealTo(dst, plaintext []byte, to NodeID) ([]byte, error) {
	if len(plaintext) > MaxPacketSize {
		return dst, errorf(ErrTooLarge, "wire: cannot seal %d bytes, over the %d-byte limit", len(plaintext), MaxPacketSize)
	}
	start := len(dst)
	out := append(dst, sealedMarker)
	out = append(out, make([]byte, nonceSize)...) // does not allocate: the compiler clears in place
	r := s.Rand
	if r == nil {
		r = rand.Reader
	}
	nonce := out[start+1 : start+1+nonceSize]
	if _, err := io.ReadFull(r, nonce); err != nil {
		return dst, fmt.Errorf("wire: cannot make a nonce: %w", err)
	}
	return s.aeads[0].Seal(out, nonce, plaintext, additionalData(out[start:start+1], to)), nil
}

// additionalData returns the GCM additional data of a packet for node to:
// the marker, then to (big-endian) unless to is Broadcast. marker is the
// packet's first byte, used as is for Broadcast so that Seal and Open do not
// allocate; a packet for one node costs one small allocation.
func additionalData(marker []byte, to NodeID) []byte {
	if to == Broadcast {
		return marker
	}
	return binary.BigEndian.AppendUint64([]byte{sealedMarker}, uint64(to))
}

// Open authenticates and decrypts a sealed packet, appends the encoded
// message to dst and returns the extended buffer; dst must not overlap
// packet. It tries the primary key first, then the others. Any tampered byte,
// a wrong key, a truncated packet, or a plain (unsealed) packet gives an
// error wrapping ErrAuth; an unknown sealing format gives ErrVersion and a
// packet over MaxDatagramSize ErrTooLarge. Open accepts only packets sealed
// for every node (Seal, or SealTo with Broadcast); see OpenFor.
func (s *Sealer) Open(dst, packet []byte) ([]byte, error) {
	return s.OpenFor(dst, packet, Broadcast)
}

// OpenFor is Open for node self: it accepts a packet sealed for self
// (SealTo(…, self)) or for every node (Seal). A packet sealed for another
// node fails with ErrAuth, like a tampered one. With self Broadcast it is
// Open.
func (s *Sealer) OpenFor(dst, packet []byte, self NodeID) ([]byte, error) {
	if len(packet) == 0 {
		return dst, errorf(ErrAuth, "wire: sealed packet is empty")
	}
	if m := packet[0]; m != sealedMarker {
		if m >= 0x80 {
			return dst, errorf(ErrVersion, "wire: unknown sealing format 0x%02x", m)
		}
		return dst, errorf(ErrAuth, "wire: packet is not sealed (first byte 0x%02x): the sender has no key or a different configuration", m)
	}
	if len(packet) > MaxDatagramSize {
		return dst, errorf(ErrTooLarge, "wire: sealed packet is %d bytes, over the %d-byte limit", len(packet), MaxDatagramSize)
	}
	if len(packet) < SealOverhead {
		return dst, errorf(ErrAuth, "wire: truncated sealed packet: want at least %d bytes, have %d", SealOverhead, len(packet))
	}
	nonce := packet[1 : 1+nonceSize]
	ciphertext := packet[1+nonceSize:]
	for _, to := range [2]NodeID{self, Broadcast} {
		ad := additionalData(packet[:1], to)
		for _, aead := range s.aeads {
			if out, err := aead.Open(dst, nonce, ciphertext, ad); err == nil {
				return out, nil
			}
		}
		if self == Broadcast {
			break
		}
	}
	return dst, errorf(ErrAuth, "wire: cannot open sealed packet: wrong key, tampered, or sealed for another node")
}

// ParseKeys parses a key file that holds one key per line, each as
// ParseKey reads it; blank lines and lines starting with # are skipped. The
// first key is the primary (it seals), the others are only accepted when
// opening: during a key rotation a node lists the new key and the old one
// (see Sealer). It fails on an invalid line, naming it, or when there is
// no key at all.
func ParseKeys(text []byte) (primary []byte, others [][]byte, err error) {
	var keys [][]byte
	for i, line := range bytes.Split(text, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		key, err := ParseKey(line)
		if err != nil {
			return nil, nil, fmt.Errorf("%w (line %d)", err, i+1)
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, nil, fmt.Errorf("wire: key is empty: want %d bytes in base64", KeySize)
	}
	return keys[0], keys[1:], nil
}

// IsSealed reports whether packet looks sealed (starts with the sealing
// marker), without authenticating it.
func IsSealed(packet []byte) bool { return len(packet) > 0 && packet[0] == sealedMarker }

// ParseKey parses a key file's contents: the standard base64 encoding of
// exactly KeySize bytes, surrounded by optional whitespace (a trailing
// newline, say). Generate one with `head -c 32 /dev/urandom | base64`.
func ParseKey(text []byte) ([]byte, error) {
	text = bytes.TrimSpace(text)
	if len(text) == 0 {
		return nil, fmt.Errorf("wire: key is empty: want %d bytes in base64", KeySize)
	}
	key := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Decode(key, text)
	if err != nil {
		return nil, fmt.Errorf("wire: key is not valid base64: %w", err)
	}
	if n != KeySize {
		return nil, fmt.Errorf("wire: key must be %d bytes, got %d", KeySize, n)
	}
	return key[:n], nil
}
