package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// This file holds the event loop: running the virtual clock, handling
// each event, and the runtime each node's driver sees (simEnv), with the
// rescheduling of its tick after every input.

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

// Poll is how often (in virtual time) RunUntil looks at the nodes' views
// unless told otherwise.
const Poll = 10 * time.Millisecond

// Until says how RunUntil runs.
type Until struct {
	// Max is how much virtual time it runs at most.
	Max time.Duration
	// Poll is how often, in virtual time, it checks its condition; zero
	// means Poll.
	Poll time.Duration
	// Guard, if set, is called before each step of Poll; an error from it
	// ends the run with that error (a wall-clock limit, a memory guard: a
	// run of a huge N cannot be interrupted otherwise).
	Guard func() error
}

// RunUntil runs until cond holds, checking it every u.Poll of virtual
// time, for at most u.Max (never past it). It returns how long it ran and
// whether cond held. The one way to run a simulation until something
// happens: the experiments of internal/simbench and benchtool use it.
func (s *Sim) RunUntil(cond func() bool, u Until) (time.Duration, bool, error) {
	poll := u.Poll
	if poll <= 0 {
		poll = Poll
	}
	start := s.now
	took := func() time.Duration { return time.Duration(s.now - start) }
	for !cond() {
		if took() >= u.Max {
			return took(), false, nil
		}
		if u.Guard != nil {
			if err := u.Guard(); err != nil {
				return took(), false, err
			}
		}
		if err := s.RunFor(min(poll, u.Max-took())); err != nil {
			return took(), false, err
		}
	}
	return took(), true, nil
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
	case evConflict:
		s.conflict(n, e)
	case evProbe:
		s.probeEvent(n, e)
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
		if s.nodes[e.about].alive || s.otherProcess(e.node, e.about) {
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
		if n.split {
			continue // a second process's numbers: S1 cannot hold for an ID two processes use
		}
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
	if s.cfg.quorumMode() && (!n.dup || n.split) {
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
