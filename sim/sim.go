package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"time"

	"github.com/groupd/groupd/internal/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// node is the simulator's record of one node: the machine while it runs,
// and what survives a crash (its durable counter).
type node struct {
	id    wire.NodeID
	prio  uint8
	m     *invitation.Node // nil while down
	alive bool
	inc   uint32 // incarnation: bumped at every (re)start
	pkt   uint64 // packet counter of this incarnation

	durable uint64   // the counter in the modelled state file
	before  uint64   // its value before the last save (Config.LoseSaves)
	saves   []uint64 // pending saves, FIFO; the first is being written

	tickAt int64 // scheduled tick, or -1
	busy   int   // Ticks in a row that left work due at their instant
	last   invitation.Status
	group  wire.GroupNumber // last observed group, to detect creations
}

// Sim is a deterministic simulation of N invitation.Nodes on a virtual
// clock and a modelled network. It is not safe for concurrent use.
type Sim struct {
	cfg   Config
	rnd   *rand.Rand
	now   int64
	seq   uint64
	q     queue
	nodes []*node

	net    Net
	side   []int32              // partition side of each node index
	cuts   map[[2]int32]bool    // one-way cuts (from, to)
	links  map[[2]int32]float64 // per directed link loss
	epoch  uint64               // bumped at every partition change
	detect Detect

	chk      *invariant.Checker
	failures []invariant.Violation
	err      *Failure

	lastStart int64 // when the last node boots for the first time

	// news holds, per node index, what the failure detector will tell it
	// after the last network change (see downNews).
	news []downNews

	counts Counts
	buf    []byte
	trace  ring
	events uint64
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
		side:   make([]int32, cfg.N),
		cuts:   make(map[[2]int32]bool),
		links:  make(map[[2]int32]float64),
		detect: cfg.Detect,
		chk:    invariant.New(),
		buf:    make([]byte, 0, wire.MaxPacketSize),
		trace:  newRing(cfg.TraceLines),
	}
	for i := 0; i < cfg.N; i++ {
		id := wire.NodeID(i + 1)
		s.nodes = append(s.nodes, &node{id: id, prio: cfg.priority(id), tickAt: -1})
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

func (s *Sim) handle(e *event) {
	s.events++
	n := s.nodes[e.node]
	switch e.kind {
	case evStart:
		if !n.alive && n.inc == 0 {
			s.boot(n)
		}
	case evDeliver:
		if !n.alive {
			s.counts.Dropped[DropDown]++
			return
		}
		if !s.reachable(int32(e.msg.From-1), e.node) {
			s.counts.Dropped[DropPartition]++ // partitioned while in flight
			return
		}
		s.counts.Delivered[e.msg.Body.Type()]++
		n.m.Step(s.Now(), e.msg)
		s.after(n, entry{kind: trDeliver, msg: e.msg})
	case evTick:
		if !n.alive || e.inc != n.inc || e.at != n.tickAt {
			return // stale: the node moved its deadline or restarted
		}
		n.tickAt = -1
		n.m.Tick(s.Now())
		s.after(n, entry{kind: trTick})
	case evSaved:
		if !n.alive || e.inc != n.inc || len(n.saves) == 0 {
			return
		}
		c := n.saves[0]
		n.saves = n.saves[1:]
		if len(n.saves) > 0 {
			s.push(event{at: s.now + s.saveLatency(), kind: evSaved, node: e.node, inc: n.inc})
		}
		if s.cfg.SaveFailure > 0 && s.rnd.Float64() < s.cfg.SaveFailure {
			n.m.PersistFailed(s.Now(), c, errors.New("sim: injected save failure"))
			s.after(n, entry{kind: trSaveFailed, arg: c})
			return
		}
		n.before, n.durable = n.durable, c
		s.chk.Persisted(s.Now(), n.id, c)
		n.m.Persisted(s.Now(), c)
		s.after(n, entry{kind: trSaved, arg: c})
	case evDetectCrash:
		down := s.nodes[e.about-1]
		if down.alive || down.inc != e.inc {
			return // it came back before anyone noticed
		}
		for i, o := range s.nodes {
			if o.alive && s.reachable(int32(e.about-1), int32(i)) {
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
		if s.nodes[e.about-1].alive {
			return
		}
		s.counts.PeerDowns++
		n.m.PeerDown(s.Now(), e.about)
		s.after(n, entry{kind: trPeerDown, arg: uint64(e.about)})
	}
}

// downNews is what the failure detector will tell one node after a network
// change: each peer it can no longer reach both ways, at its own detection
// time. Only the next item sits in the event queue; a partition of N nodes
// would otherwise queue N² events at once (12.5 million, 1.4 GB, at
// N = 5,000).
type downNews struct {
	epoch uint64
	items []newsItem // by time, then by peer index
	next  int
}

type newsItem struct {
	at    int64
	about wire.NodeID
}

// planNews draws every live node's news about the current network.
func (s *Sim) planNews() {
	if s.news == nil {
		s.news = make([]downNews, len(s.nodes))
	}
	for i, a := range s.nodes {
		d := &s.news[i]
		d.epoch, d.items, d.next = s.epoch, d.items[:0], 0
		if !a.alive {
			continue
		}
		for j, b := range s.nodes {
			if i == j || !b.alive {
				continue
			}
			if !s.reachable(int32(i), int32(j)) || !s.reachable(int32(j), int32(i)) {
				d.items = append(d.items, newsItem{at: s.now + s.jitter(s.detect.Jitter), about: b.id})
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
		about := d.items[d.next].about
		d.next++
		s.counts.PeerDowns++
		n.m.PeerDown(s.Now(), about)
		s.after(n, entry{kind: trPeerDown, arg: uint64(about)})
		if s.err != nil {
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

// nodeRand derives a node's jitter source from the seed, its ID and its
// incarnation (splitmix64).
func nodeRand(seed int64, id wire.NodeID, inc uint32) *rand.Rand {
	z := uint64(seed) + uint64(id)*0x9e3779b97f4a7c15 + uint64(inc)*0xbf58476d1ce4e5b9
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return rand.New(rand.NewSource(int64(z)))
}

// boot starts (or restarts) a node from its durable counter.
func (s *Sim) boot(n *node) {
	n.inc++
	n.pkt = 0
	n.saves = n.saves[:0]
	n.tickAt = -1
	n.group = wire.GroupNumber{}
	m, err := invitation.New(invitation.Config{
		ID:       n.id,
		Priority: n.prio,
		Counter:  n.durable,
		Timing:   s.cfg.Timing,
		Election: s.cfg.Election,
		Rand:     nodeRand(s.cfg.Seed, n.id, n.inc),
	}, s.Now())
	if err != nil {
		// Config was validated in New; this is a bug in the simulator.
		panic(fmt.Sprintf("sim: invitation.New: %v", err))
	}
	n.m = m
	n.alive = true
	s.chk.Restart(s.Now(), n.id)
	s.observe(n, m.Status()) // the view New starts from, before any Event
	s.after(n, entry{kind: trStart, arg: n.durable})
}

// after drains a node's output once it handled an input: it feeds the
// checker every view change, starts saves, sends messages, reschedules the
// node's tick and records a trace line.
func (s *Sim) after(n *node, tr entry) {
	out := n.m.Output()
	now := s.Now()
	for i := range out.Events {
		s.observe(n, out.Events[i].New)
	}
	if *s.cfg.VerifyStatus {
		st := n.m.Status()
		if st.State != n.last.State || st.Group != n.last.Group || st.Version != n.last.Version || !invariant.SameMembers(st.Members, n.last.Members) {
			s.fail(invariant.Violation{Invariant: "EV", Time: now, Group: st.Group, Nodes: []wire.NodeID{n.id},
				Detail: fmt.Sprintf("node %d's view changed to %s but its last Event said %s", n.id, st, n.last)})
			s.observe(n, st)
		}
	}
	if p := out.Persist; p != nil {
		n.saves = append(n.saves, p.Counter)
		if len(n.saves) == 1 {
			s.push(event{at: s.now + s.saveLatency(), kind: evSaved, node: int32(n.id - 1), inc: n.inc})
		}
	}
	for i := range out.Messages {
		s.send(n, &out.Messages[i])
	}
	quiet := out.Empty() && tr.kind != trTick && tr.kind != trStart && n.tickAt >= 0 &&
		n.last.Role() != invitation.Coordinator
	if quiet && *s.cfg.LazyDeadlines {
		// An input that made the node do nothing did not bring its
		// deadline forward (see Config.LazyDeadlines); the tick already
		// scheduled stands, and is at worst early.
	} else if d := n.m.NextDeadline(); !d.IsZero() {
		at := int64(d.Sub(Epoch))
		if quiet && at < n.tickAt {
			s.counts.LazyMisses++
			if s.counts.FirstLazyMiss == "" {
				tr.at, tr.node = s.now, n.id
				s.counts.FirstLazyMiss = fmt.Sprintf("%s: deadline moved from %s to %s (%s)", tr.String(),
					invariant.FormatTime(Epoch.Add(time.Duration(n.tickAt))), invariant.FormatTime(d), n.m.Status())
			}
		}
		if tr.kind == trTick && at <= s.now {
			// Tick(now) left work due by now: tick again at once, but a
			// machine that never gets done with an instant is livelocked.
			n.busy++
			if n.busy > 3 {
				s.fail(invariant.Violation{Invariant: "DL", Time: now, Nodes: []wire.NodeID{n.id},
					Detail: fmt.Sprintf("node %d: after %d Ticks at %s, NextDeadline is still %s (status %s)",
						n.id, n.busy, invariant.FormatTime(now), invariant.FormatTime(d), n.m.Status())})
				at = s.now + int64(time.Millisecond)
			}
		} else if tr.kind == trTick {
			n.busy = 0
		}
		at = max(at, s.now)
		if at != n.tickAt {
			n.tickAt = at
			s.push(event{at: at, kind: evTick, node: int32(n.id - 1), inc: n.inc})
		}
	}
	tr.at, tr.node, tr.out = s.now, n.id, out
	s.record(tr)
}

// observe feeds one view of n to the checker.
func (s *Sim) observe(n *node, st invitation.Status) {
	n.last = st
	now := s.Now()
	for _, v := range s.chk.Observe(invariant.Observation{Time: now, Node: n.id, Status: st, Alive: true}) {
		s.fail(v)
	}
	if st.Group != n.group {
		n.group = st.Group
		if st.Group.ID == n.id {
			for _, v := range s.chk.Created(invariant.Creation{Time: now, Node: n.id, Group: st.Group}) {
				s.fail(v)
			}
		}
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

func (s *Sim) index(id wire.NodeID) int32 {
	if id < 1 || int(id) > len(s.nodes) {
		panic(fmt.Sprintf("sim: no node %d (N=%d)", id, len(s.nodes)))
	}
	return int32(id - 1)
}

// Crash stops a node: it loses all memory; only its durable counter
// survives. A save being written lands or not, at random (the store never
// loses the previous value). No-op if it is down.
func (s *Sim) Crash(id wire.NodeID) {
	n := s.nodes[s.index(id)]
	if !n.alive {
		return
	}
	if len(n.saves) > 0 && s.rnd.Intn(2) == 0 {
		n.durable = n.saves[0]
		s.chk.Persisted(s.Now(), id, n.durable)
	}
	n.saves = n.saves[:0]
	if s.cfg.LoseSaves {
		n.durable = n.before // the checker is not told: it must notice
	}
	n.alive = false
	n.m = nil
	n.tickAt = -1
	s.chk.Crash(s.Now(), id)
	s.record(entry{at: s.now, node: id, kind: trCrash, arg: n.durable})
	if !s.detect.Off {
		s.push(event{at: s.now + int64(s.detect.Delay), kind: evDetectCrash, node: s.index(id), inc: n.inc, about: id})
	}
}

// Restart starts a crashed node again from its durable counter. No-op if
// it is up.
func (s *Sim) Restart(id wire.NodeID) {
	n := s.nodes[s.index(id)]
	if n.alive {
		return
	}
	s.boot(n)
}

// SetDurable overwrites a crashed node's stored counter, as if its state
// file were restored from elsewhere; it restarts with it.
func (s *Sim) SetDurable(id wire.NodeID, counter uint64) error {
	n := s.nodes[s.index(id)]
	if n.alive {
		return fmt.Errorf("sim: node %d is up; crash it before changing its state file", id)
	}
	n.durable, n.before = counter, counter
	s.chk.Persisted(s.Now(), id, counter)
	s.Note("state file of %d set to counter=%d", id, counter)
	return nil
}

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

// Durable returns node id's counter in its modelled state file.
func (s *Sim) Durable(id wire.NodeID) uint64 { return s.nodes[s.index(id)].durable }

// N returns the number of nodes.
func (s *Sim) N() int { return len(s.nodes) }

// Status returns node id's current view; ok is false while it is down.
func (s *Sim) Status(id wire.NodeID) (invitation.Status, bool) {
	n := s.nodes[s.index(id)]
	if !n.alive {
		return invitation.Status{}, false
	}
	return n.m.Status(), true
}

// Statuses returns the views of the live nodes, by ID.
func (s *Sim) Statuses() []invitation.Status {
	var out []invitation.Status
	for _, n := range s.nodes {
		if n.alive {
			out = append(out, n.last)
		}
	}
	return out
}

// LiveIDs returns the IDs of the live nodes.
func (s *Sim) LiveIDs() []wire.NodeID {
	var out []wire.NodeID
	for _, n := range s.nodes {
		if n.alive {
			out = append(out, n.id)
		}
	}
	return out
}

// Highest returns the highest-ranked live node, or 0.
func (s *Sim) Highest() wire.NodeID {
	var best wire.Rank
	for _, n := range s.nodes {
		if r := (wire.Rank{Priority: n.prio, ID: n.id}); n.alive && (best.ID == 0 || best.Less(r)) {
			best = r
		}
	}
	return best.ID
}

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

// HealBound is T_heal of the configured timing.
func (s *Sim) HealBound() time.Duration { return s.cfg.Timing.HealBoundFor(s.cfg.Election, s.cfg.N) }

// FailoverBound is T_failover of the configured timing.
func (s *Sim) FailoverBound() time.Duration {
	return s.cfg.Timing.FailoverBoundFor(s.cfg.Election, s.cfg.N)
}

// Note records a line in the trace, e.g. a scenario step.
func (s *Sim) Note(format string, args ...any) {
	s.record(entry{at: s.now, kind: trNote, text: fmt.Sprintf(format, args...)})
}

// Trace renders the trace ring, oldest line first.
func (s *Sim) Trace() string { return s.trace.render() }
