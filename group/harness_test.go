package group

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/groupd/groupd/group/memnet"
	"github.com/groupd/groupd/group/udp"
	"github.com/groupd/groupd/internal/history"
	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// Test harness: several agents in one process, on the in-memory network of
// package memnet (both transports, partitions at will), or on 127.0.0.1
// with real memberlist UDP/TCP and real wire UDP on ephemeral ports.

// loopbackMulticast reports (once per test binary) whether multicast over
// the loopback interface works here: a probe datagram sent to a random
// group through lo comes back. Tests never change the host's network
// configuration; without it they use --join seeds.
var loopbackMulticast = sync.OnceValue(func() bool {
	lo, err := loopbackInterface()
	if err != nil {
		return false
	}
	port, err := freeUDPPort()
	if err != nil {
		return false
	}
	tr, err := udp.Open(udp.Options{
		Bind:      net.IPv4(127, 0, 0, 1),
		Multicast: []udp.Group{{Addr: &net.UDPAddr{IP: randomGroup(), Port: port}, Interfaces: []net.Interface{*lo}}},
	})
	if err != nil {
		return false
	}
	defer tr.Close()
	probe := []byte(fmt.Sprintf("groupd-probe-%d", rand.Uint64()))
	heard := make(chan struct{}, 1)
	tr.Start(func(pkt []byte, _ *net.UDPAddr, multicast bool) {
		if multicast && bytes.Equal(pkt, probe) {
			select {
			case heard <- struct{}{}:
			default:
			}
		}
	})
	for range 3 {
		if _, err := tr.Multicast(probe); err != nil {
			return false
		}
		select {
		case <-heard:
			return true
		case <-time.After(200 * time.Millisecond):
		}
	}
	return false
})

func loopbackInterface() (*net.Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	for i := range ifs {
		if ifs[i].Flags&net.FlagLoopback != 0 && ifs[i].Flags&net.FlagUp != 0 {
			return &ifs[i], nil
		}
	}
	return nil, fmt.Errorf("no loopback interface")
}

// randomGroup returns a random organisation-local multicast group, so that
// concurrent test runs (and a groupd running on the default group) do not
// hear each other.
func randomGroup() net.IP {
	return net.IPv4(239, 192, byte(100+rand.IntN(100)), byte(1+rand.IntN(250))).To4()
}

func freeUDPPort() (int, error) {
	// Below the kernel's ephemeral range, and free for TCP too (a gossip
	// port needs both): a port drawn from that range was taken by another
	// test's port-0 bind before the agent bound it (TestSelfSeed, a
	// full-suite run). See freeLoopbackPorts.
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 12000 {
				low = v
			}
		}
	}
	for range 100 {
		p := 10000 + rand.IntN(low-10000)
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p})
		if err != nil {
			continue
		}
		l, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		c.Close()
		if err == nil {
			l.Close()
			return p, nil
		}
	}
	return 0, errors.New("no port free for UDP and TCP on 127.0.0.1")
}

// testLog collects an agent's logs and prints them if the test fails.
// Writes after the test ended are dropped (goroutines such as a Join in
// progress may outlive Run by a little).
type testLog struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done && l.buf.Len() < 4<<20 {
		l.buf.Write(p)
	}
	return len(p), nil
}

// newTestLogger returns a logger for one test: level from
// $GROUPD_TEST_LOG (default info), printed only if the test fails.
func newTestLogger(t *testing.T) zerolog.Logger {
	level := zerolog.InfoLevel
	if s := os.Getenv("GROUPD_TEST_LOG"); s != "" {
		if l, err := zerolog.ParseLevel(s); err == nil {
			level = l
		}
	}
	tl := &testLog{}
	t.Cleanup(func() {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		tl.done = true
		if t.Failed() {
			t.Logf("agent logs:\n%s", tl.buf.String())
		}
	})
	// JSON lines, not zerolog's ConsoleWriter: that one compares its
	// output with os.Stdout on every write, a data race with the testing
	// package, which swaps os.Stdout for examples while memberlist
	// goroutines of an earlier test may still log.
	return zerolog.New(tl).Level(level).With().Timestamp().Logger()
}

// netMode is how a cluster's agents reach each other.
type netMode int

const (
	memMulticast netMode = iota // in-memory network with multicast (package memnet)
	memSeeds                    // in-memory network, --multicast off, --join seeds
	udpLoopback                 // real sockets on 127.0.0.1: multicast if the host allows it, else seeds
)

func (m netMode) String() string {
	return [...]string{"mem-multicast", "mem-seeds", "udp"}[m]
}

// cluster is a set of agents of one test.
type cluster struct {
	t         *testing.T
	mode      netMode
	nw        *memnet.Network // in-memory modes
	base      string          // parent of the data dirs
	multicast string          // udpLoopback: the group, "" for seeds
	timing    invitation.Timing
	key       []byte // shared key of the nodes start starts
	log       zerolog.Logger
	seeds     []string
	mu        sync.Mutex
	nodes     map[wire.NodeID]*testNode
	tweak     func(*Config) // edits every node's configuration, if set
}

// testNode is one running agent and what it reported.
type testNode struct {
	id     wire.NodeID
	dir    string
	a      *Agent
	cancel context.CancelFunc
	runErr chan error

	mu     sync.Mutex
	events []Event
}

func newCluster(t *testing.T, mode netMode) *cluster {
	timing := invitation.FastTiming()
	if os.Getenv("GROUPD_TEST_PROFILE") == ProfileLAN {
		timing = invitation.DefaultTiming() // slower; for checking the lan tuning
	}
	c := &cluster{
		t:      t,
		mode:   mode,
		base:   t.TempDir(), // before stopAll: cleanups run last-in first-out
		timing: timing,
		log:    newTestLogger(t),
		nodes:  make(map[wire.NodeID]*testNode),
	}
	switch mode {
	case memMulticast, memSeeds:
		c.nw = memnet.New(uint64(time.Now().UnixNano()))
	case udpLoopback:
		if loopbackMulticast() {
			port, err := freeUDPPort()
			if err != nil {
				t.Fatal(err)
			}
			c.multicast = net.JoinHostPort(randomGroup().String(), fmt.Sprint(port))
		}
	}
	t.Cleanup(c.stopAll)
	return c
}

// hostIP is node id's address on the in-memory network.
func hostIP(id wire.NodeID) string { return fmt.Sprintf("10.%d.%d.%d", id>>16&255, id>>8&255, id&255) }

// config returns the configuration of node id on data dir dir.
func (c *cluster) config(id wire.NodeID, dir string) Config { return c.configAt(id, dir, hostIP(id)) }

// configAt returns the configuration of node id on data dir dir, at
// address ip on the in-memory network.
func (c *cluster) configAt(id wire.NodeID, dir, ip string) Config {
	cfg := DefaultFastConfig()
	cfg.ID = id
	cfg.Name = fmt.Sprintf("n%d", id)
	cfg.Bind = "127.0.0.1"
	cfg.Port = 0
	cfg.GossipPort = 0
	cfg.API = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.Timing = c.timing
	cfg.Logger = c.log
	cfg.Key = c.key
	seeds := false
	switch c.mode {
	case memMulticast, memSeeds:
		h := c.nw.Host(ip)
		if c.mode == memSeeds {
			cfg.Transport = h.WireUnicast(7950)
			seeds = true
		} else {
			cfg.Transport = h.Wire(7950)
		}
		cfg.GossipTransport = h.Gossip(7951)
		cfg.Multicast = "off"
		cfg.API = ""
	case udpLoopback:
		if c.multicast != "" {
			cfg.Multicast = c.multicast
		} else {
			cfg.Multicast = "off"
			seeds = true
		}
	}
	if seeds {
		c.mu.Lock()
		cfg.Join = slices.Clone(c.seeds)
		c.mu.Unlock()
	}
	if c.tweak != nil {
		c.tweak(&cfg)
	}
	return cfg
}

// start starts node id on dir (a new temp dir if "").
func (c *cluster) start(id wire.NodeID, dir string) *testNode {
	c.t.Helper()
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp(c.base, fmt.Sprintf("node%d-", id)); err != nil {
			c.t.Fatal(err)
		}
	}
	a, err := New(c.config(id, dir))
	if err != nil {
		c.t.Fatalf("New(%d): %v", id, err)
	}
	return c.run(a, dir)
}

func (c *cluster) run(a *Agent, dir string) *testNode {
	ctx, cancel := context.WithCancel(context.Background())
	n := &testNode{id: a.ID(), dir: dir, a: a, cancel: cancel, runErr: make(chan error, 1)}
	events, _ := a.Subscribe()
	go func() {
		for e := range events {
			n.mu.Lock()
			n.events = append(n.events, e)
			n.mu.Unlock()
		}
	}()
	go func() { n.runErr <- a.Run(ctx) }()
	c.mu.Lock()
	c.nodes[n.id] = n
	if len(c.seeds) < 2 {
		// The first two nodes are everyone's seeds; memberlist
		// spreads the rest.
		c.seeds = append(c.seeds, a.Addrs().Gossip)
	}
	c.mu.Unlock()
	return n
}

// stop stops node id gracefully and waits for Run to return.
func (c *cluster) stop(id wire.NodeID) time.Duration {
	c.t.Helper()
	c.mu.Lock()
	n := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	start := time.Now()
	n.cancel()
	select {
	case err := <-n.runErr:
		if err != nil {
			c.t.Errorf("Run(%d): %v", id, err)
		}
	case <-time.After(5 * time.Second):
		c.t.Fatalf("Run(%d) did not return 5s after cancel", id)
	}
	took := time.Since(start)
	if took > 2*time.Second {
		c.t.Errorf("Run(%d) returned %v after cancel, over 2s", id, took)
	}
	return took
}

// crash stops node id abruptly (no Leave, no leader-stop).
func (c *cluster) crash(id wire.NodeID) {
	c.t.Helper()
	c.mu.Lock()
	n := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	n.a.Kill()
	n.cancel()
	<-n.runErr
}

func (c *cluster) stopAll() {
	c.mu.Lock()
	ids := make([]wire.NodeID, 0, len(c.nodes))
	for id := range c.nodes {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() { defer wg.Done(); c.stop(id) }()
	}
	wg.Wait()
}

func (c *cluster) live() []*testNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*testNode, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *testNode) int { return int(a.id) - int(b.id) })
	return out
}

func (c *cluster) node(id wire.NodeID) *testNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// converged reports whether the live nodes satisfy L1's condition (the
// one predicate, invariant.Converged: Normal in one group coordinated by
// the highest-ranked, listing exactly them); if not, it says why.
func (c *cluster) converged() (wire.GroupNumber, string) {
	nodes := c.live()
	if len(nodes) == 0 {
		return wire.GroupNumber{}, "no nodes"
	}
	views := make([]Status, len(nodes))
	for i, n := range nodes {
		views[i] = n.a.Status()
	}
	sts := history.Views(views)
	if vs := invariant.Converged(time.Now(), sts); len(vs) > 0 {
		return sts[0].Group, vs[0].Detail
	}
	return sts[0].Group, ""
}

// stableFor is how long a convergence must last for waitConverged to
// accept it: longer than a participant's failure detection
// (AliveInterval+AliveTimeout), so that a transient agreement that is about
// to fall apart is not taken for the result.
func (c *cluster) stableFor() time.Duration {
	return max(2*(c.timing.AliveInterval+c.timing.AliveTimeout), 500*time.Millisecond)
}

// waitConverged polls until the live nodes have converged and stayed so
// for stableFor, or fails the test after within. It returns the group and
// when the lasting convergence was first seen.
func (c *cluster) waitConverged(within time.Duration) (wire.GroupNumber, time.Time) {
	c.t.Helper()
	deadline := time.Now().Add(within + c.stableFor())
	var first time.Time
	var firstG wire.GroupNumber
	why := ""
	for time.Now().Before(deadline) {
		g, w := c.converged()
		now := time.Now()
		why = w
		switch {
		case w != "":
			first = time.Time{}
		case first.IsZero() || g != firstG:
			first, firstG = now, g
		case now.Sub(first) >= c.stableFor():
			return firstG, first
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("not converged within %v: %s", within, why)
	return wire.GroupNumber{}, time.Time{}
}

// waitGossip polls until every live node's Members lists every live node
// as alive in memberlist and in its group.
func (c *cluster) waitGossip(within time.Duration) {
	c.t.Helper()
	nodes := c.live()
	deadline := time.Now().Add(within)
	for {
		why := ""
		for _, n := range nodes {
			alive := 0
			for _, m := range n.a.Members() {
				if m.Gossip == GossipAlive && m.InGroup {
					alive++
				}
			}
			if alive != len(nodes) {
				why = fmt.Sprintf("node %d lists %+v", n.id, n.a.Members())
				break
			}
		}
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("memberlist incomplete after %v: %s", within, why)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// eventsOf returns a copy of node n's events.
func (n *testNode) eventsOf() []Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.events)
}

// maxSeenSeq returns the highest group sequence in node n's events.
func (n *testNode) maxSeenSeq() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var m uint64
	for _, e := range n.events {
		m = max(m, e.New.Group.Seq)
	}
	return m
}

// createdSeqs returns the sequence numbers of the groups node n created
// (its own numbers, seq.n), as its events reported them.
func (n *testNode) createdSeqs() []uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	seen := map[uint64]bool{}
	var out []uint64
	for _, e := range n.events {
		if g := e.New.Group; g.ID == n.id && !seen[g.Seq] {
			seen[g.Seq] = true
			out = append(out, g.Seq)
		}
	}
	slices.Sort(out)
	return out
}

// TestMain raises the default test parallelism (GOMAXPROCS, 2 on a small
// machine) unless -parallel was given: the cluster tests spend their time
// waiting on protocol timers, not on the CPU, and run in seconds side by
// side rather than one pair at a time. It ends by saying which test
// skipped for want of root.
func TestMain(m *testing.M) {
	flag.Parse()
	// Sixteen at a time: more (24, 32, 64 were tried) finish a few
	// seconds sooner on a quiet machine, but under a load of 15-30 (the
	// rest of go test ./..., other runs on the host) so many agents start
	// at once that their timers fire late and clusters fail to converge
	// within their bounds; 16 passed there.
	if f := flag.Lookup("test.parallel"); f != nil && !flagSet("test.parallel") {
		_ = f.Value.Set("16")
	}
	code := m.Run()
	if why := notRoot.Load(); why != nil {
		fmt.Printf("group: 1 test skipped, not root (%s); as root, go test ./group/ runs it\n", why)
	}
	os.Exit(code)
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
