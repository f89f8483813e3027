package sim

import (
	"math"
	"time"

	"github.com/groupd/groupd/wire"
)

// Pause stops node id's process for d without crashing it, as a loaded
// host that gives it no CPU, a stop signal or a long pause of its runtime
// would: its timers come due and packets reach its socket, but it handles
// nothing. When it resumes, its overdue timer fires first, late (its Tick
// carries the deadline it was armed for), and then everything it was told
// meanwhile, in order: the order a daemon whose timer channel and packet
// reader wake together may take. Other nodes see nothing (the failure
// detector's model covers crashes and partitions, not slow processes). A
// pause of a node already paused extends it; no-op if the node is down.
func (s *Sim) Pause(id wire.NodeID, d time.Duration) {
	n := s.nodes[s.index(id)]
	if !n.alive || d <= 0 || n.suspendedAt > 0 {
		return
	}
	until := s.now + int64(d)
	if until <= n.pausedUntil {
		return
	}
	n.pausedUntil = until
	s.Note("pause %d for %v", id, d)
	s.push(event{at: until, kind: evResume, node: n.slot, inc: n.inc})
}

// stashed reports whether e is an input to a paused process, and keeps it
// for the process's resumption if so.
func (s *Sim) stashed(n *node, e *event) bool {
	if n.pausedUntil <= s.now {
		return false
	}
	switch e.kind {
	case evDeliver, evVerify, evTick, evSaved, evPeerDown, evNetworkNews:
		n.stash = append(n.stash, *e)
		return true
	}
	return false
}

// resume ends n's pause now: the overdue tick first, then every other
// input it missed, in the order they came.
func (s *Sim) resume(n *node) {
	st := n.stash
	n.stash, n.pausedUntil = nil, 0
	if n.suspendedAt > 0 {
		// The clock stood still while the host was down: it goes on from
		// where it stopped, and its timers come due that much later.
		d := time.Duration(s.now - n.suspendedAt)
		n.offset -= d + time.Duration(n.drift*float64(d))
		n.suspendedAt = 0
	}
	if len(st) == 0 {
		return
	}
	s.Note("resume %d after %d inputs waited", n.id, len(st))
	for i := range st {
		if st[i].kind == evTick {
			s.handle(&st[i])
		}
	}
	for i := range st {
		if st[i].kind != evTick && s.err == nil {
			s.handle(&st[i])
		}
	}
}

// resumeAll ends every pause (a quiet LAN has no stalled process).
func (s *Sim) resumeAll() {
	for _, n := range s.nodes {
		if n.pausedUntil > 0 {
			s.resume(n)
		}
	}
}

// Suspend suspends node id's host for d: its process gets no CPU, as in
// Pause, and its monotonic clock stands still meanwhile, as CLOCK_MONOTONIC
// does across a suspend; virtual time (the boot clock, and every other
// node's) runs on. Back, the node's clock goes on from where it stopped,
// so the machine finds its lease, on that clock, still running. The
// runtime reads a lease on the boot clock, with the offset in force when
// the lease's grants were counted (group's bootClock); the simulator
// does the same (leaseEnd), and LP1 checks what that gives.
func (s *Sim) Suspend(id wire.NodeID, d time.Duration) {
	n := s.nodes[s.index(id)]
	if !n.alive || d <= 0 || n.pausedUntil > s.now {
		return
	}
	// The clock's reading when the host went down: readings up to it
	// were taken before the suspend.
	n.suspends = append(n.suspends, clockStep{upTo: s.clock(n), offset: n.offset, bootAt: n.bootAt})
	n.pausedUntil, n.suspendedAt = s.now+int64(d), s.now
	s.Note("suspend %d for %v", id, d)
	s.push(event{at: n.pausedUntil, kind: evResume, node: n.slot, inc: n.inc})
}

// clockStep is a node's clock before a suspend: its readings up to upTo
// were taken with offset and bootAt.
type clockStep struct {
	upTo   time.Time
	offset time.Duration
	bootAt int64
}

// virtualAt is the virtual time at which n's clock read t, with the
// offset in force then: before a suspend, the offset of before it.
func (s *Sim) virtualAt(n *node, t time.Time) int64 {
	offset, bootAt := n.offset, n.bootAt
	for _, st := range n.suspends {
		if !t.After(st.upTo) {
			offset, bootAt = st.offset, st.bootAt
			break
		}
	}
	x := int64(t.Sub(Epoch) - offset)
	if n.drift == 0 {
		return x
	}
	return int64(math.Ceil((float64(x)+n.drift*float64(bootAt))/(1+n.drift))) + 1
}

// leaseEnd is when, in virtual time, the lease ending at until on n's
// clock ends, read as the daemon reads it: the end is fixed when it
// changes, from the instant its grants count from (until less the
// leader's lease length) mapped with the offset in force then; an
// unchanged end is not mapped again.
func (s *Sim) leaseEnd(n *node, until time.Time) int64 {
	if until.Equal(n.leaseRaw) {
		return n.leadUntil
	}
	n.leaseRaw = until
	ll := n.timing.LeaderLease()
	basis := until.Add(-ll)
	return s.virtualAt(n, basis) + int64(float64(ll)/(1+n.drift))
}
