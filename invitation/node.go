package invitation

import (
	"sort"
	"time"

	"github.com/groupd/groupd/invitation/quorum"
	"github.com/groupd/groupd/wire"
)

// This file holds the Node and what every role shares: its fields, New,
// the accessors, sending, and the report of a changed view. The roles'
// rules are in boot.go (no group), coordinator.go, participant.go and
// lease.go; the inputs' dispatch in step.go, the timers in timers.go,
// beacons in beacon.go, what the node knows of its peers in peers.go, and
// group numbers and their saves in persist.go.

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
	q    Quorum

	// The view.
	state   wire.State
	group   wire.GroupNumber
	members []wire.Member // sorted by ID; replaced, never edited in place
	gen     uint64        // bumped whenever members is replaced
	version uint64
	since   time.Time
	born    time.Time // New's now: the origin of peer.heard

	// The state of each concern, one struct each: what this node saves,
	// how it started, how it finds other groups, what it does as a
	// coordinator, as a participant, as a leader holding a lease, and the
	// quorum's rule.
	store  storeState
	start  startState
	disc   discoveryState
	coord  coordinatorState
	part   participantState
	lease  leaseState
	quorum quorumState

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

// storeState is what the node saves (persist.go): the state confirmed
// saved, what should be, the save in flight, and the numbers seen that a
// new group number must exceed.
type storeState struct {
	durable    Durable  // confirmed saved
	want       Durable  // what should be saved
	saving     *Durable // a save in flight
	persistErr string
	retryAt    time.Time // when to retry a failed save
	maxSeen    uint64    // highest sequence seen in any message
	behind     uint64    // highest own number a peer reported above the counter
	pending    *pendingGroup
}

// startState is the process's start (boot.go): its boot window, what it
// knows of itself, and, while it has no group, its listening window.
type startState struct {
	settled bool            // has run for a boot window (wire.FlagSettled)
	bootEnd time.Time       // born + the boot window
	stopped bool            // yielded its ID to another process: does nothing more
	noState bool            // started without a saved state (wire.FlagFresh)
	home    uint32          // where it keeps its state (Config.Home)
	dups    map[uint64]bool // boots of other processes with this ID, reported

	// A node without a group.
	attachAt  time.Time     // end of its listening window
	waitUntil time.Time     // end of its wait for a higher node's invitation
	offer     *wire.Message // the latest invitation received within the boot window
}

// discoveryState is how the node finds other groups (beacon.go, peers.go).
type discoveryState struct {
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
}

// coordinatorState is what a coordinator keeps (coordinator.go): its
// members (the tracker), its check, merge and Ready rounds.
type coordinatorState struct {
	members   tracker // the Up set, and the coordinators it backs off from
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
}

// participantState is what a participant keeps (participant.go): what it
// hears of its coordinator, its probes, and the election it runs when the
// coordinator is gone.
type participantState struct {
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
	coordIncumbent     bool      // my coordinator's last message said it is incumbent
	coordPrimary       bool      // my coordinator's last message said it is primary (wire.FlagPrimary)
	// What its coordinator's last heartbeat announced: its term, rule,
	// lease and boot.
	coordTerm  wire.GroupNumber
	coordQ     wire.Quorum
	coordLease time.Duration
	coordBoot  uint64
}

// leaseState is the leadership and the lease (lease.go). A coordinator:
// its heartbeats' numbers and send times, when it last asked for
// acknowledgements, whether it is primary and until when, and when it
// last heard any member. A member: the grant it gave, its coordinator's
// latest heartbeat, and whether it owes that heartbeat a grant.
// selfUntil: a leader that stopped holds a grant to itself until then.
type leaseState struct {
	leader      bool
	term        wire.GroupNumber
	leaderSince time.Time

	noPreempt       bool
	viewPrimary     bool
	beat            uint64
	beats           [beatRing]sentBeat
	lastAckReq      time.Time
	primary         bool
	leaseUntil      time.Time
	incumbent       bool
	lastMemberHeard time.Time
	votes           []quorum.Grant // scratch for computeLease
	grant           grant
	selfUntil       time.Time
	lastBeatNo      uint64
	retermAbove     wire.GroupNumber // quorum mode: a member refused a grant for a term below this
	owe             bool
	// pubUntil: a leader's lease end as published, which never moves
	// earlier while it leads (updateLease).
	pubUntil time.Time
	// A coordinator's last request for acknowledgements (its beat
	// number) and when to ask again those that have not answered it
	// (retryAcks).
	lastReqBeat uint64
	ackRetryAt  time.Time
}

// quorumState is the quorum's rule (quorum.go, package quorum): the
// voters this node knows of, the rule they gave when last asked, the last
// one reported, and the peers whose settings differ from this node's,
// reported.
type quorumState struct {
	roll          *quorum.Roll
	rule          quorum.Rule // as the roll last gave it (ownRule)
	reportedRule  quorum.Rule
	reportedExtra []wire.NodeID // the IDs with more than one process at the last NoticeQuorumRule
	remembered    quorum.Rule   // the rule saved before the last restart (Durable.Rule)
	qmismatch     map[wire.NodeID]wire.Quorum
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
		q:        cfg.Quorum,
		mismatch: make(map[wire.NodeID]wire.Timing),
		state:    wire.StateElection,
		since:    now,
		born:     now,
		now:      now,
		// The first Tick sweeps, and so sets the sweep's period.
		nextSweep: now,
		store:     storeState{durable: cfg.Durable, want: cfg.Durable, maxSeen: cfg.Durable.floor()},
		start: startState{
			bootEnd: now.Add(cfg.Timing.bootWindow()),
			noState: cfg.Durable == (Durable{}),
			home:    cfg.Home,
		},
		disc: discoveryState{
			coords: make(map[wire.NodeID]*peer),
			fresh:  make(map[wire.NodeID]*freshPeer),
			loud:   make(map[wire.NodeID]time.Time),
		},
		coord: coordinatorState{
			members: newTracker(),
		},
		lease: leaseState{noPreempt: cfg.NoPreempt, viewPrimary: cfg.ViewPrimary},
		quorum: quorumState{
			roll:      quorum.NewRoll(cfg.ID, MaxGroupSize, cfg.Timing.AnswerTimeout),
			qmismatch: make(map[wire.NodeID]wire.Quorum),
		},
	}
	n.quorum.reportedRule = n.configured() // no notice for the configured rule
	if r := cfg.Durable.Rule; r.Voters > 0 && n.q.Enabled() {
		n.quorum.remembered = quorum.Of(r)
	}
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
func (n *Node) Stopped() bool { return n.start.stopped }

func (n *Node) degraded() bool { return n.store.persistErr != "" }

func (n *Node) rank() wire.Rank {
	return wire.Rank{Degraded: n.degraded(), Incumbent: n.lease.incumbent, Priority: n.prio, ID: n.id}
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
		Counter:      n.store.durable.Counter,
		PersistError: n.store.persistErr,
		Leader:       n.lease.leader,
		Term:         n.lease.term,
		LeaderSince:  n.lease.leaderSince,
		Primary:      n.lease.primary,
		Expect:       n.q.Expect,
		LeaseUntil:   n.lease.leaseUntil,
		Incumbent:    n.lease.incumbent,
	}
}

// Durable returns what the node has confirmed saved.
func (n *Node) Durable() Durable { return n.store.durable }

// Output returns and clears what the machine wants done.
func (n *Node) Output() Output {
	o := n.out
	n.out = Output{}
	return o
}

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
	if n.start.settled {
		flags |= wire.FlagSettled
	}
	if to == wire.Broadcast {
		flags |= wire.FlagBroadcast
	}
	if n.lease.incumbent {
		flags |= wire.FlagIncumbent
	}
	if n.start.noState {
		flags |= wire.FlagFresh
	}
	if n.lease.primary && n.isCoordinator() {
		flags |= wire.FlagPrimary
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
		n.store.persistErr == old.PersistError && n.gen == n.lastGen && n.lease.leader == old.Leader && n.lease.term == old.Term &&
		n.lease.primary == old.Primary && n.lease.incumbent == old.Incumbent {
		// Not a change of view: a lease renewed, a counter saved.
		n.last.Counter, n.last.LeaseUntil = n.store.durable.Counter, n.lease.leaseUntil
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
	case n.lease.leader && (!n.isCoordinator() || n.start.stopped):
		n.lease.leader, n.lease.term, n.lease.leaderSince = false, wire.GroupNumber{}, time.Time{}
	case !n.lease.leader && n.isCoordinator() && n.state == wire.StateNormal && !n.start.stopped:
		n.lease.leader, n.lease.term, n.lease.leaderSince = true, n.group, now
		if !n.quorumMode() {
			n.noteTerm(now, n.lease.term) // every leadership acts (in quorum mode: once primary)
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
	if g.Seq > n.store.maxSeen {
		n.store.maxSeen = g.Seq
	}
	if n.store.want.LastGroup.Less(g) {
		n.store.want.LastGroup = g
		n.requestSave(now)
	}
}

// resetRoles forgets everything tied to the current role.
func (n *Node) resetRoles() {
	n.coord.check = nil
	n.coord.mergeAt = time.Time{}
	n.coord.mergeWith = nil
	n.coord.merge = nil
	n.coord.ready = nil
	n.coord.nextLate = time.Time{}
	n.lease.lastAckReq = time.Time{}
	n.lease.lastReqBeat, n.lease.ackRetryAt = 0, time.Time{}
	n.lease.owe, n.lease.lastBeatNo, n.part.coordTerm, n.part.coordIncumbent, n.part.coordPrimary = false, 0, wire.GroupNumber{}, false, false
	n.part.coordQ, n.part.coordLease, n.part.coordBoot = wire.Quorum{}, 0, 0
	n.coord.staleVersion = false
	n.coord.nextVersionAt = time.Time{}
	n.part.probeUntil = time.Time{}
	n.part.asm = nil
	n.part.election = nil
	n.part.electAt = time.Time{}
	n.store.pending = nil
	n.part.reorgUntil = time.Time{}
	n.part.resendAcc = time.Time{}
	n.start.attachAt, n.start.waitUntil, n.start.offer = time.Time{}, time.Time{}, nil
	n.part.outrankSince, n.part.behindSince = time.Time{}, time.Time{}
	n.coord.declined = nil
	n.coord.members.reset()
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

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
