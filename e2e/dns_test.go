//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/invariant"
)

// Issue 27: a LAN without multicast (every UDP datagram to a multicast
// address dropped by iptables/ip6tables in every namespace), where nodes
// find each other through a real DNS server: dnsmasq in a namespace of its
// own on the lab's bridge, serving A or AAAA records and SRV records that
// the test changes to add and remove nodes.

// dnsResolveInterval is the daemons' --resolve-interval in the DNS labs:
// short, so that the tests are, and the added node's bound with it.
const dnsResolveInterval = 2 * time.Second

// dnsLab is a lab of n groupd nodes and one more namespace, n+1, which runs
// dnsmasq. The daemons start through a wrapper that gives them, in a
// mount namespace of their own, an /etc/resolv.conf naming that server:
// they resolve as a host configured for it would, with the standard
// resolver.
type dnsLab struct {
	*tlab
	n    int
	dir  string
	mu   sync.Mutex
	dns  *exec.Cmd
	wait chan error
}

// requireDNS skips t without dnsmasq or unshare.
func requireDNS(t *testing.T) {
	t.Helper()
	requireFaults(t)
	for _, c := range []string{"dnsmasq", "unshare", "mount"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("e2e: %s is missing (apt-get install -y dnsmasq-base util-linux mount): the DNS lab needs it", c)
		}
	}
}

func newDNSLab(t *testing.T, n int, v6 bool, profile string) *dnsLab {
	t.Helper()
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "groupd-resolv")
	d := &dnsLab{n: n, dir: dir}
	d.tlab = newLabWith(t, n+1, profile, func(k int, c *lab.Config) {
		if v6 {
			c.Subnet = labSubnet6(k)
		}
		c.NoMulticast = true
		c.Bin = wrapper
	}, "--multicast", "off", "--resolve-interval", dnsResolveInterval.String())
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+d.Addr(n+1).String()+"\noptions timeout:1 attempts:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// unshare execs (no fork), and so does sh: the lab's PID is groupd's.
	script := fmt.Sprintf("#!/bin/sh\nexec unshare --mount /bin/sh -c 'mount --bind \"$0\" /etc/resolv.conf && exec \"$@\"' %s %s \"$@\"\n", resolv, groupdBin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.stopDNS) // before the lab's teardown (cleanups run last first)
	return d
}

// records serves groupd.lab with the A (or AAAA) records of ids, the SRV
// records _groupd._udp.lab with targets nI.lab for ids, nI.lab for every
// node, and extra names (name -> nodes); every other name in .lab is
// NXDOMAIN. dnsmasq is restarted with them: it re-reads neither SRV
// records nor its options on SIGHUP. It returns when the new server
// answers.
func (d *dnsLab) records(ids []int, extra map[string][]int) time.Time {
	t := d.t
	t.Helper()
	d.stopDNS()
	var hosts, conf strings.Builder
	for i := 1; i <= d.n; i++ {
		fmt.Fprintf(&hosts, "%s n%d.lab\n", d.Addr(i), i)
	}
	for _, i := range ids {
		fmt.Fprintf(&hosts, "%s groupd.lab\n", d.Addr(i))
		fmt.Fprintf(&conf, "srv-host=_groupd._udp.lab,n%d.lab,7951\n", i)
	}
	for name, nodes := range extra {
		for _, i := range nodes {
			fmt.Fprintf(&hosts, "%s %s\n", d.Addr(i), name)
		}
	}
	hostsFile := filepath.Join(d.dir, "hosts")
	fmt.Fprintf(&conf, "no-resolv\nno-hosts\nbind-interfaces\nlisten-address=%s\nport=53\nuser=root\nlocal=/lab/\naddn-hosts=%s\nlog-facility=%s\n",
		d.Addr(d.n+1), hostsFile, filepath.Join(d.dir, "dnsmasq.log"))
	confFile := filepath.Join(d.dir, "dnsmasq.conf")
	if err := os.WriteFile(hostsFile, []byte(hosts.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(confFile, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, err := d.Command(d.n+1, "dnsmasq", "--keep-in-foreground", "--conf-file="+confFile)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.Create(filepath.Join(d.dir, "dnsmasq.out"))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("e2e: dnsmasq: %v", err)
	}
	wait := make(chan error, 1)
	go func() { wait <- cmd.Wait(); out.Close() }()
	d.mu.Lock()
	d.dns, d.wait = cmd, wait
	d.mu.Unlock()
	// Ready when it answers: ask for a name in the node's namespace.
	deadline := time.Now().Add(10 * time.Second)
	for {
		q, _ := d.Command(1, "getent", "hosts", fmt.Sprintf("n%d.lab", d.n))
		if q != nil {
			q.Env = append(os.Environ(), "RES_OPTIONS=timeout:1 attempts:1")
		}
		if q != nil && d.resolvesIn(q) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(d.dir, "dnsmasq.out"))
			t.Fatalf("e2e: dnsmasq does not answer within 10 s:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// resolvesIn runs getent with the lab's resolv.conf, as the daemons read
// it (ip netns exec would read /etc/netns/NS/resolv.conf).
func (d *dnsLab) resolvesIn(q *exec.Cmd) bool {
	args := append([]string{"--mount", "/bin/sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, filepath.Join(d.dir, "resolv.conf")}, q.Args...)
	c := exec.Command("unshare", args...)
	c.Env = q.Env
	return c.Run() == nil
}

// stopDNS stops dnsmasq (our child, by PID) and waits for it.
func (d *dnsLab) stopDNS() {
	d.mu.Lock()
	cmd, wait := d.dns, d.wait
	d.dns = nil
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-wait:
	case <-time.After(3 * time.Second):
		_ = cmd.Process.Kill()
		<-wait
	}
}

// seedWarnings counts the warnings about a --join seed that node i's
// daemon logged since it was last started.
func (d *dnsLab) seedWarnings(i int) int {
	b, _ := os.ReadFile(d.LogFile(i))
	s := string(b)
	if k := strings.LastIndex(s, "lab: starting in"); k >= 0 {
		s = s[k:]
	}
	return strings.Count(s, "cannot join --join seed")
}

// TestDNSSeeds runs, for A and for AAAA records: five nodes with
// multicast dropped and only DNS seeds (nodes 1-3 and 5 by name, node 4 by
// SRV) converge, fail over, split and heal; a node removed from the
// records and stopped leaves the group; a sixth node whose seed has no
// records yet warns once and keeps trying, and is in the group within
// --resolve-interval + 1 s of its records' arrival (a figure; it fails past
// the outer limit).
func TestDNSSeeds(t *testing.T) {
	t.Parallel()
	requireDNS(t)
	for _, v6 := range []bool{false, true} {
		t.Run(map[bool]string{false: "A", true: "AAAA"}[v6], func(t *testing.T) {
			t.Parallel()
			d := newDNSLab(t, 6, v6, "lan")
			ids := lab.Span(1, 5)
			for _, i := range ids {
				seed := "groupd.lab"
				if i == 4 {
					seed = "srv:_groupd._udp.lab"
				}
				if err := d.SetOptions(lab.Options{Args: []string{"--join", seed}}, i); err != nil {
					t.Fatal(err)
				}
			}
			d.records(ids, nil)
			up := d.startKeeping(ids...)
			_, polled := d.waitFor("5 nodes converge by DNS", ids, 60*time.Second, lab.Converged(ids))
			c := d.measure("DNS cold start", up, ids, invariant.IsConverged, polled)
			d.timing("no multicast, DNS seeds: 5 nodes converged after all daemons were up", c, d.Timing().HealBound(), 0)

			kill := d.kill(5)
			surv := lab.Span(1, 4)
			_, polled = d.waitFor("failover", surv, 30*time.Second, lab.FailedOver(surv))
			f := d.measure("DNS failover", kill.Start, surv, invariant.IsFailedOver, polled)
			d.timing("no multicast: failover after kill -9 of coordinator 5", f, d.Timing().FailoverBound(), 0)
			d.checkpoint("L2 "+list(surv), polled, "L2 once seen failed over after the kill (no multicast)")
			d.startKeeping(5)
			d.waitFor("node 5 back", ids, 30*time.Second, lab.Converged(ids))
			splitAndHeal(t, d.tlab, []int{1, 2}, []int{3, 4, 5}, 30*time.Second)

			// Removed: out of the records, then stopped.
			d.records(lab.Span(1, 4), nil)
			if _, err := d.Kill(5); err != nil {
				t.Fatal(err)
			}
			d.waitFor("node 5 removed", surv, 30*time.Second, lab.Converged(surv))

			// Added: node 6, which no node has known, starts on a name
			// that has no records yet. (Node 5, known, would be joined
			// again by the others' retries of failed members.)
			if err := d.SetOptions(lab.Options{Args: []string{"--join", "new.lab"}}, 6); err != nil {
				t.Fatal(err)
			}
			d.startKeeping(6)
			// Node 6 tries its seed and warns; then a few back-off
			// rounds without records (the experiment's duration, not
			// a synchronisation), after which it must still be alone
			// and have warned once.
			deadline := time.Now().Add(30 * time.Second)
			for d.seedWarnings(6) == 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond) // polling node 6's log
			}
			time.Sleep(3 * dnsResolveInterval)
			if st := d.status(6); len(st.Members) != 1 {
				t.Fatalf("node 6 joined through no record: %v", st)
			}
			now := []int{1, 2, 3, 4, 6}
			at := d.records(now, map[string][]int{"new.lab": now})
			_, polled = d.waitFor("node 6 added", now, 30*time.Second, lab.Converged(now))
			a := d.measure("added node", at, now, invariant.IsConverged, polled)
			d.timing("a node added to DNS: in the group after the records named it (bound --resolve-interval + 1 s)", a, dnsResolveInterval+time.Second, 0)
			if w := d.seedWarnings(6); w != 1 {
				t.Errorf("node 6 logged %d warnings about its seed while it had no records, want 1 (back-off, one warning)", w)
			}
		})
	}
}

// TestDNSFigures measures (GROUPD_E2E_LONG=1) the no-multicast, DNS-seeded
// figures of BENCHMARKS.md: cold start, failover and heal after a 10 s
// split of 5 nodes, lan profile, AAAA and SRV seeds.
//
//	GROUPD_E2E_LONG=1 go test -count=1 -v -run TestDNSFigures ./e2e/
func TestDNSFigures(t *testing.T) {
	if !long() {
		t.Skip("GROUPD_E2E_LONG=1 measures the DNS-seeded figures")
	}
	t.Parallel()
	requireDNS(t)
	for _, v6 := range []bool{false, true} {
		t.Run(map[bool]string{false: "A", true: "AAAA"}[v6], func(t *testing.T) {
			d := newDNSLab(t, 5, v6, "lan")
			ids := lab.Span(1, 5)
			for _, i := range ids {
				seed := "groupd.lab"
				if i%2 == 0 {
					seed = "srv:_groupd._udp.lab"
				}
				if err := d.SetOptions(lab.Options{Args: []string{"--join", seed}}, i); err != nil {
					t.Fatal(err)
				}
			}
			d.records(ids, nil)
			figures(t, "no multicast, DNS seeds", d.tlab, ids, 10)
		})
	}
}
