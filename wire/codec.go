package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Size limits. Every packet must fit one UDP datagram without IP
// fragmentation: a lost fragment loses the whole datagram, and fragments are
// often dropped outright by firewalls, so a fragmented Ready would fail far
// more often than the loss rate of the LAN suggests.
//
// The arithmetic, for a 1500-byte Ethernet MTU:
//
//	IPv4: 1500 - 20 (IP) - 8 (UDP) = 1472 bytes of UDP payload
//	IPv6: 1500 - 40 (IP) - 8 (UDP) = 1452 bytes of UDP payload
//	sealed packet: MaxPacketSize + SealOverhead = 1400 + 29 = 1429 <= 1452
//
// which still leaves 23 bytes for IPv6 extension headers or a tunnel's
// encapsulation before anything fragments.
const (
	// MaxPacketSize is the largest encoded message, in bytes. Encode fails
	// above it and Decode rejects longer input.
	MaxPacketSize = 1400

	// HeaderSize is the size of the fixed header that starts every
	// encoded message.
	HeaderSize = 45

	// MaxAddrLen is the longest Beacon.Addr, in bytes: its length is sent
	// as one byte. A "host:port" with a DNS name is at most 253+1+5 bytes,
	// and an IP literal is far shorter.
	MaxAddrLen = 255

	// MaxReadyMembers is the largest member list one Ready datagram
	// carries (143). Longer lists are split with SplitReady across several
	// Ready datagrams that share Group and Version and differ in Offset.
	// The limit already leaves room for sealing (see MaxPacketSize).
	MaxReadyMembers = (MaxPacketSize - HeaderSize - readyFixedSize) / memberSize

	// MaxReadyMembersHomes is MaxReadyMembers for a Ready that carries
	// each member's home (Ready.Homes) as well (98).
	MaxReadyMembersHomes = (MaxPacketSize - HeaderSize - readyFixedSize) / (memberSize + homeSize)
)

const (
	groupSize      = 8 + 8                                                       // Seq, ID
	memberSize     = 8 + 1                                                       // ID, Priority
	timingSize     = 8*4 + 1                                                     // eight durations in ms, Election
	quorumSize     = 4 + 8 + 4 + 8 + 4 + 4                                       // Expect, TieBreaker, Voters, Tie, Age, Home
	homeSize       = 4                                                           // a Ready member's home
	beaconFixed    = 1 + 8 + 8 + 4 + timingSize + 8 + 1 + groupSize + quorumSize // len(Addr), HighWater, Version, Size, Timing, Beat, AckReq, Term, Quorum
	acceptSize     = 2*groupSize + quorumSize                                    // Group, Term, Quorum
	beatAckSize    = groupSize + 8 + 1 + groupSize + quorumSize                  // Group, Beat, Grant, Term, Quorum
	declineSize    = 2 * groupSize                                               // Group, Held
	invitationSize = groupSize + timingSize                                      // Group, Timing
	readyFixedSize = groupSize + 8 + timingSize + 4 + 4 + 2 + 1                  // Group, Version, Timing, Total, Offset, count, homes
	readyAckSize   = groupSize + 8                                               // Group, Version
	yesSize        = 1 + 8                                                       // Query, Version
	noSize         = 1                                                           // Query
	nonceSize64    = 8                                                           // Challenge, Response
	ringSize       = groupSize + 4 + memberSize                                  // Group, Round, Candidate or Leader
	ringAckSize    = 1 + ringSize                                                // Of, then as ringSize
)

// maxTimingMS is the longest duration Timing carries: uint32 milliseconds.
const maxTimingMS = 1<<32 - 1

// Sentinel errors: every error returned by Decode, Encode, Sealer and
// ReplayWindow wraps exactly one of them, so that the runtime can count
// dropped packets by reason (see DropReason) while logging the full message.
var (
	// ErrTruncated: the packet ends before the message does.
	ErrTruncated = errors.New("wire: truncated packet")
	// ErrTooLarge: the packet or message exceeds a size limit.
	ErrTooLarge = errors.New("wire: packet too large")
	// ErrVersion: the packet speaks a protocol version this package does
	// not know.
	ErrVersion = errors.New("wire: unknown protocol version")
	// ErrType: the packet carries a message type this package does not
	// know, or a Body cannot be encoded.
	ErrType = errors.New("wire: unknown message type")
	// ErrMalformed: the packet is complete but a field is invalid
	// (a bad state, inconsistent Ready offsets, trailing bytes...).
	ErrMalformed = errors.New("wire: malformed packet")
	// ErrAuth: the packet is not authentic: wrong key, tampered or
	// truncated sealed packet, or sealed on one side only.
	ErrAuth = errors.New("wire: authentication failed")
	// ErrReplay: the packet was already received, is older than the
	// replay window, or comes from a boot of its sender that is no longer
	// live (see ReplayWindow).
	ErrReplay = errors.New("wire: replayed packet")
	// ErrUnverified: the packet comes from a boot of its sender that the
	// receiver has not verified yet; the runtime challenges the sender
	// (see ReplayWindow).
	ErrUnverified = errors.New("wire: sender's boot not verified")
)

var dropReasons = []struct {
	err   error
	label string
}{
	{ErrTruncated, "truncated"},
	{ErrTooLarge, "too_large"},
	{ErrVersion, "version"},
	{ErrType, "type"},
	{ErrMalformed, "malformed"},
	{ErrAuth, "auth"},
	{ErrReplay, "replay"},
	{ErrUnverified, "unverified"},
}

// DropReason returns a short, fixed metric label for an error returned by
// this package: "truncated", "too_large", "version", "type", "malformed",
// "auth", "replay" or "unverified". It returns "other" for any other error and "" for nil.
// Labels are a closed set (see DropReasons) so that a hostile sender cannot
// blow up the cardinality of a metric.
func DropReason(err error) string {
	if err == nil {
		return ""
	}
	for _, r := range dropReasons {
		if errors.Is(err, r.err) {
			return r.label
		}
	}
	return "other"
}

// DropReasons lists every label DropReason can return for a non-nil error,
// so that metrics can be initialised at zero for each.
func DropReasons() []string {
	labels := make([]string, 0, len(dropReasons)+1)
	for _, r := range dropReasons {
		labels = append(labels, r.label)
	}
	return append(labels, "other")
}

// wireError carries a precise message while matching its sentinel with
// errors.Is, so logs say what was wrong and metrics say which kind.
type wireError struct {
	kind error
	msg  string
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.kind }

func errorf(kind error, format string, args ...any) error {
	return &wireError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// Encode returns the binary encoding of m in a new buffer. See AppendEncode
// for what it refuses.
func Encode(m Message) ([]byte, error) {
	return AppendEncode(nil, m)
}

// AppendEncode appends the binary encoding of m to dst and returns the
// extended buffer; with a reused buffer of MaxPacketSize capacity it does not
// allocate. On error it returns dst unchanged.
//
// Header.Type is taken from the body (whatever m.Type says), and a zero
// Header.Version means the current Version. Encode refuses what Decode would
// reject, so that a bug shows up at the sender rather than as silent drops at
// every receiver: a nil or unknown body, a version other than Version, a zero
// sender ID, an invalid State, a Yes or No whose Query is not a message type,
// a Beacon.Addr over MaxAddrLen, a Ready with Offset+len(Members) > Total, a
// RingAck whose Of is not RingElection or RingElected, or an encoding over
// MaxPacketSize (split long member lists with SplitReady).
func AppendEncode(dst []byte, m Message) ([]byte, error) {
	if m.Body == nil {
		return dst, errorf(ErrType, "wire: cannot encode a message without a body")
	}
	h := m.Header
	h.Type = m.Body.Type()
	if h.Version == 0 {
		h.Version = Version
	}
	if h.Version != Version {
		return dst, errorf(ErrVersion, "wire: cannot encode version %d: this package speaks version %d", h.Version, Version)
	}
	if !h.Type.Valid() {
		return dst, errorf(ErrType, "wire: unknown message type %d", uint8(h.Type))
	}
	if err := checkHeader(h); err != nil {
		return dst, err
	}

	// Validate the body and compute its size before writing anything, so
	// that an oversized Ready is refused without building it.
	size := 0
	switch b := m.Body.(type) {
	case Beacon:
		if len(b.Addr) > MaxAddrLen {
			return dst, errorf(ErrTooLarge, "wire: Beacon address is %d bytes, over the %d-byte limit", len(b.Addr), MaxAddrLen)
		}
		if err := checkTiming(h.Type, b.Timing); err != nil {
			return dst, err
		}
		size = beaconFixed + len(b.Addr)
	case AreYouCoordinator, Hello:
	case Yes:
		if !b.Query.Valid() {
			return dst, errorf(ErrMalformed, "wire: malformed Yes: query %d is not a message type", uint8(b.Query))
		}
		size = yesSize
	case No:
		if !b.Query.Valid() {
			return dst, errorf(ErrMalformed, "wire: malformed No: query %d is not a message type", uint8(b.Query))
		}
		size = noSize
	case AreYouThere, Election, Answer, Coordinator:
		size = groupSize
	case Accept:
		size = acceptSize
	case BeatAck:
		size = beatAckSize
	case Decline:
		size = declineSize
	case Invitation:
		if err := checkTiming(h.Type, b.Timing); err != nil {
			return dst, err
		}
		size = invitationSize
	case Challenge, Response:
		size = nonceSize64
	case Ready:
		if len(b.Homes) != 0 && len(b.Homes) != len(b.Members) {
			return dst, errorf(ErrMalformed, "wire: malformed Ready: %d homes for %d members", len(b.Homes), len(b.Members))
		}
		if max := maxReadyMembers(len(b.Homes) > 0); len(b.Members) > max {
			return dst, errorf(ErrTooLarge, "wire: Ready has %d members, over the %d that fit one packet (use SplitReady)", len(b.Members), max)
		}
		if err := checkReadyRange(b.Offset, len(b.Members), b.Total); err != nil {
			return dst, err
		}
		if err := checkTiming(h.Type, b.Timing); err != nil {
			return dst, err
		}
		size = readyFixedSize + (memberSize+homeSize*boolInt(len(b.Homes) > 0))*len(b.Members)
	case ReadyAck:
		size = readyAckSize
	case RingElection, RingElected:
		size = ringSize
	case RingAck:
		if !isRingHop(b.Of) {
			return dst, errorf(ErrMalformed, "wire: malformed RingAck: %s is not a ring hop", b.Of)
		}
		size = ringAckSize
	default:
		return dst, errorf(ErrType, "wire: cannot encode body of Go type %T (%s)", m.Body, h.Type)
	}
	if HeaderSize+size > MaxPacketSize {
		// Unreachable with today's bodies (the checks above are
		// tighter); kept so that a new body cannot slip past the limit.
		return dst, errorf(ErrTooLarge, "wire: %s is %d bytes, over the %d-byte limit", h.Type, HeaderSize+size, MaxPacketSize)
	}

	out := slices.Grow(dst, HeaderSize+size)
	out = appendHeader(out, h)
	switch b := m.Body.(type) {
	case Beacon:
		out = append(out, byte(len(b.Addr)))
		out = append(out, b.Addr...)
		out = binary.BigEndian.AppendUint64(out, b.HighWater)
		out = binary.BigEndian.AppendUint64(out, b.Version)
		out = binary.BigEndian.AppendUint32(out, b.Size)
		out = appendTiming(out, b.Timing)
		out = binary.BigEndian.AppendUint64(out, b.Beat)
		out = appendBool(out, b.AckReq)
		out = appendGroup(out, b.Term)
		out = appendQuorum(out, b.Quorum)
	case AreYouCoordinator, Hello:
	case Yes:
		out = append(out, byte(b.Query))
		out = binary.BigEndian.AppendUint64(out, b.Version)
	case No:
		out = append(out, byte(b.Query))
	case AreYouThere:
		out = appendGroup(out, b.Group)
	case Invitation:
		out = appendGroup(out, b.Group)
		out = appendTiming(out, b.Timing)
	case Challenge:
		out = binary.BigEndian.AppendUint64(out, b.Nonce)
	case Response:
		out = binary.BigEndian.AppendUint64(out, b.Nonce)
	case Accept:
		out = appendGroup(out, b.Group)
		out = appendGroup(out, b.Term)
		out = appendQuorum(out, b.Quorum)
	case BeatAck:
		out = appendGroup(out, b.Group)
		out = binary.BigEndian.AppendUint64(out, b.Beat)
		out = appendBool(out, b.Grant)
		out = appendGroup(out, b.Term)
		out = appendQuorum(out, b.Quorum)
	case Decline:
		out = appendGroup(out, b.Group)
		out = appendGroup(out, b.Held)
	case Election:
		out = appendGroup(out, b.Group)
	case Answer:
		out = appendGroup(out, b.Group)
	case Coordinator:
		out = appendGroup(out, b.Group)
	case Ready:
		out = appendGroup(out, b.Group)
		out = binary.BigEndian.AppendUint64(out, b.Version)
		out = appendTiming(out, b.Timing)
		out = binary.BigEndian.AppendUint32(out, b.Total)
		out = binary.BigEndian.AppendUint32(out, b.Offset)
		out = binary.BigEndian.AppendUint16(out, uint16(len(b.Members)))
		out = appendBool(out, len(b.Homes) > 0)
		for _, mb := range b.Members {
			out = binary.BigEndian.AppendUint64(out, uint64(mb.ID))
			out = append(out, mb.Priority)
		}
		for _, h := range b.Homes {
			out = binary.BigEndian.AppendUint32(out, h)
		}
	case ReadyAck:
		out = appendGroup(out, b.Group)
		out = binary.BigEndian.AppendUint64(out, b.Version)
	case RingElection:
		out = appendRing(out, b.Group, b.Round, b.Candidate)
	case RingElected:
		out = appendRing(out, b.Group, b.Round, b.Leader)
	case RingAck:
		out = append(out, byte(b.Of))
		out = appendRing(out, b.Group, b.Round, b.Candidate)
	}
	return out, nil
}

// appendRing appends the fields the ring messages share: Group, Round and a
// member (ID, Priority).
func appendRing(b []byte, g GroupNumber, round uint32, m Member) []byte {
	b = appendGroup(b, g)
	b = binary.BigEndian.AppendUint32(b, round)
	b = binary.BigEndian.AppendUint64(b, uint64(m.ID))
	return append(b, m.Priority)
}

func readRing(b []byte) (GroupNumber, uint32, Member) {
	return readGroup(b), binary.BigEndian.Uint32(b[groupSize:]), Member{
		ID:       NodeID(binary.BigEndian.Uint64(b[groupSize+4:])),
		Priority: b[groupSize+12],
	}
}

// appendBool appends a boolean as one byte, 0 or 1; readBool refuses any
// other value, so that the encoding stays canonical.
func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func readBool(t Type, b byte) (bool, error) {
	switch b {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, errorf(ErrMalformed, "wire: malformed %s: boolean byte %d", t, b)
}

// isRingHop reports whether t is a ring message that RingAck acknowledges.
func isRingHop(t Type) bool { return t == TypeRingElection || t == TypeRingElected }

func appendHeader(b []byte, h Header) []byte {
	b = append(b, h.Version, byte(h.Type))
	b = binary.BigEndian.AppendUint64(b, uint64(h.From))
	b = append(b, h.Priority, byte(h.Flags))
	b = binary.BigEndian.AppendUint64(b, h.Boot)
	b = binary.BigEndian.AppendUint64(b, h.Counter)
	b = appendGroup(b, h.Group)
	return append(b, byte(h.State))
}

// checkTiming refuses a Timing the encoding cannot carry exactly: a
// negative duration, one longer than maxTimingMS milliseconds, or one that
// is not a whole number of milliseconds (a canonical encoding must decode
// to the value it was given).
func checkTiming(t Type, tm Timing) error {
	for _, d := range tm.durations() {
		if d < 0 || d%time.Millisecond != 0 || d/time.Millisecond > maxTimingMS {
			return errorf(ErrMalformed, "wire: malformed %s: timing %v is not a whole number of milliseconds in 0..%d", t, d, uint64(maxTimingMS))
		}
	}
	return nil
}

func (t Timing) durations() [8]time.Duration {
	return [8]time.Duration{t.AliveInterval, t.AliveTimeout, t.AnswerTimeout, t.AcceptWindow, t.ReadyTimeout, t.ElectionTimeout, t.MemberTimeout, t.Lease}
}

func appendTiming(b []byte, t Timing) []byte {
	for _, d := range t.durations() {
		b = binary.BigEndian.AppendUint32(b, uint32(d/time.Millisecond))
	}
	return append(b, t.Election)
}

func readTiming(b []byte) Timing {
	ms := func(i int) time.Duration {
		return time.Duration(binary.BigEndian.Uint32(b[4*i:])) * time.Millisecond
	}
	return Timing{
		AliveInterval: ms(0), AliveTimeout: ms(1), AnswerTimeout: ms(2),
		AcceptWindow: ms(3), ReadyTimeout: ms(4), ElectionTimeout: ms(5),
		MemberTimeout: ms(6), Lease: ms(7), Election: b[32],
	}
}

func appendQuorum(b []byte, q Quorum) []byte {
	b = binary.BigEndian.AppendUint32(b, q.Expect)
	b = binary.BigEndian.AppendUint64(b, uint64(q.TieBreaker))
	b = binary.BigEndian.AppendUint32(b, q.Voters)
	b = binary.BigEndian.AppendUint64(b, uint64(q.Tie))
	b = binary.BigEndian.AppendUint32(b, q.Age)
	return binary.BigEndian.AppendUint32(b, q.Home)
}

func readQuorum(b []byte) Quorum {
	return Quorum{
		Expect:     binary.BigEndian.Uint32(b),
		TieBreaker: NodeID(binary.BigEndian.Uint64(b[4:])),
		Voters:     binary.BigEndian.Uint32(b[12:]),
		Tie:        NodeID(binary.BigEndian.Uint64(b[16:])),
		Age:        binary.BigEndian.Uint32(b[24:]),
		Home:       binary.BigEndian.Uint32(b[28:]),
	}
}

func appendGroup(b []byte, g GroupNumber) []byte {
	b = binary.BigEndian.AppendUint64(b, g.Seq)
	return binary.BigEndian.AppendUint64(b, uint64(g.ID))
}

// checkHeader validates the fields Encode and Decode agree to refuse. Node 0
// is never a sender (it means Broadcast), and every live node is in one of
// the three states.
func checkHeader(h Header) error {
	if h.From == 0 {
		return errorf(ErrMalformed, "wire: malformed %s: sender ID is 0", h.Type)
	}
	if !h.State.Valid() {
		return errorf(ErrMalformed, "wire: malformed %s: invalid state %d", h.Type, uint8(h.State))
	}
	return nil
}

func checkReadyRange(offset uint32, n int, total uint32) error {
	if uint64(offset)+uint64(n) > uint64(total) {
		return errorf(ErrMalformed, "wire: malformed Ready: offset %d + %d members exceeds total %d", offset, n, total)
	}
	return nil
}

// DecodeHeader decodes and validates only the header of an encoded message,
// so that the runtime can, for example, check the replay window before
// decoding a body. It checks the packet size, version, type, sender and
// state, but not the body: Decode may still reject the packet.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) == 0 {
		return Header{}, errorf(ErrTruncated, "wire: truncated header: empty packet")
	}
	// Before the size check: a full sealed packet is over MaxPacketSize,
	// and "sealed but no key" is the error the operator needs to see.
	if b[0] == sealedMarker {
		return Header{}, errorf(ErrAuth, "wire: packet is sealed but no key is configured (set the same key on every node)")
	}
	if len(b) > MaxPacketSize {
		return Header{}, errorf(ErrTooLarge, "wire: packet is %d bytes, over the %d-byte limit", len(b), MaxPacketSize)
	}
	if b[0] != Version {
		return Header{}, errorf(ErrVersion, "wire: unknown version %d", b[0])
	}
	if len(b) < 2 {
		return Header{}, errorf(ErrTruncated, "wire: truncated header: want %d bytes, have %d", HeaderSize, len(b))
	}
	t := Type(b[1])
	if !t.Valid() {
		return Header{}, errorf(ErrType, "wire: unknown message type %d", b[1])
	}
	if len(b) < HeaderSize {
		return Header{}, errorf(ErrTruncated, "wire: truncated %s header: want %d bytes, have %d", t, HeaderSize, len(b))
	}
	h := Header{
		Version:  b[0],
		Type:     t,
		From:     NodeID(binary.BigEndian.Uint64(b[2:])),
		Priority: b[10],
		Flags:    Flags(b[11]),
		Boot:     binary.BigEndian.Uint64(b[12:]),
		Counter:  binary.BigEndian.Uint64(b[20:]),
		Group:    readGroup(b[28:]),
		State:    State(b[44]),
	}
	if err := checkHeader(h); err != nil {
		return Header{}, err
	}
	return h, nil
}

func readGroup(b []byte) GroupNumber {
	return GroupNumber{
		Seq: binary.BigEndian.Uint64(b),
		ID:  NodeID(binary.BigEndian.Uint64(b[8:])),
	}
}

// Decode decodes one encoded message. It never panics and never retains b.
// It rejects, with an error wrapping one of the sentinel errors, a packet
// over MaxPacketSize, a sealed packet, an unknown version or type, a
// truncated packet, trailing bytes, and any field Encode would refuse. Every
// length field is checked against the bytes actually present before
// anything is allocated. An empty member list decodes as a nil slice.
//
// The encoding is canonical: for any b that Decode accepts,
// Encode(Decode(b)) returns b.
func Decode(b []byte) (Message, error) {
	h, err := DecodeHeader(b)
	if err != nil {
		return Message{}, err
	}
	body, n, err := decodeBody(h.Type, b)
	if err != nil {
		return Message{}, err
	}
	if n != len(b) {
		return Message{}, errorf(ErrMalformed, "wire: malformed %s: %d trailing bytes after the %d-byte message", h.Type, len(b)-n, n)
	}
	return Message{Header: h, Body: body}, nil
}

// decodeBody decodes the body of a message of type t that starts at
// HeaderSize in b, and returns it with the offset of its end.
func decodeBody(t Type, b []byte) (Body, int, error) {
	off := HeaderSize
	// need checks that n more bytes are present at off.
	need := func(n int) error {
		if len(b)-off < n {
			return errorf(ErrTruncated, "wire: truncated %s: want %d bytes, have %d", t, off+n, len(b))
		}
		return nil
	}
	switch t {
	case TypeBeacon:
		if err := need(1); err != nil {
			return nil, 0, err
		}
		n := int(b[off])
		off++
		if err := need(n + beaconFixed - 1); err != nil {
			return nil, 0, err
		}
		bc := Beacon{Addr: string(b[off : off+n])}
		off += n
		bc.HighWater = binary.BigEndian.Uint64(b[off:])
		bc.Version = binary.BigEndian.Uint64(b[off+8:])
		bc.Size = binary.BigEndian.Uint32(b[off+16:])
		bc.Timing = readTiming(b[off+20:])
		bc.Beat = binary.BigEndian.Uint64(b[off+20+timingSize:])
		ack, err := readBool(t, b[off+28+timingSize])
		if err != nil {
			return nil, 0, err
		}
		bc.AckReq = ack
		bc.Term = readGroup(b[off+29+timingSize:])
		bc.Quorum = readQuorum(b[off+29+timingSize+groupSize:])
		return bc, off + beaconFixed - 1, nil
	case TypeAreYouCoordinator:
		return AreYouCoordinator{}, off, nil
	case TypeHello:
		return Hello{}, off, nil
	case TypeYes, TypeNo:
		size := noSize
		if t == TypeYes {
			size = yesSize
		}
		if err := need(size); err != nil {
			return nil, 0, err
		}
		q := Type(b[off])
		if !q.Valid() {
			return nil, 0, errorf(ErrMalformed, "wire: malformed %s: query %d is not a message type", t, uint8(q))
		}
		if t == TypeNo {
			return No{Query: q}, off + size, nil
		}
		return Yes{Query: q, Version: binary.BigEndian.Uint64(b[off+1:])}, off + size, nil
	case TypeInvitation:
		if err := need(invitationSize); err != nil {
			return nil, 0, err
		}
		return Invitation{Group: readGroup(b[off:]), Timing: readTiming(b[off+groupSize:])}, off + invitationSize, nil
	case TypeChallenge, TypeResponse:
		if err := need(nonceSize64); err != nil {
			return nil, 0, err
		}
		nonce := binary.BigEndian.Uint64(b[off:])
		if t == TypeChallenge {
			return Challenge{Nonce: nonce}, off + nonceSize64, nil
		}
		return Response{Nonce: nonce}, off + nonceSize64, nil
	case TypeAccept:
		if err := need(acceptSize); err != nil {
			return nil, 0, err
		}
		return Accept{Group: readGroup(b[off:]), Term: readGroup(b[off+groupSize:]),
			Quorum: readQuorum(b[off+2*groupSize:])}, off + acceptSize, nil
	case TypeDecline:
		if err := need(declineSize); err != nil {
			return nil, 0, err
		}
		return Decline{Group: readGroup(b[off:]), Held: readGroup(b[off+groupSize:])}, off + declineSize, nil
	case TypeBeatAck:
		if err := need(beatAckSize); err != nil {
			return nil, 0, err
		}
		grant, err := readBool(t, b[off+groupSize+8])
		if err != nil {
			return nil, 0, err
		}
		return BeatAck{
			Group:  readGroup(b[off:]),
			Beat:   binary.BigEndian.Uint64(b[off+groupSize:]),
			Grant:  grant,
			Term:   readGroup(b[off+groupSize+9:]),
			Quorum: readQuorum(b[off+2*groupSize+9:]),
		}, off + beatAckSize, nil
	case TypeAreYouThere, TypeElection, TypeAnswer, TypeCoordinator:
		if err := need(groupSize); err != nil {
			return nil, 0, err
		}
		g := readGroup(b[off:])
		off += groupSize
		switch t {
		case TypeAreYouThere:
			return AreYouThere{Group: g}, off, nil
		case TypeElection:
			return Election{Group: g}, off, nil
		case TypeAnswer:
			return Answer{Group: g}, off, nil
		default:
			return Coordinator{Group: g}, off, nil
		}
	case TypeReady:
		if err := need(readyFixedSize); err != nil {
			return nil, 0, err
		}
		r := Ready{
			Group:   readGroup(b[off:]),
			Version: binary.BigEndian.Uint64(b[off+16:]),
			Timing:  readTiming(b[off+24:]),
			Total:   binary.BigEndian.Uint32(b[off+24+timingSize:]),
			Offset:  binary.BigEndian.Uint32(b[off+28+timingSize:]),
		}
		count := int(binary.BigEndian.Uint16(b[off+32+timingSize:]))
		homes, err := readBool(t, b[off+34+timingSize])
		if err != nil {
			return nil, 0, err
		}
		off += readyFixedSize
		// Check the count against the bytes present before allocating:
		// a forged count must not make us allocate 65535 members.
		if err := need(count * (memberSize + homeSize*boolInt(homes))); err != nil {
			return nil, 0, err
		}
		if homes && count == 0 {
			return nil, 0, errorf(ErrMalformed, "wire: malformed Ready: homes for no members")
		}
		if err := checkReadyRange(r.Offset, count, r.Total); err != nil {
			return nil, 0, err
		}
		if count > 0 {
			r.Members = make([]Member, count)
			for i := range r.Members {
				r.Members[i] = Member{
					ID:       NodeID(binary.BigEndian.Uint64(b[off:])),
					Priority: b[off+8],
				}
				off += memberSize
			}
		}
		if homes {
			r.Homes = make([]uint32, count)
			for i := range r.Homes {
				r.Homes[i] = binary.BigEndian.Uint32(b[off:])
				off += homeSize
			}
		}
		return r, off, nil
	case TypeReadyAck:
		if err := need(readyAckSize); err != nil {
			return nil, 0, err
		}
		return ReadyAck{
			Group:   readGroup(b[off:]),
			Version: binary.BigEndian.Uint64(b[off+16:]),
		}, off + readyAckSize, nil
	case TypeRingElection, TypeRingElected:
		if err := need(ringSize); err != nil {
			return nil, 0, err
		}
		g, round, m := readRing(b[off:])
		if t == TypeRingElection {
			return RingElection{Group: g, Round: round, Candidate: m}, off + ringSize, nil
		}
		return RingElected{Group: g, Round: round, Leader: m}, off + ringSize, nil
	case TypeRingAck:
		if err := need(ringAckSize); err != nil {
			return nil, 0, err
		}
		of := Type(b[off])
		if !isRingHop(of) {
			return nil, 0, errorf(ErrMalformed, "wire: malformed RingAck: %s is not a ring hop", of)
		}
		g, round, m := readRing(b[off+1:])
		return RingAck{Group: g, Of: of, Round: round, Candidate: m}, off + ringAckSize, nil
	}
	// DecodeHeader accepted t, so a missing case is a bug in this file.
	return nil, 0, errorf(ErrType, "wire: no decoder for message type %s", t)
}

// SplitReady splits a Ready whose member list may be too long for one packet
// into Readys of at most MaxReadyMembers members each, in order, each of
// which encodes into one packet. The receiver reassembles the list by
// (Group, Version) from Total and each part's Offset.
//
// r.Members is taken as the list starting at r.Offset; a zero r.Total means
// "the whole list", i.e. Offset+len(Members). A list that already fits is
// returned as a single Ready (with Total filled in), and an empty list as a
// single Ready with no members, so a coordinator always has something to
// send. The parts share r.Members' backing array (capacity-limited, so
// appending to one part cannot overwrite the next).
func SplitReady(r Ready) []Ready {
	if r.Total == 0 {
		r.Total = r.Offset + uint32(len(r.Members))
	}
	max := maxReadyMembers(len(r.Homes) > 0)
	if len(r.Members) <= max {
		return []Ready{r}
	}
	parts := make([]Ready, 0, (len(r.Members)+max-1)/max)
	for start := 0; start < len(r.Members); start += max {
		end := min(start+max, len(r.Members))
		p := r
		p.Offset = r.Offset + uint32(start)
		p.Members = r.Members[start:end:end]
		if len(r.Homes) > 0 {
			p.Homes = r.Homes[start:end:end]
		}
		parts = append(parts, p)
	}
	return parts
}

// maxReadyMembers is how many members one Ready datagram carries, with
// their homes or without.
func maxReadyMembers(homes bool) int {
	if homes {
		return MaxReadyMembersHomes
	}
	return MaxReadyMembers
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
