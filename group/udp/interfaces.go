package udp

import (
	"net"
	"slices"
)

// Families says which address families a bind address covers: IPv4 for
// an IPv4 address or 0.0.0.0, IPv6 for an IPv6 address, both for "::" (or
// nil), which Open binds as two sockets on one port. It is the one
// definition of what a bind address means, which package group's checks
// of its Config share.
func Families(bind net.IP) (v4, v6 bool) {
	switch {
	case bind.To4() != nil:
		return true, false
	case bind == nil || bind.IsUnspecified():
		return true, true
	}
	return false, true
}

// Interfaces picks the interfaces of one family (v6) to join a multicast
// group on and send beacons through, when none is named: the interface
// holding bind, for a specific bind address (none if no interface has
// it); else every interface that is up, multicast-capable, not loopback
// and has an address of the family (IPv6: a link-local one is enough), so
// that a host on several LANs is found on all of them, the default
// route's interface first (it becomes the sockets' multicast interface,
// and it is the one a default advertised address belongs to); if there is
// none, the loopback interface (a single host; Linux routes IPv4 multicast
// over lo, not IPv6). It returns no interface, and no error, when there is
// none to pick; an error only when the interfaces cannot be listed.
//
// Loopback is accepted for a bind address on it: Linux delivers IPv4
// multicast over loopback even when lo lacks the MULTICAST flag.
func Interfaces(bind net.IP, v6 bool) ([]net.Interface, error) {
	all, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	if bind != nil && !bind.IsUnspecified() {
		for _, ifi := range all {
			if slices.ContainsFunc(InterfaceIPs(ifi, v6), bind.Equal) {
				return []net.Interface{ifi}, nil
			}
		}
		return nil, nil
	}
	var picked []net.Interface
	var loopback *net.Interface
	for i, ifi := range all {
		if ifi.Flags&net.FlagUp == 0 || len(InterfaceIPs(ifi, v6)) == 0 {
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
	if ip := DefaultRouteIP(v6); ip != nil {
		for i, ifi := range picked {
			if slices.ContainsFunc(InterfaceIPs(ifi, v6), ip.Equal) {
				picked[0], picked[i] = picked[i], picked[0]
				break
			}
		}
	}
	return picked, nil
}

// InterfaceIPs returns the addresses of ifi of one family (IPv6:
// link-local ones included, which is all multicast needs).
func InterfaceIPs(ifi net.Interface, v6 bool) []net.IP {
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
		switch ip4 := ip.To4(); {
		case ip4 != nil && !v6:
			ips = append(ips, ip4)
		case ip4 == nil && ip != nil && v6:
			ips = append(ips, ip)
		}
	}
	return ips
}

// DefaultRouteIP returns the source address the kernel would use to reach
// a host of family v6 through the default route, or nil if there is no
// default route (or its source is loopback or link-local). Connecting a
// UDP socket only looks the route up: nothing is sent.
func DefaultRouteIP(v6 bool) net.IP {
	network, probe := "udp4", "198.51.100.1:9" // TEST-NET-2: never a local address
	if v6 {
		network, probe = "udp6", "[2001:db8::1]:9" // the documentation prefix
	}
	c, err := net.Dial(network, probe)
	if err != nil {
		return nil
	}
	defer c.Close()
	a, ok := c.LocalAddr().(*net.UDPAddr)
	if !ok || a.IP.IsUnspecified() || a.IP.IsLoopback() || a.IP.IsLinkLocalUnicast() {
		return nil
	}
	if v4 := a.IP.To4(); v4 != nil {
		return v4
	}
	return a.IP
}
