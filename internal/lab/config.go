package lab

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/groupd/groupd/invitation"
)

// MaxNodes is the largest lab: 256 namespaces on one bridge (a bridge takes
// up to 1,024 ports; the subnet must hold the addresses, so a lab of more
// than 254 nodes needs a /23 or larger).
const MaxNodes = 256

// Fault mechanisms for loss and delay (Config.Faults, Lab.Mechanism).
// Partitions and one-way cuts are always iptables rules.
const (
	FaultsAuto     = ""         // netem where the kernel has sch_netem, else iptables
	FaultsNetem    = "netem"    // tc netem; an error where the kernel has no sch_netem
	FaultsIptables = "iptables" // iptables -m statistic for loss; no delay
)

// Config describes a lab.
type Config struct {
	// Nodes is the number of namespaces, 1..MaxNodes.
	Nodes int
	// Prefix names everything the lab creates (see the package doc): a
	// lower-case letter, then up to 9 lower-case letters or digits, so
	// that "PREFIX-v256" fits the kernel's 15-character interface names.
	Prefix string
	// Subnet holds the nodes' addresses: node I has the I-th address of
	// the prefix (10.77.0.0/24: 10.77.0.1 .. 10.77.0.N). An IPv6 prefix
	// (a ULA /64, fd00:77::/64: fd00:77::1 .. fd00:77::N) makes an IPv6
	// lab, whose faults are ip6tables rules.
	Subnet netip.Prefix
	// Subnet6, if set, is a second, IPv6 address plan: node I also has
	// its I-th address (dual stack; Subnet is then the IPv4 one). The
	// daemons still get --bind with their Subnet address: give them
	// "--bind ::" in Args for both families. Faults apply to both.
	Subnet6 netip.Prefix
	// NoMulticast drops every UDP datagram to a multicast address
	// (224.0.0.0/4, ff00::/8) on INPUT in every namespace, for the whole
	// life of the lab, as a switch or a cloud network that filters
	// multicast does: discovery must go by --join seeds.
	NoMulticast bool
	// Bridge names the lab's bridge in the root namespace; empty:
	// PREFIX-br0. It must be the lab's own: Up refuses an interface of
	// that name that is not a bridge, or that has an address or ports
	// other than the lab's veths (a host's bridge), and Down removes the
	// bridge only while that holds.
	Bridge string
	// Dir is the run dir: state, history, node dirs, logs.
	Dir string
	// Bin is the groupd binary.
	Bin string
	// Profile is groupd's interval profile, "lan" (default) or "fast".
	Profile string
	// Args are more `groupd run` arguments for every node.
	Args []string
	// Env is more environment for every daemon (KEY=VALUE).
	Env []string
	// InheritEnv passes this process's environment to the daemons, GROUPD_*
	// variables included (the scripts: an operator's GROUPD_LOG_LEVEL
	// reaches them). Without it the daemons get this environment minus
	// every GROUPD_* variable, plus Env: tests running side by side must
	// not leak settings into each other's daemons.
	InheritEnv bool
	// Faults chooses the loss/delay mechanism: FaultsAuto, FaultsNetem or
	// FaultsIptables.
	Faults string
	// Detach makes the daemons outlive this process (their own session,
	// no parent-death signal), for a command-line tool that sets a lab up
	// and exits. Otherwise they are killed when this process dies, however
	// it dies.
	Detach bool
	// Recorder, with Detach, is the command that records the history in
	// the background (argv; the lab appends the run dir). Empty: the
	// history is recorded by goroutines of this process.
	Recorder []string
	// Logf, if set, receives one line per thing the lab did.
	Logf func(format string, args ...any)
}

var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,9}$`)

// check validates c and fills in defaults.
func (c *Config) check() error {
	if !prefixRE.MatchString(c.Prefix) {
		return fmt.Errorf("lab: prefix %q: want a lower-case letter, then up to 9 lower-case letters or digits", c.Prefix)
	}
	if c.Nodes < 1 || c.Nodes > MaxNodes {
		return fmt.Errorf("lab: %d nodes: want 1..%d", c.Nodes, MaxNodes)
	}
	if err := checkSubnet(c.Subnet, c.Nodes); err != nil {
		return err
	}
	if c.Subnet6.IsValid() && (!c.Subnet.Addr().Is4() || !c.Subnet6.Addr().Is6() || checkSubnet(c.Subnet6, c.Nodes) != nil) {
		return fmt.Errorf("lab: dual stack: want an IPv4 subnet and an IPv6 one (%v, %v)", c.Subnet, c.Subnet6)
	}
	if c.Bridge != "" {
		if err := checkBridgeName(c.Bridge, c.Prefix); err != nil {
			return err
		}
	}
	if c.Dir == "" || !filepath.IsAbs(c.Dir) || filepath.Clean(c.Dir) == "/" {
		return fmt.Errorf("lab: run dir %q: want an absolute path other than /", c.Dir)
	}
	if c.Profile == "" {
		c.Profile = "lan"
	}
	if c.Profile != "lan" && c.Profile != "fast" {
		return fmt.Errorf("lab: profile %q: want lan or fast", c.Profile)
	}
	switch c.Faults {
	case FaultsAuto, FaultsNetem, FaultsIptables:
	default:
		return fmt.Errorf("lab: fault mechanism %q: want netem or iptables", c.Faults)
	}
	return nil
}

// checkSubnet says whether subnet holds n node addresses.
func checkSubnet(subnet netip.Prefix, n int) error {
	if subnet.IsValid() && subnet.Addr().Is6() && !subnet.Addr().Is4In6() {
		if subnet.Bits() < 64 || subnet.Bits() > 120 {
			return fmt.Errorf("lab: subnet %v: want an IPv6 prefix between /64 and /120, e.g. fd00:77::/64", subnet)
		}
		if hosts := 1<<(128-subnet.Bits()) - 1; subnet.Bits() > 64 && n > hosts {
			return fmt.Errorf("lab: subnet %v holds %d node addresses, not %d", subnet.Masked(), hosts, n)
		}
		return nil
	}
	if !subnet.IsValid() || !subnet.Addr().Is4() || subnet.Bits() < 8 || subnet.Bits() > 30 {
		return fmt.Errorf("lab: subnet %v: want an IPv4 prefix between /8 and /30, e.g. 10.77.0.0/24, or IPv6, e.g. fd00:77::/64", subnet)
	}
	if hosts := 1<<(32-subnet.Bits()) - 2; n > hosts {
		return fmt.Errorf("lab: subnet %v holds %d node addresses, not %d: use a /23 or larger", subnet.Masked(), hosts, n)
	}
	return nil
}

// ParseSubnet reads a lab subnet: a CIDR prefix ("10.77.0.0/24",
// "10.81.0.0/23", "fd00:77::/64") or, as scripts/netem always took it, the
// first three octets of a /24 ("10.77.0").
func ParseSubnet(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("lab: subnet %q: %w", s, err)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s + ".0")
	if err != nil || !a.Is4() {
		return netip.Prefix{}, fmt.Errorf("lab: subnet %q: want the first three octets of a /24 (10.77.0) or a prefix (10.77.0.0/24, fd00:77::/64)", s)
	}
	return netip.PrefixFrom(a, 24), nil
}

// hostAddr returns the k-th address of subnet.
func hostAddr(subnet netip.Prefix, k int) netip.Addr {
	if subnet.Addr().Is6() {
		b := subnet.Masked().Addr().As16()
		v := uint32(b[12])<<24 | uint32(b[13])<<16 | uint32(b[14])<<8 | uint32(b[15])
		v += uint32(k)
		b[12], b[13], b[14], b[15] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
		return netip.AddrFrom16(b)
	}
	b := subnet.Masked().Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(k)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// addrPlan is one address family of a lab: its subnet, its iptables
// tools and its multicast range.
type addrPlan struct {
	subnet    netip.Prefix
	restore   string // iptables-restore or ip6tables-restore
	host      string // "/32" or "/128"
	multicast string
}

// plans returns the lab's address families: Subnet's, then Subnet6's.
func (c Config) plans() []addrPlan {
	var out []addrPlan
	for _, s := range []netip.Prefix{c.Subnet, c.Subnet6} {
		switch {
		case !s.IsValid():
		case s.Addr().Is4():
			out = append(out, addrPlan{s, "iptables-restore", "/32", "224.0.0.0/4"})
		default:
			out = append(out, addrPlan{s, "ip6tables-restore", "/128", "ff00::/8"})
		}
	}
	return out
}

// Names. Everything carries the prefix, so that a lab can be found (and
// removed) by name after a crash, and two labs never share a name.
func nsName(prefix string, i int) string   { return prefix + "-" + strconv.Itoa(i) }
func vethName(prefix string, i int) string { return prefix + "-v" + strconv.Itoa(i) }
func bridgeName(prefix string) string      { return prefix + "-br0" }

var bridgeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$`)

// checkBridgeName says whether name can be the bridge of a lab of prefix:
// an interface name (at most 15 characters, no '/', ':' or space) that is
// not one of the lab's namespaces or veths.
func checkBridgeName(name, prefix string) error {
	if !bridgeRE.MatchString(name) || name == "lo" {
		return fmt.Errorf("lab: bridge %q: want an interface name: 1 to 15 letters, digits, '_', '.' or '-'", name)
	}
	if rest, ok := strings.CutPrefix(name, prefix+"-"); ok && (isDigits(rest) || strings.HasPrefix(rest, "v") && isDigits(rest[1:])) {
		return fmt.Errorf("lab: bridge %q: that is the name of one of the lab's namespaces or veths", name)
	}
	return nil
}

// chain names the chain of a kind (faultKinds, "MCAST") on INPUT inside
// each namespace: GD-PART for prefix gd.
func chain(prefix, kind string) string { return strings.ToUpper(prefix) + "-" + kind }

// faultKinds are the chains of faults: partitions, one-way cuts, loss.
// MCAST, the chain of Config.NoMulticast, is the lab's network rather
// than a fault: a heal keeps it.
var faultKinds = []string{"PART", "CUT", "LOSS"}

// chains are the names of every chain of the lab of prefix.
func chains(prefix string) []string {
	var out []string
	for _, k := range append(slices.Clone(faultKinds), "MCAST") {
		out = append(out, chain(prefix, k))
	}
	return out
}

// mac is node i's eth0 address, fixed so that every namespace can hold
// permanent neighbour entries for the others.
func mac(i int) string { return fmt.Sprintf("02:4e:00:00:%02x:%02x", i>>8, i&0xff) }

// ProfileTiming is the protocol timing of groupd's profile ("lan" or
// "fast"): the source of every bound (T_heal, T_failover) a lab asserts
// or waits for.
func ProfileTiming(profile string) invitation.Timing {
	if profile == "fast" {
		return invitation.FastTiming()
	}
	return invitation.DefaultTiming()
}

// daemonEnv is the environment of a daemon: see Config.InheritEnv.
func daemonEnv(inherit bool, extra ...[]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if inherit || !strings.HasPrefix(kv, "GROUPD_") {
			env = append(env, kv)
		}
	}
	for _, e := range extra {
		env = append(env, e...)
	}
	return env
}
