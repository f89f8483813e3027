package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

var (
	update   = flag.Bool("update", false, "rewrite the golden files in testdata/golden")
	seedFlag = flag.Uint64("seed", 0, "seed for the random round-trip test (0: from the clock)")
)

// testHeader is a header with a distinct value in every byte-sized field, so
// that a field written at the wrong offset shows in the golden files.
func testHeader() Header {
	return Header{
		From:     0x0102030405060708,
		Priority: DefaultPriority,
		Flags:    FlagDegraded | 0x40,
		Boot:     0xb007b007b007b007,
		Counter:  0x1122334455,
		Group:    GroupNumber{Seq: 17, ID: 3},
		State:    StateNormal,
	}
}

// sampleBodies has one body per message type; TestSamplesCoverTypes makes
// sure a new type cannot be added without one.
func sampleBodies() map[Type]Body {
	g := GroupNumber{Seq: 18, ID: 0x0102030405060708}
	tm := Timing{AliveInterval: 250 * time.Millisecond, AliveTimeout: 750 * time.Millisecond, AnswerTimeout: 100 * time.Millisecond,
		AcceptWindow: 200 * time.Millisecond, ReadyTimeout: 500 * time.Millisecond, ElectionTimeout: 4294967295 * time.Millisecond, MemberTimeout: 15 * time.Second,
		Lease: 1200 * time.Millisecond, Election: AlgRing}
	return map[Type]Body{
		TypeBeacon: Beacon{Addr: "192.168.1.10:7947", HighWater: 0x0a0b0c0d0e0f1011, Version: 12, Size: 0x01020304, Timing: tm,
			Beat: 0x2122232425262728, AckReq: true, Term: GroupNumber{Seq: 0x3132333435363738, ID: 0x4142434445464748},
			Quorum: Quorum{Expect: 0x51525354, TieBreaker: 0x6162636465666768, Voters: 0x71727374, Tie: 0x8182838485868788, Age: 0x91929394, Home: 0xa1a2a3a4}},
		TypeAreYouCoordinator: AreYouCoordinator{},
		TypeYes:               Yes{Query: TypeAreYouThere, Version: 42},
		TypeNo:                No{Query: TypeAreYouThere},
		TypeAreYouThere:       AreYouThere{Group: g},
		TypeInvitation:        Invitation{Group: g, Timing: tm},
		TypeChallenge:         Challenge{Nonce: 0xc0ffee0000c0ffee},
		TypeResponse:          Response{Nonce: 0xfeedfacefeedface},
		TypeHello:             Hello{},
		TypeAccept:            Accept{Group: g, Term: GroupNumber{Seq: 16, ID: 7}, Quorum: Quorum{Expect: 5, TieBreaker: 3, Voters: 6}},
		TypeBeatAck: BeatAck{Group: g, Beat: 0x2122232425262728, Grant: true, Term: GroupNumber{Seq: 16, ID: 7},
			Quorum: Quorum{Expect: 4, TieBreaker: 1, Voters: 4, Tie: 1}},
		TypeDecline: Decline{Group: g, Held: GroupNumber{Seq: 19, ID: 2}},
		TypeReady: Ready{Group: g, Version: 5, Timing: tm, Total: 5, Offset: 2, Members: []Member{
			{ID: 9, Priority: 100}, {ID: 2, Priority: 200}, {ID: 0xffffffffffffffff, Priority: 0},
		}, Homes: []uint32{0xa1a2a3a4, 0xb1b2b3b4, 0}},
		TypeReadyAck:     ReadyAck{Group: g, Version: 5},
		TypeElection:     Election{Group: g},
		TypeAnswer:       Answer{Group: g},
		TypeCoordinator:  Coordinator{Group: g},
		TypeRingElection: RingElection{Group: g, Round: 0x0a0b0c0d, Candidate: Member{ID: 0x1112131415161718, Priority: 200}},
		TypeRingElected:  RingElected{Group: g, Round: 2, Leader: Member{ID: 9, Priority: 100}},
		TypeRingAck:      RingAck{Group: g, Of: TypeRingElected, Round: 3, Candidate: Member{ID: 0xffffffffffffffff, Priority: 0}},
	}
}

func sampleMessage(t Type) Message {
	return Message{Header: testHeader(), Body: sampleBodies()[t]}
}

func TestSamplesCoverTypes(t *testing.T) {
	bodies := sampleBodies()
	for _, typ := range Types() {
		b, ok := bodies[typ]
		if !ok {
			t.Errorf("no sample body for %s: add one to sampleBodies (and run go test -update)", typ)
			continue
		}
		if b.Type() != typ {
			t.Errorf("sample body for %s has type %s", typ, b.Type())
		}
	}
	if len(bodies) != len(Types()) {
		t.Errorf("%d sample bodies for %d types", len(bodies), len(Types()))
	}
}

// want returns m as Decode returns it: Version and Type filled in.
func want(m Message) Message {
	m.Version = Version
	m.Type = m.Body.Type()
	return m
}

func TestRoundTrip(t *testing.T) {
	for _, typ := range Types() {
		t.Run(typ.String(), func(t *testing.T) {
			m := sampleMessage(typ)
			b, err := Encode(m)
			if err != nil {
				t.Fatalf("Encode(%v): %v", m, err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode(%x): %v", b, err)
			}
			if !reflect.DeepEqual(got, want(m)) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, want(m))
			}
			h, err := DecodeHeader(b)
			if err != nil || h != want(m).Header {
				t.Fatalf("DecodeHeader = %+v, %v; want %+v", h, err, want(m).Header)
			}
			// Type in the header is taken from the body.
			m.Type = TypeCoordinator + 50
			if b2, err := Encode(m); err != nil || !bytes.Equal(b2, b) {
				t.Fatalf("Encode with a stale Header.Type = %x, %v; want %x", b2, err, b)
			}
		})
	}
}

func goldenPath(typ Type) string {
	return filepath.Join("testdata", "golden", typ.String()+".hex")
}

// formatGolden writes a packet as hex after a comment line describing the
// message: the header on one line, then the body's fixed part, then each
// variable part (Beacon's address, each Ready member and home) on a line of its own,
// so that a diff points at the field that changed.
func formatGolden(m Message, b []byte) []byte {
	var sb strings.Builder
	line := func(p []byte) {
		if len(p) > 0 {
			sb.WriteString(hex.EncodeToString(p) + "\n")
		}
	}
	fmt.Fprintf(&sb, "# %s\n", m)
	line(b[:HeaderSize])
	body := b[HeaderSize:]
	switch m.Body.Type() {
	case TypeBeacon:
		n := int(body[0])
		line(body[:1])
		line(body[1 : 1+n])
		line(body[1+n:])
	case TypeReady:
		line(body[:readyFixedSize])
		p := body[readyFixedSize:]
		for range m.Body.(Ready).Members {
			line(p[:memberSize])
			p = p[memberSize:]
		}
		for ; len(p) > 0; p = p[homeSize:] {
			line(p[:homeSize])
		}
	default:
		line(body)
	}
	return []byte(sb.String())
}

// parseGolden reads formatGolden's output back: hex, ignoring whitespace
// and lines starting with '#'.
func parseGolden(text []byte) ([]byte, error) {
	var h strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			h.WriteString(line)
		}
	}
	return hex.DecodeString(h.String())
}

func readGolden(t testing.TB, typ Type) []byte {
	t.Helper()
	text, err := os.ReadFile(goldenPath(typ))
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	b, err := parseGolden(text)
	if err != nil {
		t.Fatalf("%s: %v", goldenPath(typ), err)
	}
	return b
}

// TestGolden pins the format: a change to the encoding of any type fails
// here. Regenerate with go test -update only for a deliberate change, which
// also needs a new Version.
func TestGolden(t *testing.T) {
	for _, typ := range Types() {
		t.Run(typ.String(), func(t *testing.T) {
			m := sampleMessage(typ)
			b, err := Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.MkdirAll(filepath.Dir(goldenPath(typ)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(goldenPath(typ), formatGolden(m, b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			g := readGolden(t, typ)
			if !bytes.Equal(b, g) {
				t.Fatalf("encoding changed:\n got %x\nwant %x", b, g)
			}
			got, err := Decode(g)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want(m)) {
				t.Fatalf("golden decodes to %v, want %v", got, want(m))
			}
		})
	}
}

// randomMessage builds a valid message of a random type with random fields,
// including edge values.
func randomMessage(r *rand.Rand) Message {
	u64 := func() uint64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return ^uint64(0)
		default:
			return r.Uint64() >> r.IntN(64)
		}
	}
	grp := func() GroupNumber { return GroupNumber{Seq: u64(), ID: NodeID(u64())} }
	types := Types()
	query := func() Type { return types[r.IntN(len(types))] }
	ms := func() time.Duration { return time.Duration(uint32(u64())) * time.Millisecond }
	tm := func() Timing {
		if r.IntN(4) == 0 {
			return Timing{}
		}
		return Timing{AliveInterval: ms(), AliveTimeout: ms(), AnswerTimeout: ms(), AcceptWindow: ms(),
			ReadyTimeout: ms(), ElectionTimeout: ms(), MemberTimeout: ms(), Lease: ms(), Election: uint8(r.Uint32())}
	}
	quorum := func() Quorum {
		if r.IntN(4) == 0 {
			return Quorum{}
		}
		return Quorum{Expect: r.Uint32(), TieBreaker: NodeID(u64()), Voters: r.Uint32(), Tie: NodeID(u64()), Age: r.Uint32(), Home: r.Uint32()}
	}
	h := Header{
		From:     NodeID(max(u64(), 1)),
		Priority: uint8(r.Uint32()),
		Flags:    Flags(r.Uint32()),
		Boot:     u64(),
		Counter:  u64(),
		Group:    grp(),
		State:    State(1 + r.IntN(3)),
	}
	if r.IntN(2) == 0 {
		h.Version = Version
	}
	var body Body
	switch typ := types[r.IntN(len(types))]; typ {
	case TypeBeacon:
		addr := make([]byte, r.IntN(MaxAddrLen+1))
		for i := range addr {
			addr[i] = byte(r.Uint32()) // any bytes, not only UTF-8
		}
		body = Beacon{Addr: string(addr), HighWater: u64(), Version: u64(), Size: uint32(u64()), Timing: tm(),
			Beat: u64(), AckReq: r.IntN(2) == 0, Term: grp(), Quorum: quorum()}
	case TypeAreYouCoordinator:
		body = AreYouCoordinator{}
	case TypeYes:
		body = Yes{Query: query(), Version: u64()}
	case TypeNo:
		body = No{Query: query()}
	case TypeAreYouThere:
		body = AreYouThere{Group: grp()}
	case TypeInvitation:
		body = Invitation{Group: grp(), Timing: tm()}
	case TypeChallenge:
		body = Challenge{Nonce: u64()}
	case TypeResponse:
		body = Response{Nonce: u64()}
	case TypeHello:
		body = Hello{}
	case TypeAccept:
		body = Accept{Group: grp(), Term: grp(), Quorum: quorum()}
	case TypeBeatAck:
		body = BeatAck{Group: grp(), Beat: u64(), Grant: r.IntN(2) == 0, Term: grp(), Quorum: quorum()}
	case TypeDecline:
		body = Decline{Group: grp(), Held: grp()}
	case TypeReady:
		n := r.IntN(MaxReadyMembers + 1)
		var ms []Member // nil when empty, as Decode returns it
		for range n {
			ms = append(ms, Member{ID: NodeID(u64()), Priority: uint8(r.Uint32())})
		}
		var homes []uint32
		if n > 0 && n <= MaxReadyMembersHomes && r.IntN(2) == 0 {
			for range n {
				homes = append(homes, r.Uint32())
			}
		}
		off := r.Uint32N(1000)
		body = Ready{Group: grp(), Version: u64(), Timing: tm(), Offset: off, Total: off + uint32(n) + r.Uint32N(3), Members: ms, Homes: homes}
	case TypeReadyAck:
		body = ReadyAck{Group: grp(), Version: u64()}
	case TypeElection:
		body = Election{Group: grp()}
	case TypeAnswer:
		body = Answer{Group: grp()}
	case TypeCoordinator:
		body = Coordinator{Group: grp()}
	case TypeRingElection:
		body = RingElection{Group: grp(), Round: uint32(u64()), Candidate: Member{ID: NodeID(u64()), Priority: uint8(r.Uint32())}}
	case TypeRingElected:
		body = RingElected{Group: grp(), Round: uint32(u64()), Leader: Member{ID: NodeID(u64()), Priority: uint8(r.Uint32())}}
	case TypeRingAck:
		of := []Type{TypeRingElection, TypeRingElected}[r.IntN(2)]
		body = RingAck{Group: grp(), Of: of, Round: uint32(u64()), Candidate: Member{ID: NodeID(u64()), Priority: uint8(r.Uint32())}}
	default:
		panic("randomMessage: no case for " + typ.String())
	}
	return Message{Header: h, Body: body}
}

func TestRoundTripRandom(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	r := rand.New(rand.NewPCG(seed, 0))
	n := 5000
	if testing.Short() {
		n = 500
	}
	buf := make([]byte, 0, MaxPacketSize)
	for i := range n {
		m := randomMessage(r)
		b, err := AppendEncode(buf[:0], m)
		if err != nil {
			t.Fatalf("seed %d, message %d: Encode(%v): %v (rerun with -seed=%d)", seed, i, m, err, seed)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("seed %d, message %d: Decode(Encode(%v)): %v (rerun with -seed=%d)", seed, i, m, err, seed)
		}
		if !reflect.DeepEqual(got, want(m)) {
			t.Fatalf("seed %d, message %d: round trip\n got %#v\nwant %#v\n(rerun with -seed=%d)", seed, i, got, want(m), seed)
		}
	}
}

// TestTruncated decodes every proper prefix of every golden packet: each
// must fail with ErrTruncated, and none may panic.
func TestTruncated(t *testing.T) {
	for _, typ := range Types() {
		b := readGolden(t, typ)
		for n := range len(b) {
			_, err := Decode(b[:n:n])
			if !errors.Is(err, ErrTruncated) {
				t.Errorf("%s: Decode of %d-byte prefix: %v, want ErrTruncated", typ, n, err)
			}
		}
	}
}

func TestTruncatedMessage(t *testing.T) {
	b := readGolden(t, TypeReady)
	_, err := Decode(b[:len(b)-4])
	const msg = "wire: truncated Ready: want 152 bytes, have 148"
	if err == nil || err.Error() != msg {
		t.Fatalf("got %v, want %q", err, msg)
	}
}

// packet returns the golden packet of typ with edit applied to a copy.
func packet(t *testing.T, typ Type, edit func(b []byte) []byte) []byte {
	b := bytes.Clone(readGolden(t, typ))
	return edit(b)
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		err  error
		msg  string // exact message, or "" for any
	}{
		{"empty", nil, ErrTruncated, "wire: truncated header: empty packet"},
		{"only version", []byte{Version}, ErrTruncated, "wire: truncated header: want 45 bytes, have 1"},
		{"short header", packet(t, TypeReady, func(b []byte) []byte { return b[:12] }), ErrTruncated, "wire: truncated Ready header: want 45 bytes, have 12"},
		{"version 0", packet(t, TypeBeacon, func(b []byte) []byte { b[0] = 0; return b }), ErrVersion, "wire: unknown version 0"},
		{"version 7", packet(t, TypeBeacon, func(b []byte) []byte { b[0] = 7; return b }), ErrVersion, "wire: unknown version 7"},
		{"type 0", packet(t, TypeBeacon, func(b []byte) []byte { b[1] = 0; return b }), ErrType, "wire: unknown message type 0"},
		{"type 99", packet(t, TypeBeacon, func(b []byte) []byte { b[1] = 99; return b }), ErrType, "wire: unknown message type 99"},
		{"type 99 truncated", []byte{Version, 99}, ErrType, "wire: unknown message type 99"},
		{"sealed", packet(t, TypeBeacon, func(b []byte) []byte { b[0] = sealedMarker; return b }), ErrAuth, ""},
		{"too large", make([]byte, MaxPacketSize+1), ErrTooLarge, "wire: packet is 1401 bytes, over the 1400-byte limit"},
		{"trailing byte", packet(t, TypeAccept, func(b []byte) []byte { return append(b, 0) }), ErrMalformed, "wire: malformed Accept: 1 trailing bytes after the 109-byte message"},
		{"trailing after empty body", packet(t, TypeAreYouCoordinator, func(b []byte) []byte { return append(b, 1, 2) }), ErrMalformed, ""},
		{"state 0", packet(t, TypeYes, func(b []byte) []byte { b[44] = 0; return b }), ErrMalformed, "wire: malformed Yes: invalid state 0"},
		{"state 4", packet(t, TypeYes, func(b []byte) []byte { b[44] = 4; return b }), ErrMalformed, "wire: malformed Yes: invalid state 4"},
		{"sender 0", packet(t, TypeNo, func(b []byte) []byte { clear(b[2:10]); return b }), ErrMalformed, "wire: malformed No: sender ID is 0"},
		{"Yes bad query", packet(t, TypeYes, func(b []byte) []byte { b[HeaderSize] = 0; return b }), ErrMalformed, "wire: malformed Yes: query 0 is not a message type"},
		{"No bad query", packet(t, TypeNo, func(b []byte) []byte { b[HeaderSize] = 200; return b }), ErrMalformed, "wire: malformed No: query 200 is not a message type"},
		{"Beacon addr past end", packet(t, TypeBeacon, func(b []byte) []byte { b[HeaderSize]++; return b }), ErrTruncated, ""},
		{"Beacon addr short", packet(t, TypeBeacon, func(b []byte) []byte { b[HeaderSize]--; return b }), ErrMalformed, ""},
		// Ready body: Group 45..60, Version 61..68, Timing 69..101, Total 102..105, Offset 106..109, count 110..111.
		{"Ready offset past total", packet(t, TypeReady, func(b []byte) []byte { b[109] = 3; return b }), ErrMalformed, "wire: malformed Ready: offset 3 + 3 members exceeds total 5"},
		{"Ready offset overflow", packet(t, TypeReady, func(b []byte) []byte { copy(b[106:110], []byte{0xff, 0xff, 0xff, 0xff}); return b }), ErrMalformed, ""},
		{"Ready huge count", packet(t, TypeReady, func(b []byte) []byte { b[110], b[111] = 0xff, 0xff; return b }), ErrTruncated, "wire: truncated Ready: want 852068 bytes, have 152"},
		{"Ready count too small", packet(t, TypeReady, func(b []byte) []byte { b[111] = 2; return b }), ErrMalformed, ""},
		{"Invitation truncated timing", packet(t, TypeInvitation, func(b []byte) []byte { return b[:len(b)-1] }), ErrTruncated, "wire: truncated Invitation: want 94 bytes, have 93"},
		{"Challenge trailing byte", packet(t, TypeChallenge, func(b []byte) []byte { return append(b, 0) }), ErrMalformed, "wire: malformed Challenge: 1 trailing bytes after the 53-byte message"},
		// RingAck body: Of 45, Group 46..61, Round 62..65, Candidate 66..74.
		{"RingAck of Election", packet(t, TypeRingAck, func(b []byte) []byte { b[HeaderSize] = byte(TypeElection); return b }), ErrMalformed, "wire: malformed RingAck: Election is not a ring hop"},
		{"RingAck of 0", packet(t, TypeRingAck, func(b []byte) []byte { b[HeaderSize] = 0; return b }), ErrMalformed, "wire: malformed RingAck: Type(0) is not a ring hop"},
		{"RingElection trailing byte", packet(t, TypeRingElection, func(b []byte) []byte { return append(b, 0) }), ErrMalformed, "wire: malformed RingElection: 1 trailing bytes after the 74-byte message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode(tt.b)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Decode = %v, %v; want error wrapping %v", m, err, tt.err)
			}
			if tt.msg != "" && err.Error() != tt.msg {
				t.Fatalf("error %q, want %q", err, tt.msg)
			}
			if !reflect.DeepEqual(m, Message{}) {
				t.Fatalf("Decode returned %v with an error", m)
			}
		})
	}
}

// TestDecodeBoundedAlloc: a forged member count must not make Decode
// allocate for members that are not in the packet.
func TestDecodeBoundedAlloc(t *testing.T) {
	b := bytes.Clone(readGolden(t, TypeReady)[:HeaderSize+readyFixedSize])
	b[110], b[111] = 0xff, 0xff
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const runs = 100
	for range runs {
		if _, err := Decode(b); !errors.Is(err, ErrTruncated) {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 1024 {
		t.Fatalf("Decode of a forged count allocates %d bytes per call", per)
	}
}

func TestEncodeErrors(t *testing.T) {
	ok := sampleMessage(TypeAccept)
	with := func(edit func(*Message)) Message {
		m := ok
		edit(&m)
		return m
	}
	tests := []struct {
		name string
		m    Message
		err  error
	}{
		{"nil body", with(func(m *Message) { m.Body = nil }), ErrType},
		{"pointer body", with(func(m *Message) { m.Body = &Accept{} }), ErrType},
		{"foreign body", with(func(m *Message) { m.Body = fakeBody{} }), ErrType},
		{"unknown type body", with(func(m *Message) { m.Body = badTypeBody{} }), ErrType},
		{"version 1", with(func(m *Message) { m.Version = 1 }), ErrVersion},
		{"timing not in ms", with(func(m *Message) { m.Body = Invitation{Timing: Timing{AliveInterval: time.Microsecond}} }), ErrMalformed},
		{"timing negative", with(func(m *Message) { m.Body = Ready{Timing: Timing{ReadyTimeout: -time.Millisecond}} }), ErrMalformed},
		{"timing too long", with(func(m *Message) { m.Body = Beacon{Timing: Timing{ElectionTimeout: (1 << 32) * time.Millisecond}} }), ErrMalformed},
		{"sender 0", with(func(m *Message) { m.From = 0 }), ErrMalformed},
		{"state 0", with(func(m *Message) { m.State = 0 }), ErrMalformed},
		{"Yes query 0", with(func(m *Message) { m.Body = Yes{} }), ErrMalformed},
		{"No query past the last type", with(func(m *Message) { m.Body = No{Query: typeMax + 1} }), ErrMalformed},
		{"RingAck of a non-ring type", with(func(m *Message) { m.Body = RingAck{Of: TypeElection} }), ErrMalformed},
		{"RingAck of nothing", with(func(m *Message) { m.Body = RingAck{} }), ErrMalformed},
		{"addr too long", with(func(m *Message) { m.Body = Beacon{Addr: strings.Repeat("a", MaxAddrLen+1)} }), ErrTooLarge},
		{"Ready without Total", with(func(m *Message) { m.Body = Ready{Members: make([]Member, 2)} }), ErrMalformed},
		{"Ready offset overflow", with(func(m *Message) {
			m.Body = Ready{Offset: ^uint32(0), Total: ^uint32(0), Members: make([]Member, 2)}
		}), ErrMalformed},
		{"Ready too many", with(func(m *Message) {
			m.Body = Ready{Total: MaxReadyMembers + 1, Members: make([]Member, MaxReadyMembers+1)}
		}), ErrTooLarge},
		{"Ready way too many", with(func(m *Message) {
			m.Body = Ready{Total: 1 << 20, Members: make([]Member, 1<<20)}
		}), ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("prefix")
			got, err := AppendEncode(dst, tt.m)
			if !errors.Is(err, tt.err) {
				t.Fatalf("AppendEncode(%v) = %v; want error wrapping %v", tt.m, err, tt.err)
			}
			if string(got) != "prefix" {
				t.Fatalf("AppendEncode changed dst on error: %q", got)
			}
		})
	}
}

type fakeBody struct{}

func (fakeBody) Type() Type     { return TypeAccept }
func (fakeBody) String() string { return "fake" }

type badTypeBody struct{}

func (badTypeBody) Type() Type     { return 0 }
func (badTypeBody) String() string { return "bad" }

func TestSizeLimits(t *testing.T) {
	if MaxReadyMembers != 143 {
		t.Errorf("MaxReadyMembers = %d; the package doc says 143", MaxReadyMembers)
	}
	if HeaderSize+readyFixedSize+MaxReadyMembers*memberSize > MaxPacketSize {
		t.Errorf("MaxReadyMembers does not fit")
	}
	if MaxReadyMembersHomes != 99 || HeaderSize+readyFixedSize+MaxReadyMembersHomes*(memberSize+homeSize) > MaxPacketSize {
		t.Errorf("MaxReadyMembersHomes = %d does not fit, or is not the 99 the docs say", MaxReadyMembersHomes)
	}
	if MaxDatagramSize > 1500-40-8 {
		t.Errorf("a sealed packet (%d bytes) does not fit an IPv6 datagram on a 1500-byte MTU", MaxDatagramSize)
	}

	full := Message{Header: testHeader(), Body: Ready{Total: MaxReadyMembers, Members: make([]Member, MaxReadyMembers)}}
	b, err := Encode(full)
	if err != nil {
		t.Fatalf("Ready with MaxReadyMembers: %v", err)
	}
	if len(b) > MaxPacketSize {
		t.Fatalf("Ready with MaxReadyMembers is %d bytes", len(b))
	}
	if MaxPacketSize-len(b) >= memberSize {
		t.Fatalf("another member would fit: %d bytes left", MaxPacketSize-len(b))
	}

	addr := Message{Header: testHeader(), Body: Beacon{Addr: strings.Repeat("x", MaxAddrLen)}}
	if _, err := Encode(addr); err != nil {
		t.Fatalf("Beacon with MaxAddrLen: %v", err)
	}

	// A valid packet padded past the limit is too large, not malformed.
	if _, err := Decode(append(b, make([]byte, MaxPacketSize+1-len(b))...)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Decode of MaxPacketSize+1 bytes: %v", err)
	}
}

func TestSplitReady(t *testing.T) {
	for _, tc := range []struct {
		n     int
		homes bool
	}{{0, false}, {1, false}, {MaxReadyMembers - 1, false}, {MaxReadyMembers, false}, {MaxReadyMembers + 1, false},
		{2 * MaxReadyMembers, false}, {1000, false}, {1, true}, {MaxReadyMembersHomes, true}, {MaxReadyMembersHomes + 1, true}, {1000, true}} {
		n := tc.n
		t.Run(fmt.Sprintf("%d homes=%v", n, tc.homes), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(n), 1))
			var members []Member
			var homes []uint32
			for range n {
				members = append(members, Member{ID: NodeID(r.Uint64()), Priority: uint8(r.Uint32())}) // not sorted
				if tc.homes {
					homes = append(homes, r.Uint32())
				}
			}
			in := Ready{Group: GroupNumber{Seq: 4, ID: 2}, Version: 9, Members: members, Homes: homes}
			parts := SplitReady(in)
			per := maxReadyMembers(tc.homes)
			if want := max(1, (n+per-1)/per); len(parts) != want {
				t.Fatalf("%d parts, want %d", len(parts), want)
			}
			got, gotHomes := []Member(nil), []uint32(nil)
			for i, p := range parts {
				if p.Group != in.Group || p.Version != in.Version || p.Total != uint32(n) || p.Offset != uint32(len(got)) {
					t.Fatalf("part %d: %v", i, p)
				}
				b, err := Encode(Message{Header: testHeader(), Body: p})
				if err != nil {
					t.Fatalf("part %d does not encode: %v", i, err)
				}
				m, err := Decode(b)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, m.Body.(Ready).Members...)
				gotHomes = append(gotHomes, m.Body.(Ready).Homes...)
			}
			if !reflect.DeepEqual(got, members) || !reflect.DeepEqual(gotHomes, homes) {
				t.Fatalf("reassembled list differs")
			}
			// Parts cannot grow into each other.
			if len(parts) > 1 {
				_ = append(parts[0].Members, Member{ID: 1})
				if parts[1].Members[0] != members[per] {
					t.Fatalf("appending to part 0 overwrote part 1")
				}
			}
		})
	}
	t.Run("fragment", func(t *testing.T) {
		// Splitting a part of a larger list keeps absolute offsets.
		parts := SplitReady(Ready{Total: 1000, Offset: 100, Members: make([]Member, 300)})
		if len(parts) != 3 || parts[0].Offset != 100 || parts[2].Offset != 100+2*MaxReadyMembers || parts[2].Total != 1000 {
			t.Fatalf("parts: %v", parts)
		}
	})
}

func TestDropReason(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("x"), "other"},
		{errorf(ErrTruncated, "x"), "truncated"},
		{fmt.Errorf("read: %w", errorf(ErrTooLarge, "x")), "too_large"},
		{errorf(ErrVersion, "x"), "version"},
		{errorf(ErrType, "x"), "type"},
		{errorf(ErrMalformed, "x"), "malformed"},
		{errorf(ErrAuth, "x"), "auth"},
		{errorf(ErrUnverified, "x"), "unverified"},
		{ErrReplay, "replay"},
	} {
		if got := DropReason(tt.err); got != tt.want {
			t.Errorf("DropReason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if got := strings.Join(DropReasons(), ","); got != "truncated,too_large,version,type,malformed,auth,replay,unverified,other" {
		t.Errorf("DropReasons() = %s", got)
	}
}

func ExampleEncode() {
	m := Message{
		Header: Header{From: 3, Priority: DefaultPriority, Boot: 0x5eed, Counter: 1,
			Group: GroupNumber{Seq: 17, ID: 3}, State: StateNormal},
		Body: Invitation{Group: GroupNumber{Seq: 18, ID: 3}},
	}
	b, err := Encode(m)
	if err != nil {
		panic(err)
	}
	got, err := Decode(b)
	fmt.Println(len(b), got, err)
	_, err = Decode(b[:50])
	fmt.Println(err, DropReason(err))
	// Output:
	// 94 Invitation(18.3) from=3/100 g=17.3 normal <nil>
	// wire: truncated Invitation: want 94 bytes, have 50 truncated
}

func ExampleSplitReady() {
	members := make([]Member, 300)
	for i := range members {
		members[i] = Member{ID: NodeID(i + 1), Priority: DefaultPriority}
	}
	for _, part := range SplitReady(Ready{Group: GroupNumber{Seq: 5, ID: 300}, Version: 1, Members: members}) {
		fmt.Println(part.Offset, len(part.Members), part.Total)
	}
	// Output:
	// 0 143 300
	// 143 143 300
	// 286 14 300
}
