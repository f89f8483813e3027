package sim

import (
	"fmt"

	"github.com/groupd/groupd/wire"
)

// This file models, without multicast (Config.SeedsOnly), how two
// processes with one node ID find each other: memberlist's conflict report
// and the runtime's probes (group/dupid.go, docs/design.md §3.6).
//
// Memberlist keeps one process per name, so a process never lists another
// one with its own ID (Sim.listed), and the two never receive each other's
// broadcasts. When a process joins a seed (a push/pull both ways), its
// memberlist reports a conflict if the seed lists a process with its ID,
// or is one; the seed's reports one if it has the joiner's ID. A report
// comes a round trip after the join, and its receiver probes the other
// process: a Hello with the header of its machine's last message, probeBurst
// times AnswerTimeout apart at most, until a packet of that process
// arrives, and no new burst within BeaconInterval of the last one's start.
// A process that receives a packet with its own ID from another boot
// answers its sender with a probe at once (at most once per AnswerTimeout
// per sender), before its machine decides. A process that gives way keeps
// answering challenges (Config.Keyed) for one AnswerTimeout.

// probeBurst is the daemon's: probes per conflict report.
const probeBurst = 3

// dupProbe is what a process did about another process with its ID (by
// slot).
type dupProbe struct {
	burst int64 // when the last burst began (-1: never)
	left  int   // probes left in it
	sent  int64 // the last probe (-1: never)
}

// probeState returns n's record of slot about, creating it.
func (n *node) probeState(about int32) *dupProbe {
	if n.probes == nil {
		n.probes = make(map[int32]*dupProbe)
	}
	p := n.probes[about]
	if p == nil {
		p = &dupProbe{burst: -1, sent: -1}
		n.probes[about] = p
	}
	return p
}

// joinConflicts reports, after n's join of seed o, the conflicts the
// push/pull shows each side's memberlist.
func (s *Sim) joinConflicts(n, o *node) {
	if len(s.byID[n.id]) == 0 {
		return
	}
	if o.id == n.id {
		s.reportConflict(n, o)
		s.reportConflict(o, n)
		return
	}
	for _, sl := range s.byID[n.id] {
		if p := s.nodes[sl]; p != n && p.alive && s.listed(o, sl) {
			s.reportConflict(n, p)
		}
	}
}

// reportConflict schedules memberlist's conflict report to n about
// process p, a round trip from now.
func (s *Sim) reportConflict(n, p *node) {
	s.push(event{at: s.now + s.delay() + s.delay(), kind: evConflict, node: n.slot, inc: n.inc, about: p.slot})
}

// conflict handles memberlist's report to n of another process with its ID
// in slot about: a burst of probes, unless one began within BeaconInterval.
func (s *Sim) conflict(n *node, e *event) {
	if !n.alive || e.inc != n.inc {
		return
	}
	s.record(entry{at: s.now, node: n.id, kind: trNote, text: fmt.Sprintf("memberlist reports another process with ID %d (slot %d): probing it", n.id, e.about)})
	p := n.probeState(e.about)
	if p.burst >= 0 && s.now-p.burst < int64(n.timing.BeaconInterval) {
		return
	}
	p.burst, p.left = s.now, probeBurst
	s.probeDue(n, e.about)
}

// probeDue sends the next probe of n's burst to slot about and schedules
// the one after.
func (s *Sim) probeDue(n *node, about int32) {
	p := n.probeState(about)
	if p.left <= 0 {
		return
	}
	p.left--
	s.probe(n, about)
	if p.left > 0 {
		s.push(event{at: s.now + int64(n.timing.AnswerTimeout), kind: evProbe, node: n.slot, inc: n.inc, about: about})
	}
}

// probeEvent is a burst's next probe coming due.
func (s *Sim) probeEvent(n *node, e *event) {
	if n.alive && e.inc == n.inc {
		s.probeDue(n, e.about)
	}
}

// answerDuplicate runs when n receives m, a packet with its own ID from
// another boot, from slot from, before its machine sees it: the burst to
// from stops, and from gets a probe unless it got one within
// AnswerTimeout.
func (s *Sim) answerDuplicate(n *node, from int32) {
	p := n.probeState(from)
	p.left = 0
	if p.sent < 0 || s.now-p.sent >= int64(n.timing.AnswerTimeout) {
		s.probe(n, from)
	}
}

// probe sends slot to a Hello with the header of n's machine's last
// message.
func (s *Sim) probe(n *node, to int32) {
	if !n.hasHdr {
		return
	}
	n.probeState(to).sent = s.now
	h := n.hdr
	h.Type = wire.TypeHello
	h.Flags &^= wire.FlagBroadcast
	m := wire.Message{Header: h, Body: wire.Hello{}}
	s.counts.Sent[wire.TypeHello]++
	if b, err := wire.AppendEncode(s.buf[:0], m); err == nil {
		s.counts.Bytes[wire.TypeHello] += uint64(len(b))
		s.buf = b
	}
	s.deliver(n.slot, to, m)
}
