//go:build linux

package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/invariant"
)

// Issue 27: IPv6 and dual-stack labs.

// labSubnet6 is lab k's IPv6 /64: a ULA prefix made of the labs' IPv4 /16
// (GROUPD_E2E_SUBNET, 10.78 by default: fd00:a4e:k::/64), so that suites
// given IPv4 ranges of their own get IPv6 ranges of their own too.
func labSubnet6(k int) netip.Prefix {
	b := subnet16.Addr().As4()
	return netip.MustParsePrefix(fmt.Sprintf("fd00:%x:%x::/64", uint16(b[0])<<8|uint16(b[1]), k))
}

// ipv6Lab makes a lab of n nodes with ULA addresses only: the daemons bind
// their IPv6 address and beacon to [ff15::7952]:7952.
func ipv6Lab(t *testing.T, n int, profile string, args ...string) *tlab {
	t.Helper()
	return newLabWith(t, n, profile, func(k int, c *lab.Config) { c.Subnet = labSubnet6(k) }, args...)
}

// dualLab makes a lab of n nodes with an IPv4 and an IPv6 address each,
// whose daemons bind "::" (both families, both multicast groups) and
// advertise IPv6 (odd nodes) or IPv4 (even ones): one LAN, both families.
func dualLab(t *testing.T, n int, profile string) *tlab {
	t.Helper()
	l := newLabWith(t, n, profile, func(k int, c *lab.Config) { c.Subnet6 = labSubnet6(k) }, "--bind", "::")
	for i := 1; i <= n; i++ {
		adv := l.Addr(i)
		if i%2 == 1 {
			adv = l.Addr6(i)
		}
		if err := l.SetOptions(lab.Options{Args: []string{"--advertise", adv.String()}}, i); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// TestIPv6Lab: five daemons on an IPv6-only LAN converge, fail over, split
// 2|3 and heal, within the bounds of the IPv4 lab; their logs print
// bracketed addresses.
func TestIPv6Lab(t *testing.T) {
	t.Parallel()
	requireFaults(t)
	l := ipv6Lab(t, 5, "lan")
	l.failover("IPv6 failover", l.Timing().FailoverBound())
	l.restart(5, false)
	l.waitFor("node 5 back", l.all(), 30*time.Second, lab.Converged(l.all()))
	splitAndHeal(t, l, []int{1, 2}, []int{3, 4, 5}, 30*time.Second)
	b, err := os.ReadFile(l.LogFile(1))
	if err != nil {
		t.Fatal(err)
	}
	want := `"wire":"[` + l.Addr(1).String() + `]:7950"`
	if !strings.Contains(string(b), want) || !strings.Contains(string(b), `"group":"[ff15::7952]:7952"`) {
		t.Errorf("node 1's log lacks %s and the IPv6 multicast group", want)
	}
}

// TestDualStackLab: five dual-stack daemons, advertising IPv6 and IPv4 in
// turn, converge, fail over, split and heal.
func TestDualStackLab(t *testing.T) {
	t.Parallel()
	requireFaults(t)
	l := dualLab(t, 5, "lan")
	ids := l.all()
	up := l.startKeeping(ids...)
	_, polled := l.waitFor("5 dual-stack nodes converge", ids, 60*time.Second, lab.Converged(ids))
	t.Logf("dual stack: 5 nodes converged %.3fs after all daemons were up", l.measure("cold start", up, ids, invariant.IsConverged, polled).Seconds())
	for i, want := range map[int]string{1: `"gossip":"[` + l.Addr6(1).String() + `]:7951"`, 2: `"gossip":"` + l.Addr(2).String() + `:7951"`} {
		if b, _ := os.ReadFile(l.LogFile(i)); !strings.Contains(string(b), want) {
			t.Errorf("node %d does not advertise %s", i, want)
		}
	}
	kill := l.kill(5)
	surv := lab.Span(1, 4)
	_, polled = l.waitFor("dual-stack failover", surv, 30*time.Second, lab.FailedOver(surv))
	f := l.measure("dual-stack failover", kill.Start, surv, invariant.IsFailedOver, polled)
	l.timing("dual stack: failover after kill -9 of coordinator 5", f, l.Timing().FailoverBound(), 0)
	l.checkpoint("L2 "+list(surv), polled, "L2 once seen failed over after the kill (dual stack)")
	l.startKeeping(5)
	l.waitFor("node 5 back", ids, 30*time.Second, lab.Converged(ids))
	splitAndHeal(t, l, []int{1, 2}, []int{3, 4, 5}, 30*time.Second)
}

// startKeeping starts nodes ids with the options they were given
// (SetOptions), where start gives them none.
func (tl *tlab) startKeeping(ids ...int) time.Time {
	tl.t.Helper()
	up, err := tl.Start(ids...)
	if err != nil {
		tl.t.Fatalf("e2e: %v", err)
	}
	return up
}

// TestIPv6Figures measures (GROUPD_E2E_LONG=1) the figures of
// BENCHMARKS.md's "IPv6, dual stack, DNS seeds": cold start, failover and
// heal of 5 nodes, trials each, on an IPv6-only and on a dual-stack LAN,
// and on the IPv4 lab for comparison, with the lan profile.
//
//	GROUPD_E2E_LONG=1 go test -count=1 -v -run TestIPv6Figures ./e2e/
func TestIPv6Figures(t *testing.T) {
	if !long() {
		t.Skip("GROUPD_E2E_LONG=1 measures the IPv6 and dual-stack figures")
	}
	t.Parallel()
	requireFaults(t)
	for _, family := range []string{"ipv4", "ipv6", "dual"} {
		t.Run(family, func(t *testing.T) {
			var l *tlab
			switch family {
			case "ipv4": // the same harness on the IPv4 lab, to compare
				l = newLab(t, 5, "lan")
			case "ipv6":
				l = ipv6Lab(t, 5, "lan")
			default:
				l = dualLab(t, 5, "lan")
			}
			figures(t, family, l, l.all(), 10)
		})
	}
}

// figures runs trials of cold start, failover (kill -9 of the coordinator)
// and heal (a 10 s split 1..n/2 | the rest) on the nodes ids of l, and logs
// their p50 and maximum.
func figures(t *testing.T, what string, l *tlab, ids []int, trials int) {
	t.Helper()
	top := ids[len(ids)-1]
	var cold, fail, heal []time.Duration
	for k := 0; k < trials; k++ {
		if err := l.Stop(ids...); err != nil {
			t.Fatal(err)
		}
		up := l.startKeeping(ids...)
		_, polled := l.waitFor("cold start", ids, 60*time.Second, lab.Converged(ids))
		cold = append(cold, l.measure("cold start", up, ids, invariant.IsConverged, polled))

		time.Sleep(time.Duration(k%5) * 200 * time.Millisecond) // phases of the heartbeat
		kill := l.kill(top)
		surv := ids[:len(ids)-1]
		_, polled = l.waitFor("failover", surv, 30*time.Second, lab.FailedOver(surv))
		fail = append(fail, l.measure("failover", kill.Start, surv, invariant.IsFailedOver, polled))
		l.startKeeping(top)
		l.waitFor("back", ids, 30*time.Second, lab.Converged(ids))

		a, b := ids[:len(ids)/2], ids[len(ids)/2:]
		l.partition(a, b)
		l.waitFor("side a", a, 30*time.Second, lab.Converged(a))
		l.waitFor("side b", b, 30*time.Second, lab.Converged(b))
		time.Sleep(10 * time.Second)
		h := l.heal()
		_, polled = l.waitFor("heal", ids, 30*time.Second, lab.Converged(ids))
		heal = append(heal, l.measure("heal", h.End, ids, invariant.IsConverged, polled))
	}
	t.Logf("FIGURES %s (%s), %d nodes, %d trials: cold start p50 %v max %v; failover p50 %v max %v; heal (10 s split) p50 %v max %v",
		what, l.Config().Subnet, len(ids), trials, p50(cold), maxOf(cold), p50(fail), maxOf(fail), p50(heal), maxOf(heal))
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m.Round(time.Millisecond)
}
