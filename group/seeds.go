package group

import (
	"errors"
	"net"
	"strconv"
	"strings"
)

// checkSelfSeeds refuses --join seeds that are all this node's own gossip
// address: on one host, `--join 127.0.0.1` (no port: memberlist uses this
// node's gossip port) joined the node to itself, silently, and it found
// nobody. A list that names this node among others (the same list on every
// node) is fine: the reconnect loop skips this node's own address. Seeds
// given by host name are not resolved here (a seed may resolve later);
// neither are seeds of a GossipTransport that is not ours. It runs once
// the gossip port is bound.
func (a *Agent) checkSelfSeeds() error {
	if a.gnet == nil || len(a.cfg.Join) == 0 {
		return nil
	}
	own := a.gnet.Port()
	var first error
	for _, seed := range a.cfg.Join {
		host, port := seed, own
		if h, p, err := net.SplitHostPort(seed); err == nil {
			host = h
			if port, err = strconv.Atoi(p); err != nil {
				return nil // Validate refused it already
			}
		}
		if port != own {
			return nil
		}
		ip := net.ParseIP(host)
		if host == "localhost" {
			ip = net.IPv4(127, 0, 0, 1)
		}
		if ip == nil || !a.ownIP(ip) {
			return nil // a seed that may be another node
		}
		if first == nil {
			how := ""
			if !strings.Contains(seed, ":") {
				how = "; a seed without a port uses this node's gossip port"
			}
			first = configErrorf("group: --join %q is this node's own gossip address (%s%s): give another node's address",
				seed, net.JoinHostPort(ip.String(), strconv.Itoa(own)), how)
		}
	}
	return first
}

// ownIP reports whether memberlist's socket, bound to Config.Bind, answers
// at ip: the bind address itself, the advertised one, loopback when bound
// to loopback or to every address, and, bound to every address, any
// address of this host.
func (a *Agent) ownIP(ip net.IP) bool {
	bind := net.ParseIP(a.cfg.Bind)
	switch {
	case ip.Equal(bind), ip.Equal(a.advertise):
		return true
	case bind == nil:
		return false
	case ip.IsLoopback() && (bind.IsUnspecified() || bind.IsLoopback()):
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
