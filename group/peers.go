package group

import (
	"net"
	"sort"
	"sync"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// maxPeers bounds the address book, so that a flood of forged sender IDs
// (without a key anyone can send packets) cannot grow it without bound.
// It matches the largest group the algorithm accepts.
const maxPeers = invitation.MaxGroupSize

// peerForget is how long a peer that memberlist declared dead or left, or
// that only ever sent wire packets, is remembered after it was last
// heard of.
const peerForget = 15 * time.Minute

// peerInfo is what the agent knows about another node.
type peerInfo struct {
	priority    uint8
	hasPriority bool
	// gossip is memberlist's last reported state: GossipAlive (join or
	// update), GossipDead or GossipLeft; "" if memberlist never
	// mentioned it. Suspicion is not reported by memberlist events, so
	// Members asks memberlist for it.
	gossip     string
	gossipAddr string       // memberlist host:port
	metaAddr   *net.UDPAddr // memberlist IP + wire port from meta
	meta       *nodeMeta
	udpAddr    *net.UDPAddr // source of the last accepted wire packet of boot
	boot       uint64       // the process udpAddr belongs to
	booting    [2]bootAddr  // where processes without a group spoke from, newest first
	lastUDP    time.Time
	lastKind   pktKind   // the kind of the packet of lastUDP
	mcastBoot  uint64    // the last process of id heard over multicast (or Hello)
	mcastPkt   pktID     // the last packet heard over multicast
	ucastPkt   pktID     // the last packet heard by unicast
	lastJoin   time.Time // last memberlist Join attempt prompted by a beacon
	announced  string    // gossip address in its last beacon
	announceAt time.Time // when that beacon arrived
	gossipAt   time.Time // when gossip last changed
}

// pktID names one packet of a sender: its boot and its packet counter. A
// broadcast copied by unicast keeps the counter of its multicast original.
type pktID struct{ boot, counter uint64 }

// bootAddr is where one boot of a node spoke from.
type bootAddr struct {
	boot uint64
	addr *net.UDPAddr
}

// peerBook is the address book: node ID -> how to reach it, shared by the
// loop (sends), the socket readers (sources), memberlist's delegates
// (meta, states), the reconnect loop and the API. Critical sections are
// short and never do I/O, so memberlist's callbacks never wait long.
type peerBook struct {
	self wire.NodeID
	mu   sync.Mutex
	m    map[wire.NodeID]*peerInfo
}

func newPeerBook(self wire.NodeID) *peerBook {
	return &peerBook{self: self, m: make(map[wire.NodeID]*peerInfo)}
}

// get returns id's entry, creating it unless the book is full. Call with
// mu held.
func (b *peerBook) get(id wire.NodeID) *peerInfo {
	p := b.m[id]
	if p == nil && len(b.m) < maxPeers {
		p = &peerInfo{}
		b.m[id] = p
	}
	return p
}

// admit reports whether id has, or may get, an entry: the book is bounded.
func (b *peerBook) admit(id wire.NodeID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[id] != nil || len(b.m) < maxPeers
}

// noteUDP records an accepted wire packet of kind from boot of id, received
// from src. A process with a group (inGroup) owns the ID's route; one without
// (booting, or that lost its group) takes it only if nobody else holds it,
// so that a second process started with a node's ID cannot divert the
// group's traffic: it is answered at its own address by boot
// (route(id, boot)) until it gives way. The ID is held by the process of
// its last packet and, before any packet of it arrived, by the process
// memberlist lists as alive, at its meta's wire address: an idle
// participant sends nothing to the other participants, which know it from
// memberlist alone, and without that a second process's first beacon
// became their route to its ID (design §3.6).
func (b *peerBook) noteUDP(id wire.NodeID, prio uint8, boot uint64, inGroup bool, kind pktKind, src *net.UDPAddr, viaMulticast bool, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.get(id)
	if p == nil {
		return
	}
	p.priority, p.hasPriority = prio, true
	p.lastUDP, p.lastKind = now, kind
	if viaMulticast {
		p.mcastBoot = boot
	}
	if src == nil {
		return
	}
	if !inGroup {
		if p.booting[0].boot != boot {
			p.booting[1] = p.booting[0]
		}
		p.booting[0] = bootAddr{boot: boot, addr: copyAddr(p.booting[0].addr, src)}
		if p.udpAddr != nil && p.boot != boot {
			return
		}
		if p.udpAddr == nil && p.gossip == GossipAlive && p.metaAddr != nil && !sameUDPAddr(p.metaAddr, src) {
			return
		}
	}
	p.boot = boot
	p.udpAddr = copyAddr(p.udpAddr, src)
}

// noteCopy records that the packet (boot, counter) of id arrived, over
// multicast or by unicast, and reports whether it had already arrived the
// other way: the sender copied a broadcast to this node by unicast
// although this node hears its multicast. It runs on every authenticated
// packet, before the replay window drops the second arrival.
func (b *peerBook) noteCopy(id wire.NodeID, boot, counter uint64, viaMulticast bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.get(id)
	if p == nil {
		return false
	}
	this := pktID{boot: boot, counter: counter}
	if viaMulticast {
		p.mcastPkt = this
		return p.ucastPkt == this
	}
	p.ucastPkt = this
	return p.mcastPkt == this
}

// noteHello records a Hello of boot of id heard over multicast: that
// process is reached by multicast, so broadcasts need no unicast copy for
// it (unicastBroadcastTargets).
func (b *peerBook) noteHello(id wire.NodeID, boot uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.get(id); p != nil {
		p.mcastBoot = boot
	}
}

// sameUDPAddr reports whether a and b are one address.
func sameUDPAddr(a, b *net.UDPAddr) bool {
	return a.IP.Equal(b.IP) && a.Port == b.Port && a.Zone == b.Zone
}

// isWireAddr reports whether addr is another node's wire protocol address,
// as its packets or its gossip meta gave it.
func (b *peerBook) isWireAddr(addr *net.UDPAddr) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.m {
		if p.udpAddr != nil && sameUDPAddr(p.udpAddr, addr) || p.metaAddr != nil && sameUDPAddr(p.metaAddr, addr) {
			return true
		}
	}
	return false
}

// copyAddr returns src, reusing old when it is the same address.
func copyAddr(old, src *net.UDPAddr) *net.UDPAddr {
	if old != nil && sameUDPAddr(old, src) {
		return old
	}
	// The zone of a link-local IPv6 source is the interface it came in
	// on, which a reply must leave by.
	return &net.UDPAddr{IP: append(net.IP(nil), src.IP...), Port: src.Port, Zone: src.Zone}
}

// noteGossip records memberlist's news about id: its state, gossip
// address and (if it decoded) meta. It reports whether the meta named id
// otherwise than before.
func (b *peerBook) noteGossip(id wire.NodeID, state, gossipAddr string, ip net.IP, meta *nodeMeta, now time.Time) (named bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.get(id)
	if p == nil {
		return false
	}
	if p.gossip != state {
		p.gossip, p.gossipAt = state, now
	}
	if gossipAddr != "" {
		p.gossipAddr = gossipAddr
	}
	if meta != nil {
		named = meta.Name != "" && (p.meta == nil || p.meta.Name != meta.Name)
		p.meta = meta
		p.priority, p.hasPriority = meta.Priority, true
		if ip != nil && meta.Port != 0 {
			p.metaAddr = &net.UDPAddr{IP: append(net.IP(nil), ip...), Port: int(meta.Port)}
		}
	}
	return named
}

// route returns the wire address of id (at boot, if not zero): the source
// of its last accepted packet, which is authenticated when a key is set and
// is what the node actually sends from; else the address its memberlist
// meta announces.
func (b *peerBook) route(id wire.NodeID, boot uint64) *net.UDPAddr {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.m[id]
	if p == nil {
		return nil
	}
	if boot != 0 && boot != p.boot {
		for _, ba := range p.booting {
			if ba.boot == boot {
				return ba.addr
			}
		}
	}
	if p.udpAddr != nil {
		return p.udpAddr
	}
	return p.metaAddr
}

// unicastBroadcastTargets returns where a broadcast goes by unicast: every
// memberlist member, less (with multicast) those whose current process
// was heard over multicast. Every process multicasts while it boots, so
// on a LAN that is nearly everyone, and idle participants, which send
// nothing, get heartbeats by multicast alone; a member reached only
// through --join seeds (across a router) gets its copy. A process that
// booted and fell quiet before this one listened was not heard: it gets
// copies until it receives one twice (by multicast too) and multicasts a
// Hello (see helloPacer). A member whose multicast stops working after
// that is not noticed: it misses heartbeats, elects, and is heard again
// only if its multicast works.
func (b *peerBook) unicastBroadcastTargets(multicast bool) []*net.UDPAddr {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*net.UDPAddr
	for _, p := range b.m {
		if p.gossip != GossipAlive {
			continue
		}
		if multicast && p.mcastBoot != 0 && p.mcastBoot == p.boot {
			continue
		}
		addr := p.udpAddr
		if addr == nil {
			addr = p.metaAddr
		}
		if addr != nil {
			out = append(out, addr)
		}
	}
	return out
}

// shouldJoin reports whether a beacon from id should make memberlist join
// it: memberlist does not list it as alive, and no beacon-prompted Join was
// tried within interval. It records the attempt.
func (b *peerBook) shouldJoin(id wire.NodeID, now time.Time, interval time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.get(id)
	if p == nil || p.gossip == GossipAlive {
		return false
	}
	if !p.lastJoin.IsZero() && now.Sub(p.lastJoin) < interval {
		return false
	}
	p.lastJoin = now
	return true
}

// gossipGaps returns coord's memberlist address if memberlist last
// reported it alive (else ""), and how many of members other than this
// node memberlist has not reported alive.
func (b *peerBook) gossipGaps(coord wire.NodeID, members []wire.Member) (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.m[coord]
	if c == nil || c.gossip != GossipAlive || c.gossipAddr == "" {
		return "", 0
	}
	missing := 0
	for _, m := range members {
		if p := b.m[m.ID]; m.ID != b.self && (p == nil || p.gossip != GossipAlive) {
			missing++
		}
	}
	return c.gossipAddr, missing
}

// noteBeacon records the gossip address id announced in a beacon.
func (b *peerBook) noteBeacon(id wire.NodeID, addr string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.get(id); p != nil {
		p.announced, p.announceAt = addr, now
	}
}

// staleDown reports whether memberlist's news that id at gossip address
// addr died or left is about a previous instance of the node: within
// fresh, the node announced a different gossip address in a beacon. That
// happens when a node restarts on another address (a new port, DHCP):
// memberlist keeps the old instance's entry, and in time declares it dead,
// while the new instance is alive and well, so the loop must not take the
// news as the node's failure.
func (b *peerBook) staleDown(id wire.NodeID, addr string, now time.Time, fresh time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.m[id]
	return p != nil && addr != "" && p.announced != "" && p.announced != addr && now.Sub(p.announceAt) <= fresh
}

// failedGossipAddrs returns the gossip addresses of nodes memberlist
// declared dead (not those that left on purpose) within window: the
// reconnect loop retries them when there is no multicast to hear their
// beacons.
func (b *peerBook) failedGossipAddrs(now time.Time, window time.Duration) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, p := range b.m {
		if p.gossip == GossipDead && p.gossipAddr != "" && now.Sub(p.gossipAt) <= window {
			out = append(out, p.gossipAddr)
		}
	}
	sort.Strings(out)
	return out
}

// name returns the name id announced in its gossip meta, or "".
func (b *peerBook) name(id wire.NodeID) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.m[id]; p != nil && p.meta != nil {
		return p.meta.Name
	}
	return ""
}

// aliveGossipAddrs returns the set of gossip addresses of alive nodes.
func (b *peerBook) aliveGossipAddrs() map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]bool)
	for _, p := range b.m {
		if p.gossip == GossipAlive && p.gossipAddr != "" {
			out[p.gossipAddr] = true
		}
	}
	return out
}

// reap forgets peers that are not alive in memberlist and were last heard
// of more than peerForget ago.
func (b *peerBook) reap(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, p := range b.m {
		if p.gossip == GossipAlive {
			continue
		}
		last := p.lastUDP
		if p.gossipAt.After(last) {
			last = p.gossipAt
		}
		if now.Sub(last) > peerForget {
			delete(b.m, id)
		}
	}
}

// peerView is a copy of one entry, for Members.
type peerView struct {
	id       wire.NodeID
	priority uint8
	hasPrio  bool
	gossip   string
	addr     string
	meta     *nodeMeta
	heard    evidence // its last accepted wire packet
}

// snapshot copies the book for Members.
func (b *peerBook) snapshot() map[wire.NodeID]peerView {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[wire.NodeID]peerView, len(b.m))
	for id, p := range b.m {
		v := peerView{id: id, priority: p.priority, hasPrio: p.hasPriority, gossip: p.gossip, meta: p.meta,
			heard: evidence{from: id, at: p.lastUDP, kind: p.lastKind}}
		switch {
		case p.udpAddr != nil:
			v.addr = p.udpAddr.String()
		case p.metaAddr != nil:
			v.addr = p.metaAddr.String()
		}
		out[id] = v
	}
	return out
}
