package sim

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/groupd/groupd/driver"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// This file holds the processes' lifecycle: start and restart from the
// modelled state file, crash, exit, and the operator's faults on a
// crashed node's state file and clock.

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
	n.verified, n.held, n.superseded, n.oldAsked, n.route = nil, nil, nil, nil, nil
	n.hasHdr, n.probes = false, nil
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

		Quorum:      s.cfg.quorum(n.id),
		Home:        uint32(splitmix(s.cfg.Seed, n.slot, 0, 0x40e)) | 1, // the slot's data dir: the same across restarts and wipes
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
		s.joinConflicts(n, o)
	}
}

// retire stops a process that gave way to another with its ID: it exits,
// as the daemon does.
func (s *Sim) retire(n *node) {
	s.record(entry{at: s.now, node: n.id, kind: trYield})
	n.lingerUntil = s.now + int64(n.timing.AnswerTimeout)
	s.halt(n)
}

// halt ends n's process, crashed or exited: its driver goes, and the
// checker sees the node down (a duplicate was never its node).
func (s *Sim) halt(n *node) {
	s.collectLazy(n)
	n.pausedUntil, n.stash, n.suspendedAt = 0, nil, 0
	n.suspends, n.leaseRaw = nil, time.Time{}
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
