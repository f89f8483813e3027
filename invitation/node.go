package invitation

import (
	"errors"
	"sort"
	"time"

	"github.com/groupd/groupd/wire"
)

// purpose says what a new group number is being created for.
type purpose uint8

const (
	forRecovery purpose = iota + 1 // singleton group
	forMerge                       // merge lower coordinators' groups into mine
	forFailover                    // bully winner inviting the old members
)

// pendingGroup is a group number waiting for the runtime to persist it.
type pendingGroup struct {
	seq     uint64
	purpose purpose
	targets []wire.NodeID // coordinators to invite
	members []wire.NodeID // members of the old group to invite
	sent    bool          // Persist emitted; waiting for Persisted
}

// peer is what the node last heard from a node that said it coordinates a
// group.
//
// It is kept small (32 bytes) because during a cold start of a large LAN
// every node hears every other node coordinate its singleton group.
type peer struct {
	group wire.GroupNumber
	heard time.Duration // when, as time since the node's start (monotonic)
	prio  uint8
	state wire.State
}

func (p *peer) isCoordinator(id wire.NodeID) bool { return p.group.ID == id }

func (p *peer) rank(id wire.NodeID) wire.Rank { return wire.Rank{Priority: p.prio, ID: id} }

// member is a coordinator's record of one member of its group.
type member struct {
	m         wire.Member
	lastHeard time.Time
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
	deadline time.Time
	resendAt time.Time
	// early closes the window as soon as every invitee accepted: true
	// when the invitees are all known (failover), false when invited
	// coordinators forward the invitation to members we cannot count.
	early bool
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

// Node is one node's invitation-algorithm state machine. It is not safe for
// concurrent use: the runtime owns it from one goroutine and serialises
// Step, Tick, Persisted, PersistFailed and PeerDown. None of its methods
// block or perform I/O.
type Node struct {
	id   wire.NodeID
	prio uint8
	t    Timing
	rnd  Rand
	alg  Election

	counter    uint64 // highest persisted sequence
	maxSeen    uint64 // highest sequence seen in any message
	pending    *pendingGroup
	persistErr error
	retryAt    time.Time // when to retry a failed persist

	state   wire.State
	group   wire.GroupNumber
	members []wire.Member // sorted by ID; replaced, never edited in place
	gen     uint64        // bumped whenever members is replaced
	version uint64
	since   time.Time
	born    time.Time // New's now: the origin of peer.heard

	coords     map[wire.NodeID]*peer // nodes that last said they coordinate a group
	coordsDel  int                   // deletions from coords since it was built
	nextBeacon time.Time

	// Coordinator.
	up          map[wire.NodeID]*member
	nextCheck   time.Time
	lastCheck   time.Time
	check       *checkRound
	mergeAt     time.Time // pending merge delay; zero if none
	mergeWith   []wire.NodeID
	merge       *mergeRound
	ready       *readyRound
	prevGroup   wire.GroupNumber // my previous group, to re-invite its laggards
	prevMembers map[wire.NodeID]bool

	// Participant.
	nextAYT    time.Time
	lastYes    time.Time
	probeUntil time.Time // suspicion probe deadline; zero if none
	probeSince time.Time
	reorgUntil time.Time
	resendAcc  time.Time
	asm        *assembly
	election   election
	electAt    time.Time // when a held-back bully election starts; zero once started

	out     Output
	last    Status // last reported view, to emit change events
	lastGen uint64 // gen at the last report

	// Peers and members expire by a periodic sweep rather than by
	// per-element deadlines, so NextDeadline is O(1) in the group size.
	nextSweep time.Time
}

// New returns a node that starts, as the paper's Recovery prescribes, by
// creating a singleton group: its first Output asks to persist a new
// counter.
func New(cfg Config, now time.Time) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	prio := cfg.Priority
	n := &Node{
		id:      cfg.ID,
		prio:    prio,
		t:       cfg.Timing,
		rnd:     cfg.Rand,
		alg:     cfg.Election,
		counter: cfg.Counter,
		maxSeen: cfg.Counter,
		coords:  make(map[wire.NodeID]*peer),
		up:      make(map[wire.NodeID]*member),
		state:   wire.StateElection,
		since:   now,
		born:    now,
	}
	n.last = n.Status()
	n.nextBeacon = now
	n.recover(now)
	n.report(now, ReasonRecovery)
	return n, nil
}

// ID returns the node's ID.
func (n *Node) ID() wire.NodeID { return n.id }

func (n *Node) rank() wire.Rank { return wire.Rank{Priority: n.prio, ID: n.id} }

func (n *Node) self() wire.Member { return wire.Member{ID: n.id, Priority: n.prio} }

func (n *Node) isCoordinator() bool { return n.group.ID == n.id }

// Status returns the node's current view.
func (n *Node) Status() Status {
	s := Status{
		ID:       n.id,
		Priority: n.prio,
		State:    n.state,
		Group:    n.group,
		Members:  n.members, // shared: replaced, never edited in place
		Version:  n.version,
		Since:    n.since,
		Counter:  n.counter,
	}
	if n.persistErr != nil {
		s.PersistError = n.persistErr.Error()
	}
	return s
}

// Output returns and clears what the machine wants done.
func (n *Node) Output() Output {
	o := n.out
	n.out = Output{}
	return o
}

// HasOutput reports whether Output would return anything.
func (n *Node) HasOutput() bool { return !n.out.Empty() }

// send queues body to one node (or wire.Broadcast) with the node's header.
func (n *Node) send(to wire.NodeID, body wire.Body) {
	n.out.Messages = append(n.out.Messages, wire.Envelope{To: to, Msg: wire.Message{
		Header: wire.Header{
			Version:  wire.Version,
			Type:     body.Type(),
			From:     n.id,
			Priority: n.prio,
			Group:    n.group,
			State:    n.state,
		},
		Body: body,
	}})
}

// report emits an Event if the node's view changed since the last one.
// It runs after every input, so it compares without copying.
func (n *Node) report(now time.Time, why Reason) {
	old := n.last
	errText := ""
	if n.persistErr != nil {
		errText = n.persistErr.Error()
	}
	if n.state == old.State && n.group == old.Group && n.version == old.Version &&
		errText == old.PersistError && n.gen == n.lastGen {
		return
	}
	cur := n.Status()
	n.last, n.lastGen = cur, n.gen
	n.out.Events = append(n.out.Events, Event{Time: now, Reason: why, Old: old, New: cur})
}

// setMembers replaces the member list (sorted by ID).
func (n *Node) setMembers(ms []wire.Member) {
	n.members = ms
	n.gen++
}

// setGroup moves the node to group g, remembering when.
func (n *Node) setGroup(now time.Time, g wire.GroupNumber) {
	if g != n.group {
		n.group = g
		n.since = now
	}
	if g.Seq > n.maxSeen {
		n.maxSeen = g.Seq
	}
}

// resetRoles forgets everything tied to the current role.
func (n *Node) resetRoles() {
	n.check = nil
	n.mergeAt = time.Time{}
	n.mergeWith = nil
	n.merge = nil
	n.ready = nil
	n.probeUntil = time.Time{}
	n.asm = nil
	n.election = nil
	n.pending = nil
	n.reorgUntil = time.Time{}
	n.resendAcc = time.Time{}
	clear(n.up)
}

// ---------------------------------------------------------------------------
// Group numbers and persistence.

// newGroup asks for a new group number for p. Nothing carrying it is sent
// until Persisted confirms the save.
func (n *Node) newGroup(now time.Time, p *pendingGroup) {
	n.pending = p
	n.state = wire.StateElection
	n.requestPersist(now)
}

func (n *Node) requestPersist(now time.Time) {
	p := n.pending
	seq := max(n.counter, n.maxSeen) + 1
	p.seq = seq
	p.sent = true
	n.retryAt = time.Time{}
	n.out.Persist = &Persist{Counter: seq}
}

// Persisted tells the machine that the runtime durably saved counter seq.
func (n *Node) Persisted(now time.Time, seq uint64) {
	if seq > n.counter {
		n.counter = seq
	}
	n.persistErr = nil
	p := n.pending
	if p == nil || p.seq != seq {
		n.report(now, ReasonRecovery)
		return
	}
	n.pending = nil
	n.createGroup(now, p)
}

// PersistFailed tells the machine the save of seq failed. The number is
// never used; the node stays where it is, still accepts invitations, and
// retries after a CheckInterval.
func (n *Node) PersistFailed(now time.Time, seq uint64, err error) {
	if err == nil {
		err = errors.New("persist failed")
	}
	n.persistErr = err
	if p := n.pending; p != nil && p.seq == seq {
		p.sent = false
		n.retryAt = now.Add(n.t.CheckInterval)
	}
	n.report(now, ReasonPersistFailed)
}

// recover is the paper's Recovery: a singleton group with a new number.
func (n *Node) recover(now time.Time) {
	n.resetRoles()
	n.setMembers(nil)
	n.version = 0
	n.newGroup(now, &pendingGroup{purpose: forRecovery})
}

func (n *Node) createGroup(now time.Time, p *pendingGroup) {
	prev := n.group
	prevMembers := n.members
	n.resetRoles()
	n.setGroup(now, wire.GroupNumber{Seq: p.seq, ID: n.id})
	n.up[n.id] = &member{m: n.self(), lastHeard: now}
	n.nextCheck = now.Add(n.jitter(n.t.CheckInterval))

	n.prevGroup = prev
	n.prevMembers = make(map[wire.NodeID]bool, len(prevMembers))
	for _, m := range prevMembers {
		if m.ID != n.id {
			n.prevMembers[m.ID] = true
		}
	}

	invite := make(map[wire.NodeID]bool)
	if p.purpose != forRecovery {
		for _, id := range p.targets {
			invite[id] = false
		}
		for _, id := range p.members {
			if id != n.id {
				invite[id] = false
			}
		}
	}
	if len(invite) == 0 {
		n.setMembers([]wire.Member{n.self()})
		n.version = 1
		n.state = wire.StateNormal
		n.nextBeacon = now // announce the new group at once
		n.report(now, ReasonRecovery)
		return
	}
	n.state = wire.StateElection
	n.setMembers(nil)
	n.version = 0
	n.merge = &mergeRound{
		invited:  invite,
		deadline: now.Add(n.t.AcceptWindow),
		resendAt: now.Add(n.t.AnswerTimeout),
		early:    p.purpose == forFailover,
	}
	for _, id := range sortedIDs(invite) {
		n.send(id, wire.Invitation{Group: n.group})
	}
	why := ReasonMerge
	if p.purpose == forFailover {
		why = ReasonElection
	}
	n.report(now, why)
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

// PeerDown tells the machine that the failure detector (memberlist)
// declared id dead or gone.
func (n *Node) PeerDown(now time.Time, id wire.NodeID) {
	n.forgetCoord(id)
	switch {
	case id == n.id:
	case n.isCoordinator() && n.state == wire.StateNormal:
		if _, ok := n.up[id]; ok {
			n.dropMembers(now, []wire.NodeID{id})
		}
	case !n.isCoordinator() && n.state == wire.StateNormal && id == n.group.ID:
		n.startElection(now)
	}
	n.report(now, ReasonMembers)
}

// Step handles one message from the network. Messages from itself,
// without a body, or from node 0 are ignored; so are stale, duplicate and
// reordered ones, by the rules of each handler.
func (n *Node) Step(now time.Time, m wire.Message) {
	if m.From == n.id || m.From == 0 || m.Body == nil {
		return
	}
	n.observe(now, m)
	why := Reason("")
	switch b := m.Body.(type) {
	case wire.Beacon:
		n.onBeacon(now, m)
	case wire.AreYouCoordinator:
		n.onAreYouCoordinator(now, m)
	case wire.Yes:
		n.onYes(now, m, b)
	case wire.No:
		why = n.onNo(now, m, b)
	case wire.AreYouThere:
		n.onAreYouThere(now, m, b)
	case wire.Invitation:
		why = n.onInvitation(now, m, b)
	case wire.Accept:
		n.onAccept(now, m, b)
	case wire.Ready:
		why = n.onReady(now, m, b)
	case wire.ReadyAck:
		n.onReadyAck(now, m, b)
	case wire.Election, wire.Answer, wire.RingElection, wire.RingElected, wire.RingAck:
		why = n.onElectionMessage(now, m)
	}
	if why == "" {
		why = ReasonMembers
	}
	n.report(now, why)
}

// observe records what a message says about its sender.
func (n *Node) observe(now time.Time, m wire.Message) {
	seq := m.Group.Seq
	switch b := m.Body.(type) {
	case wire.Invitation:
		seq = max(seq, b.Group.Seq)
	case wire.Ready:
		seq = max(seq, b.Group.Seq)
	}
	if seq > n.maxSeen {
		n.maxSeen = seq
	}
	if mb := n.up[m.From]; mb != nil && m.Group == n.group {
		mb.lastHeard = now
	}
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
	p.group = m.Group
	p.state = m.State
	p.heard = now.Sub(n.born)
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

// Tick advances the node's timers to now.
func (n *Node) Tick(now time.Time) {
	why := Reason("")
	if !n.nextBeacon.After(now) {
		n.send(wire.Broadcast, wire.Beacon{})
		n.nextBeacon = now.Add(n.t.BeaconInterval)
	}
	sweep := !now.Before(n.nextSweep)
	if sweep {
		n.nextSweep = now.Add(n.t.sweepInterval())
		for id, p := range n.coords {
			if now.Sub(n.born)-p.heard > n.t.PeerTimeout {
				n.forgetCoord(id)
			}
		}
	}
	if p := n.pending; p != nil && !p.sent && !n.retryAt.IsZero() && !now.Before(n.retryAt) {
		n.requestPersist(now)
	}
	switch {
	case n.pending != nil:
		// Waiting for a save; nothing else runs until it is confirmed.
	case n.election != nil:
		why = n.tickElection(now)
	case n.isCoordinator():
		why = n.tickCoordinator(now, sweep)
	case n.state == wire.StateReorganization:
		why = n.tickReorganization(now)
	case n.state == wire.StateNormal:
		why = n.tickParticipant(now)
	}
	if why == "" {
		why = ReasonMembers
	}
	n.report(now, why)
}

// NextDeadline returns the earliest time at which Tick has work to do. A
// runtime may tick on a fixed period instead; the simulator uses this to
// jump its clock.
func (n *Node) NextDeadline() time.Time {
	d := n.nextBeacon
	add := func(t time.Time) {
		if !t.IsZero() && t.Before(d) {
			d = t
		}
	}
	add(n.nextSweep)
	if p := n.pending; p != nil {
		if !p.sent {
			add(n.retryAt)
		}
		return d
	}
	if n.election != nil {
		if !n.electAt.IsZero() {
			add(n.electAt)
		} else {
			add(n.election.Deadline())
		}
		return d
	}
	if n.isCoordinator() {
		if n.merge != nil {
			add(n.merge.resendAt)
			add(n.merge.deadline)
		}
		if n.ready != nil {
			add(n.ready.resendAt)
			add(n.ready.deadline)
		}
		if n.state == wire.StateNormal {
			add(n.nextCheck)
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
		add(n.reorgUntil)
	case wire.StateNormal:
		add(n.nextAYT)
		add(n.lastYes.Add(n.t.AliveTimeout + 1))
		add(n.probeUntil)
	}
	return d
}
