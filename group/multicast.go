package group

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/groupd/groupd/group/udp"
)

// Multicast beacons, one group per address family in use (family.go).
//
// Receiving: a socket bound to the group address and port (not the
// wildcard, so that it only gets datagrams sent to the group) with
// SO_REUSEADDR and SO_REUSEPORT, so that several groupd on one host all
// listen on the same port (the kernel delivers a copy of each multicast
// datagram to every such socket), and IP_MULTICAST_ALL (IPv6:
// IPV6_MULTICAST_ALL) off, so that it only gets the groups it joined
// itself, not those other programs on the host joined. It joins the group
// on each selected interface (IPv6: by interface index, the group's scope
// zone). A link-local IPv6 group (ff02::/16, ff12::/16) is bound with the
// interface as its zone where the kernel asks for one, which is why it
// takes exactly one interface.
//
// Sending: beacons leave from the family's unicast wire socket, so their
// UDP source is the sender's wire address and receivers learn where to
// reply. That socket gets a multicast TTL (IPv6: hop limit) of 1 (beacons
// stay on the link), multicast loopback on (other nodes on this host hear
// them) and the first selected interface as its multicast interface; with
// several interfaces, each beacon is sent once per interface, choosing it
// per datagram with IP_PKTINFO (IPV6_PKTINFO).
//
// Interface selection, per family: Config.Interface if given
// (selectInterfaces); else udp.Interfaces: the interface holding
// Config.Bind, or for a wildcard every LAN interface, the default route's
// first, or loopback alone. Memberlist advertises one address only
// (chooseAdvertise: the default route's), so on a host with several LANs
// set Config.Interface or Config.Advertise to the LAN the group lives on.

// multicastTTL keeps beacons on the local link (contract: TTL 1; IPv6: hop
// limit 1).
const multicastTTL = 1

// mcastSocket is one family's multicast receiving socket.
type mcastSocket struct {
	group  *net.UDPAddr
	ifaces []net.Interface
	conn   net.PacketConn
}

// reusePort sets SO_REUSEADDR and SO_REUSEPORT, so that several groupd on
// one host can bind the multicast port, and clears IP_MULTICAST_ALL or
// IPV6_MULTICAST_ALL.
func reusePort(network, _ string, c syscall.RawConn) error {
	opts := []struct{ level, opt, v int }{
		{unix.SOL_SOCKET, unix.SO_REUSEADDR, 1},
		{unix.SOL_SOCKET, unix.SO_REUSEPORT, 1},
	}
	if level, opt, ok := multicastAll(network); ok {
		opts = append(opts, struct{ level, opt, v int }{level, opt, 0})
	}
	var serr error
	err := c.Control(func(fd uintptr) {
		for _, o := range opts {
			if serr = unix.SetsockoptInt(int(fd), o.level, o.opt, o.v); serr != nil {
				if network == "udp6" && o.level == unix.IPPROTO_IPV6 && errors.Is(serr, unix.ENOPROTOOPT) {
					// Linux < 4.20: the socket also gets groups other
					// programs joined on its port, which decode as
					// garbage and are dropped and counted.
					serr = nil
					continue
				}
				serr = fmt.Errorf("setsockopt %d/%d: %w", o.level, o.opt, serr)
				return
			}
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// linkLocalGroup reports whether an IPv6 group has a scope narrower than
// site (interface- or link-local), whose address means one interface.
func linkLocalGroup(ip net.IP) bool {
	return ip.To4() == nil && (ip.IsInterfaceLocalMulticast() || ip.IsLinkLocalMulticast())
}

// openMulticast opens the receiving socket of group's family and joins
// group on ifaces.
func openMulticast(group *net.UDPAddr, ifaces []net.Interface) (*mcastSocket, error) {
	network := "udp4"
	v6 := group.IP.To4() == nil
	if v6 {
		network = "udp6"
		if linkLocalGroup(group.IP) && len(ifaces) != 1 {
			return nil, configErrorf("group: Config.Multicast %s is a link-local group: it needs exactly one interface (Config.Interface), not %d", group, len(ifaces))
		}
	}
	lc := net.ListenConfig{Control: reusePort}
	conn, err := lc.ListenPacket(context.Background(), network, group.String())
	if err != nil && v6 && linkLocalGroup(group.IP) {
		// Its zone is the interface.
		zoned := &net.UDPAddr{IP: group.IP, Port: group.Port, Zone: ifaces[0].Name}
		conn, err = lc.ListenPacket(context.Background(), network, zoned.String())
	}
	if err != nil {
		return nil, configErrorf("group: Config.Multicast %s: %w", group, err)
	}
	join := func(ifi *net.Interface) error {
		return ipv4.NewPacketConn(conn).JoinGroup(ifi, &net.UDPAddr{IP: group.IP})
	}
	if v6 {
		join = func(ifi *net.Interface) error {
			return ipv6.NewPacketConn(conn).JoinGroup(ifi, &net.UDPAddr{IP: group.IP})
		}
	}
	var joined []string
	var errs []error
	for i := range ifaces {
		if err := join(&ifaces[i]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ifaces[i].Name, err))
			continue
		}
		joined = append(joined, ifaces[i].Name)
	}
	if len(joined) == 0 {
		conn.Close()
		return nil, configErrorf("group: Config.Multicast %s: cannot join the group on any interface: %w", group, errors.Join(errs...))
	}
	return &mcastSocket{group: group, ifaces: ifaces, conn: conn}, nil
}

// wireSocket is one family's unicast wire socket, which also sends that
// family's beacons, with its multicast receiver (nil without multicast).
type wireSocket struct {
	uc    *net.UDPConn
	p4    *ipv4.PacketConn // IPv4 socket
	p6    *ipv6.PacketConn // IPv6 socket
	mcast *mcastSocket
}

// newWireSocket wraps uc, a socket of one family.
func newWireSocket(uc *net.UDPConn) *wireSocket {
	w := &wireSocket{uc: uc}
	if la, ok := uc.LocalAddr().(*net.UDPAddr); ok && la.IP.To4() == nil {
		w.p6 = ipv6.NewPacketConn(uc)
	} else {
		w.p4 = ipv4.NewPacketConn(uc)
	}
	return w
}

// v6 reports whether w is an IPv6 socket.
func (w *wireSocket) v6() bool { return w.p6 != nil }

// setupMulticastSender sets the multicast options of a wire socket, which
// sends the beacons.
func setupMulticastSender(w *wireSocket, ifaces []net.Interface) error {
	type opts interface {
		SetMulticastLoopback(bool) error
		SetMulticastInterface(*net.Interface) error
	}
	var o opts = w.p4
	ttl := func() error { return w.p4.SetMulticastTTL(multicastTTL) }
	if w.v6() {
		o = w.p6
		ttl = func() error { return w.p6.SetMulticastHopLimit(multicastTTL) }
	}
	if err := ttl(); err != nil {
		return fmt.Errorf("group: set multicast TTL: %w", err)
	}
	if err := o.SetMulticastLoopback(true); err != nil {
		return fmt.Errorf("group: enable multicast loopback: %w", err)
	}
	if len(ifaces) > 0 {
		if err := o.SetMulticastInterface(&ifaces[0]); err != nil {
			return fmt.Errorf("group: set multicast interface %s: %w", ifaces[0].Name, err)
		}
	}
	return nil
}

// send sends pkt to the group through w, once per interface. It returns
// the first error and how many copies left.
func (m *mcastSocket) send(w *wireSocket, pkt []byte) (int, error) {
	write := func(ifi *net.Interface) error {
		if w.v6() {
			var cm *ipv6.ControlMessage
			if ifi != nil {
				cm = &ipv6.ControlMessage{IfIndex: ifi.Index}
			}
			_, err := w.p6.WriteTo(pkt, cm, m.group)
			return err
		}
		var cm *ipv4.ControlMessage
		if ifi != nil {
			cm = &ipv4.ControlMessage{IfIndex: ifi.Index}
		}
		_, err := w.p4.WriteTo(pkt, cm, m.group)
		return err
	}
	if len(m.ifaces) <= 1 {
		if err := write(nil); err != nil {
			return 0, err
		}
		return 1, nil
	}
	var first error
	sent := 0
	for i := range m.ifaces {
		if err := write(&m.ifaces[i]); err != nil {
			if first == nil {
				first = fmt.Errorf("%s: %w", m.ifaces[i].Name, err)
			}
			continue
		}
		sent++
	}
	return sent, first
}

func (m *mcastSocket) close() error { return m.conn.Close() }

// interfaceNames lists the names of ifaces, for logs.
func interfaceNames(ifaces []net.Interface) []string {
	names := make([]string, len(ifaces))
	for i, ifi := range ifaces {
		names[i] = ifi.Name
	}
	return names
}

// portOf returns the port of a bound UDP socket.
func portOf(uc *net.UDPConn) int {
	if a, ok := uc.LocalAddr().(*net.UDPAddr); ok {
		return a.Port
	}
	return 0
}

// bindWire binds the wire sockets of the families bind covers on port: one
// socket for a specific address or one family's wildcard, two on one port
// for "::" (udp4 on 0.0.0.0, then udp6 on [::] with IPV6_V6ONLY, which Go
// sets for "udp6"). With port 0, the IPv6 half may find the port the IPv4
// half got taken: it retries with a new port.
func bindWire(bind net.IP, port int) ([]*net.UDPConn, error) {
	v4, v6 := udp.Families(bind)
	if !v4 || !v6 {
		network := "udp4"
		if v6 {
			network = "udp6"
		}
		uc, err := net.ListenUDP(network, &net.UDPAddr{IP: bind, Port: port})
		if err != nil {
			return nil, configErrorf("group: Config.Port %d: %w", port, err)
		}
		return []*net.UDPConn{uc}, nil
	}
	for attempt := 0; ; attempt++ {
		u4, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero, Port: port})
		if err != nil {
			return nil, configErrorf("group: Config.Port %d (IPv4): %w", port, err)
		}
		p := portOf(u4)
		u6, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6unspecified, Port: p})
		if err == nil {
			return []*net.UDPConn{u4, u6}, nil
		}
		u4.Close()
		if port != 0 || attempt+1 == gossipBindAttempts {
			return nil, configErrorf("group: Config.Port %s (IPv6): %w", strconv.Itoa(p), err)
		}
	}
}
