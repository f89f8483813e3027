package wire

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// NodeID identifies a node on the LAN. Zero is never a valid node; as a
// destination it means "everyone" (see Broadcast).
type NodeID uint64

// Broadcast as a destination asks the runtime to deliver a message to every
// node it can reach (one multicast datagram, or one unicast per known peer
// where multicast is unavailable).
const Broadcast NodeID = 0

// DefaultPriority matches keepalived's default VRRP priority.
const DefaultPriority uint8 = 100

// Rank orders nodes: a node that cannot persist (Degraded) below every
// node that can, then an incumbent leader that does not give way
// (FlagIncumbent) above every other, then by priority, then by ID. The
// higher rank wins every election and every merge.
type Rank struct {
	// Degraded is set for a node whose data dir cannot be written: it
	// cannot create group numbers, so it steps aside (FlagDegraded).
	Degraded bool
	// Incumbent is set for a leader that keeps leading when a node of
	// higher priority returns (FlagIncumbent).
	Incumbent bool
	Priority  uint8
	ID        NodeID
}

// Less reports whether r ranks below o.
func (r Rank) Less(o Rank) bool {
	if r.Degraded != o.Degraded {
		return r.Degraded
	}
	if r.Incumbent != o.Incumbent {
		return o.Incumbent
	}
	if r.Priority != o.Priority {
		return r.Priority < o.Priority
	}
	return r.ID < o.ID
}

func (r Rank) String() string {
	s := fmt.Sprintf("%d/%d", r.ID, r.Priority)
	if r.Incumbent {
		s += "(incumbent)"
	}
	if r.Degraded {
		s += "(degraded)"
	}
	return s
}

// Member is one node of a group as the coordinator announces it: enough to
// rank it in a later bully election.
type Member struct {
	ID       NodeID
	Priority uint8
}

// Rank returns the member's rank.
func (m Member) Rank() Rank { return Rank{Priority: m.Priority, ID: m.ID} }

// GroupNumber names a group: a sequence number and the ID of the node that
// created it, which is also the group's coordinator. Only node id ever
// creates numbers ending in id, and it persists the sequence before use, so a
// number is never created twice.
type GroupNumber struct {
	Seq uint64
	ID  NodeID
}

// IsZero reports whether g is the zero value (no group yet).
func (g GroupNumber) IsZero() bool { return g.Seq == 0 && g.ID == 0 }

// Less orders group numbers by sequence, then by coordinator ID.
func (g GroupNumber) Less(o GroupNumber) bool {
	if g.Seq != o.Seq {
		return g.Seq < o.Seq
	}
	return g.ID < o.ID
}

// String prints the number as "seq.id", e.g. "17.3".
func (g GroupNumber) String() string {
	return strconv.FormatUint(g.Seq, 10) + "." + strconv.FormatUint(uint64(g.ID), 10)
}

// ParseGroupNumber parses the "seq.id" form printed by String.
func ParseGroupNumber(s string) (GroupNumber, error) {
	a, b, ok := strings.Cut(s, ".")
	if !ok {
		return GroupNumber{}, fmt.Errorf("wire: group number %q: want seq.id", s)
	}
	seq, err := strconv.ParseUint(a, 10, 64)
	if err != nil {
		return GroupNumber{}, fmt.Errorf("wire: group number %q: bad seq: %w", s, err)
	}
	id, err := strconv.ParseUint(b, 10, 64)
	if err != nil {
		return GroupNumber{}, fmt.Errorf("wire: group number %q: bad id: %w", s, err)
	}
	return GroupNumber{Seq: seq, ID: NodeID(id)}, nil
}

// State is a node's state in Garcia-Molina's invitation algorithm.
type State uint8

const (
	// StateNormal: the node works in its group.
	StateNormal State = 1
	// StateElection: the node is creating a group (merging as coordinator,
	// or running bully after its coordinator failed).
	StateElection State = 2
	// StateReorganization: the node accepted an invitation and waits for
	// the new coordinator's Ready.
	StateReorganization State = 3
)

func (s State) String() string {
	switch s {
	case StateNormal:
		return "normal"
	case StateElection:
		return "election"
	case StateReorganization:
		return "reorganization"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Valid reports whether s is one of the defined states.
func (s State) Valid() bool { return s >= StateNormal && s <= StateReorganization }

// Role is a node's role in its group: it coordinates the group (the group
// number ends in its ID; see Header.IsCoordinator) or takes part in it. It
// is defined here, beside State, so that the algorithm (invitation.Role)
// and the API's records (package schema) share one type without the
// records depending on the algorithm.
type Role uint8

const (
	RoleParticipant Role = iota
	RoleCoordinator
)

func (r Role) String() string {
	if r == RoleCoordinator {
		return "coordinator"
	}
	return "participant"
}

// Type identifies a message body. Only append to this list: values are on
// the wire.
type Type uint8

const (
	TypeBeacon            Type = 1  // multicast discovery
	TypeAreYouCoordinator Type = 2  // coordinator → other nodes: are you a coordinator?
	TypeYes               Type = 3  // positive reply to AreYouCoordinator or AreYouThere
	TypeNo                Type = 4  // negative reply to AreYouThere
	TypeAreYouThere       Type = 5  // participant → its coordinator
	TypeInvitation        Type = 6  // coordinator → coordinators and members: join my new group
	TypeAccept            Type = 7  // invitee → inviter
	TypeReady             Type = 8  // coordinator → members: the group is formed (member list)
	TypeReadyAck          Type = 9  // member → coordinator: Ready received
	TypeElection          Type = 10 // bully: I want to be coordinator of the survivors of a group
	TypeAnswer            Type = 11 // bully: a higher-ranked survivor is alive
	TypeCoordinator       Type = 12 // bully, standalone mode: I won
	TypeRingElection      Type = 13 // ring: a candidate circulating among the survivors of a group
	TypeRingElected       Type = 14 // ring, standalone mode: the winner circulating
	TypeRingAck           Type = 15 // ring: the successor received one hop
	TypeChallenge         Type = 16 // runtime: prove that this boot of yours is live (replay protection)
	TypeResponse          Type = 17 // runtime: the answer to a Challenge, from the current boot
	TypeHello             Type = 18 // runtime, multicast: this boot hears multicast and is heard by it
	TypeBeatAck           Type = 19 // member → coordinator: a heartbeat received (liveness; a lease granted)
	TypeDecline           Type = 20 // invitee → inviter: your number is below one I held

	typeMax = TypeDecline

	// NumTypes bounds the type enum: every valid Type is below it, so
	// arrays indexed by Type can be sized [NumTypes].
	NumTypes = typeMax + 1
)

var typeNames = [...]string{
	TypeBeacon:            "Beacon",
	TypeAreYouCoordinator: "AreYouCoordinator",
	TypeYes:               "Yes",
	TypeNo:                "No",
	TypeAreYouThere:       "AreYouThere",
	TypeInvitation:        "Invitation",
	TypeAccept:            "Accept",
	TypeReady:             "Ready",
	TypeReadyAck:          "ReadyAck",
	TypeElection:          "Election",
	TypeAnswer:            "Answer",
	TypeCoordinator:       "Coordinator",
	TypeRingElection:      "RingElection",
	TypeRingElected:       "RingElected",
	TypeRingAck:           "RingAck",
	TypeChallenge:         "Challenge",
	TypeResponse:          "Response",
	TypeHello:             "Hello",
	TypeBeatAck:           "BeatAck",
	TypeDecline:           "Decline",
}

func (t Type) String() string {
	if t >= 1 && t <= typeMax {
		return typeNames[t]
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Valid reports whether t is a known message type.
func (t Type) Valid() bool { return t >= 1 && t <= typeMax }

// Types lists every known message type in wire order.
func Types() []Type {
	ts := make([]Type, 0, typeMax)
	for t := Type(1); t <= typeMax; t++ {
		ts = append(ts, t)
	}
	return ts
}

// Version is the protocol version this package speaks. Version 2 replaced
// version 1's boot incarnation with a random boot nonce and added Flags,
// announced timing, and Challenge and Response. Version 3 added the leader
// lease: heartbeats carry a beat number and the leader's term, members
// acknowledge them (BeatAck), Accept carries the accepter's highest term,
// an invitee may Decline, and Timing announces the lease. Version 4 added
// the quorum settings (Quorum) to Beacon, Accept and BeatAck, so that nodes
// whose --expect or --tie-breaker disagree find out and apply the stricter
// rule (design §8), and FlagFresh. Versions do not interoperate (a packet
// of another version is dropped as "version").
const Version uint8 = 4

// Flags are per-sender bits in the header. Unknown bits are carried
// unchanged, so a later version may define them.
type Flags uint8

const (
	// FlagDegraded: the sender cannot persist its state (a full or
	// read-only disk). It cannot create group numbers, so it ranks below
	// every other node until a save succeeds again.
	FlagDegraded Flags = 1 << 0
	// FlagSettled: the sender's process has run for a whole boot window
	// (design §3.2): set when the window ends, whether or not the
	// process is in a group by then, and kept until it stops. Of two
	// processes that find they share an ID, one still in its boot window
	// gives way to one that has settled (see invitation.Notice).
	FlagSettled Flags = 1 << 1
	// FlagBroadcast: the sender sent the packet to every node (by
	// multicast, and by unicast copies to nodes that do not hear it). A
	// receiver counts the nodes that broadcast beacons and paces its own
	// by that count (design §3.1), so that a LAN's beacons stay within a
	// budget however many nodes send them. A unicast never carries it.
	FlagBroadcast Flags = 1 << 2
	// FlagIncumbent: the sender leads a group now and does not give way
	// to a returning higher-priority node (--no-preempt, design §8): it
	// ranks above every node without the flag, whatever their priority.
	FlagIncumbent Flags = 1 << 3
	// FlagFresh: the sender's process started without a saved state (a
	// first start, or its data dir was lost). A second process started
	// with an ID already in use usually is one; a restart of the node
	// that holds the ID is not. A node that knew the ID before counts a
	// fresh process of it as one more voter, and a leader counts none of
	// its grants (design §8).
	FlagFresh Flags = 1 << 4
	// FlagPrimary: the sender coordinates a group and counts itself
	// primary now (with a quorum: it holds its lease). Its participants
	// call themselves primary only while their coordinator's last
	// message said so (design §8): a participant's member list alone can
	// count a process its leader does not (a second process of an ID).
	FlagPrimary Flags = 1 << 5
)

// Header is carried by every message. The algorithm fills From, Priority,
// Flags, Boot, Group and State; the runtime fills Version and Counter when
// it sends.
type Header struct {
	Version  uint8
	Type     Type
	From     NodeID
	Priority uint8
	Flags    Flags
	// Boot is the sender's boot nonce: random, drawn at every start of the
	// process. It tells two processes with one ID apart, and a restarted
	// node from a replay of its previous life (see ReplayWindow).
	Boot    uint64
	Counter uint64 // packet counter within Boot, for replay rejection
	// Group is the sender's group; zero while the sender boots (it has not
	// yet formed or joined a group).
	Group GroupNumber
	State State
}

// Rank returns the sender's rank.
func (h Header) Rank() Rank {
	return Rank{Degraded: h.Flags&FlagDegraded != 0, Incumbent: h.Flags&FlagIncumbent != 0, Priority: h.Priority, ID: h.From}
}

// Booting reports whether the sender has not yet formed or joined a group.
func (h Header) Booting() bool { return h.Group.IsZero() }

// IsCoordinator reports whether the sender coordinates the group it
// announces: the coordinator of a group is the node that created its number.
func (h Header) IsCoordinator() bool { return h.Group.ID == h.From && h.From != 0 }

// Body is a message body. Each body type has a fixed Type.
type Body interface {
	Type() Type
	String() string
}

// Message is a header and a body. Header.Type is set from the body by
// Encode; algorithm code may leave it zero.
type Message struct {
	Header
	Body Body
}

// String is a one-line description for logs and test traces.
func (m Message) String() string {
	body := "<nil>"
	if m.Body != nil {
		body = m.Body.String()
	}
	deg := ""
	if m.Flags&FlagDegraded != 0 {
		deg = " degraded"
	}
	if m.Booting() {
		deg += " unattached"
	}
	return fmt.Sprintf("%s from=%d/%d g=%s %s%s", body, m.From, m.Priority, m.Group, m.State, deg)
}

// Envelope is a message with its destination, as the algorithms emit it.
type Envelope struct {
	To NodeID // Broadcast for every reachable node
	// ToBoot, when set, names the boot of To the message answers: the
	// runtime sends it where that boot's packets came from, not to where
	// the ID's latest packets came from (two processes may share an ID).
	ToBoot uint64
	Msg    Message
}

func (e Envelope) String() string {
	to := "all"
	if e.To != Broadcast {
		to = strconv.FormatUint(uint64(e.To), 10)
	}
	return "→" + to + " " + e.Msg.String()
}

// Election algorithms, as Timing announces them.
const (
	AlgUnknown uint8 = 0
	AlgBully   uint8 = 1
	AlgRing    uint8 = 2
)

// Timing is what a sender announces of its intervals, so that a receiver
// times the sender's phases by the sender's clock rather than its own: the
// durations are on the wire in whole milliseconds (rounded up), zero when
// not announced. Election is the algorithm (AlgBully, AlgRing) a group's
// survivors run; a coordinator's Ready sets it for its whole group.
type Timing struct {
	AliveInterval   time.Duration
	AliveTimeout    time.Duration
	AnswerTimeout   time.Duration
	AcceptWindow    time.Duration
	ReadyTimeout    time.Duration
	ElectionTimeout time.Duration
	// MemberTimeout: the failure detector's pace (memberlist).
	MemberTimeout time.Duration
	// Lease: how long a member's acknowledgement of a heartbeat binds it
	// to the leader (design §8): a member grants the leader's lease for
	// this long after the heartbeat it acknowledged.
	Lease    time.Duration
	Election uint8
}

// IsZero reports whether nothing is announced.
func (t Timing) IsZero() bool { return t == Timing{} }

func (t Timing) String() string {
	alg := map[uint8]string{AlgBully: "bully", AlgRing: "ring"}[t.Election]
	if alg == "" {
		alg = "alg(" + strconv.Itoa(int(t.Election)) + ")"
	}
	return fmt.Sprintf("alive=%v/%v answer=%v accept=%v ready=%v election=%v member=%v lease=%v %s",
		t.AliveInterval, t.AliveTimeout, t.AnswerTimeout, t.AcceptWindow, t.ReadyTimeout, t.ElectionTimeout, t.MemberTimeout, t.Lease, alg)
}

// Beacon announces a node on the multicast group. Its header says who the
// sender is, its group and state. A coordinator's beacon is also its
// group's heartbeat: sent every AliveInterval, it tells every member at
// once that the coordinator is alive (an unsolicited Yes to AreYouThere).
type Beacon struct {
	// Addr is the sender's memberlist (gossip) address, so that a
	// receiver that does not know the sender can join it; host:port, at
	// most MaxAddrLen bytes.
	Addr string
	// HighWater is the highest group-number sequence the sender has seen,
	// so that a booting node whose state was lost or restored from an old
	// copy creates numbers above every number its peers know of.
	HighWater uint64
	// Version and Size are the sender's member-list version and its length
	// (a coordinator's; zero otherwise).
	Version uint64
	Size    uint32
	// Timing is the sender's (see Timing).
	Timing Timing
	// Beat numbers a coordinator's heartbeats (zero in other beacons);
	// AckReq asks each member that receives it for a BeatAck, which the
	// coordinator counts as the member's sign of life and, in quorum
	// mode, as its grant of the lease. Term is the leader's term (zero
	// when the sender does not lead).
	Beat   uint64
	AckReq bool
	Term   GroupNumber
	// Quorum is the sender's quorum settings and, for a leader's
	// heartbeat, the rule it counts its lease by.
	Quorum Quorum
}

// Quorum is what a node announces of primary-partition mode (--expect):
// its configured settings, and the rule it applies. Nodes whose settings
// disagree (a typo in one unit file, a rolling change of --expect, a node
// added before the others were reconfigured) each learn it, report it, and
// count by the strictest rule any of them announces (design §8).
type Quorum struct {
	// Expect and TieBreaker are the sender's --expect and --tie-breaker
	// (zero: not set).
	Expect     uint32
	TieBreaker NodeID
	// Voters is the number of voters the sender's majority is of: its
	// Expect, or more when it knows of more nodes, or of a node that
	// announces a larger Expect. Tie is the tie-breaker it honours in an
	// exact half: its TieBreaker, or 0 when it knows of a node that
	// disagrees, or of more voters than Expect.
	Voters uint32
	Tie    NodeID
	// Age is how long the sender's process has run, in milliseconds
	// (saturating): a node that knew a member by its ID tells the process
	// it knew from one that started later.
	Age uint32
	// Home identifies where the sender keeps its state: a hash of the
	// machine's identity and the data dir (0: unknown). A later process
	// of an ID at the same home is the node restarted; one elsewhere,
	// started without a saved state, is a second process given the ID.
	Home uint32
}

// IsZero reports whether nothing is announced (the sender runs without a
// quorum).
func (q Quorum) IsZero() bool { return q == Quorum{} }

func (q Quorum) String() string {
	s := fmt.Sprintf("expect=%d", q.Expect)
	if q.TieBreaker != 0 {
		s += fmt.Sprintf(" tb=%d", q.TieBreaker)
	}
	if q.Voters != 0 && (q.Voters != q.Expect || q.Tie != q.TieBreaker) {
		s += fmt.Sprintf(" rule=%d", q.Voters)
		if q.Tie != 0 {
			s += fmt.Sprintf("/tb%d", q.Tie)
		}
	}
	return s
}

// AreYouCoordinator asks the receiver whether it is Normal and coordinator.
type AreYouCoordinator struct{}

// Yes answers AreYouCoordinator (the sender is Normal and coordinator of
// Header.Group) or AreYouThere (the receiver still belongs to the sender's
// group; Version is the group's current member-list version).
type Yes struct {
	Query   Type
	Version uint64
}

// No answers AreYouThere: the receiver is not (or no longer) a member of the
// group it asked about.
type No struct {
	Query Type
}

// AreYouThere is a participant's liveness probe of its coordinator for
// group Group.
type AreYouThere struct {
	Group GroupNumber
}

// Invitation asks the receiver to join group Group, whose coordinator is
// Group.ID. An invited coordinator forwards it, unchanged, to its members.
// Timing is the inviter's: an invitee waits for the Ready as long as the
// inviter's accept window and Ready retransmissions take, not its own.
type Invitation struct {
	Group  GroupNumber
	Timing Timing
}

// Accept tells the coordinator of Group that the sender joined it. Term is
// the highest leadership term the sender has seen: a leader whose own term
// is lower takes a new one (design §8), so that terms only grow.
type Accept struct {
	Group  GroupNumber
	Term   GroupNumber
	Quorum Quorum
}

// BeatAck acknowledges heartbeat Beat of Group's coordinator. It is the
// member's sign of life. Grant says that the member binds itself to the
// coordinator's lease (it holds no grant to another leader, and the
// heartbeat's term is not below Term); Term is the highest term the member
// has seen. Quorum is the member's quorum settings and the rule it
// holds a leader to: it grants only a leader whose rule is at least as
// strict (design §8).
type BeatAck struct {
	Group  GroupNumber
	Beat   uint64
	Grant  bool
	Term   GroupNumber
	Quorum Quorum
}

// Decline refuses an invitation to Group: the sender held Held, a higher
// number, and a node's group numbers only grow (design §4). The inviter
// renumbers above Held and invites again.
type Decline struct {
	Group GroupNumber
	Held  GroupNumber
}

// Ready carries (part of) the member list of version Version of group
// Group. A list too long for one datagram is split: Total is the list's
// length and Offset the index of Members[0] in it. Timing is the
// coordinator's, which its members follow inside the group (heartbeat
// period, failure timeouts, and the election algorithm its survivors run).
type Ready struct {
	Group   GroupNumber
	Version uint64
	Timing  Timing
	Total   uint32
	Offset  uint32
	Members []Member
	// Homes, when set, has the Quorum.Home of each of Members, in order
	// (quorum mode): a member then knows where each other member keeps
	// its state, and so tells a restart from a second process.
	Homes []uint32
}

// ReadyAck acknowledges the whole member list Version of Group.
type ReadyAck struct {
	Group   GroupNumber
	Version uint64
}

// Election is bully's "elect me" among the survivors of group Group.
type Election struct {
	Group GroupNumber
}

// Answer is bully's reply to Election from a higher-ranked survivor.
type Answer struct {
	Group GroupNumber
}

// Coordinator is bully's victory message, used when bully runs on its own.
// Inside groupd the winner's Invitation plays this role.
type Coordinator struct {
	Group GroupNumber
}

// RingElection is the Chang-Roberts ring election's "elect me": it carries
// the highest candidate seen so far around the ring of the survivors of
// group Group, in election round Round (see package ring).
type RingElection struct {
	Group     GroupNumber
	Round     uint32
	Candidate Member
}

// RingElected is the ring election's victory message, circulated by the
// winner once around the ring when the election runs on its own. Inside
// groupd the winner's Invitation plays this role.
type RingElected struct {
	Group  GroupNumber
	Round  uint32
	Leader Member
}

// RingAck tells a ring predecessor that its RingElection or RingElected
// (Of) for Group, Round and Candidate arrived, so it need not skip the
// sender as dead. Of is TypeRingElection or TypeRingElected.
type RingAck struct {
	Group     GroupNumber
	Of        Type
	Round     uint32
	Candidate Member
}

// Challenge asks the receiver to prove that the boot named in its header
// (Boot) is its live one: a receiver that has not yet seen packets of a
// sender's current boot holds them until a Response echoes Nonce. Only
// the runtimes exchange it (with a key); the algorithms never see it.
type Challenge struct {
	Nonce uint64
}

// Response answers a Challenge from the sender's current boot.
type Response struct {
	Nonce uint64
}

// Hello is multicast by a runtime that received one broadcast twice from
// the same sender, by multicast and as a unicast copy: the sender copies
// its broadcasts to nodes it never heard over multicast (for --join
// peers across a router), and a node that went quiet before the sender
// started listening was never heard. Hearing Hello over multicast, every
// runtime knows the sender's boot is reachable by multicast and stops its
// copies. Only the runtimes exchange it; the algorithms never see it.
type Hello struct{}

func (Beacon) Type() Type            { return TypeBeacon }
func (AreYouCoordinator) Type() Type { return TypeAreYouCoordinator }
func (Yes) Type() Type               { return TypeYes }
func (No) Type() Type                { return TypeNo }
func (AreYouThere) Type() Type       { return TypeAreYouThere }
func (Invitation) Type() Type        { return TypeInvitation }
func (Accept) Type() Type            { return TypeAccept }
func (Ready) Type() Type             { return TypeReady }
func (ReadyAck) Type() Type          { return TypeReadyAck }
func (Election) Type() Type          { return TypeElection }
func (Answer) Type() Type            { return TypeAnswer }
func (Coordinator) Type() Type       { return TypeCoordinator }
func (RingElection) Type() Type      { return TypeRingElection }
func (RingElected) Type() Type       { return TypeRingElected }
func (RingAck) Type() Type           { return TypeRingAck }
func (Challenge) Type() Type         { return TypeChallenge }
func (Response) Type() Type          { return TypeResponse }
func (Hello) Type() Type             { return TypeHello }
func (BeatAck) Type() Type           { return TypeBeatAck }
func (Decline) Type() Type           { return TypeDecline }

func (b Beacon) String() string {
	if b.Version == 0 && b.Size == 0 {
		return fmt.Sprintf("Beacon(%s hw=%d)", b.Addr, b.HighWater)
	}
	beat := ""
	if b.Beat != 0 {
		beat = fmt.Sprintf(" #%d", b.Beat)
		if b.AckReq {
			beat += "?"
		}
	}
	if !b.Term.IsZero() {
		beat += " term " + b.Term.String()
	}
	return fmt.Sprintf("Beacon(%s hw=%d v%d n=%d%s)", b.Addr, b.HighWater, b.Version, b.Size, beat)
}
func (AreYouCoordinator) String() string { return "AreYouCoordinator" }
func (b Yes) String() string             { return fmt.Sprintf("Yes(%s v%d)", b.Query, b.Version) }
func (b No) String() string              { return fmt.Sprintf("No(%s)", b.Query) }
func (b AreYouThere) String() string     { return "AreYouThere(" + b.Group.String() + ")" }
func (b Invitation) String() string      { return "Invitation(" + b.Group.String() + ")" }
func (b Challenge) String() string       { return fmt.Sprintf("Challenge(%016x)", b.Nonce) }
func (b Response) String() string        { return fmt.Sprintf("Response(%016x)", b.Nonce) }
func (Hello) String() string             { return "Hello" }
func (b Accept) String() string {
	if b.Term.IsZero() {
		return "Accept(" + b.Group.String() + ")"
	}
	return "Accept(" + b.Group.String() + " term " + b.Term.String() + ")"
}
func (b BeatAck) String() string {
	g := ""
	if b.Grant {
		g = " grant"
	}
	return fmt.Sprintf("BeatAck(%s #%d%s term %s)", b.Group, b.Beat, g, b.Term)
}
func (b Decline) String() string {
	return "Decline(" + b.Group.String() + " held " + b.Held.String() + ")"
}
func (b ReadyAck) String() string    { return fmt.Sprintf("ReadyAck(%s v%d)", b.Group, b.Version) }
func (b Election) String() string    { return "Election(" + b.Group.String() + ")" }
func (b Answer) String() string      { return "Answer(" + b.Group.String() + ")" }
func (b Coordinator) String() string { return "Coordinator(" + b.Group.String() + ")" }
func (b RingElection) String() string {
	return fmt.Sprintf("RingElection(%s r%d %s)", b.Group, b.Round, b.Candidate.Rank())
}
func (b RingElected) String() string {
	return fmt.Sprintf("RingElected(%s r%d %s)", b.Group, b.Round, b.Leader.Rank())
}
func (b RingAck) String() string {
	return fmt.Sprintf("RingAck(%s %s r%d %s)", b.Group, b.Of, b.Round, b.Candidate.Rank())
}

func (b Ready) String() string {
	ids := make([]string, len(b.Members))
	for i, m := range b.Members {
		ids[i] = strconv.FormatUint(uint64(m.ID), 10)
	}
	part := ""
	if int(b.Total) != len(b.Members) {
		part = fmt.Sprintf(" [%d+%d/%d]", b.Offset, len(b.Members), b.Total)
	}
	return fmt.Sprintf("Ready(%s v%d%s [%s])", b.Group, b.Version, part, strings.Join(ids, " "))
}
