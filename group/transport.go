package group

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/groupd/groupd/group/udp"
	"github.com/groupd/groupd/wire"
)

// Transport carries the wire protocol's datagrams (encoded, and sealed
// when there is a key): unicast to a node's address, and multicast to every
// node listening on the group. The daemon uses UDP sockets (a nil
// Config.Transport: Bind, Port, Multicast and Interface); tests and embedders can hand Config.Transport an
// in-memory one (package group/memnet), where partitions are cut at the
// transport.
type Transport interface {
	// Start begins delivering received datagrams to recv, with their
	// source and whether they came by multicast, and returns at once.
	// recv runs on the transport's goroutines, must not block for long,
	// and must not keep pkt after it returns.
	Start(recv func(pkt []byte, src *net.UDPAddr, multicast bool))
	// Addr returns the unicast address other nodes reach this one at.
	Addr() *net.UDPAddr
	// Send sends one datagram to addr.
	Send(pkt []byte, addr *net.UDPAddr) error
	// Multicast sends one datagram to the multicast group and returns how
	// many copies left (one per interface). It is not called when
	// MulticastGroup is "".
	Multicast(pkt []byte) (int, error)
	// MulticastGroup returns the group as "addr:port" ("[addr]:port" for
	// IPv6; groups of several families comma-separated), or "" without
	// multicast.
	MulticastGroup() string
	// Close stops receiving and releases the transport; recv is not called
	// once Close has returned.
	Close() error
}

// selectInterfaces picks the interfaces of one family (v6) to join the
// multicast group on and send beacons through: Config.Interface, given
// as name, if set; else those udp.Interfaces picks for bind. Its errors
// name the fields to fix.
func selectInterfaces(name string, bind net.IP, v6 bool) ([]net.Interface, error) {
	if name != "" {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return nil, configErrorf("group: Config.Interface %q: %v", name, err)
		}
		if ifi.Flags&net.FlagUp == 0 {
			return nil, configErrorf("group: Config.Interface %q is down", name)
		}
		if ifi.Flags&(net.FlagMulticast|net.FlagLoopback) == 0 {
			return nil, configErrorf("group: Config.Interface %q does not support multicast", name)
		}
		return []net.Interface{*ifi}, nil
	}
	picked, err := udp.Interfaces(bind, v6)
	switch {
	case err != nil:
		return nil, configErrorf("group: list network interfaces: %v", err)
	case len(picked) > 0:
		return picked, nil
	case bind != nil && !bind.IsUnspecified():
		return nil, configErrorf("group: Config.Bind %s is not the address of any interface", bind)
	}
	return nil, configErrorf("group: no interface is up with an %s address for multicast; set Config.Interface, or Config.Multicast off", familyName(v6))
}

// chooseAdvertise picks the address other nodes reach this one at: the
// configured Advertise; else the first address of --interface (IPv4
// first where bind covers it; IPv6 not link-local); else a specific
// --bind; else the address of the default route's interface (on a host
// with several LANs, set --advertise or --interface to the LAN the group
// lives on); else the first address of an up, non-loopback interface
// (multicast-capable ones first); else loopback. IPv4 comes first where
// bind covers both families: it is what a LAN of IPv4 nodes reaches.
func chooseAdvertise(cfg Config, bind net.IP) (net.IP, error) {
	v4, v6 := udp.Families(bind)
	if cfg.Advertise != "" {
		// Config.Validate has refused an address of a family bind
		// does not cover.
		return parseIP("Config.Advertise", cfg.Advertise, false)
	}
	fams := []bool{}
	if v4 {
		fams = append(fams, false)
	}
	if v6 {
		fams = append(fams, true)
	}
	if cfg.Interface != "" {
		ifi, err := net.InterfaceByName(cfg.Interface)
		if err != nil {
			return nil, configErrorf("group: Config.Interface %q: %v", cfg.Interface, err)
		}
		for _, fam := range fams {
			if ips := routable(udp.InterfaceIPs(*ifi, fam)); len(ips) > 0 && (bind.IsUnspecified() || ips[0].Equal(bind)) {
				return ips[0], nil
			}
		}
	}
	if !bind.IsUnspecified() {
		return bind, nil
	}
	for _, fam := range fams {
		if ip := udp.DefaultRouteIP(fam); ip != nil {
			return ip, nil
		}
	}
	all, err := net.Interfaces()
	if err != nil {
		return nil, configErrorf("group: list network interfaces: %v", err)
	}
	for _, fam := range fams {
		var fallback net.IP
		for _, ifi := range all {
			if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagLoopback != 0 {
				continue
			}
			ips := routable(udp.InterfaceIPs(ifi, fam))
			if len(ips) == 0 {
				continue
			}
			if ifi.Flags&net.FlagMulticast != 0 {
				return ips[0], nil
			}
			if fallback == nil {
				fallback = ips[0]
			}
		}
		if fallback != nil {
			return fallback, nil
		}
	}
	if v4 {
		return net.IPv4(127, 0, 0, 1).To4(), nil
	}
	return net.IPv6loopback, nil
}

// udpTransport is the daemon's Transport: one unicast wire socket per
// address family (family.go), each of which also sends its family's
// beacons (so that their source is the sender's wire address), and the
// multicast sockets that receive them (multicast.go).
type udpTransport struct {
	socks  []*wireSocket // IPv4 first
	addr   *net.UDPAddr  // advertised address
	groups string        // MulticastGroup's answer, fixed once the sockets are open

	closed  chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	onError func(err error, multicast bool)
}

// openUDPTransport binds the wire sockets of bind's families on port and
// the multicast sockets of groups (one per family; none without
// multicast) on ifaces, the interfaces of each family. adv is the
// advertised IP.
func openUDPTransport(bind net.IP, port int, adv net.IP, groups []*net.UDPAddr, ifaces map[bool][]net.Interface) (*udpTransport, error) {
	ucs, err := bindWire(bind, port)
	if err != nil {
		return nil, err
	}
	t := &udpTransport{
		addr:   &net.UDPAddr{IP: adv, Port: portOf(ucs[0])},
		closed: make(chan struct{}),
	}
	for _, uc := range ucs {
		t.socks = append(t.socks, newWireSocket(uc))
	}
	for _, g := range groups {
		v6 := g.IP.To4() == nil
		w := t.sock(v6)
		if w == nil {
			continue // Config.multicastGroups kept only bind's families
		}
		if err := setupMulticastSender(w, ifaces[v6]); err != nil {
			t.closeSockets()
			return nil, configErrorf("%w", err)
		}
		if w.mcast, err = openMulticast(g, ifaces[v6]); err != nil {
			t.closeSockets()
			return nil, err
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

// sock returns the wire socket of a family, or nil.
func (t *udpTransport) sock(v6 bool) *wireSocket {
	for _, w := range t.socks {
		if w.v6() == v6 {
			return w
		}
	}
	return nil
}

// closeSockets closes every socket; the first error is returned.
func (t *udpTransport) closeSockets() error {
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

func (t *udpTransport) Start(recv func([]byte, *net.UDPAddr, bool)) {
	for _, w := range t.socks {
		t.wg.Add(1)
		go func() { defer t.wg.Done(); t.readLoop(w.uc, false, recv) }()
		if w.mcast != nil {
			t.wg.Add(1)
			go func() { defer t.wg.Done(); t.readLoop(w.mcast.conn, true, recv) }()
		}
	}
}

// readLoop reads datagrams from conn until it is closed. One goroutine per
// socket.
func (t *udpTransport) readLoop(conn net.PacketConn, multicast bool, recv func([]byte, *net.UDPAddr, bool)) {
	uc, ok := conn.(*net.UDPConn)
	if !ok {
		if t.onError != nil {
			t.onError(fmt.Errorf("group: transport socket is a %T, not a UDP socket", conn), multicast)
		}
		return
	}
	r := udp.NewReader(uc)
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

func (t *udpTransport) Addr() *net.UDPAddr { return t.addr }

// Send sends pkt to addr from the wire socket of addr's family.
func (t *udpTransport) Send(pkt []byte, addr *net.UDPAddr) error {
	v6 := addr.IP.To4() == nil
	w := t.sock(v6)
	if w == nil {
		return fmt.Errorf("group: no %s socket for %s (bound to %s only)", familyName(v6), addr, familyName(!v6))
	}
	_, err := w.uc.WriteToUDP(pkt, addr)
	return err
}

// Multicast sends pkt to the group of every family with one, and returns
// how many copies left in all and the first error.
func (t *udpTransport) Multicast(pkt []byte) (int, error) {
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
		return 0, errors.New("group: no multicast socket")
	}
	return sent, first
}

// MulticastGroup returns the groups joined, comma-separated (IPv4 first).
func (t *udpTransport) MulticastGroup() string { return t.groups }

func (t *udpTransport) Close() error {
	var err error
	t.once.Do(func() {
		close(t.closed)
		err = t.closeSockets()
		t.wg.Wait()
	})
	return err
}
