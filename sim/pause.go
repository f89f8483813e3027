package sim

import (
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
	if !n.alive || d <= 0 {
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
