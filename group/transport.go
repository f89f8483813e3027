package group

import (
	"errors"
	"net"

	"github.com/groupd/groupd/group/udp"
)

// Transport carries the wire protocol's datagrams (encoded, and sealed
// when there is a key): unicast to a node's address, and multicast to every
// node listening on the group. The daemon uses UDP sockets (package
// group/udp, opened from Bind, Port, Multicast and Interface when
// Config.Transport is nil); embedders can hand Config.Transport one of
// their own opening, or an in-memory one (package group/memnet), where
// tests cut partitions at the transport.
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
// configured Advertise; else the first address of Config.Interface (IPv4
// first where bind covers it; IPv6 not link-local); else a specific
// Config.Bind; else the address of the default route's interface (on a
// host with several LANs, set Config.Advertise or Config.Interface to the
// LAN the group lives on); else the first address of an up, non-loopback interface
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

// openUDPTransport opens the default transport (package udp): the wire
// sockets of bind's families on port, advertising adv, and the multicast
// groups (one per family; none without multicast) on ifaces, the
// interfaces of each family. Its errors name the Config field to fix:
// udp's Options.Port and Options.Multicast are set from the Config
// fields of those names.
func openUDPTransport(bind net.IP, port int, adv net.IP, groups []*net.UDPAddr, ifaces map[bool][]net.Interface, onError func(error, bool)) (*udp.Transport, error) {
	o := udp.Options{Bind: bind, Port: port, Advertise: adv, OnError: onError}
	for _, g := range groups {
		o.Multicast = append(o.Multicast, udp.Group{Addr: g, Interfaces: ifaces[g.IP.To4() == nil]})
	}
	t, err := udp.Open(o)
	var oe *udp.OptionError
	switch {
	case errors.As(err, &oe):
		return nil, configErrorf("group: Config.%s %s: %w", oe.Option, oe.Value, oe.Err)
	case err != nil:
		return nil, configErrorf("group: %w", err)
	}
	return t, nil
}

// interfaceNames lists the names of ifaces, for logs.
func interfaceNames(ifaces []net.Interface) []string {
	names := make([]string, len(ifaces))
	for i, ifi := range ifaces {
		names[i] = ifi.Name
	}
	return names
}
