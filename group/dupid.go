package group

import (
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// One ID, one process (docs/design.md §3.6).
//
// A packet with this node's ID and another boot comes from a second
// process using the ID; the machine (invitation.Node.onDuplicate) decides
// from the two headers which one gives way, and the other announces itself
// with a beacon. With multicast the two hear each other's beacons from the
// first one on. Without it (--join seeds) they never would: each copies its
// broadcasts by unicast to the members memberlist lists, and memberlist
// lists no other process under its own node's name (it refuses the second
// one's alive message as a conflict). Both processes would lead, under
// different terms, for ever.
//
// Memberlist does tell the conflict delegate (gossipDelegate.NotifyConflict)
// whenever it hears of a process with this node's name at another address:
// the first process when the second's alive message reaches it (a join or
// push/pull with it), the second when it pulls the first's state from any
// member, within milliseconds of its start. The runtime then makes the two
// wire protocols meet:
//
//   - A conflict report names the other process's gossip address and its
//     meta, hence its wire address. The loop sends it a probe: a Hello
//     (wire.Hello) carrying the header of the machine's last message, so
//     its settled flag, boot nonce and state are what the machine says
//     (sealed for this node's ID with a key, like any packet, so that the
//     other process, which has the ID and the key, opens it). A Hello is
//     harmless to any other receiver: runtimes act on one only when it
//     comes over multicast or carries their own ID. The probe is repeated
//     every AnswerTimeout, probeBurst times at most, until a packet of
//     that process arrives (a lost datagram must not leave the newcomer to
//     settle and create a number); a new burst starts at most once per
//     BeaconInterval per address, however often memberlist repeats itself.
//   - A process that receives a packet with its own ID and another boot
//     (a probe, or a beacon over multicast) answers its source with a
//     probe of its own (at most once per AnswerTimeout per address), then
//     feeds the packet to its machine, which decides as with multicast.
//     The machine's own answer is a broadcast, which without multicast
//     never reaches a process of the same ID; the runtime's reaches it
//     whatever the machine decides. It goes before the decision, so that
//     the process that keeps the ID hears the one that gives way even
//     when only the first one was told of the conflict (it shows it in its
//     status and metrics). That is harmless: the rule is antisymmetric (a
//     process that gives way on the other's header never makes the other
//     give way on its own), and a header only grows settled. So one
//     conflict report, on either side, is enough.
//   - With a key, a process's first packet is challenged (receive.go):
//     one that gives way keeps its sockets open for one AnswerTimeout
//     (lingerYielded), so that its answer is verified and counted.
//
// The probes only carry headers; the decision stays the machine's.

// Probe pacing: a burst of probeBurst probes, AnswerTimeout apart; a new
// burst for one address at most every BeaconInterval. maxDupTargets bounds
// the addresses remembered: a flood of forged conflicts (gossip without a
// key) costs this node at most probeBurst datagrams per BeaconInterval per
// address, for maxDupTargets addresses.
const (
	probeBurst    = 3
	maxDupTargets = 8
)

// dupState is the loop's record for §3.6 (loop only).
type dupState struct {
	hdr     wire.Header // the header of the machine's last message
	hasHdr  bool
	targets []*dupTarget
}

// dupTarget is one address where another process with this node's ID was
// reported (by memberlist) or heard from (a wire packet).
type dupTarget struct {
	addr    *net.UDPAddr
	burst   time.Time // when the current burst began (zero: none)
	left    int       // probes left in the burst
	next    time.Time // when the next probe of the burst is due
	sent    time.Time // the last probe to it
	touched time.Time // last report or packet (eviction)
}

// observeOutput records the header of the machine's last message: a probe
// carries it. It is the driver's Observer, on the loop.
func (a *Agent) observeOutput(_ time.Time, _ invitation.Input, out invitation.Output) {
	if n := len(out.Messages); n > 0 {
		a.dup.hdr, a.dup.hasHdr = out.Messages[n-1].Msg.Header, true
	}
}

// conflictReported is called on memberlist's goroutine when memberlist
// hears of a process with this node's name at another address: it queues
// the process's wire address (memberlist's IP, the wire port of its meta)
// for the loop, never blocking.
func (a *Agent) conflictReported(other *memberlist.Node) {
	if len(other.Meta) == 0 {
		a.glog.Debug().Str("other_addr", other.Address()).Msg("the other process announces no meta: cannot reach its wire port")
		return
	}
	m, err := decodeMeta(other.Meta)
	if err != nil || m.Port == 0 || len(other.Addr) == 0 {
		a.glog.Debug().Err(err).Str("other_addr", other.Address()).Msg("the other process's meta names no wire port")
		return
	}
	to := &net.UDPAddr{IP: append(net.IP(nil), other.Addr...), Port: int(m.Port)}
	select {
	case a.gossipCh <- gossipEvent{id: a.id, addr: other.Address(), probe: to}:
	default:
		a.metrics.dropped.WithLabelValues(dropQueueFull).Inc()
	}
}

// probeConflict starts a burst of probes to the other process at to, on
// the loop, unless one started within BeaconInterval.
func (a *Agent) probeConflict(to *net.UDPAddr, now time.Time) {
	t := a.dupTarget(to, now)
	if !t.burst.IsZero() && now.Sub(t.burst) < a.cfg.Timing.BeaconInterval {
		return
	}
	t.burst, t.left, t.next = now, probeBurst, now
	a.log.Debug().Stringer("other_wire", to).Msg("memberlist reports another process with this node's ID: probing it")
}

// noteDuplicate records, on the loop, that a packet of another process
// with this node's ID (boot) arrived from src now, before the machine sees
// it: the status keeps it (expireDuplicate), the probes to src stop (the
// machine is about to have both headers), and src gets an answer unless
// it got a probe within AnswerTimeout.
func (a *Agent) noteDuplicate(boot uint64, src *net.UDPAddr, now time.Time) {
	a.dupLast = now
	if src == nil {
		return
	}
	a.log.Debug().Str("other_boot", fmt.Sprintf("%016x", boot)).Stringer("other_wire", src).Msg("a packet of another process with this node's ID")
	t := a.dupTarget(src, now)
	t.left = 0
	if t.sent.IsZero() || now.Sub(t.sent) >= a.cfg.Timing.AnswerTimeout {
		t.sent = now
		a.sendProbe(src)
	}
}

// dupTarget returns the record of addr, adding it (in place of the one
// least recently touched when there are maxDupTargets).
func (a *Agent) dupTarget(addr *net.UDPAddr, now time.Time) *dupTarget {
	var oldest *dupTarget
	for _, t := range a.dup.targets {
		if sameUDPAddr(t.addr, addr) {
			t.touched = now
			return t
		}
		if oldest == nil || t.touched.Before(oldest.touched) {
			oldest = t
		}
	}
	t := &dupTarget{addr: copyAddr(nil, addr), touched: now}
	if len(a.dup.targets) < maxDupTargets {
		a.dup.targets = append(a.dup.targets, t)
	} else {
		*oldest = *t
		t = oldest
	}
	return t
}

// tendDuplicate runs on the loop after every input, while the machine
// runs (one that gave way has stopped the loop): it sends the probes due,
// and clears Status.DuplicateID once the other process has been silent
// long enough.
func (a *Agent) tendDuplicate(now time.Time) {
	a.expireDuplicate(now)
	keep := a.dup.targets[:0]
	for _, t := range a.dup.targets {
		if t.left > 0 && !now.Before(t.next) {
			t.left--
			t.next, t.sent = now.Add(a.cfg.Timing.AnswerTimeout), now
			a.sendProbe(t.addr)
		}
		// A record idle for MemberTimeout is forgotten: memberlist
		// would have reported the process again by then if it ran.
		if t.left > 0 || now.Sub(t.touched) < a.cfg.Timing.MemberTimeout {
			keep = append(keep, t)
		}
	}
	clear(a.dup.targets[len(keep):])
	a.dup.targets = keep
}

// sendProbe sends a Hello with the machine's last header to another
// process with this node's ID at to, sealed (with a key) for this ID.
func (a *Agent) sendProbe(to *net.UDPAddr) {
	if !a.dup.hasHdr {
		return // the machine has sent nothing yet; it does at its start
	}
	h := a.dup.hdr
	h.Type = wire.TypeHello
	h.Flags &^= wire.FlagBroadcast
	h.Counter = a.pktCounter.Add(1)
	msg := wire.Message{Header: h, Body: wire.Hello{}}
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	if pkt, ok := a.seal(msg, a.id); ok {
		a.writeTo(pkt, to, wire.TypeHello.String())
	}
}

// lingerYielded keeps the sockets of a process that gave way open for one
// AnswerTimeout when it has a key: its last probe (noteDuplicate) is
// challenged by the process that keeps the ID, and only the receive path,
// which answers challenges, still runs.
func (a *Agent) lingerYielded() {
	if a.sealer != nil {
		time.Sleep(a.cfg.Timing.AnswerTimeout)
	}
}

// Status.DuplicateID lasts while the other process does. It gives way
// within a boot window or two of its start (the one that started later
// does) and falls silent; the status forgets it once no packet of it has
// arrived for MemberTimeout (30 s lan, 6 s fast): long enough for an
// operator or a monitor polling the status to see it, and the time after
// which memberlist would have declared such a process dead. The log line
// and groupd_duplicate_id_total keep the record.

// expireDuplicate clears Status.DuplicateID once the other process has
// been silent for MemberTimeout. It runs on the loop, which wakes at
// least every maxLoopSleep.
func (a *Agent) expireDuplicate(now time.Time) {
	if a.dupLast.IsZero() || now.Sub(a.dupLast) < a.cfg.Timing.MemberTimeout {
		return
	}
	a.dupLast = time.Time{}
	p := &a.pub
	p.mu.Lock()
	d := p.dup
	p.dup = nil
	p.st.DuplicateID = nil
	p.mu.Unlock()
	if d != nil {
		a.log.Info().Uint64("id", uint64(a.id)).Str("other_addr", d.Addr).Str("other_boot", fmt.Sprintf("%016x", d.Boot)).
			Dur("silent", a.cfg.Timing.MemberTimeout).
			Msg(fmt.Sprintf("the other process with node ID %d (at %s) has been silent for %v: no longer a duplicate",
				a.id, orUnknown(d.Addr), a.cfg.Timing.MemberTimeout))
	}
}
