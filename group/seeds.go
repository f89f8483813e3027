package group

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// --join seeds (issue 27).
//
// A seed is one of
//
//	10.0.0.2:7951, [fd00::2]:7951   an address and memberlist port
//	10.0.0.2, fd00::2               an address; this node's gossip port
//	groupd.lan:7951, groupd.lan     a DNS name: every A and AAAA record
//	srv:_groupd._udp.example.lan    an SRV name: every target and port
//
// Names are resolved by the standard resolver (net.DefaultResolver: the
// host's /etc/resolv.conf and nsswitch), by this node rather than by
// memberlist, so that a name that lists this node among others counts
// for the others: the node whose name listed three nodes, itself
// included, took the seed for joined and stayed alone. The reconnect loop
// (gossip.go) resolves every seed again on every attempt to join it and,
// while it is joined, every ResolveInterval, so that nodes added to the
// records are found and removed ones are no longer tried. Addresses of a
// family this node does not bind are skipped.

// seedSpec is one parsed --join seed.
type seedSpec struct {
	srv  bool   // host is an SRV name
	host string // an IP literal or a DNS name
	port int    // 0: this node's gossip port (never for SRV)
}

// srvPrefix marks an SRV seed.
const srvPrefix = "srv:"

// maxSeedName bounds a seed's DNS name (RFC 1035: 253 characters).
const maxSeedName = 253

// parseSeed reads one --join seed (see above).
func parseSeed(s string) (seedSpec, error) {
	if name, ok := strings.CutPrefix(s, srvPrefix); ok {
		if err := checkSeedName(name); err != nil {
			return seedSpec{}, configErrorf("group: Config.Join %q: %v", s, err)
		}
		return seedSpec{srv: true, host: name}, nil
	}
	if net.ParseIP(s) != nil { // a bare IPv6 literal has colons and no port
		return seedSpec{host: s}, nil
	}
	host, port := s, 0
	if strings.Contains(s, ":") {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return seedSpec{}, configErrorf("group: Config.Join %q: want host:port ([addr]:port for IPv6), host, or srv:NAME: %v", s, err)
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return seedSpec{}, configErrorf("group: Config.Join %q: port %q out of range (1-65535)", s, p)
		}
		host, port = h, n
	}
	if host == "" {
		return seedSpec{}, configErrorf("group: Config.Join %q: empty host", s)
	}
	if net.ParseIP(host) == nil {
		if err := checkSeedName(host); err != nil {
			return seedSpec{}, configErrorf("group: Config.Join %q: %v", s, err)
		}
	}
	return seedSpec{host: host, port: port}, nil
}

// checkSeedName checks a DNS name loosely: the resolver says the rest.
func checkSeedName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case len(name) > maxSeedName:
		return fmt.Errorf("name of %d characters, over %d", len(name), maxSeedName)
	case strings.ContainsAny(name, " \t\r\n/%[]:,"):
		return fmt.Errorf("%q is not a DNS name", name)
	}
	return nil
}

// String writes the seed as parseSeed reads it.
func (s seedSpec) String() string {
	switch {
	case s.srv:
		return srvPrefix + s.host
	case s.port == 0:
		return s.host
	}
	return net.JoinHostPort(s.host, strconv.Itoa(s.port))
}

// seedResolver is what resolves seeds: net.DefaultResolver, or a fake in
// tests.
type seedResolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
}

// resolveTimeout bounds one seed's resolution (an SRV name and its
// targets together).
const resolveTimeout = 2 * time.Second

// resolveSeed returns the gossip addresses (host:port, IPv6 in brackets)
// that s names now, sorted, of the families usable accepts. ownPort is
// this node's gossip port, for seeds without one.
func resolveSeed(ctx context.Context, r seedResolver, s seedSpec, ownPort int, usable func(net.IP) bool) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	type target struct {
		host string
		port int
	}
	targets := []target{{s.host, cmp.Or(s.port, ownPort)}}
	if s.srv {
		_, recs, err := r.LookupSRV(ctx, "", "", s.host)
		if err != nil {
			return nil, fmt.Errorf("SRV %s: %w", s.host, err)
		}
		targets = targets[:0]
		for _, rec := range recs {
			if rec.Target == "." || rec.Port == 0 {
				continue // "no such service here" (RFC 2782)
			}
			targets = append(targets, target{strings.TrimSuffix(rec.Target, "."), int(rec.Port)})
		}
	}
	var out []string
	var errs []error
	for _, t := range targets {
		var ips []net.IP
		if ip := net.ParseIP(t.host); ip != nil {
			ips = []net.IP{ip}
		} else {
			addrs, err := r.LookupIPAddr(ctx, t.host)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, a := range addrs {
				if a.Zone == "" { // memberlist carries no zone
					ips = append(ips, a.IP)
				}
			}
		}
		for _, ip := range ips {
			if v4 := ip.To4(); v4 != nil {
				ip = v4
			}
			if usable(ip) {
				out = append(out, net.JoinHostPort(ip.String(), strconv.Itoa(t.port)))
			}
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// checkSelfSeeds refuses --join seeds that are all this node's own gossip
// address: on one host, `--join 127.0.0.1` (no port: memberlist uses this
// node's gossip port) joined the node to itself, silently, and it found
// nobody. A list that names this node among others (the same list on every
// node) is fine: the reconnect loop skips this node's own address. Seeds
// given by name are not resolved here (a name may resolve later, and to
// other nodes too); neither are seeds of a GossipTransport that is not
// ours. It runs once the gossip port is bound.
func (a *Agent) checkSelfSeeds() error {
	if a.gnet == nil || len(a.seeds) == 0 {
		return nil
	}
	own := a.gnet.Port()
	var first error
	for _, s := range a.seeds {
		if s.srv || s.port != 0 && s.port != own {
			return nil
		}
		ip := net.ParseIP(s.host)
		if s.host == "localhost" {
			ip = net.IPv4(127, 0, 0, 1)
		}
		if ip == nil || !a.ownIP(ip) {
			return nil // a seed that may be another node
		}
		if first == nil {
			how := ""
			if s.port == 0 {
				how = "; a seed without a port uses this node's gossip port"
			}
			first = configErrorf("group: Config.Join %q is this node's own gossip address (%s%s): give another node's address",
				s.String(), net.JoinHostPort(ip.String(), strconv.Itoa(own)), how)
		}
	}
	return first
}

// protocolPortSeed returns, for a seed that names a wire protocol port
// rather than a gossip port, the address it most likely meant: the same
// host at that port + 1, as a node's gossip port is by default. Else "". A
// join there fails only with "connection refused": nothing listens for
// memberlist's TCP there. A protocol port is this node's own, DefaultPort,
// or the wire address of a node heard of (addrs are what the seed resolved
// to).
func (a *Agent) protocolPortSeed(s seedSpec, addrs []string) string {
	if s.srv || s.port == 0 || s.port == 65535 {
		return ""
	}
	gossip := 0
	if _, p, err := net.SplitHostPort(a.gossipAddr); err == nil {
		gossip, _ = strconv.Atoi(p)
	}
	if s.port == gossip {
		return ""
	}
	known := s.port == DefaultPort || a.tr != nil && a.tr.Addr() != nil && s.port == a.tr.Addr().Port
	if ip := net.ParseIP(s.host); ip != nil {
		addrs = append(addrs, s.String())
	}
	for _, ad := range addrs {
		if known {
			break
		}
		if u, err := net.ResolveUDPAddr("udp", ad); err == nil && u.IP != nil {
			known = a.peers.isWireAddr(u)
		}
	}
	if !known {
		return ""
	}
	return net.JoinHostPort(s.host, strconv.Itoa(s.port+1))
}

// warnProtocolPortSeeds warns, once at start, about every seed that names
// a protocol port (protocolPortSeed).
func (a *Agent) warnProtocolPortSeeds() {
	for _, s := range a.seeds {
		if try := a.protocolPortSeed(s, nil); try != "" {
			a.log.Warn().Str("seed", s.String()).Str("try", try).
				Msg("seed " + s.String() + " looks like a protocol port: seeds name a node's gossip port (its protocol port + 1 by default), so try " + try)
		}
	}
}

// ownIP reports whether memberlist's socket, bound to Config.Bind, answers
// at ip: the bind address itself, the advertised one, and, bound to every
// address, loopback and any address of this host. (A socket bound to
// 127.0.0.1 does not answer at 127.0.0.2: several nodes on one host may
// each have a loopback address of their own.)
func (a *Agent) ownIP(ip net.IP) bool {
	bind := net.ParseIP(a.cfg.Bind)
	switch {
	case ip.Equal(bind), ip.Equal(a.advertise):
		return true
	case bind == nil:
		return false
	case ip.IsLoopback() && bind.IsUnspecified():
		return true
	case !bind.IsUnspecified():
		return false
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ad := range addrs {
		if n, ok := ad.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// ownGossipAddr reports whether a resolved seed address (ip:port) is this
// node's memberlist: its advertised address, or an address of its own on
// its gossip port.
func (a *Agent) ownGossipAddr(addr string) bool {
	if addr == a.gossipAddr {
		return true
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || a.gnet == nil || port != strconv.Itoa(a.gnet.Port()) {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && a.ownIP(ip)
}

// usableIP reports whether this node's memberlist can reach ip: the
// families its Bind covers.
func (a *Agent) usableIP(ip net.IP) bool {
	bind := net.ParseIP(a.cfg.Bind)
	if bind == nil {
		return true // a GossipTransport of the embedder's: it knows
	}
	return covers(bind, ip)
}

// oneLine turns memberlist's Join error, a go-multierror ("1 error
// occurred:\n\t* failed to resolve foo: ..."), into one line: the
// messages of the errors it wraps, joined by "; ".
func oneLine(err error) error {
	if err == nil {
		return nil
	}
	var m interface{ WrappedErrors() []error }
	if errors.As(err, &m) {
		var parts []string
		for _, e := range m.WrappedErrors() {
			if e != nil {
				parts = append(parts, strings.Join(strings.Fields(e.Error()), " "))
			}
		}
		if len(parts) > 0 {
			return errors.New(strings.Join(parts, "; "))
		}
	}
	return errors.New(strings.Join(strings.Fields(err.Error()), " "))
}
