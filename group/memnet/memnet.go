// Package memnet is an in-memory network for groupd agents in one process:
// both of an agent's transports (the wire protocol's datagrams, a
// group.Transport, and memberlist's gossip, a memberlist.Transport) on
// made-up addresses, with partitions, one-way cuts and loss applied where a
// real network would apply them: at the transport. Tests and embedders use
// it to run several agents without sockets, multicast or root:
//
//	nw := memnet.New(1)
//	h := nw.Host("10.0.0.1")
//	cfg.Transport, cfg.GossipTransport = h.Wire(7950), h.Gossip(7951)
//	...
//	nw.Partition([]string{"10.0.0.1"}, []string{"10.0.0.2", "10.0.0.3"})
//	nw.Heal()
//
// Delivery is asynchronous (each endpoint has a bounded queue drained by
// its own goroutine, so a slow receiver loses datagrams as a full socket
// buffer would) and takes no time beyond the scheduler's. Every host joins
// the one multicast group, and receives its own multicast, as with
// IP_MULTICAST_LOOP.
package memnet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// queueLen bounds the datagrams waiting for one endpoint.
const queueLen = 4096

// Group is the made-up multicast group every Wire joins.
const Group = "239.192.0.1:7952"

// Network is one in-memory network. Its methods are safe for concurrent
// use.
type Network struct {
	mu    sync.Mutex
	hosts map[string]*Host
	side  map[string]int          // partition side by IP; 0 for unlisted
	cuts  map[[2]string]bool      // one-way cuts (from IP, to IP)
	deaf  map[[2]string]bool      // one-way multicast-only cuts (from IP, to IP)
	loss  float64                 // drop probability of each delivery
	rnd   *rand.Rand              // for loss
	wires map[string]*Wire        // by "ip:port"
	goss  map[string]*GossipLayer // by "ip:port"
}

// New returns an empty network; seed drives its loss.
func New(seed uint64) *Network {
	return &Network{
		hosts: make(map[string]*Host),
		side:  make(map[string]int),
		cuts:  make(map[[2]string]bool),
		deaf:  make(map[[2]string]bool),
		rnd:   rand.New(rand.NewPCG(seed, 0x6d656d6e6574)),
		wires: make(map[string]*Wire),
		goss:  make(map[string]*GossipLayer),
	}
}

// Host returns the host with address ip (an IPv4 literal), creating it.
func (n *Network) Host(ip string) *Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	h := n.hosts[ip]
	if h == nil {
		h = &Host{net: n, ip: net.ParseIP(ip).To4()}
		if h.ip == nil {
			panic("memnet: not an IPv4 address: " + ip)
		}
		n.hosts[ip] = h
	}
	return h
}

// Partition splits the hosts into sides that cannot reach each other;
// hosts not listed form one more side together. It replaces any earlier
// partition (cuts stay).
func (n *Network) Partition(sides ...[]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.side)
	for i, ips := range sides {
		for _, ip := range ips {
			n.side[ip] = i + 1
		}
	}
}

// Cut drops everything from → to, one way.
func (n *Network) Cut(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cuts[[2]string{from, to}] = true
}

// CutMulticast drops multicast from → to, one way; unicast still passes,
// as when to's socket had not joined the group yet or a switch filters it.
func (n *Network) CutMulticast(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deaf[[2]string{from, to}] = true
}

// SetLoss makes every delivery fail with probability p.
func (n *Network) SetLoss(p float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.loss = p
}

// Heal removes partitions, cuts (multicast-only ones too) and loss.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.side)
	clear(n.cuts)
	clear(n.deaf)
	n.loss = 0
}

// passes reports whether a datagram from → to gets through now.
func (n *Network) passes(from, to string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.side[from] != n.side[to] || n.cuts[[2]string{from, to}] {
		return false
	}
	return n.loss == 0 || n.rnd.Float64() >= n.loss
}

// passesMulticast is passes for a multicast datagram.
func (n *Network) passesMulticast(from, to string) bool {
	n.mu.Lock()
	deaf := n.deaf[[2]string{from, to}]
	n.mu.Unlock()
	return !deaf && n.passes(from, to)
}

// Host is one machine on the network.
type Host struct {
	net *Network
	ip  net.IP
}

// IP returns the host's address.
func (h *Host) IP() string { return h.ip.String() }

// packet is one datagram in an endpoint's queue.
type packet struct {
	b     []byte
	src   *net.UDPAddr
	mcast bool
	at    time.Time
}

// endpoint is a bounded queue drained by one goroutine.
type endpoint struct {
	q      chan packet
	closed chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

func newEndpoint() *endpoint {
	return &endpoint{q: make(chan packet, queueLen), closed: make(chan struct{})}
}

// put queues p unless the queue is full or the endpoint closed.
func (e *endpoint) put(p packet) {
	select {
	case <-e.closed:
	case e.q <- p:
	default: // full: lost, as in a full socket buffer
	}
}

func (e *endpoint) close() {
	e.once.Do(func() { close(e.closed) })
	e.wg.Wait()
}

// Wire is a host's wire-protocol transport: a group.Transport.
type Wire struct {
	h       *Host
	addr    *net.UDPAddr
	ep      *endpoint
	noMcast bool
}

// ErrNoMulticast is what Multicast returns on a Wire bound without it
// (whose MulticastGroup is "").
var ErrNoMulticast = errors.New("memnet: no multicast")

// Wire binds the host's wire port, with multicast.
func (h *Host) Wire(port int) *Wire { return h.bindWire(port, false) }

// WireUnicast binds the host's wire port without multicast, as
// --multicast off: the agent then relies on --join seeds and unicast.
func (h *Host) WireUnicast(port int) *Wire { return h.bindWire(port, true) }

func (h *Host) bindWire(port int, noMcast bool) *Wire {
	w := &Wire{h: h, addr: &net.UDPAddr{IP: h.ip, Port: port}, ep: newEndpoint(), noMcast: noMcast}
	n := h.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.wires[w.addr.String()] != nil {
		panic("memnet: " + w.addr.String() + " is already bound") // a test bug: two agents on one address
	}
	n.wires[w.addr.String()] = w
	return w
}

// Start delivers received datagrams to recv.
func (w *Wire) Start(recv func(pkt []byte, src *net.UDPAddr, multicast bool)) {
	w.ep.wg.Add(1)
	go func() {
		defer w.ep.wg.Done()
		for {
			select {
			case <-w.ep.closed:
				return
			case p := <-w.ep.q:
				recv(p.b, p.src, p.mcast)
			}
		}
	}()
}

// Addr returns the wire address.
func (w *Wire) Addr() *net.UDPAddr { return w.addr }

// Send sends one datagram to addr.
func (w *Wire) Send(pkt []byte, addr *net.UDPAddr) error {
	n := w.h.net
	n.mu.Lock()
	to := n.wires[addr.String()]
	n.mu.Unlock()
	if to == nil {
		return nil // nobody listens there: lost, as UDP would lose it
	}
	if n.passes(w.h.IP(), to.h.IP()) {
		to.ep.put(packet{b: append([]byte(nil), pkt...), src: w.addr})
	}
	return nil
}

// Multicast sends one datagram to every wire on the network that has
// multicast (this one too), as one datagram on one interface.
func (w *Wire) Multicast(pkt []byte) (int, error) {
	if w.noMcast {
		return 0, ErrNoMulticast
	}
	n := w.h.net
	n.mu.Lock()
	all := make([]*Wire, 0, len(n.wires))
	for _, o := range n.wires {
		all = append(all, o)
	}
	n.mu.Unlock()
	for _, to := range all {
		if to.noMcast {
			continue
		}
		if to == w || n.passesMulticast(w.h.IP(), to.h.IP()) {
			to.ep.put(packet{b: append([]byte(nil), pkt...), src: w.addr, mcast: true})
		}
	}
	return 1, nil
}

// MulticastGroup returns the made-up group, or "" without multicast.
func (w *Wire) MulticastGroup() string {
	if w.noMcast {
		return ""
	}
	return Group
}

// Close unbinds the port.
func (w *Wire) Close() error {
	n := w.h.net
	n.mu.Lock()
	if n.wires[w.addr.String()] == w {
		delete(n.wires, w.addr.String())
	}
	n.mu.Unlock()
	w.ep.close()
	return nil
}

// GossipLayer is a host's memberlist transport (memberlist.Transport and
// NodeAwareTransport): datagrams and streams on the in-memory network.
type GossipLayer struct {
	h       *Host
	addr    *net.UDPAddr
	packets chan *memberlist.Packet
	streams chan net.Conn
	closed  chan struct{}
	once    sync.Once
}

// Gossip binds the host's gossip port.
func (h *Host) Gossip(port int) *GossipLayer {
	g := &GossipLayer{
		h:       h,
		addr:    &net.UDPAddr{IP: h.ip, Port: port},
		packets: make(chan *memberlist.Packet, queueLen),
		streams: make(chan net.Conn, 64),
		closed:  make(chan struct{}),
	}
	n := h.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.goss[g.addr.String()] != nil {
		panic("memnet: " + g.addr.String() + " is already bound") // a test bug: two agents on one address
	}
	n.goss[g.addr.String()] = g
	return g
}

var _ memberlist.NodeAwareTransport = (*GossipLayer)(nil)

// Addr returns the gossip address, what another agent joins.
func (g *GossipLayer) Addr() string { return g.addr.String() }

// FinalAdvertiseAddr returns the host's address and the bound port.
func (g *GossipLayer) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return g.addr.IP, g.addr.Port, nil
}

func (g *GossipLayer) peer(addr string) (*GossipLayer, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("memnet: %q: %w", addr, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return nil, fmt.Errorf("memnet: %q: bad port", addr)
	}
	n := g.h.net
	n.mu.Lock()
	to := n.goss[net.JoinHostPort(host, port)]
	n.mu.Unlock()
	if to == nil {
		return nil, fmt.Errorf("memnet: nothing listens on %s", addr)
	}
	return to, nil
}

// WriteTo sends one gossip datagram.
func (g *GossipLayer) WriteTo(b []byte, addr string) (time.Time, error) {
	now := time.Now()
	to, err := g.peer(addr)
	if err != nil {
		return now, nil // lost, as UDP would lose it
	}
	if !g.h.net.passes(g.h.IP(), to.h.IP()) {
		return now, nil
	}
	p := &memberlist.Packet{Buf: append([]byte(nil), b...), From: g.addr, Timestamp: now}
	select {
	case <-to.closed:
	case to.packets <- p:
	default:
	}
	return now, nil
}

// WriteToAddress is WriteTo for memberlist's NodeAwareTransport.
func (g *GossipLayer) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return g.WriteTo(b, a.Addr)
}

// PacketCh delivers received gossip datagrams.
func (g *GossipLayer) PacketCh() <-chan *memberlist.Packet { return g.packets }

// errUnreachable is what a dial across a partition fails with, after the
// timeout, as a TCP connect would.
var errUnreachable = errors.New("memnet: host unreachable")

// DialTimeout opens a stream to addr: one end of a pipe, the other handed
// to the receiver's StreamCh. Across a partition it waits out the timeout
// and fails.
func (g *GossipLayer) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	to, err := g.peer(addr)
	if err != nil {
		return nil, err
	}
	if !g.h.net.passes(g.h.IP(), to.h.IP()) || !g.h.net.passes(to.h.IP(), g.h.IP()) {
		select {
		case <-time.After(timeout):
		case <-g.closed:
		}
		return nil, fmt.Errorf("dial %s: %w", addr, errUnreachable)
	}
	a, b := net.Pipe()
	select {
	case to.streams <- &addrConn{Conn: b, local: to.addr, remote: g.addr}:
		return &addrConn{Conn: a, local: g.addr, remote: to.addr}, nil
	case <-to.closed:
	case <-time.After(timeout):
	}
	a.Close()
	b.Close()
	return nil, fmt.Errorf("dial %s: %w", addr, errUnreachable)
}

// DialAddressTimeout is DialTimeout for NodeAwareTransport.
func (g *GossipLayer) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return g.DialTimeout(a.Addr, timeout)
}

// StreamCh delivers incoming streams.
func (g *GossipLayer) StreamCh() <-chan net.Conn { return g.streams }

// Shutdown unbinds the port.
func (g *GossipLayer) Shutdown() error {
	g.once.Do(func() {
		n := g.h.net
		n.mu.Lock()
		if n.goss[g.addr.String()] == g {
			delete(n.goss, g.addr.String())
		}
		n.mu.Unlock()
		close(g.closed)
	})
	return nil
}

// addrConn gives a pipe end the addresses memberlist logs and checks.
type addrConn struct {
	net.Conn
	local, remote net.Addr
}

func (c *addrConn) LocalAddr() net.Addr  { return c.local }
func (c *addrConn) RemoteAddr() net.Addr { return c.remote }
