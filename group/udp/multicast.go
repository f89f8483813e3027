package udp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// multicastTTL keeps beacons on the local link (contract: TTL 1; IPv6: hop
// limit 1).
const multicastTTL = 1

// mcastSocket is one family's multicast receiving socket.
type mcastSocket struct {
	group  *net.UDPAddr
	ifaces []net.Interface
	conn   *net.UDPConn
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
// group on ifaces. Its errors are the group's (Options.Multicast).
func openMulticast(group *net.UDPAddr, ifaces []net.Interface) (*mcastSocket, error) {
	network := "udp4"
	v6 := group.IP.To4() == nil
	if v6 {
		network = "udp6"
		if linkLocalGroup(group.IP) && len(ifaces) != 1 {
			return nil, fmt.Errorf("a link-local group needs exactly one interface (its zone), not %d", len(ifaces))
		}
	}
	lc := net.ListenConfig{Control: reusePort}
	pc, err := lc.ListenPacket(context.Background(), network, group.String())
	if err != nil && v6 && linkLocalGroup(group.IP) {
		// Its zone is the interface.
		zoned := &net.UDPAddr{IP: group.IP, Port: group.Port, Zone: ifaces[0].Name}
		pc, err = lc.ListenPacket(context.Background(), network, zoned.String())
	}
	if err != nil {
		return nil, err
	}
	conn, ok := pc.(*net.UDPConn) // always, for "udp4" and "udp6"
	if !ok {
		pc.Close()
		return nil, fmt.Errorf("%s socket is a %T", network, pc)
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
		return nil, fmt.Errorf("cannot join the group on any interface: %w", errors.Join(errs...))
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
		return fmt.Errorf("set multicast TTL: %w", err)
	}
	if err := o.SetMulticastLoopback(true); err != nil {
		return fmt.Errorf("enable multicast loopback: %w", err)
	}
	if len(ifaces) > 0 {
		if err := o.SetMulticastInterface(&ifaces[0]); err != nil {
			return fmt.Errorf("set multicast interface %s: %w", ifaces[0].Name, err)
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
