package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// DropReason says why a delivery did not happen.
type DropReason uint8

const (
	DropLoss       DropReason = iota // random loss (global or per link)
	DropPartition                    // sender and receiver on different sides, or cut
	DropDown                         // receiver down when the message arrived
	DropUnverified                   // keyed: the sender's boot was not verified yet (Config.Keyed)
	DropOverload                     // the host's CPU backlog was too long (Host)
	numDrops
)

func (r DropReason) String() string {
	return [...]string{"loss", "partition", "down", "unverified", "overload"}[r]
}

// Counts is the message accounting of a run.
type Counts struct {
	// Sent counts datagrams by type: a broadcast (a multicast beacon) is
	// one, whatever the number of receivers.
	Sent [wire.NumTypes]uint64
	// Bytes is the encoded size of what Sent counts (wire.Encode).
	Bytes [wire.NumTypes]uint64
	// Delivered counts receptions by type (a broadcast counts once per
	// receiver; a duplicate twice).
	Delivered [wire.NumTypes]uint64
	// Dropped counts deliveries that did not happen, by reason.
	Dropped [numDrops]uint64
	// Duplicated counts extra copies the network made.
	Duplicated uint64
	// EncodeErrors counts messages wire.Encode refused. It must stay 0.
	EncodeErrors uint64
	// FirstEncodeError describes the first of them.
	FirstEncodeError string
	// LazyMisses counts inputs that produced no output yet brought the
	// node's deadline forward (see Config.LazyDeadlines). Counted only
	// when LazyDeadlines is off.
	LazyMisses uint64
	// FirstLazyMiss describes the first of them.
	FirstLazyMiss string
	// PeerDowns counts the failure detector's reports that reached a
	// live node (invitation.Node.PeerDown calls), after crashes and network
	// changes.
	PeerDowns uint64
}

// TotalSent is the number of datagrams sent, all types.
func (c Counts) TotalSent() uint64 { return sum(c.Sent[:]) }

// TotalBytes is the number of bytes sent, all types.
func (c Counts) TotalBytes() uint64 { return sum(c.Bytes[:]) }

// TotalDelivered is the number of receptions, all types.
func (c Counts) TotalDelivered() uint64 { return sum(c.Delivered[:]) }

// Sub returns c - o, field by field: the traffic between two snapshots.
func (c Counts) Sub(o Counts) Counts {
	for i := range c.Sent {
		c.Sent[i] -= o.Sent[i]
		c.Bytes[i] -= o.Bytes[i]
		c.Delivered[i] -= o.Delivered[i]
	}
	for i := range c.Dropped {
		c.Dropped[i] -= o.Dropped[i]
	}
	c.Duplicated -= o.Duplicated
	c.EncodeErrors -= o.EncodeErrors
	c.PeerDowns -= o.PeerDowns
	return c
}

func sum(xs []uint64) uint64 {
	var t uint64
	for _, x := range xs {
		t += x
	}
	return t
}

// String is a table of the counts by type.
func (c Counts) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %10s %12s %10s\n", "type", "sent", "bytes", "delivered")
	for _, t := range wire.Types() {
		if c.Sent[t] == 0 && c.Delivered[t] == 0 {
			continue
		}
		fmt.Fprintf(&b, "%-18s %10d %12d %10d\n", t, c.Sent[t], c.Bytes[t], c.Delivered[t])
	}
	fmt.Fprintf(&b, "%-18s %10d %12d %10d\n", "total", c.TotalSent(), c.TotalBytes(), c.TotalDelivered())
	fmt.Fprintf(&b, "dropped: loss %d, partition %d, down %d, unverified %d; duplicated %d",
		c.Dropped[DropLoss], c.Dropped[DropPartition], c.Dropped[DropDown], c.Dropped[DropUnverified], c.Duplicated)
	if c.Dropped[DropOverload] > 0 {
		fmt.Fprintf(&b, "; overload %d", c.Dropped[DropOverload])
	}
	if c.EncodeErrors > 0 {
		fmt.Fprintf(&b, "; ENCODE ERRORS %d (first: %s)", c.EncodeErrors, c.FirstEncodeError)
	}
	return b.String()
}

// Counts returns the message accounting so far.
func (s *Sim) Counts() Counts {
	c := s.counts
	for _, n := range s.nodes {
		if n.d != nil {
			c.LazyMisses += n.d.LazyMisses
			if c.FirstLazyMiss == "" {
				c.FirstLazyMiss = n.d.FirstLazyMiss
			}
		}
	}
	return c
}

// send puts one of n's outgoing envelopes on the network.
func (s *Sim) send(n *node, env *wire.Envelope) {
	m := env.Msg
	n.hdr, n.hasHdr = m.Header, true
	if !n.dup {
		for _, v := range s.chk.Sent(s.Now(), m) {
			s.fail(v)
		}
	}
	t := m.Body.Type()
	s.counts.Sent[t]++
	b, err := wire.AppendEncode(s.buf[:0], m)
	if err != nil {
		s.counts.EncodeErrors++
		if s.counts.FirstEncodeError == "" {
			s.counts.FirstEncodeError = fmt.Sprintf("%s: %v", m, err)
		}
	} else {
		s.counts.Bytes[t] += uint64(len(b))
		s.buf = b
		if s.cfg.Codec {
			d, err := wire.Decode(b)
			if err != nil {
				s.counts.EncodeErrors++
				if s.counts.FirstEncodeError == "" {
					s.counts.FirstEncodeError = fmt.Sprintf("decode %s: %v", m, err)
				}
			} else {
				m = d
			}
		}
	}
	if env.To == wire.Broadcast {
		for i, o := range s.nodes {
			if int32(i) == n.slot || !o.alive {
				continue
			}
			if s.cfg.SeedsOnly && !s.listed(n, int32(i)) {
				continue // no multicast: memberlist does not list it
			}
			if len(s.deaf) > 0 && s.deaf[[2]int32{n.slot, int32(i)}] {
				s.counts.Dropped[DropPartition]++
				continue
			}
			s.deliver(n.slot, int32(i), m)
		}
		return
	}
	to, ok := s.routeTo(n, env.To, env.ToBoot)
	if !ok {
		s.counts.Dropped[DropDown]++ // no such node on this LAN, or not that boot
		return
	}
	s.deliver(n.slot, to, m)
}

// listed reports whether, without multicast, n's broadcasts reach slot i:
// whether n's memberlist lists that process. It lists every node it knows
// (Config.SeedsOnly), but one process per node ID, as memberlist keeps one
// address per name (a second one's alive message is a conflict it
// refuses): never another process with n's own ID, and of a node ID that
// two processes share, the one n's address book routes to (routeTo; the
// daemon copies broadcasts to the book's address of each member).
func (s *Sim) listed(n *node, i int32) bool {
	if int(i) >= len(n.knows) || !n.knows[i] {
		return false
	}
	o := s.nodes[i]
	if len(s.byID[o.id]) == 0 {
		return true
	}
	if o.id == n.id {
		return false
	}
	sl, ok := s.routeTo(n, o.id, 0)
	return ok && sl == i
}

// routeTo returns the slot a unicast from n to id (at boot, if set) goes
// to. With one process per ID that is the ID's slot. When two processes
// share an ID, a message to a given boot goes to that boot's process, and
// any other to the process n last heard from with that ID in a group (or
// without one, if none was), as the daemon's address book does.
func (s *Sim) routeTo(n *node, id wire.NodeID, boot uint64) (int32, bool) {
	if id < 1 || int(id) > s.cfg.N {
		return 0, false
	}
	slots := s.byID[id]
	if len(slots) == 0 {
		slot := int32(id - 1)
		return slot, boot == 0 || s.nodes[slot].boot == boot
	}
	if boot != 0 {
		for _, sl := range slots {
			if s.nodes[sl].boot == boot {
				return sl, true
			}
		}
		return 0, false
	}
	if sl, ok := n.route[id]; ok {
		return sl, true
	}
	return slots[0], true
}

// deliver schedules the arrival of m at slot to, or drops it.
func (s *Sim) deliver(from, to int32, m wire.Message) {
	if !s.reachable(from, to) {
		s.counts.Dropped[DropPartition]++
		return
	}
	if s.lost(from, to) {
		s.counts.Dropped[DropLoss]++
		return
	}
	if at, ok := s.queueCPU(s.now+s.delay(), m); ok {
		s.push(event{at: at, kind: evDeliver, node: to, about: from, msg: m})
	}
	if s.net.Dup > 0 && s.rnd.Float64() < s.net.Dup {
		s.counts.Duplicated++
		if at, ok := s.queueCPU(s.now+s.delay(), m); ok {
			s.push(event{at: at, kind: evDeliver, node: to, about: from, msg: m})
		}
	}
}

// arrive hands a delivered message to its receiver, after the keyed
// network's first-contact check.
func (s *Sim) arrive(n *node, e *event) {
	if !n.alive {
		s.counts.Dropped[DropDown]++
		return
	}
	from := e.about
	if !s.reachable(from, n.slot) {
		s.counts.Dropped[DropPartition]++ // partitioned while in flight
		return
	}
	if s.cfg.Keyed && !s.verifiedFrom(n, from, e.msg) {
		return
	}
	s.receive(n, from, e.msg)
}

func (s *Sim) receive(n *node, from int32, m wire.Message) {
	if len(s.byID[m.From]) > 0 && m.From != n.id {
		// The daemon's address book (group.peerBook): a process in a
		// group owns its ID's route; one without a group (booting, or a
		// duplicate that will give way) takes it only if nobody holds
		// it, so that it cannot divert a silent member's traffic. Before
		// any packet of the ID, the process memberlist lists (the ID's
		// first slot, while it runs) holds it.
		if n.route == nil {
			n.route = make(map[wire.NodeID]int32)
		}
		_, held := n.route[m.From]
		first := s.nodes[s.index(m.From)]
		held = held || first.alive && first.slot != from
		if !held || !m.Group.IsZero() {
			n.route[m.From] = from
		}
	}
	s.counts.Delivered[m.Body.Type()]++
	if m.From == n.id && m.Boot != n.boot && m.Boot != 0 {
		s.answerDuplicate(n, from)
	}
	if s.cfg.SeedsOnly {
		// memberlist: the sender is a member now, and so is every node
		// it knew of (its gossip, and the push/pull of a join).
		o := s.nodes[from]
		if len(n.knows) < len(s.nodes) {
			n.knows = append(n.knows, make([]bool, len(s.nodes)-len(n.knows))...)
		}
		n.knows[from] = true
		for i, k := range o.knows {
			n.knows[i] = n.knows[i] || k
		}
	}
	s.input(n, invitation.Receive{Msg: m})
}

// verifiedFrom models the replay window's first contact (package wire,
// ReplayWindow, which is per ID, not per process): a packet from a boot of
// its sender's ID the receiver has not verified is held, and the receiver
// challenges the process it came from; one round trip later that process's
// boot is verified and the held packet (the last one, if it is of that
// boot) is delivered. A boot verified before the live one (two processes
// with one ID) is challenged again at most every second (group's
// challengeOldEvery). It reports whether m may be delivered now.
func (s *Sim) verifiedFrom(n *node, from int32, m wire.Message) bool {
	id := m.From
	if n.verified[id] == m.Boot {
		return true
	}
	s.counts.Dropped[DropUnverified]++
	if n.held == nil {
		n.held = make(map[wire.NodeID]*wire.Message)
		n.verified = make(map[wire.NodeID]uint64)
		n.superseded = make(map[wire.NodeID][]uint64)
		n.oldAsked = make(map[wire.NodeID]int64)
	}
	if slices.Contains(n.superseded[id], m.Boot) {
		if t, ok := n.oldAsked[id]; ok && s.now-t < int64(time.Second) {
			return false
		}
		n.oldAsked[id] = s.now
	}
	_, waiting := n.held[id]
	mm := m
	n.held[id] = &mm
	if !waiting {
		// Challenge out, Response back: a round trip, and either can be
		// lost (the receiver challenges again at the next packet).
		if s.lost(n.slot, from) || s.lost(from, n.slot) {
			delete(n.held, id)
			return false
		}
		s.push(event{at: s.now + s.delay() + s.delay(), kind: evVerify, node: n.slot, inc: n.inc, about: from})
	}
	return false
}

// verify completes a challenge: the challenged process's live boot is
// verified for its ID (an earlier one is superseded), and a held packet
// of that boot delivered.
func (s *Sim) verify(n *node, e *event) {
	if !n.alive || e.inc != n.inc {
		return
	}
	sender := s.nodes[e.about]
	id := sender.id
	held := n.held[id]
	delete(n.held, id)
	// A process that gave way answers challenges a little longer (group's
	// lingerYielded).
	answers := sender.alive || sender.d == nil && s.now <= sender.lingerUntil
	if !answers || !s.reachable(e.about, n.slot) || !s.reachable(n.slot, e.about) {
		return // no Response came
	}
	if prev := n.verified[id]; prev != 0 && prev != sender.boot {
		old := append([]uint64{prev}, n.superseded[id]...)
		n.superseded[id] = old[:min(len(old), 4)]
	}
	n.verified[id] = sender.boot
	if held != nil && held.Boot == sender.boot {
		s.receive(n, e.about, *held)
	}
}

func (s *Sim) lost(from, to int32) bool {
	p := s.net.Loss
	if len(s.links) > 0 {
		if l, ok := s.links[[2]int32{from, to}]; ok {
			p = 1 - (1-p)*(1-l)
		}
	}
	return p > 0 && s.rnd.Float64() < p
}

func (s *Sim) delay() int64 {
	d := int64(s.net.Base) + s.jitter(s.net.Jitter)
	if s.net.Reorder > 0 && s.rnd.Float64() < s.net.Reorder {
		d += s.jitter(s.net.ReorderDelay)
	}
	return d
}

// reachable reports whether a datagram from node index a reaches b.
func (s *Sim) reachable(a, b int32) bool {
	if s.side[a] != s.side[b] {
		return false
	}
	return len(s.cuts) == 0 || !s.cuts[[2]int32{a, b}]
}

// Net returns the current network model.
func (s *Sim) Net() Net { return s.net }

// SetNet replaces the network model (delays, loss, duplication,
// reordering); partitions and cuts are unchanged.
func (s *Sim) SetNet(n Net) {
	s.net = n
	s.Note("net base=%v jitter=%v loss=%.2f dup=%.2f reorder=%.2f/%v", n.Base, n.Jitter, n.Loss, n.Dup, n.Reorder, n.ReorderDelay)
}

// SetLoss sets the global loss probability.
func (s *Sim) SetLoss(p float64) {
	s.net.Loss = p
	s.Note("loss %.2f", p)
}

// SetLinkLoss sets the loss probability of the directed link from → to,
// on top of the global loss. Zero removes it.
func (s *Sim) SetLinkLoss(from, to wire.NodeID, p float64) {
	k := [2]int32{s.index(from), s.index(to)}
	if p <= 0 {
		delete(s.links, k)
	} else {
		s.links[k] = p
	}
	s.Note("link loss %d→%d %.2f", from, to, p)
}

// Partition splits the network into the given sides: nodes on different
// sides cannot talk. Nodes not listed form one more side together.
// Messages in flight between sides are lost.
func (s *Sim) Partition(sides ...[]wire.NodeID) {
	for i := range s.side {
		s.side[i] = int32(len(sides) + 1)
	}
	for k, ids := range sides {
		for _, id := range ids {
			s.side[s.index(id)] = int32(k + 1)
		}
	}
	var parts []string
	for _, ids := range sides {
		parts = append(parts, fmt.Sprint(ids))
	}
	s.Note("partition %s", strings.Join(parts, " "))
	s.networkChanged()
}

// Isolate cuts node id off from every other node, both ways.
func (s *Sim) Isolate(id wire.NodeID) {
	s.Partition([]wire.NodeID{id})
}

// Cut drops every datagram from → to (one way).
func (s *Sim) Cut(from, to wire.NodeID) {
	s.cutSlots(s.index(from), s.index(to))
	s.Note("cut %d→%d", from, to)
	s.networkChanged()
}

// CutBroadcast drops the broadcasts (multicast) from → to, one way;
// unicast still passes, and the failure detector sees nothing. It models
// a node that stopped hearing a peer's multicast after the peer's runtime
// learnt it did (a Hello, package group) and so stopped copying
// broadcasts to it by unicast: an IGMP-snooping switch that forgot the
// group, a socket that left it. Heal and Quiet lift it.
func (s *Sim) CutBroadcast(from, to wire.NodeID) {
	s.deaf[[2]int32{s.index(from), s.index(to)}] = true
	s.Note("cut broadcasts %d→%d", from, to)
}

// cutSlots drops every datagram between two slots, one way.
func (s *Sim) cutSlots(from, to int32) {
	s.cuts[[2]int32{from, to}] = true
}

// Heal removes every partition, cut (broadcast-only ones too) and
// per-link loss.
func (s *Sim) Heal() {
	clear(s.side)
	clear(s.cuts)
	clear(s.deaf)
	clear(s.links)
	s.Note("heal")
	s.networkChanged()
	s.rejoinSeeds()
}

// Quiet heals the network and makes it a quiet LAN: no loss, duplication
// or reordering, and the LAN() delays.
func (s *Sim) Quiet() {
	clear(s.side)
	clear(s.cuts)
	clear(s.deaf)
	clear(s.links)
	s.net = LAN()
	s.host = s.cfg.Host
	s.Note("quiet (heal, LAN delays, no loss, %s)", s.host)
	s.networkChanged()
	s.resumeAll()
	s.rejoinSeeds()
}

// rejoinSeeds models, without multicast (Config.SeedsOnly), the daemon's
// reconnect loop, which retries the --join seeds until they answer: once
// the network is whole again, every live node has joined every live seed
// (memberlist's push/pull, both ways). Nodes that started while every seed
// was down know each other only through a seed that runs.
func (s *Sim) rejoinSeeds() {
	if !s.cfg.SeedsOnly {
		return
	}
	for _, n := range s.nodes {
		if n.alive && !n.dup {
			s.joinSeeds(n)
		}
	}
}

func (s *Sim) networkChanged() {
	s.epoch++
	if s.detect.Partitions && !s.detect.Off {
		s.push(event{at: s.now + int64(s.detect.Delay), kind: evDetectNetwork, epoch: s.epoch})
	}
}
