package sim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"time"

	"github.com/groupd/groupd/driver"
	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

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

	// Keyed networks (Config.Keyed): the boot of each sender slot this
	// process has verified, and the one packet held per unverified sender.
	verified map[int32]uint64
	held     map[int32]*wire.Message
	// route is, for IDs that two processes share, the slot whose packets
	// this process last received: where its unicasts to that ID go, as
	// the daemon's address book would send them.
	route map[wire.NodeID]int32

	// knows is, with Config.SeedsOnly, the slots this node's broadcasts
	// reach (see Config.SeedsOnly).
	knows []bool
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

// Primary is one primary leadership (quorum mode): node Node led in Term,
// and was primary from From until To, its lease's end (real time on the
// virtual clock); Open while it still runs.
type Primary struct {
	Node     wire.NodeID
	Term     wire.GroupNumber
	From, To time.Time
	Open     bool
}

// Primaries returns the primary leaderships seen so far (quorum mode).
func (s *Sim) Primaries() []Primary { return s.primaries }

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
		chk:    invariant.New(),
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

func (s *Sim) push(e event) {
	s.seq++
	e.seq = s.seq
	s.q.push(e)
}

// RunFor advances the virtual clock by d, processing every event due by
// then, and checks S1–S4 after each. It returns the first violation.
func (s *Sim) RunFor(d time.Duration) error {
	return s.runTo(s.now + int64(d))
}

func (s *Sim) runTo(end int64) error {
	for s.err == nil && len(s.q) > 0 && s.q[0].at <= end {
		e := s.q.pop()
		if e.at > s.now {
			s.now = e.at
		}
		s.handle(&e)
	}
	if s.err != nil {
		return s.err
	}
	if end > s.now {
		s.now = end
	}
	return nil
}

// RunUntil runs until cond holds, checking it every poll of virtual time,
// for at most max. It returns how long it ran and whether cond held.
func (s *Sim) RunUntil(cond func(*Sim) bool, poll, max time.Duration) (time.Duration, bool, error) {
	start := s.now
	for {
		if cond(s) {
			return time.Duration(s.now - start), true, nil
		}
		if time.Duration(s.now-start) >= max {
			return time.Duration(s.now - start), false, nil
		}
		if err := s.RunFor(poll); err != nil {
			return time.Duration(s.now - start), false, err
		}
	}
}

// clock is node n's view of the current time: the virtual clock, its
// offset, and its drift since it started.
func (s *Sim) clock(n *node) time.Time {
	t := s.Now().Add(n.offset)
	if n.drift != 0 {
		t = t.Add(time.Duration(n.drift * float64(s.now-n.bootAt)))
	}
	return t
}

// virtual is the virtual time at which n's clock reads t (at least: a
// tick scheduled then finds its deadline due).
func (s *Sim) virtual(n *node, t time.Time) int64 {
	x := int64(t.Sub(Epoch) - n.offset)
	if n.drift == 0 {
		return x
	}
	// clock = now + drift·(now − bootAt) + offset, solved for now.
	return int64(math.Ceil((float64(x)+n.drift*float64(n.bootAt))/(1+n.drift))) + 1
}

func (s *Sim) handle(e *event) {
	n := s.nodes[e.node]
	if s.stashed(n, e) {
		return // counted when the paused node handles it
	}
	s.events++
	switch e.kind {
	case evResume:
		if n.alive && e.inc == n.inc && n.pausedUntil == e.at {
			s.resume(n)
		}
	case evStart:
		if !n.alive && n.inc == 0 {
			s.boot(n)
		}
	case evDeliver:
		s.arrive(n, e)
	case evVerify:
		s.verify(n, e)
	case evTick:
		if !n.alive || e.inc != n.inc || e.at != n.tickAt {
			return // stale: the node moved its deadline or restarted
		}
		n.tickAt = -1
		now := s.clock(n)
		if !n.d.Tick(now) {
			timer, _ := n.d.Node().NextTimer()
			s.fail(invariant.Violation{Invariant: "DL", Time: s.Now(), Nodes: []wire.NodeID{n.id},
				Detail: fmt.Sprintf("node %d: after repeated Ticks at %s its deadline is still due (timer %s, status %s)",
					n.id, invariant.FormatTime(now), timer, n.d.Node().Status())})
		}
		s.after(n)
	case evSaved:
		if !n.alive || e.inc != n.inc || len(n.saves) == 0 {
			return
		}
		d := n.saves[0]
		n.saves = n.saves[1:]
		if len(n.saves) > 0 {
			s.push(event{at: s.now + s.saveLatency(), kind: evSaved, node: e.node, inc: n.inc})
		}
		if n.diskFull {
			s.input(n, invitation.SaveFailed{Durable: d, Err: "sim: disk full"})
			return
		}
		if s.cfg.SaveFailure > 0 && s.rnd.Float64() < s.cfg.SaveFailure {
			s.input(n, invitation.SaveFailed{Durable: d, Err: "sim: injected save failure"})
			return
		}
		s.store(n, d)
		s.input(n, invitation.Saved{Durable: d})
	case evDetectCrash:
		down := s.nodes[e.about]
		if down.alive || down.inc != e.inc {
			return // it came back before anyone noticed
		}
		for i, o := range s.nodes {
			if o.alive && s.reachable(e.about, int32(i)) {
				s.push(event{at: s.now + s.jitter(s.detect.Jitter), kind: evPeerDown, node: int32(i), inc: o.inc, about: e.about})
			}
		}
	case evDetectNetwork:
		if e.epoch != s.epoch {
			return // the network changed again; that change has its own
		}
		s.planNews()
	case evNetworkNews:
		s.tellNews(e)
	case evPeerDown:
		if !n.alive || e.inc != n.inc {
			return
		}
		// News that no longer holds is refuted before it spreads: the
		// peer restarted. (News of a network change: evNetworkNews.)
		if s.nodes[e.about].alive {
			return
		}
		s.counts.PeerDowns++
		s.input(n, invitation.PeerDown{ID: s.nodes[e.about].id})
	}
}

// input feeds one input to a live node and carries out what follows.
func (s *Sim) input(n *node, in invitation.Input) {
	n.d.Step(s.clock(n), in)
	s.after(n)
}

// store makes d the content of n's modelled state file.
func (s *Sim) store(n *node, d invitation.Durable) {
	if n.durable != d {
		n.history = append(n.history, n.durable)
		if len(n.history) > historyLen {
			n.history = n.history[1:]
		}
	}
	n.durable = d
	if !n.dup {
		s.chk.Persisted(s.Now(), n.id, d.Counter)
	}
}

// downNews is what the failure detector will tell one node after a network
// change: each peer it can no longer reach both ways, at its own detection
// time. Only the next item sits in the event queue; a partition of N nodes
// would otherwise queue N² events at once (12.5 million, 1.4 GB, at
// N = 5,000).
type downNews struct {
	epoch uint64
	items []newsItem // by time, then by peer slot
	next  int
}

type newsItem struct {
	at    int64
	about int32
}

// planNews draws every live node's news about the current network.
func (s *Sim) planNews() {
	if len(s.news) < len(s.nodes) {
		s.news = append(s.news, make([]downNews, len(s.nodes)-len(s.news))...)
	}
	for i, a := range s.nodes {
		d := &s.news[i]
		d.epoch, d.items, d.next = s.epoch, d.items[:0], 0
		if !a.alive {
			continue
		}
		for j, b := range s.nodes {
			if i == j || !b.alive || b.id == a.id {
				continue
			}
			if !s.reachable(int32(i), int32(j)) || !s.reachable(int32(j), int32(i)) {
				d.items = append(d.items, newsItem{at: s.now + s.jitter(s.detect.Jitter), about: int32(j)})
			}
		}
		slices.SortStableFunc(d.items, func(x, y newsItem) int { return cmp.Compare(x.at, y.at) })
		if len(d.items) > 0 {
			s.push(event{at: d.items[0].at, kind: evNetworkNews, node: int32(i), inc: a.inc, epoch: s.epoch})
		}
	}
}

// tellNews delivers a node's news that is due, and queues the rest.
func (s *Sim) tellNews(e *event) {
	n, d := s.nodes[e.node], &s.news[e.node]
	if !n.alive || e.inc != n.inc || e.epoch != s.epoch || d.epoch != e.epoch {
		return // restarted, or the network changed since: stale news
	}
	for d.next < len(d.items) && d.items[d.next].at <= s.now {
		about := s.nodes[d.items[d.next].about].id
		d.next++
		s.counts.PeerDowns++
		s.input(n, invitation.PeerDown{ID: about})
		if s.err != nil || !n.alive {
			return // a violation stops the run after this input
		}
	}
	if d.next < len(d.items) {
		s.push(event{at: d.items[d.next].at, kind: evNetworkNews, node: e.node, inc: n.inc, epoch: e.epoch})
	} else {
		d.items, d.next = nil, 0 // release the memory of a large partition
	}
}

func (s *Sim) jitter(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return s.rnd.Int63n(int64(d) + 1)
}

func (s *Sim) saveLatency() int64 {
	lo, hi := s.cfg.SaveLatency[0], s.cfg.SaveLatency[1]
	return int64(lo) + s.jitter(hi-lo)
}

// splitmix derives a deterministic 64-bit value from the seed, a slot and
// an incarnation.
func splitmix(seed int64, slot int32, inc uint32, salt uint64) uint64 {
	z := uint64(seed) + uint64(slot+1)*0x9e3779b97f4a7c15 + uint64(inc)*0xbf58476d1ce4e5b9 + salt
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// boot starts (or restarts) a node from its modelled state file.
func (s *Sim) boot(n *node) {
	n.inc++
	n.saves = n.saves[:0]
	n.tickAt = -1
	if n.saneClock {
		for _, o := range s.nodes {
			n.nextOffset = max(n.nextOffset, o.maxOffset, o.offset)
		}
		n.saneClock = false
	}
	n.offset = n.nextOffset
	if n.inc == 1 || n.offset > n.maxOffset {
		n.maxOffset = n.offset
	}
	n.bootAt, n.drift = s.now, s.cfg.drift(n.id)
	if s.cfg.SeedsOnly {
		n.knows = make([]bool, len(s.nodes))
		s.joinSeeds(n)
	}
	n.boot = splitmix(s.cfg.Seed, n.slot, n.inc, 0xb007) | 1
	n.verified, n.held, n.route = nil, nil, nil
	env := &simEnv{s: s, n: n}
	opts := driver.Options{Lazy: *s.cfg.LazyDeadlines, Observer: func(now time.Time, in invitation.Input, out invitation.Output) {
		if in != nil {
			s.record(entry{at: s.now, node: n.id, in: in, out: out})
		}
	}}
	d, err := driver.New(invitation.Config{
		ID:       n.id,
		Priority: n.prio,
		Boot:     n.boot,
		Durable:  n.durable,
		Timing:   n.timing,
		Election: n.alg,
		Rand:     rand.New(rand.NewSource(int64(splitmix(s.cfg.Seed, n.slot, n.inc, 0)))),

		Quorum:      s.cfg.Quorum,
		NoPreempt:   s.cfg.NoPreempt,
		ViewPrimary: s.cfg.ViewPrimary,
	}, s.clock(n), env, opts)
	if err != nil {
		// Config was validated in New; this is a bug in the simulator.
		panic(fmt.Sprintf("sim: invitation.New: %v", err))
	}
	n.d = d
	n.alive = true
	if !n.dup {
		s.chk.Restart(s.Now(), n.id)
		// A node's group numbers only grow, from what its state file
		// holds (S5): a save that had not landed when it crashed is
		// lost with it.
		s.chk.HeldFloor(n.id, n.durable.LastGroup)
	}
	s.record(entry{at: s.now, node: n.id, kind: trStart, text: n.durable.String()})
	s.observe(n, d.Node().Status()) // the view New starts from, before any Event
	s.after(n)
}

// joinSeeds is memberlist's join of the seeds (nodes 1 and 2) without
// multicast: a push/pull with each seed n reaches, which gives each side
// what the other knew.
func (s *Sim) joinSeeds(n *node) {
	if len(n.knows) < len(s.nodes) {
		n.knows = append(n.knows, make([]bool, len(s.nodes)-len(n.knows))...)
	}
	for _, seed := range []wire.NodeID{1, 2} {
		if int(seed) > s.cfg.N {
			continue
		}
		o := s.nodes[seed-1]
		n.knows[o.slot] = true
		if !o.alive || o.slot == n.slot || !s.reachable(n.slot, o.slot) || !s.reachable(o.slot, n.slot) {
			continue
		}
		if len(o.knows) < len(s.nodes) {
			o.knows = append(o.knows, make([]bool, len(s.nodes)-len(o.knows))...)
		}
		for i, k := range o.knows {
			n.knows[i] = n.knows[i] || k
		}
		copy(o.knows, n.knows)
	}
}

// simEnv is a node's runtime in the simulation: the driver's Env.
type simEnv struct {
	s *Sim
	n *node
}

func (e *simEnv) Send(m wire.Envelope) { e.s.send(e.n, &m) }

// Save models the state file: saves of one node complete in order, each
// after Config.SaveLatency.
func (e *simEnv) Save(d invitation.Durable) (bool, error) {
	n := e.n
	n.saves = append(n.saves, d)
	if len(n.saves) == 1 {
		e.s.push(event{at: e.s.now + e.s.saveLatency(), kind: evSaved, node: n.slot, inc: n.inc})
	}
	return false, nil
}

func (e *simEnv) Report(now time.Time, out invitation.Output) {
	s, n := e.s, e.n
	for i := range out.Events {
		s.observe(n, out.Events[i].New)
	}
	for _, g := range out.Created {
		if n.dup {
			s.fail(invariant.Violation{Invariant: "D1", Time: s.Now(), Group: g, Nodes: []wire.NodeID{n.id},
				Detail: fmt.Sprintf("a second process with node ID %d (slot %d) created %s instead of giving way", n.id, n.slot, g)})
		}
		for _, v := range s.chk.Created(invariant.Creation{Time: s.Now(), Node: n.id, Group: g}) {
			s.fail(v)
		}
	}
	for _, nt := range out.Notices {
		s.notices = append(s.notices, NoticeRecord{Slot: n.slot, Notice: nt})
		if nt.Kind == invitation.NoticeDuplicateID && nt.Yield && !n.dup {
			s.fail(invariant.Violation{Invariant: "D2", Time: s.Now(), Nodes: []wire.NodeID{n.id},
				Detail: fmt.Sprintf("node %d gave way to a second process with its ID (boot %016x)", n.id, nt.Boot)})
		}
	}
}

// after reschedules a node's tick once it handled an input, checks that
// its view changed only with an Event, and retires a node that gave way.
func (s *Sim) after(n *node) {
	if !n.alive {
		return
	}
	if *s.cfg.VerifyStatus && !n.dup {
		st := n.d.Node().Status()
		if st.State != n.last.State || st.Group != n.last.Group || st.Version != n.last.Version ||
			!invariant.SameMembers(st.Members, n.last.Members) || st.Leader != n.last.Leader {
			s.fail(invariant.Violation{Invariant: "EV", Time: s.Now(), Group: st.Group, Nodes: []wire.NodeID{n.id},
				Detail: fmt.Sprintf("node %d's view changed to %s but its last Event said %s", n.id, st, n.last)})
			s.observe(n, st)
		}
	}
	if n.d.Node().Stopped() {
		s.retire(n)
		return
	}
	if s.cfg.Quorum.Enabled() && !n.dup {
		s.lead(n)
	}
	dl := n.d.Deadline()
	if dl.IsZero() {
		return
	}
	at := max(s.virtual(n, dl), s.now)
	if at != n.tickAt {
		n.tickAt = at
		s.push(event{at: at, kind: evTick, node: n.slot, inc: n.inc})
	}
}

// lead tells the checker, in quorum mode, when n is a primary leader and
// until when its lease runs (in real, virtual time), so that it checks
// that no two nodes are primary leaders at once and that terms grow.
func (s *Sim) lead(n *node) {
	primary, until := n.d.Node().Lease()
	st := n.d.Node().Status()
	if !primary || !st.Leader {
		if n.leading {
			n.leading = false
			s.endPrimary(n)
			s.chk.Unlead(s.Now(), n.id)
		}
		return
	}
	end := time.Time{} // without a lease (the negative control): until it stops
	if !until.IsZero() {
		at := s.virtual(n, until)
		if n.leading && at == n.leadUntil && n.leadTerm == st.Term {
			return
		}
		n.leadUntil = at
		end = Epoch.Add(time.Duration(at))
	}
	s.recordPrimary(n, st.Term, end)
	n.leading, n.leadTerm = true, st.Term
	for _, v := range s.chk.Lead(s.Now(), n.id, st.Term, end) {
		s.fail(v)
	}
}

// recordPrimary keeps the record of n's primary leaderships: a new one
// when it was not leading, or in another term, or after its lease ran
// out; else the current one's new end.
func (s *Sim) recordPrimary(n *node, term wire.GroupNumber, end time.Time) {
	for i := len(s.primaries) - 1; i >= 0; i-- {
		p := &s.primaries[i]
		if p.Node != n.id {
			continue
		}
		if n.leading && p.Term == term && (p.Open || p.To.After(s.Now())) {
			p.To, p.Open = end, end.IsZero()
			return
		}
		break
	}
	s.primaries = append(s.primaries, Primary{Node: n.id, Term: term, From: s.Now(), To: end, Open: end.IsZero()})
}

// endPrimary closes n's open primary leadership without a lease at now.
func (s *Sim) endPrimary(n *node) {
	for i := len(s.primaries) - 1; i >= 0; i-- {
		if p := &s.primaries[i]; p.Node == n.id {
			if p.Open {
				p.To, p.Open = s.Now(), false
			}
			return
		}
	}
}

// retire stops a process that gave way to another with its ID: it exits,
// as the daemon does.
func (s *Sim) retire(n *node) {
	s.record(entry{at: s.now, node: n.id, kind: trYield})
	s.halt(n)
}

// halt ends n's process, crashed or exited: its driver goes, and the
// checker sees the node down (a duplicate was never its node).
func (s *Sim) halt(n *node) {
	s.collectLazy(n)
	n.pausedUntil, n.stash = 0, nil
	n.alive = false
	n.d = nil
	n.tickAt = -1
	if !n.dup {
		s.chk.Crash(s.Now(), n.id)
		if n.leading {
			// A lease outlives its holder's crash: whatever ran as its
			// leader may still run until the lease's end, so the checker
			// keeps it; only a leadership without a lease ends here.
			n.leading = false
			s.endPrimary(n)
			s.chk.Unlead(s.Now(), n.id)
		}
	}
}

// observe feeds one view of n to the checker.
func (s *Sim) observe(n *node, st invitation.Status) {
	n.last = st
	if n.dup {
		return // the checker follows one process per ID (see Report's D1)
	}
	for _, v := range s.chk.Observe(invariant.Observation{Time: s.Now(), Node: n.id, Status: st, Alive: true}) {
		s.fail(v)
	}
}

// fail records a violation; the run stops after the current event.
func (s *Sim) fail(v invariant.Violation) {
	s.failures = append(s.failures, v)
	if s.err == nil {
		s.err = &Failure{Seed: s.cfg.Seed, Repro: s.cfg.Repro}
	}
	s.err.Violations = s.failures
	s.err.Trace = "" // rendered when the event ends
}

// Failure is the error a violated invariant stops a run with: the seed, the
// violations, the last trace lines and the command that reproduces it.
type Failure struct {
	Seed       int64
	Violations []invariant.Violation
	Trace      string
	Repro      string
}

func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invariant violated (seed %d):\n", f.Seed)
	for _, v := range f.Violations {
		fmt.Fprintf(&b, "  %s\n", v)
	}
	if f.Trace != "" {
		b.WriteString("trace (last events, oldest first):\n")
		b.WriteString(f.Trace)
	}
	if f.Repro != "" {
		fmt.Fprintf(&b, "reproduce: %s\n", f.Repro)
	}
	return b.String()
}

// failNow records a violation found outside an event (a liveness check)
// and renders the trace.
func (s *Sim) failNow(vs []invariant.Violation) error {
	if len(vs) == 0 {
		return nil
	}
	for _, v := range vs {
		s.fail(v)
	}
	s.err.Trace = s.trace.render()
	return s.err
}

// ---------------------------------------------------------------------------
// Scripted faults.

// index returns the slot of node id's first process.
func (s *Sim) index(id wire.NodeID) int32 {
	if id < 1 || int(id) > s.cfg.N {
		panic(fmt.Sprintf("sim: no node %d (N=%d)", id, s.cfg.N))
	}
	return int32(id - 1)
}

// Crash stops a node: it loses all memory; only its state file survives.
// A save being written lands or not, at random (the store never loses the
// previous value). No-op if it is down.
func (s *Sim) Crash(id wire.NodeID) { s.crashSlot(s.nodes[s.index(id)]) }

func (s *Sim) crashSlot(n *node) {
	if !n.alive {
		return
	}
	if len(n.saves) > 0 && s.rnd.Intn(2) == 0 {
		s.store(n, n.saves[0])
	}
	n.saves = n.saves[:0]
	s.halt(n)
	s.record(entry{at: s.now, node: n.id, kind: trCrash, text: n.durable.String()})
	if !s.detect.Off {
		s.push(event{at: s.now + int64(s.detect.Delay), kind: evDetectCrash, node: n.slot, inc: n.inc, about: n.slot})
	}
}

// collectLazy keeps the lazy-deadline accounting of a driver that goes.
func (s *Sim) collectLazy(n *node) {
	if n.d == nil {
		return
	}
	s.counts.LazyMisses += n.d.LazyMisses
	if s.counts.FirstLazyMiss == "" {
		s.counts.FirstLazyMiss = n.d.FirstLazyMiss
	}
}

// Restart starts a crashed node again from its state file. No-op if it is
// up.
func (s *Sim) Restart(id wire.NodeID) {
	n := s.nodes[s.index(id)]
	if n.alive {
		return
	}
	s.boot(n)
}

// SetDurable overwrites a crashed node's state file, as if restored from
// elsewhere; it restarts with it.
func (s *Sim) SetDurable(id wire.NodeID, d invitation.Durable) error {
	n := s.nodes[s.index(id)]
	if n.alive {
		return fmt.Errorf("sim: node %d is up; crash it before changing its state file", id)
	}
	n.durable = d
	s.Note("state file of %d set to %s", id, d)
	// The term floor it held is gone: primary leaders' terms may go back
	// once (docs/design.md §8, the assumption).
	s.chk.StateLost(id)
	return nil
}

// Wipe empties a crashed node's state file, as an operator's rm -rf of its
// data dir would.
func (s *Sim) Wipe(id wire.NodeID) error {
	if err := s.SetDurable(id, invitation.Durable{}); err != nil {
		return err
	}
	s.Note("state file of %d wiped", id)
	return nil
}

// Restore puts back the state file node id had k saves ago (or its oldest
// known one), as restoring a backup or a VM snapshot would.
func (s *Sim) Restore(id wire.NodeID, k int) error {
	n := s.nodes[s.index(id)]
	if len(n.history) == 0 {
		return s.SetDurable(id, invitation.Durable{})
	}
	i := max(len(n.history)-k, 0)
	return s.SetDurable(id, n.history[i])
}

// SetDiskFull makes every save of node id fail (full) or succeed again,
// as a data dir that fills up and is freed: unlike Config.SaveFailure, the
// failure lasts until the operator acts.
func (s *Sim) SetDiskFull(id wire.NodeID, full bool) {
	s.nodes[s.index(id)].diskFull = full
	s.Note("disk of %d full: %v", id, full)
}

// SetClock sets the clock offset node id's next start begins with
// (negative: behind the other nodes). The daemon's timers are monotonic,
// so a running node keeps its clock; only new numbers' wall-clock floor
// follows it.
func (s *Sim) SetClock(id wire.NodeID, offset time.Duration) {
	s.nodes[s.index(id)].nextOffset = offset
	s.Note("clock of %d at its next start: %+v", id, offset)
}

// StartDuplicate starts a second process with node id's ID and an empty
// state file (an operator's mistake) and returns its slot. It must give
// way (invariants D1, D2).
func (s *Sim) StartDuplicate(id wire.NodeID) int32 {
	s.index(id)
	n := s.addSlot(id, true)
	s.Note("a second process with ID %d starts (slot %d)", id, n.slot)
	s.boot(n)
	return n.slot
}

// SlotAlive reports whether the process in slot is up.
func (s *Sim) SlotAlive(slot int32) bool { return s.nodes[slot].alive }

// CheckConvergedAmong checks L1's condition on a subset of the live nodes
// (one side of a partition): Normal in one group coordinated by the
// highest-ranked of them, listing exactly them.
func (s *Sim) CheckConvergedAmong(ids []wire.NodeID) error {
	sts, vs := s.liveViews(ids, "L1", "node is down")
	return s.failNow(append(vs, invariant.Converged(s.Now(), sts)...))
}

// liveViews returns the views of the live nodes among ids, and a violation
// of invariant inv for each one that is down.
func (s *Sim) liveViews(ids []wire.NodeID, inv, down string) ([]invitation.Status, []invariant.Violation) {
	var sts []invitation.Status
	var vs []invariant.Violation
	for _, id := range ids {
		n := s.nodes[s.index(id)]
		if !n.alive {
			vs = append(vs, invariant.Violation{Invariant: inv, Time: s.Now(), Nodes: []wire.NodeID{id}, Detail: down})
			continue
		}
		sts = append(sts, n.last)
	}
	return sts, vs
}

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

// Converged reports whether L1's condition holds now, with at least one
// live node (without failing the run if it does not).
func (s *Sim) Converged() bool {
	sts := s.Statuses()
	return len(sts) > 0 && invariant.IsConverged(sts)
}

// CheckConverged checks L1 now: call it after the network was connected
// and quiet for HealBound. A violation stops the run and is returned.
func (s *Sim) CheckConverged() error {
	return s.failNow(invariant.Converged(s.Now(), s.Statuses()))
}

// CheckFailover checks L2 now for the given survivors: call it
// FailoverBound after their coordinator crashed.
func (s *Sim) CheckFailover(survivors []wire.NodeID) error {
	sts, vs := s.liveViews(survivors, "L2", "survivor is down")
	return s.failNow(append(vs, invariant.FailedOver(s.Now(), sts)...))
}

// HealBound is T_heal of the slowest configured timing.
func (s *Sim) HealBound() time.Duration {
	var b time.Duration
	for _, n := range s.nodes {
		b = max(b, n.timing.HealBoundFor(n.alg, s.cfg.N))
	}
	return b
}

// FailoverBound is T_failover of the slowest configured timing.
func (s *Sim) FailoverBound() time.Duration {
	var b time.Duration
	for _, n := range s.nodes {
		b = max(b, n.timing.FailoverBoundFor(n.alg, s.cfg.N))
	}
	return b
}

// Note records a line in the trace, e.g. a scenario step.
func (s *Sim) Note(format string, args ...any) {
	s.record(entry{at: s.now, kind: trNote, text: fmt.Sprintf(format, args...)})
}

// Trace renders the trace ring, oldest line first.
func (s *Sim) Trace() string { return s.trace.render() }
