package group

import (
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/groupd/groupd/group/udp"
)

// Address families (issue 27).
//
// --bind says which families a node speaks (udp.Families): an IPv4
// address (or 0.0.0.0, every IPv4 address) binds IPv4 only; an IPv6
// address binds IPv6 only; "::" binds every address of both families
// (dual stack). A dual-stack node has one wire socket per family on the
// same port (package group/udp: udp4 on 0.0.0.0, udp6 on [::] with
// IPV6_V6ONLY), so that each family's multicast is
// joined and sent the usual way for it, and memberlist one socket for
// both (Go's "udp" and "tcp" on [::] take IPv4 too, as mapped addresses).
// It advertises one address (memberlist carries one): --advertise, else
// an IPv4 address if the host has one, else an IPv6 one; its peers reach
// it at whichever family they speak, since the address book learns every
// peer's address from its packets.
//
// --multicast lists at most one group per family. The default,
// DefaultMulticast and DefaultMulticast6, names both, and each node joins
// the groups of the families it binds: an IPv4 node 239.192.79.50, an
// IPv6-only node ff15::7952, a dual-stack node both (its beacons go out on
// both, so IPv4-only and IPv6-only nodes of the LAN all hear it).
//
// IPv6 addresses are printed in brackets with their port ("[fd00::1]:7950",
// net.JoinHostPort). Link-local unicast addresses (fe80::/10) are refused
// for --bind and --advertise: memberlist carries a node's address without
// its zone, so a peer could not reach it; a link-local *source* of a wire
// packet is fine (its zone comes with it and is kept).

// DefaultMulticast6 is the beacons' IPv6 multicast group and port: ff15::7952
// is a transient (T flag: not assigned by IANA) group of site-local scope
// (5), the IPv6 counterpart of the IPv4 group's organisation-local scope
// (RFC 2365, RFC 4291 §2.7). Beacons are sent with hop limit 1, as the IPv4
// ones with TTL 1, so they stay on the link either way; a site-local
// group, unlike a link-local one (ff02::/16, ff12::/16), needs no zone to
// bind to, so one socket receives it on every interface, and a node bound
// to "::" sends beacons from its routable address (RFC 6724 picks a
// link-local source for a link-local destination), the address the lab's
// and the operators' filters name. A link-local group can be set with
// --multicast; it then needs exactly one interface (--interface).
const DefaultMulticast6 = "[ff15::7952]:7952"

// covers reports whether a socket bound to bind reaches ip: ip's family
// is one bind covers.
func covers(bind, ip net.IP) bool {
	v4, v6 := udp.Families(bind)
	if ip.To4() != nil {
		return v4
	}
	return v6
}

// familyName names a family in messages.
func familyName(v6 bool) string {
	if v6 {
		return "IPv6"
	}
	return "IPv4"
}

// parseIP parses an IPv4 or IPv6 literal for flag; unspecified (0.0.0.0,
// ::) is accepted only if allowAny. An IPv4-mapped IPv6 literal is IPv4.
func parseIP(field, s string, allowAny bool) (net.IP, error) {
	ip := net.ParseIP(s)
	if ip == nil {
		if strings.Contains(s, "%") {
			return nil, configErrorf("group: %s %q: a zone (%%) is not accepted: give a routable address (memberlist carries no zone)", field, s)
		}
		return nil, configErrorf("group: %s %q is not an IP address", field, s)
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	if ip.IsUnspecified() && !allowAny {
		return nil, configErrorf("group: %s %q must be a specific address, not %s", field, s, ip)
	}
	if ip.IsLinkLocalUnicast() {
		return nil, configErrorf("group: %s %q is link-local: give a routable (global or ULA, fd00::/8) address, or :: for Config.Bind (memberlist carries no zone)", field, s)
	}
	return ip, nil
}

// parseMulticast parses the --multicast value: "addr:port", IPv6 in
// brackets, at most one group per family, comma-separated.
func parseMulticast(s string) ([]*net.UDPAddr, error) {
	var out []*net.UDPAddr
	for _, g := range strings.Split(s, ",") {
		g = strings.TrimSpace(g)
		host, port, err := net.SplitHostPort(g)
		if err != nil {
			return nil, configErrorf("group: Config.Multicast %q: want addr:port ([addr]:port for IPv6), comma-separated, or off: %v", s, err)
		}
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsMulticast() {
			return nil, configErrorf("group: Config.Multicast %q: %q is not a multicast address (224.0.0.0/4 or ff00::/8)", s, host)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return nil, configErrorf("group: Config.Multicast %q: port %q out of range (1-65535)", s, port)
		}
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		a := &net.UDPAddr{IP: ip, Port: p}
		if slices.ContainsFunc(out, func(o *net.UDPAddr) bool { return (o.IP.To4() == nil) == (ip.To4() == nil) }) {
			return nil, configErrorf("group: Config.Multicast %q: two %s groups; give at most one per family", s, familyName(ip.To4() == nil))
		}
		out = append(out, a)
	}
	return out, nil
}

// multicastGroups returns the groups of c.Multicast that the families of
// bind use (none without multicast), or an error when multicast is on but
// no group is of a family bind covers.
func (c Config) multicastGroups(bind net.IP) ([]*net.UDPAddr, error) {
	if !c.MulticastEnabled() {
		return nil, nil
	}
	all, err := parseMulticast(c.Multicast)
	if err != nil {
		return nil, err
	}
	var out []*net.UDPAddr
	for _, g := range all {
		if covers(bind, g.IP) {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		_, v6 := udp.Families(bind)
		want := DefaultMulticast
		if v6 {
			want = DefaultMulticast6
		}
		return nil, configErrorf("group: Config.Multicast %s has no %s group, and Config.Bind %s is %s: add one (e.g. %s) or set Config.Multicast off",
			c.Multicast, familyName(v6), c.Bind, familyName(v6), want)
	}
	return out, nil
}

// routable returns the addresses of ips that memberlist can advertise
// (not link-local).
func routable(ips []net.IP) []net.IP {
	return slices.DeleteFunc(slices.Clone(ips), func(ip net.IP) bool { return ip.IsLinkLocalUnicast() })
}
