package invitation

import (
	"time"

	"github.com/groupd/groupd/wire"
)

// This file holds what a node knows of its peers: the coordinators and the
// nodes without a group it heard, the highest node above it, the numbers
// and timings their messages carry, and the sweep that forgets the silent.

// peer is what the node last heard from a node that said it coordinates a
// group. It is kept small because during a cold start of a large LAN
// every node may hear every other node coordinate a singleton group.
type peer struct {
	group     wire.GroupNumber
	heard     time.Duration // when, as time since the node's start (monotonic)
	size      uint32        // its member list's length, from its beacon (0: unknown)
	prio      uint8
	state     wire.State
	degraded  bool
	incumbent bool
	wait      time.Duration // inviteWait by the timing it announced (0: none heard)
}

func (p *peer) isCoordinator(id wire.NodeID) bool { return p.group.ID == id }

func (p *peer) rank(id wire.NodeID) wire.Rank {
	return wire.Rank{Degraded: p.degraded, Incumbent: p.incumbent, Priority: p.prio, ID: id}
}

// abovePeer is a node that outranks this one, as last heard.
type abovePeer struct {
	id    wire.NodeID // 0: none
	rank  wire.Rank
	coord bool // a Normal coordinator (else a node without a group)
	heard time.Time
}

// freshPeer is a node heard without a group (booting, or lost its group).
type freshPeer struct {
	boot    uint64
	rank    wire.Rank
	heard   time.Time
	invited time.Time     // when this node last invited it
	replied time.Time     // when this node last answered its beacon
	wait    time.Duration // inviteWait by the timing it announced (0: none heard)
}

// observe records what a message says about its sender and the numbers
// it carries.
func (n *Node) observe(now time.Time, m wire.Message) {
	n.seen(now, m.From, m.Group)
	var ann wire.Timing
	switch b := m.Body.(type) {
	case wire.Invitation:
		n.seen(now, m.From, b.Group)
		ann = b.Timing
	case wire.Ready:
		n.seen(now, m.From, b.Group)
		ann = b.Timing
	case wire.AreYouThere:
		n.seen(now, m.From, b.Group)
	case wire.Accept:
		n.seen(now, m.From, b.Term)
	case wire.BeatAck:
		n.seen(now, m.From, b.Term)
	case wire.Decline:
		n.seen(now, m.From, b.Held)
	case wire.Beacon:
		n.store.maxSeen = max(n.store.maxSeen, b.HighWater)
		ann = b.Timing
		if _, known := n.disc.loud[m.From]; m.Flags&wire.FlagBroadcast != 0 && (known || len(n.disc.loud) < MaxGroupSize) {
			n.disc.loud[m.From] = now
		}
	}
	n.observeQuorum(now, m)
	wait := time.Duration(0)
	if !ann.IsZero() {
		n.checkTiming(now, m.From, ann)
		wait = n.t.adopt(ann).inviteWait()
	}
	if m.From == n.group.ID && m.Group.ID == m.From {
		n.part.coordDegraded = m.Flags&wire.FlagDegraded != 0
		n.part.coordIncumbent = m.Flags&wire.FlagIncumbent != 0
		n.part.coordPrimary = m.Flags&wire.FlagPrimary != 0
		if !n.isCoordinator() && n.state == wire.StateNormal && n.store.pending == nil {
			n.noteOutrank(now)
		}
	}
	n.noteAbove(now, m)
	if m.Booting() {
		n.forgetCoord(m.From)
		if n.idleParticipant() {
			// Only a coordinator invites a node without a group, and
			// only a node without a group weighs them: a participant
			// that kept every booting node it heard swept N entries per
			// sweep for nothing (a fifth of a cold start's cost at
			// N = 5,000 in the simulator). It listens again if it
			// loses its group.
			return
		}
		f := entry(n.disc.fresh, m.From)
		if f == nil {
			return
		}
		if f.boot != m.Boot {
			f.invited, f.wait = time.Time{}, 0
		}
		f.boot, f.rank, f.heard = m.Boot, m.Rank(), now
		if wait > 0 {
			f.wait = wait
		}
		return
	}
	delete(n.disc.fresh, m.From)
	if !m.IsCoordinator() {
		// It no longer coordinates (if it ever did): only coordinators
		// are worth remembering, and keeping every node of a large LAN
		// would cost each node memory and sweep time in N.
		n.forgetCoord(m.From)
		return
	}
	p := entry(n.disc.coords, m.From)
	if p == nil {
		return
	}
	p.prio = m.Priority
	p.degraded = m.Flags&wire.FlagDegraded != 0
	p.incumbent = m.Flags&wire.FlagIncumbent != 0
	if p.group != m.Group {
		p.size = 0
	}
	p.group = m.Group
	p.state = m.State
	p.heard = now.Sub(n.born)
	if b, ok := m.Body.(wire.Beacon); ok {
		p.size = b.Size
	}
	if wait > 0 {
		p.wait = wait
	}
}

// entry returns the record of id in m, adding an empty one, unless m
// already holds MaxGroupSize records (nil then): what a node keeps of its
// peers is bounded whatever the LAN sends it.
func entry[V any](m map[wire.NodeID]*V, id wire.NodeID) *V {
	v := m[id]
	if v == nil && len(m) < MaxGroupSize {
		v = new(V)
		m[id] = v
	}
	return v
}

// seen records a group number a message carries: new numbers go above it,
// and one of this node's own numbers above its counter means its state was
// lost or rolled back.
func (n *Node) seen(now time.Time, from wire.NodeID, g wire.GroupNumber) {
	if g.Seq > n.store.maxSeen {
		n.store.maxSeen = g.Seq
	}
	if g.ID != n.id || g.Seq <= max(n.store.want.Counter, n.store.behind) {
		return
	}
	n.notice(Notice{Kind: NoticeStateBehind, Time: now, Peer: from, Group: g, Counter: n.store.want.Counter})
	n.store.behind = g.Seq
	// Remember it across restarts too.
	n.store.want.Counter = g.Seq
	n.requestSave(now)
}

// checkTiming reports, once per peer and value, timing that differs from
// this node's own.
func (n *Node) checkTiming(now time.Time, from wire.NodeID, a wire.Timing) {
	ours := n.t.announce(n.alg)
	if a == ours {
		delete(n.mismatch, from)
		return
	}
	if prev, ok := n.mismatch[from]; ok && prev == a {
		return
	}
	if len(n.mismatch) >= MaxGroupSize {
		return
	}
	n.mismatch[from] = a
	n.notice(Notice{Kind: NoticeTimingMismatch, Time: now, Peer: from, Ours: ours, Theirs: a})
}

// forgetCoord removes id from the known coordinators. After a cold start of
// a large LAN the table held every node's singleton group and soon holds
// one or two coordinators; a Go map never shrinks, and its deleted slots
// make each lookup of an absent key (one per message from a member) probe
// as far as at the peak. So the table is rebuilt once deletions outnumber
// what it holds, which keeps the cost amortised O(1) per deletion.
func (n *Node) forgetCoord(id wire.NodeID) {
	if _, ok := n.disc.coords[id]; !ok {
		return
	}
	delete(n.disc.coords, id)
	n.disc.coordsDel++
	if n.disc.coordsDel > 2*len(n.disc.coords)+64 {
		m := make(map[wire.NodeID]*peer, len(n.disc.coords))
		for k, p := range n.disc.coords {
			m[k] = p
		}
		n.disc.coords, n.disc.coordsDel = m, 0
	}
}

// noteAbove keeps n.above: the highest-ranked node heard that outranks
// this one and would invite it. The sender of m replaces it if it ranks
// higher, or if the one held was not heard for PeerTimeout; the one held
// is dropped when it no longer qualifies.
func (n *Node) noteAbove(now time.Time, m wire.Message) {
	r := m.Rank()
	coord := m.IsCoordinator() && m.State == wire.StateNormal
	ok := n.rank().Less(r) && (coord || m.Booting())
	a := &n.disc.above
	switch {
	case a.id == m.From && !ok:
		*a = abovePeer{}
	case a.id == m.From || (ok && (a.id == 0 || now.Sub(a.heard) > n.t.PeerTimeout || a.rank.Less(r))):
		*a = abovePeer{id: m.From, rank: r, coord: coord, heard: now}
	}
}

// sweep forgets coordinators and nodes without a group not heard from for
// PeerTimeout.
func (n *Node) sweep(now time.Time) {
	n.nextSweep = now.Add(n.t.sweepInterval())
	if n.idleParticipant() && len(n.disc.fresh) > 0 {
		n.disc.fresh = make(map[wire.NodeID]*freshPeer) // see observe
	}
	for id, p := range n.disc.coords {
		if now.Sub(n.born)-p.heard > n.t.PeerTimeout {
			n.forgetCoord(id)
		}
	}
	for id, f := range n.disc.fresh {
		if now.Sub(f.heard) > n.t.PeerTimeout {
			delete(n.disc.fresh, id)
		}
	}
	n.coord.members.sweepBackoffs(now, 8*n.t.CheckInterval)
	if n.q.Enabled() {
		n.quorum.roll.Sweep(now, n.t.VoterTimeout, n.hasMember)
	}
	// A broadcaster counts for two of its periods (two of this node's:
	// the nodes that share the budget pace alike), and PeerTimeout at
	// least.
	keep := max(n.t.PeerTimeout, 2*n.paced(n.t.BeaconInterval))
	for id, t := range n.disc.loud {
		if now.Sub(t) > keep {
			delete(n.disc.loud, id)
		}
	}
}
