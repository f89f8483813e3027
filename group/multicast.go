package group

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// Multicast beacons.
//
// Receiving: a socket bound to the group address and port (not 0.0.0.0, so
// that it only gets datagrams sent to the group) with SO_REUSEADDR and
// SO_REUSEPORT, so that several groupd on one host all listen on the same
// port (the kernel delivers a copy of each multicast datagram to every
// such socket), and IP_MULTICAST_ALL off, so that it only gets the groups
// it joined itself, not those other programs on the host joined. It joins
// the group on each selected interface.
//
// Sending: beacons leave from the unicast wire socket, so their UDP source
// is the sender's wire address and receivers learn where to reply. That
// socket gets IP_MULTICAST_TTL 1 (beacons stay on the link),
// IP_MULTICAST_LOOP on (other nodes on this host hear them) and
// IP_MULTICAST_IF the first selected interface; with several interfaces,
// each beacon is sent once per interface, choosing it per datagram with
// IP_PKTINFO.
//
// Interface selection (selectInterfaces): --interface if given; else the
// interface holding --bind; else, when bind is 0.0.0.0, every interface
// that is up, multicast-capable, not loopback and has an IPv4 address, so
// that a host on several LANs is found on all of them, the default
// route's interface first; if there is none, the loopback interface (a
// single host). Memberlist advertises one address only (chooseAdvertise:
// the default route's), so on a host with several LANs set --interface or
// --advertise to the LAN the group lives on. Linux delivers multicast over
// loopback even when lo lacks the MULTICAST flag, so loopback is accepted
// when named or bound explicitly.

// multicastTTL keeps beacons on the local link (contract: TTL 1).
const multicastTTL = 1

// mcastSocket is the multicast receiving socket.
type mcastSocket struct {
	group  *net.UDPAddr
	ifaces []net.Interface
	conn   net.PacketConn
	p      *ipv4.PacketConn
}

// selectInterfaces picks the interfaces to join the group on and send
// beacons through (see the comment above).
func selectInterfaces(name string, bind net.IP) ([]net.Interface, error) {
	if name != "" {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return nil, configErrorf("group: --interface %q: %v", name, err)
		}
		if ifi.Flags&net.FlagUp == 0 {
			return nil, configErrorf("group: --interface %q is down", name)
		}
		if ifi.Flags&(net.FlagMulticast|net.FlagLoopback) == 0 {
			return nil, configErrorf("group: --interface %q does not support multicast", name)
		}
		return []net.Interface{*ifi}, nil
	}
	all, err := net.Interfaces()
	if err != nil {
		return nil, configErrorf("group: list network interfaces: %v", err)
	}
	if bind != nil && !bind.IsUnspecified() {
		for _, ifi := range all {
			for _, ip := range ifaceIPv4s(ifi) {
				if ip.Equal(bind) {
					return []net.Interface{ifi}, nil
				}
			}
		}
		return nil, configErrorf("group: --bind %s is not the address of any interface", bind)
	}
	var picked []net.Interface
	var loopback *net.Interface
	for i, ifi := range all {
		if ifi.Flags&net.FlagUp == 0 || len(ifaceIPv4s(ifi)) == 0 {
			continue
		}
		if ifi.Flags&net.FlagLoopback != 0 {
			loopback = &all[i]
			continue
		}
		if ifi.Flags&net.FlagMulticast != 0 {
			picked = append(picked, ifi)
		}
	}
	if len(picked) == 0 && loopback != nil {
		picked = append(picked, *loopback)
	}
	// The default route's interface first: it becomes IP_MULTICAST_IF,
	// and it is the one the advertised address belongs to.
	if ip := defaultRouteIP(); ip != nil {
		for i, ifi := range picked {
			if slices.ContainsFunc(ifaceIPv4s(ifi), ip.Equal) {
				picked[0], picked[i] = picked[i], picked[0]
				break
			}
		}
	}
	if len(picked) == 0 {
		return nil, configErrorf("group: no interface is up with an IPv4 address for multicast; set --interface or --multicast off")
	}
	return picked, nil
}

// ifaceIPv4s returns the IPv4 addresses of ifi.
func ifaceIPv4s(ifi net.Interface) []net.IP {
	addrs, err := ifi.Addrs()
	if err != nil {
		return nil
	}
	var ips []net.IP
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if ip4 := ip.To4(); ip4 != nil {
			ips = append(ips, ip4)
		}
	}
	return ips
}

// defaultRouteIP returns the source address the kernel would use to
// reach a host through the default route, or nil if there is no default
// route. Connecting a UDP socket only looks the route up: nothing is sent.
func defaultRouteIP() net.IP {
	c, err := net.Dial("udp4", "198.51.100.1:9") // TEST-NET-2: never a local address
	if err != nil {
		return nil
	}
	defer c.Close()
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && !a.IP.IsUnspecified() && !a.IP.IsLoopback() {
		return a.IP.To4()
	}
	return nil
}

// chooseAdvertise picks the address other nodes reach this one at: the
// configured Advertise; else the first IPv4 of --interface; else a
// specific --bind; else the address of the default route's interface (on
// a host with several LANs, set --advertise or --interface to the LAN the
// group lives on); else the first IPv4 of an up, non-loopback interface
// (multicast-capable ones first); else 127.0.0.1.
func chooseAdvertise(cfg Config, bind net.IP) (net.IP, error) {
	if cfg.Advertise != "" {
		return parseIPv4("--advertise", cfg.Advertise, false)
	}
	if cfg.Interface != "" {
		ifi, err := net.InterfaceByName(cfg.Interface)
		if err != nil {
			return nil, configErrorf("group: --interface %q: %v", cfg.Interface, err)
		}
		if ips := ifaceIPv4s(*ifi); len(ips) > 0 && (bind.IsUnspecified() || ips[0].Equal(bind)) {
			return ips[0], nil
		}
	}
	if !bind.IsUnspecified() {
		return bind, nil
	}
	if ip := defaultRouteIP(); ip != nil {
		return ip, nil
	}
	all, err := net.Interfaces()
	if err != nil {
		return nil, configErrorf("group: list network interfaces: %v", err)
	}
	var fallback net.IP
	for _, ifi := range all {
		if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagLoopback != 0 {
			continue
		}
		ips := ifaceIPv4s(ifi)
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
	return net.IPv4(127, 0, 0, 1).To4(), nil
}

// reusePort sets SO_REUSEADDR and SO_REUSEPORT, so that several groupd on
// one host can bind the multicast port, and clears IP_MULTICAST_ALL.
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		for _, o := range []struct{ level, opt, v int }{
			{unix.SOL_SOCKET, unix.SO_REUSEADDR, 1},
			{unix.SOL_SOCKET, unix.SO_REUSEPORT, 1},
			{unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, 0},
		} {
			if serr = unix.SetsockoptInt(int(fd), o.level, o.opt, o.v); serr != nil {
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

// openMulticast opens the receiving socket and joins group on ifaces.
func openMulticast(group *net.UDPAddr, ifaces []net.Interface) (*mcastSocket, error) {
	lc := net.ListenConfig{Control: reusePort}
	conn, err := lc.ListenPacket(context.Background(), "udp4", group.String())
	if err != nil {
		return nil, configErrorf("group: --multicast %s: %w", group, err)
	}
	p := ipv4.NewPacketConn(conn)
	var joined []string
	var errs []error
	for i := range ifaces {
		if err := p.JoinGroup(&ifaces[i], &net.UDPAddr{IP: group.IP}); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ifaces[i].Name, err))
			continue
		}
		joined = append(joined, ifaces[i].Name)
	}
	if len(joined) == 0 {
		conn.Close()
		return nil, configErrorf("group: --multicast %s: cannot join the group on any interface: %w", group, errors.Join(errs...))
	}
	return &mcastSocket{group: group, ifaces: ifaces, conn: conn, p: p}, nil
}

// setupMulticastSender sets the multicast options of the wire socket,
// which sends the beacons.
func setupMulticastSender(p *ipv4.PacketConn, ifaces []net.Interface) error {
	if err := p.SetMulticastTTL(multicastTTL); err != nil {
		return fmt.Errorf("group: set multicast TTL: %w", err)
	}
	if err := p.SetMulticastLoopback(true); err != nil {
		return fmt.Errorf("group: enable multicast loopback: %w", err)
	}
	if len(ifaces) > 0 {
		if err := p.SetMulticastInterface(&ifaces[0]); err != nil {
			return fmt.Errorf("group: set multicast interface %s: %w", ifaces[0].Name, err)
		}
	}
	return nil
}

// sendMulticast sends pkt to the group through p, once per interface. It
// returns the first error and how many copies left.
func (m *mcastSocket) send(p *ipv4.PacketConn, pkt []byte) (int, error) {
	if len(m.ifaces) <= 1 {
		if _, err := p.WriteTo(pkt, nil, m.group); err != nil {
			return 0, err
		}
		return 1, nil
	}
	var first error
	sent := 0
	for _, ifi := range m.ifaces {
		if _, err := p.WriteTo(pkt, &ipv4.ControlMessage{IfIndex: ifi.Index}, m.group); err != nil {
			if first == nil {
				first = fmt.Errorf("%s: %w", ifi.Name, err)
			}
			continue
		}
		sent++
	}
	return sent, first
}

func (m *mcastSocket) close() error { return m.conn.Close() }
