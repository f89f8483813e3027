package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// parallelism bounds the commands (ip, iptables-restore, tc) run at once:
// enough to keep both cores of a small machine busy while one command
// waits on a lock (iptables' xtables lock is shared by all namespaces),
// without forking 256 processes at once.
const parallelism = 16

// eachNode runs f for every node of ids, parallelism at a time, and joins
// the errors.
func eachNode(ids []int, f func(i int) error) error {
	sem := make(chan struct{}, parallelism)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, i := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ipBatch runs `ip [-n ns] [-force] -batch -` with lines. With force, ip
// goes on after a failing line (removal: what is already gone is fine).
func ipBatch(ctx context.Context, ns string, force bool, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	args := []string{}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	if force {
		args = append(args, "-force")
	}
	args = append(args, "-batch", "-")
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil && !force {
		where := "the root namespace"
		if ns != "" {
			where = ns
		}
		return fmt.Errorf("lab: ip -batch in %s: %w: %s", where, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// names lists the namespaces and links of the host.
func names(ctx context.Context) (nss, links map[string]bool, err error) {
	nss, links = map[string]bool{}, map[string]bool{}
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("lab: ip netns list: %w", err)
	}
	for _, f := range lines(out) {
		if len(f) > 0 {
			nss[f[0]] = true
		}
	}
	out, err = exec.CommandContext(ctx, "ip", "-o", "link", "show").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("lab: ip link show: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.SplitN(line, ": ", 3); len(f) >= 2 {
			name, _, _ := strings.Cut(f[1], "@")
			links[name] = true
		}
	}
	return nss, links, nil
}

// setupNetwork creates (or repairs) the bridge, namespaces and veths, then
// configures every namespace.
func (l *Lab) setupNetwork(ctx context.Context) error {
	nss, links, err := names(ctx)
	if err != nil {
		return err
	}
	// Nodes beyond N, from an earlier, larger lab of this prefix.
	var extra []string
	for ns := range nss {
		if p, i, ok := parseNodeNS(ns); ok && p == l.cfg.Prefix && i > l.cfg.Nodes {
			extra = append(extra, "link del "+vethName(p, i), "netns del "+ns)
		}
	}
	if err := ipBatch(ctx, "", true, extra); err != nil {
		return err
	}
	// A namespace whose veth is gone may still hold a stale eth0, which
	// would block the new pair's name.
	if err := eachNode(l.all(), func(i int) error {
		if nss[l.NS(i)] && !links[l.Veth(i)] {
			return ipBatch(ctx, l.NS(i), true, []string{"link del eth0"})
		}
		return nil
	}); err != nil {
		return err
	}
	br := l.Bridge()
	var root []string
	if !links[br] {
		root = append(root, "link add "+br+" type bridge")
	} else if why := l.foreignBridge(ctx); why != "" {
		return fmt.Errorf("lab: bridge %s %s: it is not the lab's; choose another name (GROUPD_LAB_BRIDGE)", br, why)
	}
	// Multicast snooping off: beacons flood to every port. No STP delay.
	// No bridge netfilter: a host FORWARD policy must not see lab traffic.
	root = append(root, "link set "+br+" type bridge mcast_snooping 0 stp_state 0 forward_delay 0", "link set "+br+" up")
	for i := 1; i <= l.cfg.Nodes; i++ {
		if !nss[l.NS(i)] {
			root = append(root, "netns add "+l.NS(i))
		}
		if !links[l.Veth(i)] {
			root = append(root, fmt.Sprintf("link add %s type veth peer name eth0 address %s netns %s", l.Veth(i), mac(i), l.NS(i)))
		}
		root = append(root, fmt.Sprintf("link set %s master %s up", l.Veth(i), br))
	}
	if err := ipBatch(ctx, "", false, root); err != nil {
		return err
	}
	// Older iproute2 does not know nf_call_iptables: not fatal.
	_ = ipBatch(ctx, "", false, []string{"link set " + br + " type bridge nf_call_iptables 0"})

	// Inside each namespace: lo and eth0 up, the address, the multicast
	// route, and a permanent neighbour entry for every other node (see
	// the package doc: ARP never runs between lab nodes).
	// IPv6 addresses skip duplicate address detection (nodad): the plan
	// makes them unique, and a tentative address cannot be bound for a
	// second or two. IPv6 multicast needs no route: the kernel routes
	// ff00::/8 on every interface that is up.
	return eachNode(l.all(), func(i int) error {
		b := []string{"link set lo up"}
		for _, p := range l.cfg.plans() {
			a := hostAddr(p.subnet, i).String() + "/" + strconv.Itoa(p.subnet.Bits())
			if p.subnet.Addr().Is6() {
				b = append(b, "addr replace "+a+" dev eth0 nodad")
			} else {
				b = append(b, "addr replace "+a+" dev eth0")
			}
		}
		b = append(b, "link set eth0 up")
		if l.cfg.Subnet.Addr().Is4() {
			b = append(b, "route replace 224.0.0.0/4 dev eth0")
		}
		for j := 1; j <= l.cfg.Nodes; j++ {
			for _, p := range l.cfg.plans() {
				if j != i {
					b = append(b, fmt.Sprintf("neigh replace %s lladdr %s dev eth0 nud permanent", hostAddr(p.subnet, j), mac(j)))
				}
			}
		}
		if err := ipBatch(ctx, l.NS(i), false, b); err != nil {
			return fmt.Errorf("%w (is the host's neighbour table full? see dmesg)", err)
		}
		return nil
	})
}

var nodeNSRE = regexp.MustCompile(`^([a-z][a-z0-9]{0,9})-([0-9]+)$`)

// foreignBridge says why the interface named as the lab's bridge is not
// the lab's, or "" (it is the lab's, or does not exist): it is not a
// bridge, it has an address, or it has ports other than the lab's veths
// (PREFIX-vI, whatever the node count). The lab neither enslaves its
// veths to a host's bridge nor deletes one.
func (l *Lab) foreignBridge(ctx context.Context) string {
	br := l.Bridge()
	sys := filepath.Join("/sys/class/net", br)
	if _, err := os.Stat(sys); err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(sys, "bridge")); err != nil {
		return "exists and is not a bridge"
	}
	// A link-local address (IPv6 gives every interface that is up one) is
	// no sign of a host's bridge.
	if out, err := exec.CommandContext(ctx, "ip", "-o", "addr", "show", "dev", br, "scope", "global").Output(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		return "has an address"
	}
	ports, _ := os.ReadDir(filepath.Join(sys, "brif"))
	for _, p := range ports {
		if rest, ok := strings.CutPrefix(p.Name(), l.cfg.Prefix+"-v"); !ok || !isDigits(rest) {
			return "has a port that is not the lab's (" + p.Name() + ")"
		}
	}
	return ""
}

// parseNodeNS reads a node namespace name, PREFIX-I.
func parseNodeNS(ns string) (prefix string, i int, ok bool) {
	m := nodeNSRE.FindStringSubmatch(ns)
	if m == nil {
		return "", 0, false
	}
	i, err := strconv.Atoi(m[2])
	return m[1], i, err == nil
}

// removeNetwork deletes the lab's veths, namespaces and bridge (and its
// netns probes). all also finds, by name, what an earlier run of this
// prefix left (a crash, a lost state file). Deleting a namespace deletes
// its iptables rules and its end of the veth pair.
func (l *Lab) removeNetwork(all bool) error {
	ctx := context.Background()
	var b []string
	seen := map[string]bool{}
	add := func(line string) {
		if !seen[line] {
			seen[line] = true
			b = append(b, line)
		}
	}
	for i := 1; i <= l.cfg.Nodes; i++ {
		add("link del " + l.Veth(i))
		add("netns del " + l.NS(i))
	}
	if all {
		nss, links, err := names(ctx)
		if err != nil {
			return err
		}
		for link := range links {
			if p, ok := strings.CutPrefix(link, l.cfg.Prefix+"-v"); ok && isDigits(p) {
				add("link del " + link)
			}
		}
		for ns := range nss {
			p, ok := strings.CutPrefix(ns, l.cfg.Prefix+"-")
			if ok && (isDigits(p) || strings.HasPrefix(p, "probe-") && isDigits(p[len("probe-"):])) {
				l.warnStrangers(ns)
				add("netns del " + ns)
			}
		}
	}
	ownBridge := true
	if why := l.foreignBridge(ctx); why != "" {
		ownBridge = false
		l.logf("warning: bridge %s %s: left in place", l.Bridge(), why)
	} else {
		add("link del " + l.Bridge())
	}
	if err := ipBatch(ctx, "", true, b); err != nil {
		return err
	}
	// What is still there could not be removed.
	nss, links, err := names(ctx)
	if err != nil {
		return err
	}
	var left []string
	for i := 1; i <= l.cfg.Nodes; i++ {
		if nss[l.NS(i)] {
			left = append(left, l.NS(i))
		}
	}
	if ownBridge && links[l.Bridge()] {
		left = append(left, l.Bridge())
	}
	if len(left) > 0 {
		return fmt.Errorf("lab: could not remove %s", strings.Join(left, " "))
	}
	return nil
}

// warnStrangers names processes inside ns that this lab did not start: the
// lab never kills them (the namespace lives on, invisible, until they end).
func (l *Lab) warnStrangers(ns string) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		return
	}
	l.logf("warning: processes not started by the lab still run in %s (pids %s); they are left alone", ns, strings.Join(strings.Fields(string(out)), " "))
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Remove takes down whatever a lab of prefix left, by name, when its run
// dir no longer knows it (lab.json lost): the daemons whose pid files are
// in dir (checked against their command lines) are stopped, and every
// namespace and veth named with the prefix is removed, and the bridge
// (PREFIX-br0 when bridge is empty) if it is the lab's.
func Remove(dir, prefix, bridge string, logf func(string, ...any)) error {
	if !prefixRE.MatchString(prefix) {
		return fmt.Errorf("lab: prefix %q: want a lower-case letter, then up to 9 lower-case letters or digits", prefix)
	}
	if bridge != "" {
		if err := checkBridgeName(bridge, prefix); err != nil {
			return err
		}
	}
	n := 0
	nodes, _ := filepath.Glob(filepath.Join(dir, "node*"))
	for _, d := range nodes {
		if i, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "node")); err == nil && i <= MaxNodes {
			n = max(n, i)
		}
	}
	l := newLab(Config{Nodes: n, Prefix: prefix, Bridge: bridge, Dir: dir, Detach: true, Recorder: []string{"-"}, Logf: logf})
	return l.Down()
}

// RemoveLeftovers deletes the namespaces, veths and bridges of every lab
// whose prefix stale says is dead (a test binary killed before its
// cleanup). It kills nothing: a daemon of such a lab died with the process
// that started it (parent-death signal). It returns what it removed.
func RemoveLeftovers(stale func(prefix string) bool) ([]string, error) {
	ctx := context.Background()
	nss, links, err := names(ctx)
	if err != nil {
		return nil, err
	}
	re := regexp.MustCompile(`^([a-z][a-z0-9]{0,9})-(?:[0-9]+|probe-[0-9]+|v[0-9]+|br0)$`)
	var veths, rest, removed []string
	for name := range links {
		if m := re.FindStringSubmatch(name); m != nil && stale(m[1]) {
			if strings.HasSuffix(name, "-br0") {
				rest = append(rest, "link del "+name)
			} else {
				veths = append(veths, "link del "+name)
			}
			removed = append(removed, name)
		}
	}
	for ns := range nss {
		if m := re.FindStringSubmatch(ns); m != nil && stale(m[1]) {
			veths = append(veths, "netns del "+ns)
			removed = append(removed, ns)
		}
	}
	return removed, ipBatch(ctx, "", true, append(veths, rest...))
}

// ---------------------------------------------------------------- namespaces

// Do runs f on an OS thread moved into node i's namespace: sockets f
// creates belong to it for their whole life, whichever goroutine uses them
// later.
func (l *Lab) Do(i int, f func() error) error {
	if _, err := l.node(i); err != nil {
		return err
	}
	return inNetns(l.NS(i), f)
}

// runIn runs a command inside node i's namespace (forked from a thread in
// it: cheaper than `ip netns exec`, which also sets up a mount namespace)
// with stdin, and returns its output.
func (l *Lab) runIn(ctx context.Context, i int, stdin string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := inNetns(l.NS(i), cmd.Start); err != nil {
		return "", fmt.Errorf("lab: %s in %s: %w", name, l.NS(i), err)
	}
	if err := cmd.Wait(); err != nil {
		return out.String(), fmt.Errorf("lab: %s %s in %s: %w: %s", name, strings.Join(args, " "), l.NS(i), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// Command returns `ip netns exec NS name args...`: a command for node i's
// namespace as an operator would run it (lab.sh exec).
func (l *Lab) Command(i int, name string, args ...string) (*exec.Cmd, error) {
	if _, err := l.node(i); err != nil {
		return nil, err
	}
	return exec.Command("ip", append([]string{"netns", "exec", l.NS(i), name}, args...)...), nil
}

// AddAddrs gives node i's eth0 count more addresses of the subnet, from
// its first-th address on (above the nodes' own): more source addresses,
// for an attacker.
func (l *Lab) AddAddrs(i, first, count int) ([]netip.Addr, error) {
	if _, err := l.node(i); err != nil {
		return nil, err
	}
	if first <= l.cfg.Nodes || checkSubnet(l.cfg.Subnet, first+count-1) != nil {
		return nil, fmt.Errorf("lab: addresses %d..%d of %v: want above the nodes' (1..%d) and inside the subnet", first, first+count-1, l.cfg.Subnet, l.cfg.Nodes)
	}
	var b []string
	var out []netip.Addr
	for k := first; k < first+count; k++ {
		a := hostAddr(l.cfg.Subnet, k)
		b = append(b, fmt.Sprintf("addr replace %s/%d dev eth0", a, l.cfg.Subnet.Bits()))
		out = append(out, a)
	}
	return out, ipBatch(context.Background(), l.NS(i), false, b)
}

// lines splits text into lines of fields.
func lines(b []byte) [][]string {
	var out [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}
