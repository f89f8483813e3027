package group

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

func TestParseSeed(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want seedSpec
		err  string
	}{
		{"10.0.0.2:7951", seedSpec{host: "10.0.0.2", port: 7951}, ""},
		{"10.0.0.2", seedSpec{host: "10.0.0.2"}, ""},
		{"[fd00::2]:7951", seedSpec{host: "fd00::2", port: 7951}, ""},
		{"fd00::2", seedSpec{host: "fd00::2"}, ""},
		{"groupd.lan:7951", seedSpec{host: "groupd.lan", port: 7951}, ""},
		{"groupd.lan", seedSpec{host: "groupd.lan"}, ""},
		{"srv:_groupd._udp.example.lan", seedSpec{srv: true, host: "_groupd._udp.example.lan"}, ""},
		{"srv:", seedSpec{}, "empty name"},
		{"srv:a b", seedSpec{}, "is not a DNS name"},
		{"10.0.0.2:x", seedSpec{}, `port "x" out of range`},
		{"10.0.0.2:0", seedSpec{}, "out of range"},
		{":7951", seedSpec{}, "empty host"},
		{"fd00::2:7951:x", seedSpec{}, "want host:port"},
		{"a/b:1", seedSpec{}, "is not a DNS name"},
		{strings.Repeat("a", 254), seedSpec{}, "over 253"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseSeed(tc.in)
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseSeed(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseSeed(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}

// FuzzParseSeed: parseSeed never panics, and what it accepts it writes
// back (String) in a form that parses to the same seed.
func FuzzParseSeed(f *testing.F) {
	for _, s := range []string{"10.0.0.2:7951", "fd00::2", "[fd00::2]:1", "groupd.lan", "srv:_g._udp.x", "srv:", ":", "[::]:0", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := parseSeed(s)
		if err != nil {
			return
		}
		again, err := parseSeed(sp.String())
		if err != nil || again != sp {
			t.Fatalf("parseSeed(%q) = %+v, written %q, parsed again %+v, %v", s, sp, sp.String(), again, err)
		}
	})
}

// fakeResolver answers from maps; it may be changed while agents run.
type fakeResolver struct {
	mu  sync.Mutex
	ips map[string][]string // name -> addresses
	srv map[string][]*net.SRV
	n   int // lookups
}

func (r *fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	ss, ok := r.ips[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, s := range ss {
		ip, zone, _ := strings.Cut(s, "%")
		out = append(out, net.IPAddr{IP: net.ParseIP(ip), Zone: zone})
	}
	return out, nil
}

func (r *fakeResolver) LookupSRV(_ context.Context, _, _, name string) (string, []*net.SRV, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	recs, ok := r.srv[name]
	if !ok {
		return "", nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
	return name, recs, nil
}

func (r *fakeResolver) set(name string, ips ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ips == nil {
		delete(r.ips, name)
		return
	}
	r.ips[name] = ips
}

func TestResolveSeed(t *testing.T) {
	r := &fakeResolver{
		ips: map[string][]string{
			"three.lan": {"10.0.0.1", "10.0.0.2", "fd00::3"},
			"v6.lan":    {"fd00::1", "fe80::1%eth0"},
			"n1.lan":    {"10.0.0.1"},
			"n2.lan":    {"fd00::2"},
		},
		srv: map[string][]*net.SRV{
			"_groupd._udp.lan": {{Target: "n1.lan.", Port: 7001}, {Target: "n2.lan.", Port: 7002}, {Target: "gone.lan.", Port: 7003}},
			"_none._udp.lan":   {{Target: ".", Port: 0}},
		},
	}
	both := func(net.IP) bool { return true }
	v4only := func(ip net.IP) bool { return ip.To4() != nil }
	for _, tc := range []struct {
		seed   string
		usable func(net.IP) bool
		want   []string
		err    string
	}{
		{"10.0.0.9", both, []string{"10.0.0.9:7951"}, ""},
		{"[fd00::9]:1", both, []string{"[fd00::9]:1"}, ""},
		{"three.lan", both, []string{"10.0.0.1:7951", "10.0.0.2:7951", "[fd00::3]:7951"}, ""},
		{"three.lan:9", v4only, []string{"10.0.0.1:9", "10.0.0.2:9"}, ""},
		{"v6.lan", both, []string{"[fd00::1]:7951"}, ""}, // a zoned address cannot go to memberlist
		{"srv:_groupd._udp.lan", both, []string{"10.0.0.1:7001", "[fd00::2]:7002"}, ""},
		{"srv:_groupd._udp.lan", v4only, []string{"10.0.0.1:7001"}, ""},
		{"srv:_none._udp.lan", both, nil, ""},
		{"nowhere.lan", both, nil, "no such host"},
		{"srv:_x._udp.lan", both, nil, "SRV _x._udp.lan"},
	} {
		t.Run(tc.seed, func(t *testing.T) {
			sp, err := parseSeed(tc.seed)
			if err != nil {
				t.Fatal(err)
			}
			got, err := resolveSeed(context.Background(), r, sp, 7951, tc.usable)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// freeLoopbackPorts returns a port p such that UDP p and p+1 and TCP p+1
// are free on each of ips. It draws p below the kernel's ephemeral range,
// which the tests that run alongside bind from (port 0): a port drawn from
// that range could be taken by one of them before the agents bind it.
func freeLoopbackPorts(t *testing.T, ips ...string) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 12000 {
				low = v
			}
		}
	}
	for range 50 {
		p := 10000 + mrand.IntN(low-10002)
		ok := true
		var closers []func() error
		for _, ip := range ips {
			for _, port := range []int{p, p + 1} {
				u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(ip), Port: port})
				if err != nil {
					ok = false
					break
				}
				closers = append(closers, u.Close)
			}
			l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p+1)))
			if err != nil {
				ok = false
			} else {
				closers = append(closers, l.Close)
			}
		}
		for _, c := range closers {
			c()
		}
		if ok {
			return p
		}
	}
	t.Skip("no port free on every loopback address")
	return 0
}

// TestNameSeedListsSelf is issue 27's report: three nodes, no multicast,
// one --join name whose A records list all three. Each node's name lists
// itself too, which the reconnect loop took for a joined seed: three
// singletons, and no warning. They now form one group; a fourth node
// added to the records later is found by the others' re-resolution,
// although its own seed names nobody else.
func TestNameSeedListsSelf(t *testing.T) {
	t.Parallel()
	ips := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"}
	for _, ip := range ips[1:] {
		if c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip)}); err != nil {
			t.Skipf("no %s on loopback: %v", ip, err)
		} else {
			c.Close()
		}
	}
	port := freeLoopbackPorts(t, ips...)
	r := &fakeResolver{ips: map[string][]string{"groupd.test": ips[:3], "alone.test": {ips[3]}}}
	c := newCluster(t, udpLoopback)
	start := func(i int, seed string) {
		cfg := c.config(wire.NodeID(i+1), t.TempDir())
		cfg.Bind, cfg.Port, cfg.GossipPort = ips[i], port, port+1
		cfg.Multicast, cfg.Join = "off", []string{seed + ":" + strconv.Itoa(port+1)}
		cfg.ResolveInterval = 500 * time.Millisecond
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		a.resolver = r
		c.run(a, cfg.DataDir)
	}
	for i := range 3 {
		start(i, "groupd.test")
	}
	c.waitConverged(10 * time.Second)
	// Node 4 is in no record the others read, and its own name lists
	// only itself: it stays alone until the records name it.
	start(3, "alone.test")
	time.Sleep(time.Second)
	if g, _ := c.converged(); g.ID == 4 || c.node(4).a.Status().Coordinator != 4 {
		t.Fatalf("node 4 joined before any record named it: %v", c.node(4).a.Status())
	}
	r.set("groupd.test", ips...)
	c.waitConverged(5 * time.Second)
	for _, n := range c.live() {
		if st := n.a.Status(); len(st.Members) != 4 {
			t.Errorf("node %d: %v", n.id, st)
		}
	}
}

// TestIPv6Loopback runs three agents on ::1 (IPv6 multicast does not run
// over Linux's loopback, so with seeds), and three dual-stack agents bound
// to "::" that advertise 127.0.0.1 or ::1 in turn: one group each, the
// addresses bracketed.
func TestIPv6Loopback(t *testing.T) {
	t.Parallel()
	if c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		c.Close()
	}
	for _, dual := range []bool{false, true} {
		t.Run(fmt.Sprintf("dual=%v", dual), func(t *testing.T) {
			c := newCluster(t, udpLoopback)
			var seeds []string
			for i := 1; i <= 3; i++ {
				cfg := c.config(wire.NodeID(i), t.TempDir())
				cfg.Bind, cfg.Multicast, cfg.API, cfg.Join = "::1", "off", "[::1]:0", seeds
				want := "[::1]:"
				if dual {
					cfg.Bind, cfg.Advertise = "::", "::1"
					if i == 2 {
						cfg.Advertise, want = "127.0.0.1", "127.0.0.1:"
					}
				}
				a, err := New(cfg)
				if err != nil {
					t.Fatalf("New(%d): %v", i, err)
				}
				ad := a.Addrs()
				if !strings.HasPrefix(ad.Wire, want) || !strings.HasPrefix(ad.Gossip, want) || !strings.HasPrefix(ad.API, "[::1]:") {
					t.Errorf("node %d: addresses %+v, want %sPORT", i, ad, want)
				}
				c.run(a, cfg.DataDir)
				seeds = append(seeds, ad.Gossip)
			}
			c.waitConverged(10 * time.Second)
		})
	}
}
