package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/groupd/groupd/wire"
)

// Options configures Open.
type Options struct {
	// Bind is the address of the unicast sockets: an IPv4 address or
	// 0.0.0.0 (IPv4 only), an IPv6 address (IPv6 only), or "::" or nil
	// (both families, two sockets on one port); see Families.
	Bind net.IP
	// Port is their port; 0 picks a free one (the same for both
	// families).
	Port int
	// Advertise is the IP Addr reports, where other nodes reach this one.
	// Nil reports Bind, which must then be a specific address: a wildcard
	// is no address to reach (DefaultRouteIP gives the usual choice).
	Advertise net.IP
	// Multicast lists the groups to join and send beacons to, at most one
	// per family, each of a family Bind covers; none, no multicast.
	Multicast []Group
	// OnError, if set, hears the errors of reading the sockets that do
	// not stop the transport (a transient ICMP error, say), and whether
	// the socket was a multicast one. It runs on the reading goroutine.
	OnError func(err error, multicast bool)
}

// Group is one multicast group, with the interfaces it is joined on and
// its beacons sent through (the first is the socket's multicast
// interface). No interfaces: those Interfaces picks for Options.Bind.
type Group struct {
	Addr       *net.UDPAddr
	Interfaces []net.Interface
}

// OptionError is an error of Open that one field of Options caused, so
// that a caller can name its own setting of it: Option is the field
// ("Port", "Advertise" or "Multicast"; a Bind address that cannot be
// bound is reported with Port, as the kernel does not say which was at
// fault), Value the value at fault (the port, or the one group), Err what
// went wrong.
type OptionError struct {
	Option, Value string
	Err           error
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("udp: %s %s: %v", e.Option, e.Value, e.Err)
}

func (e *OptionError) Unwrap() error { return e.Err }

// bindAttempts bounds the retries of an automatic port (0) for a dual
// stack, whose IPv6 half may find the port the IPv4 half got taken.
const bindAttempts = 10

// Transport carries datagrams over UDP: one unicast socket per address
// family, each of which also sends its family's beacons (so that their
// source is the sender's unicast address), and the multicast sockets
// that receive them. It implements package group's Transport.
type Transport struct {
	socks  []*wireSocket // IPv4 first
	addr   *net.UDPAddr  // advertised address
	groups string        // MulticastGroup's answer, fixed once the sockets are open

	closed  chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	onError func(err error, multicast bool)
}

// Open binds the unicast sockets and the multicast ones of o.Multicast.
// Nothing is read until Start. An error that a field of o caused is an
// *OptionError.
func Open(o Options) (*Transport, error) {
	bind := o.Bind
	if bind == nil {
		bind = net.IPv6unspecified
	}
	if v4 := bind.To4(); v4 != nil {
		bind = v4
	}
	adv := o.Advertise
	if adv == nil {
		if bind.IsUnspecified() {
			return nil, &OptionError{"Advertise", "<nil>", fmt.Errorf("needed with the wildcard Bind %s", bind)}
		}
		adv = bind
	}
	if err := checkGroups(bind, o.Multicast); err != nil {
		return nil, err
	}
	ucs, err := bindUnicast(bind, o.Port)
	if err != nil {
		return nil, err
	}
	t := &Transport{
		addr:    &net.UDPAddr{IP: adv, Port: portOf(ucs[0])},
		closed:  make(chan struct{}),
		onError: o.OnError,
	}
	for _, uc := range ucs {
		t.socks = append(t.socks, newWireSocket(uc))
	}
	for _, g := range o.Multicast {
		if err := t.join(bind, g); err != nil {
			t.closeSockets()
			return nil, &OptionError{"Multicast", g.Addr.String(), err}
		}
	}
	var gs []string
	for _, w := range t.socks {
		if w.mcast != nil {
			gs = append(gs, w.mcast.group.String())
		}
	}
	t.groups = strings.Join(gs, ",")
	return t, nil
}

// checkGroups refuses groups that are not multicast addresses, of a
// family bind does not cover, or two of one family.
func checkGroups(bind net.IP, groups []Group) error {
	v4, v6 := Families(bind)
	seen := map[bool]bool{}
	for _, g := range groups {
		if g.Addr == nil || !g.Addr.IP.IsMulticast() {
			return &OptionError{"Multicast", g.Addr.String(), errors.New("not a multicast address")}
		}
		is6 := g.Addr.IP.To4() == nil
		if is6 && !v6 || !is6 && !v4 {
			return &OptionError{"Multicast", g.Addr.String(), fmt.Errorf("Bind %s does not cover its family", bind)}
		}
		if seen[is6] {
			return &OptionError{"Multicast", g.Addr.String(), errors.New("a second group of its family")}
		}
		seen[is6] = true
	}
	return nil
}

// join sets up the beacons of g's family on its wire socket and opens
// its multicast receiver.
func (t *Transport) join(bind net.IP, g Group) error {
	v6 := g.Addr.IP.To4() == nil
	ifaces := g.Interfaces
	if len(ifaces) == 0 {
		var err error
		if ifaces, err = Interfaces(bind, v6); err != nil {
			return err
		}
		if len(ifaces) == 0 {
			return fmt.Errorf("no interface is up with an address of its family")
		}
	}
	w := t.sock(v6)
	if err := setupMulticastSender(w, ifaces); err != nil {
		return err
	}
	m, err := openMulticast(g.Addr, ifaces)
	if err != nil {
		return err
	}
	w.mcast = m
	return nil
}

// sock returns the wire socket of a family, or nil.
func (t *Transport) sock(v6 bool) *wireSocket {
	for _, w := range t.socks {
		if w.v6() == v6 {
			return w
		}
	}
	return nil
}

// closeSockets closes every socket; the first error is returned.
func (t *Transport) closeSockets() error {
	var first error
	for _, w := range t.socks {
		if err := w.uc.Close(); first == nil {
			first = err
		}
		if w.mcast != nil {
			if err := w.mcast.close(); first == nil {
				first = err
			}
		}
	}
	return first
}

// Start begins delivering received datagrams to recv, with their source
// and whether they came by multicast, and returns at once: one goroutine
// per socket. recv must not keep pkt after it returns (its buffer is
// reused), and is not called once Close has returned.
func (t *Transport) Start(recv func(pkt []byte, src *net.UDPAddr, multicast bool)) {
	for _, w := range t.socks {
		t.wg.Add(1)
		go func() { defer t.wg.Done(); t.readLoop(w.uc, false, recv) }()
		if w.mcast != nil {
			t.wg.Add(1)
			go func() { defer t.wg.Done(); t.readLoop(w.mcast.conn, true, recv) }()
		}
	}
}

// readLoop reads datagrams from conn until it is closed.
func (t *Transport) readLoop(conn *net.UDPConn, multicast bool, recv func([]byte, *net.UDPAddr, bool)) {
	r := NewReader(conn)
	// One byte more than the largest valid datagram, to detect (and drop)
	// longer ones rather than silently truncate them.
	buf := make([]byte, wire.MaxDatagramSize+1)
	for {
		n, src, err := r.ReadFromUDPAddrPort(buf)
		if err != nil {
			select {
			case <-t.closed:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient error (ICMP port unreachable surfacing as
			// ECONNREFUSED, say) must not stop the node.
			if t.onError != nil {
				t.onError(err, multicast)
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		var from *net.UDPAddr
		if src.IsValid() {
			from = net.UDPAddrFromAddrPort(netip.AddrPortFrom(src.Addr().Unmap(), src.Port()))
		}
		recv(buf[:n], from, multicast)
	}
}

// Addr returns the advertised address, with the unicast sockets' port.
func (t *Transport) Addr() *net.UDPAddr { return t.addr }

// Send sends pkt to addr from the unicast socket of addr's family.
func (t *Transport) Send(pkt []byte, addr *net.UDPAddr) error {
	w := t.sock(addr.IP.To4() == nil)
	if w == nil {
		return fmt.Errorf("udp: no socket of %s's family (bound to %s)", addr, t.socks[0].uc.LocalAddr())
	}
	_, err := w.uc.WriteToUDP(pkt, addr)
	return err
}

// Multicast sends pkt to the group of every family with one, once per
// interface, and returns how many copies left in all and the first error.
func (t *Transport) Multicast(pkt []byte) (int, error) {
	sent := 0
	var first error
	for _, w := range t.socks {
		if w.mcast == nil {
			continue
		}
		n, err := w.mcast.send(w, pkt)
		sent += n
		if err != nil && first == nil {
			first = err
		}
	}
	if sent == 0 && first == nil {
		return 0, errors.New("udp: no multicast group")
	}
	return sent, first
}

// MulticastGroup returns the groups joined, comma-separated (IPv4
// first), or "" without multicast.
func (t *Transport) MulticastGroup() string { return t.groups }

// Close stops the reading goroutines and closes the sockets.
func (t *Transport) Close() error {
	var err error
	t.once.Do(func() {
		close(t.closed)
		err = t.closeSockets()
		t.wg.Wait()
	})
	return err
}

// portOf returns the port of a bound UDP socket.
func portOf(uc *net.UDPConn) int {
	if a, ok := uc.LocalAddr().(*net.UDPAddr); ok {
		return a.Port
	}
	return 0
}

// bindUnicast binds the unicast sockets of the families bind covers on
// port: one socket for a specific address or one family's wildcard, two
// on one port for "::" (udp4 on 0.0.0.0, then udp6 on [::] with
// IPV6_V6ONLY, which Go sets for "udp6"), so that each family's multicast
// is joined and sent the usual way for it. With port 0, the IPv6 half may
// find the port the IPv4 half got taken: it retries with a new port.
func bindUnicast(bind net.IP, port int) ([]*net.UDPConn, error) {
	v4, v6 := Families(bind)
	if !v4 || !v6 {
		network := "udp4"
		if v6 {
			network = "udp6"
		}
		uc, err := net.ListenUDP(network, &net.UDPAddr{IP: bind, Port: port})
		if err != nil {
			return nil, &OptionError{"Port", strconv.Itoa(port), err}
		}
		return []*net.UDPConn{uc}, nil
	}
	for attempt := 0; ; attempt++ {
		u4, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero, Port: port})
		if err != nil {
			return nil, &OptionError{"Port", strconv.Itoa(port), err}
		}
		p := portOf(u4)
		u6, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6unspecified, Port: p})
		if err == nil {
			return []*net.UDPConn{u4, u6}, nil
		}
		u4.Close()
		if port != 0 || attempt+1 == bindAttempts {
			return nil, &OptionError{"Port", strconv.Itoa(p), err}
		}
	}
}
