package lab

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// notRoot counts the tests that skipped for want of root: the package
// then prints ok as if they had run, so TestMain says how many, as
// package e2e does.
var notRoot atomic.Int32

func TestMain(m *testing.M) {
	code := m.Run()
	if n := notRoot.Load(); n > 0 {
		fmt.Printf("lab: root-only tests skipped: %d, not root on Linux (they build labs in network namespaces); as root, go test ./internal/lab/ runs them\n", n)
	}
	os.Exit(code)
}

// requireRoot skips t, counted, where labs cannot be built: not root, or
// not Linux.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 || runtime.GOOS != "linux" {
		notRoot.Add(1)
		t.Skip("needs root: network namespaces (the lab is tested as root by e2e as well)")
	}
}

func TestConfig(t *testing.T) {
	good := Config{Nodes: 5, Prefix: "hl", Subnet: netip.MustParsePrefix("10.81.0.0/24"), Dir: "/tmp/hl"}
	for _, c := range []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"good", func(*Config) {}, true},
		{"longest prefix", func(c *Config) { c.Prefix = "gde0abcd01" }, true},
		{"prefix too long for PREFIX-v256", func(c *Config) { c.Prefix = "gde0abcd012" }, false},
		{"prefix with a capital", func(c *Config) { c.Prefix = "Hl" }, false},
		{"no nodes", func(c *Config) { c.Nodes = 0 }, false},
		{"254 nodes in a /24", func(c *Config) { c.Nodes = 254 }, true},
		{"256 nodes in a /24", func(c *Config) { c.Nodes = 256 }, false},
		{"256 nodes in a /23", func(c *Config) { c.Nodes, c.Subnet = 256, netip.MustParsePrefix("10.81.0.0/23") }, true},
		{"257 nodes", func(c *Config) { c.Nodes, c.Subnet = 257, netip.MustParsePrefix("10.81.0.0/16") }, false},
		{"IPv6", func(c *Config) { c.Subnet = netip.MustParsePrefix("fd00::/64") }, true},
		{"IPv6 /48", func(c *Config) { c.Subnet = netip.MustParsePrefix("fd00::/48") }, false},
		{"dual stack", func(c *Config) { c.Subnet6 = netip.MustParsePrefix("fd00::/64") }, true},
		{"dual stack twice IPv4", func(c *Config) { c.Subnet6 = netip.MustParsePrefix("10.82.0.0/24") }, false},
		{"relative dir", func(c *Config) { c.Dir = "hl" }, false},
		{"root dir", func(c *Config) { c.Dir = "/" }, false},
		{"profile", func(c *Config) { c.Profile = "wan" }, false},
		{"faults", func(c *Config) { c.Faults = "tbf" }, false},
		{"bridge", func(c *Config) { c.Bridge = "labbr0" }, true},
		{"bridge of 15 characters", func(c *Config) { c.Bridge = "abcdefghij-br_0" }, true},
		{"bridge of 16 characters", func(c *Config) { c.Bridge = "abcdefghij-br_01" }, false},
		{"bridge with a slash", func(c *Config) { c.Bridge = "a/b" }, false},
		{"bridge named lo", func(c *Config) { c.Bridge = "lo" }, false},
		{"bridge named as a namespace", func(c *Config) { c.Bridge = "hl-3" }, false},
		{"bridge named as a veth", func(c *Config) { c.Bridge = "hl-v3" }, false},
	} {
		cfg := good
		c.mod(&cfg)
		if err := cfg.check(); (err == nil) != c.ok {
			t.Errorf("%s: check() = %v", c.name, err)
		}
	}
	for in, want := range map[string]string{"10.77.0": "10.77.0.0/24", "10.81.0.7/23": "10.81.0.0/23", "fd00:77::9/64": "fd00:77::/64"} {
		if p, err := ParseSubnet(in); err != nil || p.String() != want {
			t.Errorf("ParseSubnet(%q) = %v, %v", in, p, err)
		}
	}
	for _, bad := range []string{"10.77", "10.77.0.0/33", "x"} {
		if _, err := ParseSubnet(bad); err == nil {
			t.Errorf("ParseSubnet(%q) accepted", bad)
		}
	}
	p := netip.MustParsePrefix("10.81.0.0/23")
	if a := hostAddr(p, 256); a.String() != "10.81.1.0" {
		t.Errorf("node 256 of %v: %v", p, a)
	}
	if mac(258) != "02:4e:00:00:01:02" || nsName("gd", 3) != "gd-3" || vethName("gd", 3) != "gd-v3" || bridgeName("gd") != "gd-br0" || chain("gd", "PART") != "GD-PART" {
		t.Error("names changed: scripts/netem/README.md documents them")
	}
}

// testLab is a lab that exists only on paper: enough to compute rules.
func testLab(t *testing.T, n int) *Lab {
	return newLab(Config{Nodes: n, Prefix: "hlt", Subnet: netip.MustParsePrefix("10.81.9.0/24"), Dir: t.TempDir(), Profile: "lan"})
}

// TestRulesIPv6: an IPv6 lab's rules name /128 sources, and a lab
// without multicast drops UDP to ff00::/8 (and, dual stack, to
// 224.0.0.0/4 through iptables).
func TestRulesIPv6(t *testing.T) {
	l := newLab(Config{Nodes: 3, Prefix: "hlt", Subnet: netip.MustParsePrefix("10.81.9.0/24"), Subnet6: netip.MustParsePrefix("fd00:81:9::/64"),
		NoMulticast: true, Dir: t.TempDir(), Profile: "lan"})
	if err := l.cfg.check(); err != nil {
		t.Fatal(err)
	}
	plans := l.cfg.plans()
	if len(plans) != 2 || plans[0].restore != "iptables-restore" || plans[1].restore != "ip6tables-restore" {
		t.Fatalf("plans %+v", plans)
	}
	f := faultState{Sides: [][]int{{1}, {2, 3}}}
	r := l.rules(f, 1, false, plans[1])
	if want := []string{"-s fd00:81:9::2/128 -j DROP", "-s fd00:81:9::3/128 -j DROP"}; !slices.Equal(r["HLT-PART"], want) {
		t.Errorf("IPv6 partition rules %v, want %v", r["HLT-PART"], want)
	}
	if want := []string{"-p udp -d ff00::/8 -j DROP"}; !slices.Equal(r["HLT-MCAST"], want) {
		t.Errorf("IPv6 multicast rule %v, want %v", r["HLT-MCAST"], want)
	}
	if r := l.rules(f, 1, false, plans[0]); !slices.Equal(r["HLT-MCAST"], []string{"-p udp -d 224.0.0.0/4 -j DROP"}) {
		t.Errorf("IPv4 multicast rule %v", r["HLT-MCAST"])
	}
	if a := l.Addr6(3); a.String() != "fd00:81:9::3" {
		t.Errorf("Addr6(3) = %v", a)
	}
	for _, tc := range []struct {
		subnet string
		ok     bool
	}{{"fd00:81::/64", true}, {"fd00:81::/120", true}, {"fd00:81::/48", false}, {"fd00:81::/126", false}} {
		if err := checkSubnet(netip.MustParsePrefix(tc.subnet), 3); (err == nil) != tc.ok {
			t.Errorf("checkSubnet(%s): %v", tc.subnet, err)
		}
	}
}

// TestRules: the chains each fault gives each node.
func TestRules(t *testing.T) {
	l := testLab(t, 4)
	f := faultState{Sides: [][]int{{1, 2}, {3}}, Cuts: [][2]int{{4, 1}}, Degrade: &Degradation{LossPct: 20, Nodes: []int{2, 3}}}
	drop := func(i int) string { return "-s 10.81.9." + strconv.Itoa(i) + "/32 -j DROP" }
	r1 := l.rules(f, 1, false, l.cfg.plans()[0])
	if !slices.Equal(r1["HLT-PART"], []string{drop(3)}) || !slices.Equal(r1["HLT-CUT"], []string{drop(4)}) || len(r1["HLT-LOSS"]) != 2 {
		t.Errorf("node 1: %v", r1)
	}
	if r4 := l.rules(f, 4, false, l.cfg.plans()[0]); len(r4["HLT-PART"]) != 0 || len(r4["HLT-CUT"]) != 0 {
		t.Errorf("node 4 is on no side and cut from no one: %v", r4)
	}
	if r2 := l.rules(f, 2, false, l.cfg.plans()[0]); len(r2["HLT-LOSS"]) != 1 || !strings.Contains(r2["HLT-LOSS"][0], "-s 10.81.9.3/32 -m statistic --mode random --probability 0.2000 -j DROP") {
		t.Errorf("node 2 loses 20%% of what 3 sends (its own sending is not its input): %v", r2["HLT-LOSS"])
	}
	if r := l.rules(f, 1, true, l.cfg.plans()[0]); len(r["HLT-LOSS"]) != 0 {
		t.Errorf("with netem, loss is not an iptables rule: %v", r)
	}
	f.Degrade.Nodes = nil
	if r := l.rules(f, 3, false, l.cfg.plans()[0]); !slices.Equal(r["HLT-LOSS"], []string{"-i eth0 -m statistic --mode random --probability 0.2000 -j DROP"}) {
		t.Errorf("loss on every sender: %v", r["HLT-LOSS"])
	}
	if got := (faultState{Sides: [][]int{{1, 5}, {6}}, Cuts: [][2]int{{2, 6}}, NetemOn: []int{1, 6}}).trim(5); len(got.Sides) != 0 || len(got.Cuts) != 0 || !slices.Equal(got.NetemOn, []int{1}) {
		t.Errorf("trim to 5 nodes: %+v", got)
	}
}

func TestIDs(t *testing.T) {
	if ids, err := ParseIDs("1,3-5", 5); err != nil || !slices.Equal(ids, []int{1, 3, 4, 5}) {
		t.Errorf("ParseIDs: %v, %v", ids, err)
	}
	if _, err := ParseIDs("4-6", 5); err == nil {
		t.Error("node 6 of a 5-node lab was accepted")
	}
	if s := FormatIDs([]int{1, 2, 3, 7}); s != "1-3,7" {
		t.Errorf("FormatIDs: %q", s)
	}
}

// TestLab builds a real three-node lab (root only) and does everything an
// operator or a test does with one: start, converge, partition, one-way
// cut, loss, heal, kill, restart, stop, wipe; the recorded history must
// hold the events and the marks, replay clean, and Close must leave
// nothing behind.
// TestClearRunDir removes a lab's leftovers and the names asked for, and
// keeps the rest of the run dir (the archived runs, an operator's files).
func TestClearRunDir(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"node1/data/state", "node12/groupd.log", stateFile, HistoryFile, recorderLog, "peers/corosync/n1.conf", PastRunsDir + "/x/history.ndjson", "notes.txt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := ClearRunDir(dir, "peers"); err != nil {
		t.Fatal(err)
	}
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := []string{"notes.txt", PastRunsDir}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}

// TestRemoveWithoutRunDir: taking a lab down by name when its run dir
// does not exist (a fresh machine, where experiment.sh resets the lab
// before its first run) removes what is there and fails on nothing.
func TestRemoveWithoutRunDir(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "never-made")
	if err := Remove(dir, "rmx"+strconv.Itoa(os.Getpid()%1000), "", t.Logf); err != nil {
		t.Errorf("Remove without a run dir: %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("Remove made the run dir %s", dir)
	}
}

func TestLab(t *testing.T) {
	requireRoot(t)
	if testing.Short() {
		t.Skip("-short")
	}
	if err := HaveIptables(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "groupd")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/groupd").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	prefix := fmt.Sprintf("hlt%x", os.Getpid()%0xfffff)
	l, err := Up(context.Background(), Config{Nodes: 3, Prefix: prefix, Subnet: netip.MustParsePrefix("10.81.250.0/24"),
		Dir: filepath.Join(dir, "run"), Bin: bin, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	all := Span(1, 3)
	must := func(w Window, err error) Window {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	wait := func(what string, ids []int, c Cond) {
		t.Helper()
		if _, _, err := l.WaitFor(what, ids, 30*time.Second, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Start(all...); err != nil {
		t.Fatal(err)
	}
	wait("converge", all, Converged(all))
	if m, err := l.Mechanism(); err != nil || !strings.Contains(m, "netem") && !strings.Contains(m, "iptables") {
		t.Errorf("mechanism %q, %v", m, err)
	}
	must(l.Partition([]int{1}, []int{2, 3}))
	wait("side 2,3", []int{2, 3}, Converged([]int{2, 3}))
	if n, err := l.FaultRules(1); err != nil || n != 2 {
		t.Errorf("node 1 has %d fault rules (%v), want 2", n, err)
	}
	must(l.Cut(3, 2))
	w, notes, err := l.Degrade(Degradation{LossPct: 10, Delay: 5 * time.Millisecond})
	must(w, err)
	t.Logf("degrade: %v", notes)
	must(l.Heal(false))
	wait("heal", all, Converged(all))
	for i := 1; i <= 3; i++ {
		if n, err := l.FaultRules(i); err != nil || n != 0 {
			t.Errorf("node %d keeps %d fault rules after the heal (%v)", i, n, err)
		}
	}
	must(l.Kill(3))
	wait("failover", []int{1, 2}, FailedOver([]int{1, 2}))
	if _, err := l.Restart(3, false); err != nil {
		t.Fatal(err)
	}
	wait("back", all, Converged(all))
	if err := l.Stop(2); err != nil {
		t.Fatal(err)
	}
	if err := l.Wipe(2); err != nil {
		t.Fatal(err)
	}
	// As docs/security.md's "Disk faults" says: a node that lost its state starts
	// once with --min-counter above every number it used (S1 would fail
	// otherwise, and the replay would say so).
	if _, err := l.StartWith(Options{Args: []string{"--min-counter", "1000"}}, 2); err != nil {
		t.Fatal(err)
	}
	wait("wiped node back", all, Converged(all))
	if s, err := l.Status(2); err != nil || s.Counter < 1000 {
		t.Errorf("wiped node 2: %v, %v; want a counter from 1000 on", s, err)
	}

	h, _ := l.History()
	var kinds []string
	for _, m := range h.Marks() {
		kinds = append(kinds, m.Kind)
	}
	for _, k := range []string{schema.KindStart, schema.KindPartition, schema.KindOneway, schema.KindLoss, schema.KindHeal,
		schema.KindKill, schema.KindRestart, schema.KindStop, schema.KindWipe} {
		if !slices.Contains(kinds, k) {
			t.Errorf("no %s mark in the history: %v", k, kinds)
		}
	}
	// The file holds what the recorders and the lab wrote, and reads back
	// the same.
	fromFile, err := ReadHistory(l.Dir())
	if err != nil || len(fromFile.Events(time.Time{}, time.Time{})) != len(h.Events(time.Time{}, time.Time{})) || len(fromFile.Bad()) > 0 {
		t.Errorf("history.ndjson: %v, bad %v", err, fromFile.Bad())
	}
	if len(h.Groups(wire.NodeID(3), time.Time{}, time.Time{})) < 2 {
		t.Error("node 3 was in one group only")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if res := h.Replay(); !res.OK() || res.Restarts < 2 {
		t.Errorf("replay: %+v", res)
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	if strings.Contains(string(out), prefix+"-") || strings.Contains(string(links), prefix+"-") {
		t.Errorf("left behind:\n%s%s", out, links)
	}
}

// TestBridge: a lab on a bridge named by Config.Bridge (GROUPD_LAB_BRIDGE)
// creates and removes that bridge; a host's bridge of that name (one with
// an address) is refused and left alone.
func TestBridge(t *testing.T) {
	requireRoot(t)
	if testing.Short() {
		t.Skip("-short")
	}
	prefix := fmt.Sprintf("hlb%x", os.Getpid()%0xfffff)
	br := prefix + "-lan"
	exists := func(name string) bool { _, err := os.Stat("/sys/class/net/" + name); return err == nil }
	cfg := Config{Nodes: 2, Prefix: prefix, Bridge: br, Subnet: netip.MustParsePrefix("10.81.251.0/24"),
		Dir: filepath.Join(t.TempDir(), "run"), Logf: t.Logf}
	l, err := Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l.Bridge() != br || !exists(br) || exists(prefix+"-br0") {
		t.Errorf("bridge %q: %s exists %v, %s-br0 exists %v", l.Bridge(), br, exists(br), prefix, exists(prefix+"-br0"))
	}
	if b, err := os.ReadFile("/sys/class/net/" + l.Veth(1) + "/master/uevent"); err != nil || !strings.Contains(string(b), "INTERFACE="+br) {
		t.Errorf("%s is not a port of %s: %s %v", l.Veth(1), br, b, err)
	}
	if o, err := Open(cfg.Dir, nil); err != nil || o.Bridge() != br {
		t.Errorf("lab.json does not keep the bridge: %v, %v", o, err)
	}
	// Up again repairs the lab on its bridge (which has, up, an IPv6
	// link-local address: not a host's bridge).
	again := cfg
	again.Detach = true // not registered twice with this process
	if _, err := Up(context.Background(), again); err != nil {
		t.Errorf("Up on the lab's own bridge: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(br) || exists(l.Veth(1)) {
		t.Errorf("after Close: bridge %v, veth %v", exists(br), exists(l.Veth(1)))
	}

	// A host's bridge: it has an address.
	host := prefix + "-host"
	if out, err := exec.Command("ip", "link", "add", host, "type", "bridge").CombinedOutput(); err != nil {
		t.Fatalf("ip link add: %v %s", err, out)
	}
	defer exec.Command("ip", "link", "del", host).Run()
	if out, err := exec.Command("ip", "addr", "add", "10.81.252.1/24", "dev", host).CombinedOutput(); err != nil {
		t.Fatalf("ip addr add: %v %s", err, out)
	}
	cfg.Bridge, cfg.Dir = host, filepath.Join(t.TempDir(), "run")
	if l, err := Up(context.Background(), cfg); err == nil {
		l.Close()
		t.Fatalf("Up used the host's bridge %s", host)
	} else if !strings.Contains(err.Error(), "has an address") {
		t.Errorf("Up: %v, want it to say the bridge has an address", err)
	}
	if err := Remove(cfg.Dir, prefix, host, t.Logf); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if !exists(host) {
		t.Errorf("Remove deleted the host's bridge %s", host)
	}
}

// TestCutsRefused: Cuts checks every pair before it changes anything.
func TestCutsRefused(t *testing.T) {
	l := testLab(t, 4)
	for _, pairs := range [][][2]int{nil, {{1, 1}}, {{1, 4}, {5, 4}}, {{0, 2}}} {
		if _, err := l.Cuts(pairs...); err == nil {
			t.Errorf("Cuts(%v) accepted", pairs)
		}
	}
	if _, err := l.Cut(1); err == nil {
		t.Error("Cut without a receiver accepted")
	}
	if len(l.faults.Cuts) != 0 {
		t.Errorf("refused cuts left %v in place", l.faults.Cuts)
	}
}
