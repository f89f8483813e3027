package invitation

import (
	"sort"
	"time"

	"github.com/groupd/groupd/wire"
)

// purpose says what a new group number is being created for.
type purpose uint8

const (
	forRecovery purpose = iota + 1 // a node without a group: singleton, or inviting the nodes it heard
	forMerge                       // merge lower coordinators' groups into mine
	forFailover                    // bully winner inviting the old members
	forTakeover                    // a participant that outranks its coordinator
)

// reason is how the view change in which a node adopts a number created
// for p is reported: why the number was made. A takeover is reported as a
// merge: the participant's new group absorbs its coordinator's.
func (p purpose) reason() Reason {
	switch p {
	case forMerge, forTakeover:
		return ReasonMerge
	case forFailover:
		return ReasonElection
	}
	return ReasonRecovery
}

// pendingGroup is a group number waiting for its save.
type pendingGroup struct {
	seq     uint64
	purpose purpose
	targets []wire.NodeID // coordinators to invite
	members []wire.NodeID // members of the old group to invite
	fresh   []freshTarget // nodes without a group to invite, by boot
}

// freshTarget is a node without a group, invited at the boot it announced.
type freshTarget struct {
	id   wire.NodeID
	boot uint64
}

// peer is what the node last heard from a node that said it coordinates a
// group. It is kept small because during a cold start of a large LAN
// every node may hear every other node coordinate a singleton group.
type peer struct {
	group     wire.GroupNumber
	heard     time.Duration // when, as time since the node's start (monotonic)
	size      uint32        // its member list's length, from its beacon (0: unknown)
	prio      uint8
	state     wire.State
	degraded  bool
	incumbent bool
	wait      time.Duration // inviteWait by the timing it announced (0: none heard)
}

func (p *peer) isCoordinator(id wire.NodeID) bool { return p.group.ID == id }

func (p *peer) rank(id wire.NodeID) wire.Rank {
	return wire.Rank{Degraded: p.degraded, Incumbent: p.incumbent, Priority: p.prio, ID: id}
}

// abovePeer is a node that outranks this one, as last heard.
type abovePeer struct {
	id    wire.NodeID // 0: none
	rank  wire.Rank
	coord bool // a Normal coordinator (else a node without a group)
	heard time.Time
}

// freshPeer is a node heard without a group (booting, or lost its group).
type freshPeer struct {
	boot    uint64
	rank    wire.Rank
	heard   time.Time
	invited time.Time     // when this node last invited it
	replied time.Time     // when this node last answered its beacon
	wait    time.Duration // inviteWait by the timing it announced (0: none heard)
}

// member is a coordinator's record of one member of its group.
type member struct {
	m wire.Member
	// heard is when the member last gave a sign of life (an Accept, a
	// ReadyAck, a BeatAck, an AreYouThere); granted is when the coordinator
	// sent the latest heartbeat whose acknowledgement granted its lease.
	heard, granted time.Time
}

// checkRound is one AreYouCoordinator round.
type checkRound struct {
	deadline time.Time
	asked    map[wire.NodeID]bool
	lower    []wire.NodeID
	higher   map[wire.NodeID]bool
}

// mergeRound is a coordinator's accept window for a new group.
type mergeRound struct {
	invited  map[wire.NodeID]bool // true once accepted
	targets  []wire.NodeID        // the coordinators among invited
	fresh    map[wire.NodeID]uint64
	deadline time.Time
	resendAt time.Time
	// expect is how many members (besides the coordinator) the new group
	// should have once everyone accepted: the window closes at once when
	// that many have, and runs to its end when it is 0 (unknown).
	expect int
	// declined are invitees that held a higher number (Decline): the
	// window's end renumbers the group and invites them again.
	declined map[wire.NodeID]bool
}

// readyRound is a coordinator's delivery of one member-list version.
type readyRound struct {
	version  uint64
	pending  map[wire.NodeID]bool
	deadline time.Time
	resendAt time.Time
}

// assembly collects the chunks of a split Ready.
type assembly struct {
	group   wire.GroupNumber
	version uint64
	members []wire.Member
	have    []bool
	missing int
}

// backoff holds off merges with a coordinator that did not accept the
// last invitations: each fruitless merge spends a group number.
type backoff struct {
	until time.Time
	wait  time.Duration
}

// Node is one node's invitation-algorithm state machine. It is not safe for
// concurrent use: the runtime owns it from one goroutine and feeds it every
// input through Step. None of its methods block or perform I/O.
type Node struct {
	id   wire.NodeID
	prio uint8
	boot uint64
	t    Timing   // this node's own timing
	gt   Timing   // the timing its group runs by (its coordinator's)
	alg  Election // this node's algorithm, announced when it coordinates
	galg Election // the algorithm its group's survivors run
	rnd  Rand

	// Persistence.
	durable    Durable  // confirmed saved
	want       Durable  // what should be saved
	saving     *Durable // a save in flight
	persistErr string
	retryAt    time.Time // when to retry a failed save
	maxSeen    uint64    // highest sequence seen in any message
	behind     uint64    // highest own number a peer reported above the counter
	pending    *pendingGroup

	state   wire.State
	group   wire.GroupNumber
	members []wire.Member // sorted by ID; replaced, never edited in place
	gen     uint64        // bumped whenever members is replaced
	version uint64
	since   time.Time
	born    time.Time       // New's now: the origin of peer.heard
	settled bool            // has run for a boot window (wire.FlagSettled)
	bootEnd time.Time       // born + the boot window
	stopped bool            // yielded its ID to another process: does nothing more
	dups    map[uint64]bool // boots of other processes with this ID, reported

	// A node without a group.
	attachAt  time.Time     // end of its listening window
	waitUntil time.Time     // end of its wait for a higher node's invitation
	offer     *wire.Message // the latest invitation received within the boot window

	coords     map[wire.NodeID]*peer // nodes that last said they coordinate a group
	coordsDel  int                   // deletions from coords since it was built
	fresh      map[wire.NodeID]*freshPeer
	nextBeacon time.Time
	// nextDiscovery is when a coordinator that heartbeats its members by
	// unicast (unicastHeartbeat) next sends the beacon that lets other
	// coordinators find its group.
	nextDiscovery time.Time
	replied       time.Time // last answer to a node without a group that fresh does not hold (its coordinator, restarted)
	// above is the highest-ranked node heard that outranks this one and
	// would invite it: a Normal coordinator, or a node without a group.
	// announced: a node without a group has multicast a beacon since it
	// detached. See beaconTarget.
	above     abovePeer
	announced bool
	// loud holds the nodes heard broadcasting beacons (wire.FlagBroadcast)
	// lately, and when: how many share the LAN's beacon budget (paced).
	// lastLoud is when this node last broadcast a paced beacon (gate).
	loud     map[wire.NodeID]time.Time
	lastLoud time.Time
	// armedBase is the base period (basePeriod) the beacon schedule
	// follows: armBeacon brings the next beacon forward only when it
	// shrinks.
	armedBase time.Duration

	// Coordinator.
	up        map[wire.NodeID]*member
	nextCheck time.Time
	// nextLate is when a member's acknowledgements may next be late
	// (scanLate).
	nextLate time.Time
	// staleVersion: up changed since the published member list, and the
	// change waits until nextVersionAt (publish).
	staleVersion  bool
	nextVersionAt time.Time
	lastCheck     time.Time
	check         *checkRound
	mergeAt       time.Time // pending merge delay; zero if none
	mergeWith     []wire.NodeID
	merge         *mergeRound
	ready         *readyRound
	prevGroup     wire.GroupNumber // my previous group, to re-invite its laggards
	declined      []wire.NodeID    // invitees that declined this group's number: renumber once Normal
	prevMembers   map[wire.NodeID]bool
	backoffs      map[wire.NodeID]*backoff

	// Participant.
	lastYes time.Time
	// The coordinator's heartbeat loss, as heard: the last heartbeat (of
	// beatGroup) and decayed counts of heartbeats received and missed
	// (aliveTimeout).
	lastBeat           time.Time
	beatGroup          wire.GroupNumber
	beatRecv, beatMiss float64
	nextAYT            time.Time
	probeUntil         time.Time // suspicion probe deadline; zero if none
	probeSince         time.Time
	reorgUntil         time.Time
	resendAcc          time.Time
	asm                *assembly
	election           election
	electAt            time.Time // when a held-back bully election starts; zero once started
	coordDegraded      bool      // my coordinator's last message said it cannot save
	outrankSince       time.Time // since when I outrank my coordinator; zero if I do not
	behindSince        time.Time // since when my coordinator announces a newer member list

	// Leadership.
	leader      bool
	term        wire.GroupNumber
	leaderSince time.Time

	// The lease (lease.go). A coordinator: its heartbeats' numbers and
	// send times, when it last asked for acknowledgements, whether it is
	// primary and until when, and when it last heard any member. A
	// member: the grant it gave, its coordinator's latest heartbeat and
	// term, and whether it owes that heartbeat a grant. selfUntil: a
	// leader that stopped holds a grant to itself until then.
	q               Quorum
	noPreempt       bool
	viewPrimary     bool
	beat            uint64
	beats           [beatRing]sentBeat
	lastAckReq      time.Time
	primary         bool
	leaseUntil      time.Time
	incumbent       bool
	lastMemberHeard time.Time
	votes           []leaseVote // scratch for computeLease
	grant           grant
	selfUntil       time.Time
	lastBeatNo      uint64
	coordTerm       wire.GroupNumber
	retermAbove     wire.GroupNumber // quorum mode: a member refused a grant for a term below this
	owe             bool
	coordIncumbent  bool // my coordinator's last message said it is incumbent

	now time.Time // the last Step's time (NextDeadline reports only later times)

	mismatch map[wire.NodeID]wire.Timing // timing mismatches reported, per peer

	// judgeAfter: after a stall (noteStall), no peer is judged silent
	// before this time. lastLate is the last tick that came late.
	judgeAfter, lastLate time.Time

	out     Output
	last    Status // last reported view, to emit change events
	lastGen uint64 // gen at the last report

	// Peers expire by a periodic sweep rather than by per-element
	// deadlines, so NextDeadline is O(1) in the group size.
	nextSweep time.Time
}

// New returns a node that has no group yet: as the paper's Recovery, it
// will form one, but first it listens for a boot window (announcing
// itself), so that it can join a group that invites it, or invite the
// nodes it heard, instead of creating a singleton number at once.
func New(cfg Config, now time.Time) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{
		id:       cfg.ID,
		prio:     cfg.Priority,
		boot:     cfg.Boot,
		t:        cfg.Timing,
		gt:       cfg.Timing,
		alg:      cfg.Election,
		galg:     cfg.Election,
		rnd:      cfg.Rand,
		durable:  cfg.Durable,
		want:     cfg.Durable,
		maxSeen:  cfg.Durable.floor(),
		coords:   make(map[wire.NodeID]*peer),
		fresh:    make(map[wire.NodeID]*freshPeer),
		loud:     make(map[wire.NodeID]time.Time),
		up:       make(map[wire.NodeID]*member),
		backoffs: make(map[wire.NodeID]*backoff),
		mismatch: make(map[wire.NodeID]wire.Timing),
		state:    wire.StateElection,
		since:    now,
		born:     now,
		now:      now,

		q:           cfg.Quorum,
		noPreempt:   cfg.NoPreempt,
		viewPrimary: cfg.ViewPrimary,
	}
	n.bootEnd = now.Add(n.t.bootWindow())
	n.detach(now)
	n.last, n.lastGen = n.Status(), n.gen // the view New starts from: no Event
	return n, nil
}

// ID returns the node's ID.
func (n *Node) ID() wire.NodeID { return n.id }

// Boot returns the node's boot nonce.
func (n *Node) Boot() uint64 { return n.boot }

// Stopped reports whether the node gave way to another process with its ID
// (see NoticeDuplicateID): it does nothing more, and its runtime should
// exit.
func (n *Node) Stopped() bool { return n.stopped }

func (n *Node) degraded() bool { return n.persistErr != "" }

func (n *Node) rank() wire.Rank {
	return wire.Rank{Degraded: n.degraded(), Incumbent: n.incumbent, Priority: n.prio, ID: n.id}
}

func (n *Node) self() wire.Member { return wire.Member{ID: n.id, Priority: n.prio} }

func (n *Node) isCoordinator() bool { return n.group.ID == n.id }

// idleParticipant reports whether the node is a Normal participant.
func (n *Node) idleParticipant() bool {
	return !n.group.IsZero() && !n.isCoordinator() && n.state == wire.StateNormal
}

// Status returns the node's current view.
func (n *Node) Status() Status {
	return Status{
		ID:           n.id,
		Priority:     n.prio,
		State:        n.state,
		Group:        n.group,
		Members:      n.members, // shared: replaced, never edited in place
		Version:      n.version,
		Since:        n.since,
		Counter:      n.durable.Counter,
		PersistError: n.persistErr,
		Leader:       n.leader,
		Term:         n.term,
		LeaderSince:  n.leaderSince,
		Primary:      n.primary,
		Expect:       n.q.Expect,
		LeaseUntil:   n.leaseUntil,
		Incumbent:    n.incumbent,
	}
}

// Durable returns what the node has confirmed saved.
func (n *Node) Durable() Durable { return n.durable }

// Output returns and clears what the machine wants done.
func (n *Node) Output() Output {
	o := n.out
	n.out = Output{}
	return o
}

// HasOutput reports whether Output would return anything.
func (n *Node) HasOutput() bool { return !n.out.Empty() }

// send queues body to one node (or wire.Broadcast) with the node's header.
func (n *Node) send(to wire.NodeID, body wire.Body) { n.sendBoot(to, 0, body) }

// sendBoot queues body to one boot of a node: a node without a group is
// answered where its announcement came from, even if another process
// shares its ID.
func (n *Node) sendBoot(to wire.NodeID, boot uint64, body wire.Body) {
	var flags wire.Flags
	if n.degraded() {
		flags |= wire.FlagDegraded
	}
	if n.settled {
		flags |= wire.FlagSettled
	}
	if to == wire.Broadcast {
		flags |= wire.FlagBroadcast
	}
	if n.incumbent {
		flags |= wire.FlagIncumbent
	}
	n.out.Messages = append(n.out.Messages, wire.Envelope{To: to, ToBoot: boot, Msg: wire.Message{
		Header: wire.Header{
			Version:  wire.Version,
			Type:     body.Type(),
			From:     n.id,
			Priority: n.prio,
			Flags:    flags,
			Boot:     n.boot,
			Group:    n.group,
			State:    n.state,
		},
		Body: body,
	}})
}

func (n *Node) notice(nt Notice) { n.out.Notices = append(n.out.Notices, nt) }

// report updates leadership and emits an Event if the node's view changed
// since the last one. It runs after every input, so it compares without
// copying.
func (n *Node) report(now time.Time, why Reason) {
	n.updateLeader(now)
	old := n.last
	if n.state == old.State && n.group == old.Group && n.version == old.Version &&
		n.persistErr == old.PersistError && n.gen == n.lastGen && n.leader == old.Leader && n.term == old.Term &&
		n.primary == old.Primary && n.incumbent == old.Incumbent {
		// Not a change of view: a lease renewed, a counter saved.
		n.last.Counter, n.last.LeaseUntil = n.durable.Counter, n.leaseUntil
		return
	}
	cur := n.Status()
	n.last, n.lastGen = cur, n.gen
	n.out.Events = append(n.out.Events, Event{Time: now, Reason: why, Old: old, New: cur})
}

// updateLeader keeps leadership: it begins when the node first coordinates
// a Normal group and ends when the node stops coordinating.
func (n *Node) updateLeader(now time.Time) {
	switch {
	case n.leader && (!n.isCoordinator() || n.stopped):
		n.leader, n.term, n.leaderSince = false, wire.GroupNumber{}, time.Time{}
	case !n.leader && n.isCoordinator() && n.state == wire.StateNormal && !n.stopped:
		n.leader, n.term, n.leaderSince = true, n.group, now
		if !n.quorumMode() {
			n.noteTerm(now, n.term) // every leadership acts (in quorum mode: once primary)
		}
	}
}

// setMembers replaces the member list, which must be sorted by ID
// (sortMembers): memberRank searches it.
func (n *Node) setMembers(ms []wire.Member) {
	n.members = ms
	n.gen++
}

// setGroup moves the node to group g, remembering when, and asks to save
// it as the last group: a restart then creates numbers above it.
func (n *Node) setGroup(now time.Time, g wire.GroupNumber) {
	if g != n.group {
		n.group = g
		n.since = now
	}
	if g.IsZero() {
		return
	}
	if g.Seq > n.maxSeen {
		n.maxSeen = g.Seq
	}
	if n.want.LastGroup.Less(g) {
		n.want.LastGroup = g
		n.requestSave(now)
	}
}

// resetRoles forgets everything tied to the current role.
func (n *Node) resetRoles() {
	n.check = nil
	n.mergeAt = time.Time{}
	n.mergeWith = nil
	n.merge = nil
	n.ready = nil
	n.nextLate = time.Time{}
	n.lastAckReq = time.Time{}
	n.owe, n.lastBeatNo, n.coordTerm, n.coordIncumbent = false, 0, wire.GroupNumber{}, false
	n.staleVersion = false
	n.nextVersionAt = time.Time{}
	n.probeUntil = time.Time{}
	n.asm = nil
	n.election = nil
	n.electAt = time.Time{}
	n.pending = nil
	n.reorgUntil = time.Time{}
	n.resendAcc = time.Time{}
	n.attachAt, n.waitUntil, n.offer = time.Time{}, time.Time{}, nil
	n.outrankSince, n.behindSince = time.Time{}, time.Time{}
	n.declined = nil
	clear(n.up)
}

// ---------------------------------------------------------------------------
// Group numbers and persistence.

// wallMS is the wall clock in Unix milliseconds (0 before 1970): the floor
// under every new sequence, so that a node whose state was lost or rolled
// back still creates numbers above those it made before, on a sane clock.
func wallMS(now time.Time) uint64 { return uint64(max(now.UnixMilli(), 0)) }

// nextSeq is the sequence of a new number: above every number saved,
// seen, or being saved, and above the wall clock in milliseconds.
func (n *Node) nextSeq(now time.Time) uint64 {
	s := max(n.durable.floor(), n.want.floor(), n.maxSeen, n.behind, wallMS(now))
	if n.saving != nil {
		s = max(s, n.saving.floor())
	}
	return s + 1
}

// newGroup asks for a new group number for p. Nothing carrying it is sent
// until a save covering it is confirmed.
func (n *Node) newGroup(now time.Time, p *pendingGroup) {
	n.pending = p
	if p.purpose != forTakeover {
		// A participant taking over stays in its group until the number
		// is saved: if the save fails, it has lost nothing.
		n.state = wire.StateElection
	}
	n.reserve(now)
}

// reserve picks the pending number's sequence and asks to save it.
func (n *Node) reserve(now time.Time) {
	p := n.pending
	p.seq = n.nextSeq(now)
	n.want.Counter = max(n.want.Counter, p.seq)
	if n.degraded() && n.saving == nil {
		n.retrySave(now) // a new reason to try the disk again
		return
	}
	n.requestSave(now)
}

// requestSave asks the runtime to save want, one save at a time, unless a
// failed save waits for its retry.
func (n *Node) requestSave(now time.Time) {
	if n.saving != nil || n.want == n.durable || n.degraded() {
		return
	}
	n.save()
}

func (n *Node) save() {
	s := n.want
	n.saving = &s
	n.out.Save = &s
}

// retrySave tries a failed save again, once per CheckInterval: the pending
// number's, or what should be saved, or (with nothing new to save) the
// saved state itself, to find out whether the disk works again.
func (n *Node) retrySave(now time.Time) {
	n.retryAt = now.Add(n.t.CheckInterval)
	if n.pending != nil {
		n.pending.seq = n.nextSeq(now)
		n.want.Counter = max(n.want.Counter, n.pending.seq)
	}
	n.save()
}

// saved handles a confirmed save.
func (n *Node) saved(now time.Time, d Durable) Reason {
	if n.saving != nil && *n.saving == d {
		n.saving = nil
	}
	n.durable.Counter = max(n.durable.Counter, d.Counter)
	if n.durable.LastGroup.Less(d.LastGroup) {
		n.durable.LastGroup = d.LastGroup
	}
	if n.durable.Term.Less(d.Term) {
		n.durable.Term = d.Term
	}
	why := Reason("")
	if n.degraded() {
		n.persistErr, n.retryAt = "", time.Time{}
		why = ReasonSaved
	}
	if p := n.pending; p != nil && n.durable.Counter >= p.seq {
		// The group changes: that is the news, even when this save
		// also ended a failure (the new view shows no error).
		n.pending = nil
		n.createGroup(now, p)
		why = p.purpose.reason()
	}
	n.requestSave(now)
	return why
}

// saveFailed handles a failed save. No number it covered is used; the node
// is degraded (it ranks below every other node and accepts invitations from
// any of them) and retries after a CheckInterval. A takeover or a merge it
// was for is given up: the node stays what it was, where the nodes that
// now outrank it find it and invite it.
func (n *Node) saveFailed(now time.Time, d Durable, err string) Reason {
	if n.saving != nil && *n.saving == d {
		n.saving = nil
	}
	if err == "" {
		err = "save failed"
	}
	n.persistErr = err
	n.retryAt = now.Add(n.t.CheckInterval)
	if p := n.pending; p != nil {
		switch p.purpose {
		case forTakeover:
			n.pending = nil // stay the participant we are
		case forMerge:
			// Stay the Normal coordinator of the group we have: nothing
			// carrying the number left. Degraded, we now rank below the
			// coordinators we meant to merge, and they invite us; left
			// in Election with a group of our own, we would be invited
			// by no one, and the LAN would stay split.
			n.pending = nil
			n.state = wire.StateNormal
		}
	}
	return ReasonPersistFailed
}

// createGroup adopts the saved number of p and invites whom p names; with
// no one to invite, the group is the node alone, Normal at once.
func (n *Node) createGroup(now time.Time, p *pendingGroup) {
	prev := n.group
	prevMembers := n.members
	n.resetRoles()
	g := wire.GroupNumber{Seq: p.seq, ID: n.id}
	if !n.leader && !n.quorumMode() && n.want.Term.Less(g) {
		// Its term once the group is Normal (updateLeader): saved with
		// the group (setGroup asks), in one write.
		n.want.Term = g
	}
	n.setGroup(now, g)
	n.out.Created = append(n.out.Created, g)
	n.gt, n.galg = n.t, n.alg
	n.up[n.id] = &member{m: n.self(), heard: now}
	n.nextCheck = now.Add(n.jitter(n.t.CheckInterval))
	n.nextBeacon = now // announce the new group (and beat) at once

	n.prevGroup = prev
	n.prevMembers = make(map[wire.NodeID]bool, len(prevMembers))
	for _, m := range prevMembers {
		if m.ID != n.id {
			n.prevMembers[m.ID] = true
		}
	}

	invite := make(map[wire.NodeID]bool)
	fresh := make(map[wire.NodeID]uint64)
	expect := 0
	for _, id := range p.members {
		if id != n.id && !invite[id] {
			invite[id] = false
			expect++
		}
	}
	for _, f := range p.fresh {
		if _, ok := invite[f.id]; !ok && f.id != n.id {
			invite[f.id] = false
			fresh[f.id] = f.boot
			expect++
		}
	}
	var targets []wire.NodeID
	for _, id := range p.targets {
		if _, ok := invite[id]; ok || id == n.id {
			continue
		}
		invite[id] = false
		targets = append(targets, id)
		// The invited coordinator forwards to its members, who accept
		// too: its beacon said how many.
		if c := n.coords[id]; c != nil && c.size > 0 && expect >= 0 {
			expect += int(c.size)
		} else {
			expect = -1
		}
	}
	if len(invite) == 0 {
		n.setMembers([]wire.Member{n.self()})
		n.version = 1
		n.state = wire.StateNormal
		return
	}
	n.state = wire.StateElection
	n.setMembers(nil)
	n.version = 0
	n.merge = &mergeRound{
		invited:  invite,
		targets:  targets,
		fresh:    fresh,
		deadline: now.Add(n.t.AcceptWindow),
		resendAt: now.Add(n.t.AnswerTimeout),
		expect:   max(expect, 0),
	}
	n.sendInvitations(n.merge)
}

// sendInvitations sends the current group's invitation to everyone in m
// who has not accepted yet.
func (n *Node) sendInvitations(m *mergeRound) {
	inv := wire.Invitation{Group: n.group, Timing: n.t.announce(n.alg)}
	for _, id := range sortedIDs(m.invited) {
		if !m.invited[id] {
			n.sendBoot(id, m.fresh[id], inv)
		}
	}
}

func sortedIDs[V any](m map[wire.NodeID]V) []wire.NodeID {
	ids := make([]wire.NodeID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func (n *Node) jitter(d time.Duration) time.Duration {
	if n.rnd == nil || d < 10 {
		return d
	}
	// Up to 10% less, so coordinators that started together drift apart.
	return d - time.Duration(n.rnd.Int63n(int64(d/10)))
}

// ---------------------------------------------------------------------------
// Inputs.

// Step feeds the node one input at time now. Messages from the node
// itself (the same boot), from node 0 or without a body are ignored; so
// are stale, duplicate and reordered ones, by the rules of each handler. A
// node that yielded its ID ignores everything.
func (n *Node) Step(now time.Time, in Input) {
	if n.stopped {
		return
	}
	n.now = now
	if !n.settled && !now.Before(n.bootEnd) {
		n.settled = true
	}
	// The lease may have run out since the last input: decide on the
	// flag this input's messages carry.
	n.updateLease(now)
	if _, tick := in.(Tick); !tick && !n.nextSweep.IsZero() && !now.Before(n.nextSweep.Add(-n.t.sweepInterval()/2)) {
		// Early, on whatever input comes (a heartbeat, mostly), rather
		// than on a timer of its own: an idle node then wakes only for
		// its heartbeats. An early sweep still forgets only the peers
		// already silent for PeerTimeout.
		n.sweep(now)
	}
	why := Reason("")
	switch in := in.(type) {
	case Receive:
		why = n.receive(now, in.Msg)
	case Tick:
		n.noteStall(now, in.Due)
		why = n.tick(now)
	case PeerDown:
		why = n.peerDown(now, in.ID)
	case Saved:
		why = n.saved(now, in.Durable)
	case SaveFailed:
		why = n.saveFailed(now, in.Durable, in.Err)
	}
	if w := n.maybeReterm(now); why == "" {
		why = w
	}
	n.payOwed(now)
	n.updateLease(now)
	if why == "" {
		why = ReasonMembers
		if n.primary != n.last.Primary && n.group == n.last.Group && n.state == n.last.State {
			why = ReasonLease
		}
	}
	n.armBeacon(now)
	n.report(now, why)
}

// noteStall notices that this node was not running when its timers came
// due: a Tick more than AnswerTimeout after its Due. What the node was
// told meanwhile may still be waiting in its socket or its runtime's
// queue, behind the timer. Judged now, a coordinator whose heartbeats
// waited there would look silent, and so would members whose
// acknowledgements did; a participant would start an election, a joiner
// give up its invitation, a coordinator drop its members, each on
// evidence it has not read. So every such judgment waits one round trip
// (AnswerTimeout) past the stall, while the probes and retransmissions
// that precede it go out as usual: a peer that is alive answers them
// (docs/design.md §3.10). A node that runs on time is unaffected.
//
// A stall earns that round trip only if it is an exception: the node ran
// on time, since its last late tick, for at least twice as long as this
// tick is late. On a host so loaded that every tick comes late, each
// would otherwise push the judgment past the next late tick, and a
// participant whose coordinator really died would never elect; there the
// first stall gets its round trip and the judgments that follow are made
// on what the node has read.
func (n *Node) noteStall(now, due time.Time) {
	if due.IsZero() {
		return
	}
	at := n.gt.AnswerTimeout // the group's round trip (its own when it coordinates or has none)
	late := now.Sub(due)
	if late <= at {
		return
	}
	if n.lastLate.IsZero() || now.Sub(n.lastLate) > 2*late {
		n.judgeAfter = now.Add(at)
	}
	n.lastLate = now
}

// afterStall returns when a judgment due at t may be made: t, or the end
// of the round trip that follows a stall (noteStall).
func (n *Node) afterStall(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return later(t, n.judgeAfter)
}

// peerDown handles the failure detector's verdict on id.
func (n *Node) peerDown(now time.Time, id wire.NodeID) Reason {
	n.forgetCoord(id)
	delete(n.fresh, id)
	delete(n.loud, id)
	switch {
	case id == n.id:
	case n.isCoordinator() && n.state == wire.StateNormal:
		if _, ok := n.up[id]; ok {
			n.dropMembers(now, []wire.NodeID{id})
		}
	case !n.isCoordinator() && n.state == wire.StateNormal && id == n.group.ID:
		return n.startElection(now)
	}
	return ""
}

// receive handles one message from the network.
func (n *Node) receive(now time.Time, m wire.Message) Reason {
	if m.From == 0 || m.Body == nil {
		return ""
	}
	if m.From == n.id {
		if m.Boot == n.boot || m.Boot == 0 {
			return "" // my own multicast, looped back
		}
		return n.onDuplicate(now, m)
	}
	n.observe(now, m)
	switch b := m.Body.(type) {
	case wire.Beacon:
		n.onBeacon(now, m, b)
	case wire.AreYouCoordinator:
		n.onAreYouCoordinator(now, m)
	case wire.Yes:
		return n.onYes(now, m, b)
	case wire.No:
		return n.onNo(now, m, b)
	case wire.AreYouThere:
		n.onAreYouThere(now, m, b)
	case wire.Invitation:
		return n.onInvitation(now, m, b)
	case wire.Accept:
		n.onAccept(now, m, b)
	case wire.Ready:
		return n.onReady(now, m, b)
	case wire.ReadyAck:
		n.onReadyAck(now, m, b)
	case wire.BeatAck:
		n.onBeatAck(now, m, b)
	case wire.Decline:
		return n.onDecline(now, m, b)
	case wire.Election, wire.Answer, wire.RingElection, wire.RingElected, wire.RingAck:
		return n.onElectionMessage(now, m)
	}
	return ""
}

// observe records what a message says about its sender and the numbers
// it carries.
func (n *Node) observe(now time.Time, m wire.Message) {
	n.seen(now, m.From, m.Group)
	var ann wire.Timing
	switch b := m.Body.(type) {
	case wire.Invitation:
		n.seen(now, m.From, b.Group)
		ann = b.Timing
	case wire.Ready:
		n.seen(now, m.From, b.Group)
		ann = b.Timing
	case wire.AreYouThere:
		n.seen(now, m.From, b.Group)
	case wire.Accept:
		n.seen(now, m.From, b.Term)
	case wire.BeatAck:
		n.seen(now, m.From, b.Term)
	case wire.Decline:
		n.seen(now, m.From, b.Held)
	case wire.Beacon:
		n.maxSeen = max(n.maxSeen, b.HighWater)
		ann = b.Timing
		if _, known := n.loud[m.From]; m.Flags&wire.FlagBroadcast != 0 && (known || len(n.loud) < MaxGroupSize) {
			n.loud[m.From] = now
		}
	}
	wait := time.Duration(0)
	if !ann.IsZero() {
		n.checkTiming(now, m.From, ann)
		wait = n.t.adopt(ann).inviteWait()
	}
	if m.From == n.group.ID && m.Group.ID == m.From {
		n.coordDegraded = m.Flags&wire.FlagDegraded != 0
		n.coordIncumbent = m.Flags&wire.FlagIncumbent != 0
		if !n.isCoordinator() && n.state == wire.StateNormal && n.pending == nil {
			n.noteOutrank(now)
		}
	}
	n.noteAbove(now, m)
	if m.Booting() {
		n.forgetCoord(m.From)
		if n.idleParticipant() {
			// Only a coordinator invites a node without a group, and
			// only a node without a group weighs them: a participant
			// that kept every booting node it heard swept N entries per
			// sweep for nothing (a fifth of a cold start's cost at
			// N = 5,000 in the simulator). It listens again if it
			// loses its group.
			return
		}
		f := n.fresh[m.From]
		if f == nil {
			if len(n.fresh) >= MaxGroupSize {
				return
			}
			f = &freshPeer{}
			n.fresh[m.From] = f
		}
		if f.boot != m.Boot {
			f.invited, f.wait = time.Time{}, 0
		}
		f.boot, f.rank, f.heard = m.Boot, m.Rank(), now
		if wait > 0 {
			f.wait = wait
		}
		return
	}
	delete(n.fresh, m.From)
	if !m.IsCoordinator() {
		// It no longer coordinates (if it ever did): only coordinators
		// are worth remembering, and keeping every node of a large LAN
		// would cost each node memory and sweep time in N.
		n.forgetCoord(m.From)
		return
	}
	p := n.coords[m.From]
	if p == nil {
		if len(n.coords) >= MaxGroupSize {
			return
		}
		p = &peer{}
		n.coords[m.From] = p
	}
	p.prio = m.Priority
	p.degraded = m.Flags&wire.FlagDegraded != 0
	p.incumbent = m.Flags&wire.FlagIncumbent != 0
	if p.group != m.Group {
		p.size = 0
	}
	p.group = m.Group
	p.state = m.State
	p.heard = now.Sub(n.born)
	if b, ok := m.Body.(wire.Beacon); ok {
		p.size = b.Size
	}
	if wait > 0 {
		p.wait = wait
	}
}

// seen records a group number a message carries: new numbers go above it,
// and one of this node's own numbers above its counter means its state was
// lost or rolled back.
func (n *Node) seen(now time.Time, from wire.NodeID, g wire.GroupNumber) {
	if g.Seq > n.maxSeen {
		n.maxSeen = g.Seq
	}
	if g.ID != n.id || g.Seq <= max(n.want.Counter, n.behind) {
		return
	}
	n.notice(Notice{Kind: NoticeStateBehind, Time: now, Peer: from, Group: g, Counter: n.want.Counter})
	n.behind = g.Seq
	// Remember it across restarts too.
	n.want.Counter = g.Seq
	n.requestSave(now)
}

// checkTiming reports, once per peer and value, timing that differs from
// this node's own.
func (n *Node) checkTiming(now time.Time, from wire.NodeID, a wire.Timing) {
	ours := n.t.announce(n.alg)
	if a == ours {
		delete(n.mismatch, from)
		return
	}
	if prev, ok := n.mismatch[from]; ok && prev == a {
		return
	}
	if len(n.mismatch) >= MaxGroupSize {
		return
	}
	n.mismatch[from] = a
	n.notice(Notice{Kind: NoticeTimingMismatch, Time: now, Peer: from, Ours: ours, Theirs: a})
}

// forgetCoord removes id from the known coordinators. After a cold start of
// a large LAN the table held every node's singleton group and soon holds
// one or two coordinators; a Go map never shrinks, and its deleted slots
// make each lookup of an absent key (one per message from a member) probe
// as far as at the peak. So the table is rebuilt once deletions outnumber
// what it holds, which keeps the cost amortised O(1) per deletion.
func (n *Node) forgetCoord(id wire.NodeID) {
	if _, ok := n.coords[id]; !ok {
		return
	}
	delete(n.coords, id)
	n.coordsDel++
	if n.coordsDel > 2*len(n.coords)+64 {
		m := make(map[wire.NodeID]*peer, len(n.coords))
		for k, p := range n.coords {
			m[k] = p
		}
		n.coords, n.coordsDel = m, 0
	}
}

// noteAbove keeps n.above: the highest-ranked node heard that outranks
// this one and would invite it. The sender of m replaces it if it ranks
// higher, or if the one held was not heard for PeerTimeout; the one held
// is dropped when it no longer qualifies.
func (n *Node) noteAbove(now time.Time, m wire.Message) {
	r := m.Rank()
	coord := m.IsCoordinator() && m.State == wire.StateNormal
	ok := n.rank().Less(r) && (coord || m.Booting())
	a := &n.above
	switch {
	case a.id == m.From && !ok:
		*a = abovePeer{}
	case a.id == m.From || (ok && (a.id == 0 || now.Sub(a.heard) > n.t.PeerTimeout || a.rank.Less(r))):
		*a = abovePeer{id: m.From, rank: r, coord: coord, heard: now}
	}
}

// beaconTarget is where the node's periodic beacon goes: wire.Broadcast,
// or, for a node that only needs to be heard by the one that will invite
// it, that node alone. Two kinds of node are in that case, as long as a
// higher-ranked node that would invite them was heard within PeerTimeout:
//
//   - a node without a group, after its first beacon (which every node
//     hears, and coordinators answer with their high-water marks);
//   - a coordinator alone in its group (it has no members to heartbeat),
//     or that heartbeats them by unicast (unicast: unicastHeartbeat's
//     answer, which the caller has), Normal and merging nothing, below a
//     Normal coordinator.
//
// Everyone else on the LAN learns nothing from such a beacon, and when
// every node of a cold start multicast, each of N nodes woke for N
// beacons per interval: at N = 256 on one host, a storm that never let
// the nodes hear each other within their windows, so they formed more
// groups, which beaconed more. Silent for PeerTimeout, the higher node no
// longer counts, and the beacon is multicast again (a partition cut it
// off).
func (n *Node) beaconTarget(now time.Time, unicast bool) wire.NodeID {
	a := n.above
	if a.id == 0 || now.Sub(a.heard) > n.t.PeerTimeout {
		return wire.Broadcast
	}
	switch {
	case n.group.IsZero():
		if n.announced {
			return a.id
		}
	case n.isCoordinator() && (len(n.members) <= 1 || unicast) && n.state == wire.StateNormal &&
		n.pending == nil && n.merge == nil && a.coord:
		return a.id
	}
	return wire.Broadcast
}

// unicastHeartbeat reports whether this coordinator sends its heartbeat to
// each member by unicast rather than to the whole LAN by multicast: when
// its members are at most a quarter of the nodes it knows of (its group,
// the groups whose coordinators it hears, by their beacons' sizes, and the
// nodes without a group). A multicast heartbeat wakes every node of the
// LAN; while a cold start or a heal leaves G groups, G heartbeats per
// AliveInterval woke each node, and on one host of 256 lab nodes (G near
// 100) that storm alone used more than its two cores. Unicast costs the
// coordinator one datagram per member instead of one; a quarter bounds that
// cost, and a group of most of the LAN (the steady state: one group)
// multicasts as before. Its discovery beacon then goes every
// BeaconInterval, as a lone coordinator's does (beaconTarget).
func (n *Node) unicastHeartbeat() bool {
	k := len(n.members)
	if !n.isCoordinator() || k <= 1 {
		return false
	}
	lan := k + len(n.fresh)
	for id, p := range n.coords {
		if p.isCoordinator(id) && p.group != n.group {
			lan += max(1, int(p.size))
			if 4*k <= lan {
				return true
			}
		}
	}
	return 4*k <= lan
}

// heartbeatMembers sends the coordinator's heartbeat hb to each member by
// unicast (unicastHeartbeat).
func (n *Node) heartbeatMembers(hb beatFields) {
	for _, m := range n.members {
		if m.ID != n.id {
			n.sendBeacon(m.ID, hb)
		}
	}
}

// beaconBudget is how many nodes may broadcast beacons at their base
// period before each slows down: the LAN's broadcast beacons, heartbeats
// aside, stay near this many per base period however many nodes send
// them. maxPace caps the slowdown, so that a node is still heard within a
// minute or so.
const (
	beaconBudget = 16
	maxPace      = 64
)

// paced stretches d, the period of a beacon to every node, by this node's
// share of the LAN's beacon budget: the nodes heard broadcasting beacons
// lately, and itself, over beaconBudget. It is RTCP's rule (RFC 3550
// §6.2: each of N members reports every N·C/B seconds) applied to
// beacons. A node that hears up to beaconBudget broadcasters, the common
// case, is not slowed at all.
//
// In a 256-node lab on two cores, nodes in Election or Reorganization,
// lone coordinators and nodes whose higher node fell silent each
// multicast a beacon a second: every node received about 290 beacons a
// second, each a wake-up of its process and a copy to its veth, which
// kept the host at a load of 600 and every node's queue full, so that
// merges collected one or two Accepts in their windows and their members
// timed out and formed groups of their own. Paced, the broadcasts grow
// with N rather than with N², and the nodes that must be heard still are.
//
// How long a peer counts as heard (PeerTimeout) is not stretched with it:
// a node that falls back to broadcasting is paced anyway, and with both
// stretched none of three of the simulator's loaded-host starts (256
// nodes, 300 µs a delivery) converged within a minute.
func (n *Node) paced(d time.Duration) time.Duration {
	k := len(n.loud) + 1
	if k <= beaconBudget {
		return d
	}
	return d * time.Duration(min(k, beaconBudget*maxPace)) / beaconBudget
}

// paceable reports whether a beacon to to would be paced: one to every
// node that is not a heartbeat.
func (n *Node) paceable(to wire.NodeID) bool {
	return to == wire.Broadcast && !(n.isCoordinator() && len(n.members) > 1)
}

// gate is the earliest time the node may broadcast its next paced beacon,
// whatever its state: one paced BeaconInterval after the last, while it
// hears more broadcasters than the budget (zero otherwise). The period
// bounds the periodic beacons; the gate bounds those a change of state
// brings forward (a new group, a lost one, the end of a reorganization),
// which on an overloaded host come faster than any period.
func (n *Node) gate(now time.Time) time.Time {
	if n.lastLoud.IsZero() || len(n.loud)+1 <= beaconBudget || !n.paceable(n.beaconTarget(now, n.unicastHeartbeat())) {
		return time.Time{}
	}
	return n.lastLoud.Add(n.paced(n.t.BeaconInterval))
}

// beaconPeriod is how often the node beacons in its current state: a
// coordinator with members every AliveInterval (its beacon is its group's
// heartbeat), a node without a group every AnswerTimeout during its boot
// window, an idle participant never (0), anyone else, a coordinator alone
// in its group among them, every BeaconInterval. A beacon to every node
// that is not a heartbeat is paced (paced).
//
// An idle participant's beacons would tell nobody anything it needs: its
// coordinator learns of its failure from memberlist, and of its leaving
// from its beacons once it is no longer an idle participant. Silent, it
// costs its peers nothing, where N participants beaconing every few
// seconds woke every node of the LAN N times as often.
func (n *Node) beaconPeriod(now time.Time) time.Duration {
	p := n.basePeriod(now)
	if p == 0 || !n.paceable(n.beaconTarget(now, false)) {
		// None, a heartbeat (its members wait for it), or a quiet
		// beacon (it wakes one node).
		return p
	}
	return n.paced(p)
}

// basePeriod is beaconPeriod before pacing.
func (n *Node) basePeriod(now time.Time) time.Duration {
	switch {
	case n.group.IsZero() && n.offer != nil:
		// An inviter heard it (the invitation waits for the end of the
		// boot window): beaconing again tells nobody anything.
		return n.t.BeaconInterval
	case n.group.IsZero() && now.Before(n.attachAt):
		return n.t.AnswerTimeout
	case n.group.IsZero():
		// Past its window, waiting for a higher node's invitation or
		// for its own number's save: the window's beacons were heard,
		// or lost to a network or a host so loaded that ten more a
		// second (to the node it waits for, each answered with an
		// invitation) only add to the load.
		return n.t.BeaconInterval
	case n.isCoordinator() && len(n.members) > 1:
		return n.t.AliveInterval
	case n.isCoordinator():
		// Alone: nobody waits for its heartbeat, and a cold start of N
		// nodes on one host can leave many such groups for a while.
		return n.t.BeaconInterval
	case n.state == wire.StateNormal:
		return 0
	}
	return n.t.BeaconInterval
}

// armBeacon keeps the beacon schedule in step with the state after each
// input: none for an idle participant; for a node that just left that
// state (an election, an invitation), a first beacon within its period.
//
// Only a change of state brings a scheduled beacon forward, not a change
// of pace (a broadcaster more or less heard, a higher node heard that
// makes the next beacon a quiet one): a beacon received that makes the
// machine send nothing must not move its deadline earlier, which the
// simulator's lazy deadlines rely on (sim.Config.LazyDeadlines).
func (n *Node) armBeacon(now time.Time) {
	base := n.basePeriod(now)
	shorter := base < n.armedBase
	n.armedBase = base
	p := n.beaconPeriod(now)
	switch {
	case p == 0:
		n.nextBeacon = time.Time{}
	case n.nextBeacon.IsZero(), shorter && n.nextBeacon.After(later(now.Add(p), n.gate(now))):
		// None due, or due later than the new, shorter period allows (a
		// coordinator that was alone has members to heartbeat now).
		n.nextBeacon = now.Add(n.jitter(p))
	}
}

// beacon sends the node's beacon now, to every node.
func (n *Node) beacon(now time.Time) { n.beaconTo(now, wire.Broadcast) }

// beaconTo sends the node's periodic beacon now, to every node or to one,
// and schedules the next.
func (n *Node) beaconTo(now time.Time, to wire.NodeID) {
	n.sendBeacon(to, beatFields{})
	n.beaconSent(now, to)
}

// beaconSent notes that the periodic beacon went to to, and schedules
// the next.
func (n *Node) beaconSent(now time.Time, to wire.NodeID) {
	if to == wire.Broadcast && n.group.IsZero() {
		n.announced = true
	}
	n.scheduleBeacon(now)
}

// scheduleBeacon sets the next periodic beacon one period from now.
func (n *Node) scheduleBeacon(now time.Time) {
	n.nextBeacon = time.Time{}
	n.armedBase = n.basePeriod(now)
	if p := n.beaconPeriod(now); p > 0 {
		n.nextBeacon = now.Add(p)
	}
}

// sendBeacon sends the node's beacon to every node or to one; hb makes it
// a numbered heartbeat (heartbeat).
func (n *Node) sendBeacon(to wire.NodeID, hb beatFields) {
	b := wire.Beacon{HighWater: max(n.maxSeen, n.want.Counter, n.durable.Counter), Timing: n.t.announce(n.alg)}
	if n.isCoordinator() {
		b.Version, b.Size = n.version, uint32(len(n.members))
		b.Timing = n.gt.announce(n.galg)
		b.Beat, b.AckReq, b.Term = hb.no, hb.ack, n.term
	}
	n.send(to, b)
}

// tick advances the node's timers to now.
func (n *Node) tick(now time.Time) Reason {
	if !n.nextBeacon.IsZero() && !n.nextBeacon.After(now) {
		if n.unicastHeartbeat() {
			n.heartbeatMembers(n.heartbeat(now))
			if !now.Before(n.nextDiscovery) {
				to, p := n.beaconTarget(now, true), n.t.BeaconInterval
				if to == wire.Broadcast {
					// Not a heartbeat: its members get theirs by
					// unicast. A period of its own bounds it.
					p = n.paced(p)
				}
				n.nextDiscovery = now.Add(n.jitter(p))
				n.sendBeacon(to, beatFields{})
			}
			n.scheduleBeacon(now)
		} else if g := n.gate(now); now.Before(g) {
			n.nextBeacon = g
		} else {
			to := n.beaconTarget(now, false)
			if n.paceable(to) {
				n.lastLoud = now
			}
			n.sendBeacon(to, n.heartbeat(now))
			n.beaconSent(now, to)
		}
	}
	sweep := !now.Before(n.nextSweep)
	if sweep {
		n.sweep(now)
	}
	if n.degraded() && n.saving == nil && !now.Before(n.retryAt) {
		n.retrySave(now)
	}
	switch {
	case n.group.IsZero():
		return n.tickDetached(now)
	case n.pending != nil && n.pending.purpose != forTakeover:
		// Waiting for a save; nothing else runs until it is confirmed.
		return ""
	case n.election != nil:
		return n.tickElection(now)
	case n.isCoordinator():
		return n.tickCoordinator(now)
	case n.state == wire.StateReorganization:
		return n.tickReorganization(now)
	case n.state == wire.StateNormal:
		return n.tickParticipant(now)
	}
	return ""
}

// sweep forgets coordinators and nodes without a group not heard from for
// PeerTimeout.
func (n *Node) sweep(now time.Time) {
	n.nextSweep = now.Add(n.t.sweepInterval())
	if n.idleParticipant() && len(n.fresh) > 0 {
		n.fresh = make(map[wire.NodeID]*freshPeer) // see observe
	}
	for id, p := range n.coords {
		if now.Sub(n.born)-p.heard > n.t.PeerTimeout {
			n.forgetCoord(id)
		}
	}
	for id, f := range n.fresh {
		if now.Sub(f.heard) > n.t.PeerTimeout {
			delete(n.fresh, id)
		}
	}
	for id, b := range n.backoffs {
		if now.After(b.until.Add(8 * n.t.CheckInterval)) {
			delete(n.backoffs, id)
		}
	}
	// A broadcaster counts for two of its periods (two of this node's:
	// the nodes that share the budget pace alike), and PeerTimeout at
	// least.
	keep := max(n.t.PeerTimeout, 2*n.paced(n.t.BeaconInterval))
	for id, t := range n.loud {
		if now.Sub(t) > keep {
			delete(n.loud, id)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// NextDeadline returns the earliest time at which a Tick has work to do. A
// runtime may tick on a fixed period instead; the simulator uses this to
// jump its clock. A node that yielded its ID has no deadline (zero).
func (n *Node) NextDeadline() time.Time {
	if n.stopped {
		return time.Time{}
	}
	var d time.Time
	add := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	add(n.nextBeacon)
	add(n.nextSweep)
	if n.degraded() && n.saving == nil {
		add(n.retryAt)
	}
	if n.group.IsZero() {
		switch {
		case n.pending != nil || n.degraded():
			// Waiting for a save, or for an invitation.
		case n.waitUntil.IsZero():
			add(n.attachAt)
		default:
			add(n.waitUntil)
		}
		return d
	}
	if p := n.pending; p != nil && p.purpose != forTakeover {
		return d
	}
	if n.election != nil {
		if !n.electAt.IsZero() {
			add(n.electAt)
		} else {
			add(n.afterStall(n.election.Deadline()))
		}
		return d
	}
	if n.isCoordinator() {
		if n.merge != nil {
			add(n.merge.resendAt)
			add(n.afterStall(n.merge.deadline))
		}
		if n.ready != nil {
			add(n.ready.resendAt)
			add(n.afterStall(n.ready.deadline))
		}
		if n.staleVersion {
			add(n.nextVersionAt)
		}
		if n.state == wire.StateNormal {
			add(n.nextCheck)
			if n.merge == nil && len(n.up) > 1 && !n.nextLate.IsZero() {
				add(n.afterStall(n.nextLate))
			}
			add(n.leaseDeadline())
			if n.check != nil {
				add(n.check.deadline)
			}
			add(n.mergeAt)
		}
		return d
	}
	switch n.state {
	case wire.StateReorganization:
		add(n.resendAcc)
		add(n.afterStall(n.reorgUntil))
	case wire.StateNormal:
		add(n.afterStall(n.lastYes.Add(n.aliveTimeout() + 1)))
		ask := later(n.lastYes.Add(n.gt.AliveInterval+n.gt.AnswerTimeout), n.nextAYT)
		if !n.behindSince.IsZero() {
			if stale := later(n.behindSince.Add(n.behindLimit()), n.nextAYT); stale.Before(ask) {
				ask = stale
			}
		}
		add(ask)
		add(n.afterStall(n.probeUntil))
		if !n.outrankSince.IsZero() && n.pending == nil {
			add(n.outrankSince.Add(n.t.CheckInterval))
		}
		if n.owe {
			if f := n.grantFreeAt(n.group.ID); f.After(n.now) {
				add(f)
			}
		}
	}
	return d
}
