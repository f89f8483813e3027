package sim

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/groupd/groupd/driver"
	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// This file holds the simulation's state (its processes, clock, network and
// checker), its construction, and what callers read of it.

// node is the simulator's record of one process: the machine (behind its
// driver) while it runs, and what survives a crash (its modelled state
// file). Slots 0..N-1 are nodes 1..N; a second process started with an ID
// already in use (StartDuplicate) gets a slot of its own.
type node struct {
	slot   int32
	id     wire.NodeID
	prio   uint8
	timing invitation.Timing
	alg    invitation.Election
	d      *driver.Driver // nil while down
	alive  bool
	inc    uint32 // incarnation: bumped at every (re)start
	boot   uint64 // this incarnation's boot nonce
	dup    bool   // a second process with another slot's ID
	// split: a second process started on the other side of a partition
	// from the first (StartDuplicateSplit): it may lead there and make
	// numbers, but LP1 holds its primary leaderships apart from the
	// first's.
	split bool
	// offset is this incarnation's clock offset from the virtual clock;
	// nextOffset takes effect at the next start (a clock is set at boot,
	// and the daemon's timers are monotonic while it runs). drift is its
	// rate error from bootAt (virtual), this incarnation's start.
	offset, nextOffset time.Duration
	drift              float64
	bootAt             int64
	maxOffset          time.Duration // the largest offset it ever started with
	saneClock          bool          // start with a clock not behind any the LAN ran on (random schedules, after state loss)

	durable  invitation.Durable   // the modelled state file
	diskFull bool                 // every save fails (SetDiskFull), across restarts
	history  []invitation.Durable // earlier contents of it, oldest first (Restore)
	saves    []invitation.Durable // saves in flight, FIFO; the first is being written

	tickAt int64 // scheduled tick (virtual), or -1
	last   invitation.Status

	// pausedUntil is when a paused process resumes (Pause; zero: it
	// runs), and stash what it was given meanwhile.
	pausedUntil int64
	stash       []event
	// suspends are the clock's offsets before each suspend of its host
	// (Suspend), and leaseRaw the lease end, on its clock, that leadUntil
	// was last mapped from (leaseEnd).
	suspends    []clockStep
	leaseRaw    time.Time
	suspendedAt int64 // when its host went down, while it is (0: it is up)

	// Keyed networks (Config.Keyed): the boot of each sender slot this
	// process has verified, and the one packet held per unverified sender.
	verified map[wire.NodeID]uint64
	held     map[wire.NodeID]*wire.Message
	// superseded are the boots of each ID it verified before the live
	// one (newest first, at most four, as wire.ReplayWindow keeps), and
	// oldAsked when it last challenged one of them.
	superseded map[wire.NodeID][]uint64
	oldAsked   map[wire.NodeID]int64
	// route is, for IDs that two processes share, the slot whose packets
	// this process last received: where its unicasts to that ID go, as
	// the daemon's address book would send them.
	route map[wire.NodeID]int32

	// knows is, with Config.SeedsOnly, the slots this node's memberlist
	// knows (see Config.SeedsOnly and Sim.listed).
	knows []bool
	// hdr is the header of the machine's last message (what a probe
	// carries), probes what this process did about other processes with
	// its ID, and lingerUntil when a process that gave way stops
	// answering challenges (dupid.go).
	hdr         wire.Header
	hasHdr      bool
	probes      map[int32]*dupProbe
	lingerUntil int64
	// leading: the checker was told this node is a primary leader
	// (quorum mode), with this lease's end, in virtual time.
	leading   bool
	leadUntil int64
	leadTerm  wire.GroupNumber
}

// historyLen bounds how many earlier state files a node remembers.
const historyLen = 64

// Sim is a deterministic simulation of N invitation.Nodes on a virtual
// clock and a modelled network. It is not safe for concurrent use.
type Sim struct {
	cfg   Config
	rnd   *rand.Rand
	now   int64
	seq   uint64
	q     queue
	nodes []*node
	byID  map[wire.NodeID][]int32 // only for IDs with more than one slot

	net    Net
	side   []int32              // partition side of each slot
	cuts   map[[2]int32]bool    // one-way cuts (from, to)
	deaf   map[[2]int32]bool    // one-way broadcast-only cuts (from, to)
	links  map[[2]int32]float64 // per directed link loss
	epoch  uint64               // bumped at every partition change
	detect Detect
	host   Host
	// cpuFree is when the host's CPU clears its backlog (Host).
	cpuFree int64

	chk      *invariant.Checker
	failures []invariant.Violation
	err      *Failure

	lastStart int64 // when the last node boots for the first time

	// news holds, per slot, what the failure detector will tell it after
	// the last network change (see downNews).
	news []downNews

	counts  Counts
	buf     []byte
	trace   ring
	events  uint64
	notices []NoticeRecord
	// primaries are the primary leaderships seen (quorum mode), in the
	// order they began.
	primaries []Primary
}

// NoticeRecord is a notice a node's machine raised (see invitation.Notice).
type NoticeRecord struct {
	Slot   int32
	Notice invitation.Notice
}

// New builds a simulation and schedules every node's start. Nothing runs
// until RunFor.
func New(cfg Config) (*Sim, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	s := &Sim{
		cfg:    cfg,
		rnd:    rand.New(rand.NewSource(cfg.Seed)),
		net:    cfg.Net,
		cuts:   make(map[[2]int32]bool),
		deaf:   make(map[[2]int32]bool),
		links:  make(map[[2]int32]float64),
		byID:   make(map[wire.NodeID][]int32),
		detect: cfg.Detect,
		host:   cfg.Host,
		chk:    newChecker(cfg),
		buf:    make([]byte, 0, wire.MaxPacketSize),
		trace:  newRing(cfg.TraceLines),
	}
	for i := 0; i < cfg.N; i++ {
		id := wire.NodeID(i + 1)
		n := s.addSlot(id, false)
		n.nextOffset = cfg.clockOffset(id)
		s.chk.Persisted(Epoch, id, 0)
		s.chk.Crash(Epoch, id) // down until it starts
	}
	for i := range s.nodes {
		at := int64(0)
		if cfg.StartSpread > 0 {
			at = s.rnd.Int63n(int64(cfg.StartSpread) + 1)
		}
		s.lastStart = max(s.lastStart, at)
		s.push(event{at: at, kind: evStart, node: int32(i)})
	}
	return s, nil
}

// addSlot adds a process slot for id.
func (s *Sim) addSlot(id wire.NodeID, dup bool) *node {
	n := &node{slot: int32(len(s.nodes)), id: id, prio: s.cfg.priority(id), timing: s.cfg.timing(id),
		alg: s.cfg.election(id), tickAt: -1, dup: dup}
	s.nodes = append(s.nodes, n)
	s.side = append(s.side, 0)
	if dup {
		if len(s.byID[id]) == 0 {
			s.byID[id] = []int32{int32(id - 1)}
		}
		s.byID[id] = append(s.byID[id], n.slot)
	}
	return n
}

// MustNew is New for tests and examples: it panics on a bad Config.
func MustNew(cfg Config) *Sim {
	s, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return s
}

// Config returns the configuration, with defaults filled in.
func (s *Sim) Config() Config { return s.cfg }

// Now returns the virtual time.
func (s *Sim) Now() time.Time { return Epoch.Add(time.Duration(s.now)) }

// Elapsed returns the virtual time since the start.
func (s *Sim) Elapsed() time.Duration { return time.Duration(s.now) }

// Events returns how many events have been processed.
func (s *Sim) Events() uint64 { return s.events }

// Notices returns every notice the nodes' machines raised, in order.
func (s *Sim) Notices() []NoticeRecord { return s.notices }

// Err returns the first invariant violation, or nil. Once a violation is
// found the simulation stops: RunFor returns it at once.
func (s *Sim) Err() error {
	if s.err == nil {
		return nil
	}
	return s.err
}

// index returns the slot of node id's first process.
func (s *Sim) index(id wire.NodeID) int32 {
	if id < 1 || int(id) > s.cfg.N {
		panic(fmt.Sprintf("sim: no node %d (N=%d)", id, s.cfg.N))
	}
	return int32(id - 1)
}

// SlotAlive reports whether the process in slot is up.
func (s *Sim) SlotAlive(slot int32) bool { return s.nodes[slot].alive }

// Alive reports whether node id is up.
func (s *Sim) Alive(id wire.NodeID) bool { return s.nodes[s.index(id)].alive }

// Durable returns node id's modelled state file.
func (s *Sim) Durable(id wire.NodeID) invitation.Durable { return s.nodes[s.index(id)].durable }

// N returns the number of nodes.
func (s *Sim) N() int { return s.cfg.N }

// Status returns node id's current view; ok is false while it is down.
func (s *Sim) Status(id wire.NodeID) (invitation.Status, bool) {
	n := s.nodes[s.index(id)]
	if !n.alive {
		return invitation.Status{}, false
	}
	return n.d.Node().Status(), true
}

// View returns node id's last reported view (what Events said), even
// while it is down.
func (s *Sim) View(id wire.NodeID) invitation.Status { return s.nodes[s.index(id)].last }

// Statuses returns the views of the live nodes, by ID (first processes
// only).
func (s *Sim) Statuses() []invitation.Status {
	var out []invitation.Status
	for _, n := range s.nodes[:s.cfg.N] {
		if n.alive {
			out = append(out, n.last)
		}
	}
	return out
}

// LiveIDs returns the IDs of the live nodes.
func (s *Sim) LiveIDs() []wire.NodeID {
	var out []wire.NodeID
	for _, n := range s.nodes[:s.cfg.N] {
		if n.alive {
			out = append(out, n.id)
		}
	}
	return out
}

// Highest returns the highest-ranked live node, or 0.
func (s *Sim) Highest() wire.NodeID { return invariant.Highest(s.Statuses()) }

// Note records a line in the trace, e.g. a scenario step.
func (s *Sim) Note(format string, args ...any) {
	s.record(entry{at: s.now, kind: trNote, text: fmt.Sprintf(format, args...)})
}

// Trace renders the trace ring, oldest line first.
func (s *Sim) Trace() string { return s.trace.render() }
