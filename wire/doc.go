// Package wire defines the messages groupd nodes exchange and their binary
// encoding.
//
// Every packet is one UDP datagram: a fixed header (protocol version, message
// type, sender, sender's priority and flags, boot nonce, packet counter,
// sender's group number and state) followed by a type-specific body. The type enum is
// append-only: a value, once released, keeps its meaning forever.
//
// The algorithm packages (invitation, bully, ring) only build and read the Go
// values defined here; the runtime encodes them with Encode/Decode, optionally
// seals them with a shared key, and rejects replays with a ReplayWindow.
//
// # Encoding
//
// All integers are big-endian and fixed-width, so the encoding is canonical
// (Encode(Decode(b)) == b) and every field sits at a known offset. The
// header is HeaderSize (45) bytes:
//
//	offset size field
//	     0    1 Version (4; versions stay below 0x80, see Sealer)
//	     1    1 Type
//	     2    8 From
//	    10    1 Priority
//	    11    1 Flags (bit 0: FlagDegraded, bit 1: FlagSettled, bit 2: FlagBroadcast,
//	                  bit 3: FlagIncumbent, bit 4: FlagFresh,
//	                  bit 5: FlagPrimary; others carried unchanged)
//	    12    8 Boot (random per start of the sender's process)
//	    20    8 Counter
//	    28    8 Group.Seq (zero with Group.ID: the sender is booting)
//	    36    8 Group.ID
//	    44    1 State (1..3)
//
// Timing is 33 bytes: AliveInterval, AliveTimeout, AnswerTimeout,
// AcceptWindow, ReadyTimeout, ElectionTimeout, MemberTimeout and Lease as
// uint32 milliseconds, then Election uint8 (0 unknown, 1 bully, 2 ring).
// Quorum is 32 bytes: Expect uint32, TieBreaker uint64, Voters uint32, Tie
// uint64, Age uint32, Home uint32. A group number (Group, Term, Held) is
// Seq uint64, ID uint64. The body follows at offset 45:
//
//	Beacon            len(Addr) uint8, Addr (at most MaxAddrLen bytes),
//	                  HighWater uint64, Version uint64, Size uint32, Timing,
//	                  Beat uint64, AckReq uint8, Term, Quorum
//	AreYouCoordinator, Hello:
//	                  (empty)
//	Yes               Query uint8, Version uint64
//	No                Query uint8
//	AreYouThere, Election, Answer, Coordinator:
//	                  Group
//	Accept            Group, Term, Quorum
//	BeatAck           Group, Beat uint64, Grant uint8, Term, Quorum
//	Decline           Group, Held
//	Invitation        Group, Timing
//	Ready             Group, Version uint64, Timing, Total uint32, Offset uint32,
//	                  count uint16, homes uint8 (0 or 1),
//	                  count × (ID uint64, Priority uint8), then with homes
//	                  count × Home uint32
//	ReadyAck          Group, Version uint64
//	RingElection, RingElected:
//	                  Group, Round uint32,
//	                  Candidate (or Leader) ID uint64, Priority uint8
//	RingAck           Of uint8 (RingElection or RingElected), then the
//	                  acknowledged message's body as above
//	Challenge, Response:
//	                  Nonce uint64
//
// An encoded message is at most MaxPacketSize (1400) bytes, so that a sealed
// one still fits a 1500-byte MTU without IP fragmentation (the arithmetic is
// next to MaxPacketSize). A Ready therefore carries up to MaxReadyMembers
// (143) members, or MaxReadyMembersHomes (99) with their homes; longer lists are split across several Ready datagrams with
// SplitReady, each giving the list's Total length and the Offset of its first
// member, and the receiver reassembles them by (Group, Version).
//
// Decode never panics, checks every length against the bytes present before
// allocating, and rejects unknown versions and types, truncated or oversized
// packets, trailing bytes and invalid fields. Each error wraps one sentinel
// (ErrTruncated, ErrTooLarge, ErrVersion, ErrType, ErrMalformed, ErrAuth,
// ErrReplay, ErrUnverified) and DropReason maps it to a metric label.
//
// # Sealing
//
// With a key, a Sealer wraps each encoded message in AES-256-GCM with a
// random nonce, adding SealOverhead (29) bytes; a one-byte marker tells
// sealed packets from plain ones, so a node with a key and a node without one
// reject each other's packets with a clear error. SealTo also authenticates
// the destination node (without sending it), so that a packet recorded on
// its way to one node cannot be replayed to another; OpenFor accepts packets
// for the receiving node and broadcasts. A ReplayWindow then rejects replayed
// sealed packets by their Boot and Counter, verifying each sender's live
// boot with a Challenge and Response. ParseKeys reads a key
// file with several keys: the first seals, all open (key rotation).
package wire
