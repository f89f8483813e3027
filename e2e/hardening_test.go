//go:build linux

package e2e

// Issue 7 (hardening) on the lab: rogue nodes, replayed packets, a packet
// fuzzer (fuzz_test.go) and the chaos soak (chaos_test.go). The daemons
// are keyed through their environment (GROUPD_KEY_FILE, GROUPD_PRIORITY,
// which `groupd run` reads like its flags), set per node with
// lab.Options; the attackers are this test process itself, with sockets
// created inside a lab namespace (Lab.Do), so that their packets come from
// a lab address like any node's.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/wire"
)

// Ports of a lab daemon (the defaults).
const (
	wirePort   = group.DefaultPort
	gossipPort = group.DefaultPort + 1
)

var mcastAddr = func() *net.UDPAddr {
	a, err := net.ResolveUDPAddr("udp4", group.DefaultMulticast)
	if err != nil {
		panic(err)
	}
	return a
}()

// newKey returns a random key and a file holding it.
func newKey(t *testing.T) ([]byte, string) {
	t.Helper()
	key := make([]byte, wire.KeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return key, path
}

// udpIn opens a UDP socket in node i's namespace bound to ip (any port).
func udpIn(t *testing.T, l *tlab, i int, ip netip.Addr) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := l.Do(i, func() error {
		var err error
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: ip.AsSlice()})
		if err != nil {
			return err
		}
		// Multicast goes out of eth0 with TTL 1 (the route 224/4 dev
		// eth0 picks the interface; be explicit anyway).
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		p := ipv4.NewPacketConn(c)
		if err := p.SetMulticastInterface(ifi); err != nil {
			return err
		}
		return p.SetMulticastTTL(1)
	})
	if err != nil {
		t.Fatalf("socket in %s: %v", l.NS(i), err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// addAddrs gives node i's eth0 count more addresses, from the subnet's
// first-th on: more source addresses for an attacker.
func (l *tlab) addAddrs(t *testing.T, i, first, count int) []netip.Addr {
	t.Helper()
	out, err := l.AddAddrs(i, first, count)
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	return out
}

// metricFamily returns the samples of one metric of node i's /metrics, by
// the value of label ("" for an unlabelled metric).
func (l *tlab) metricFamily(i int, name, label string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fams, err := l.Client(i).Metrics(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range fams[name].GetMetric() {
		key := ""
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				key = lp.GetValue()
			}
		}
		switch {
		case m.GetCounter() != nil:
			out[key] += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			out[key] += m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			out[key] += m.GetUntyped().GetValue()
		}
	}
	return out, nil
}

// drops returns node i's groupd_dropped_packets_total by reason.
func (l *tlab) drops(i int) map[string]float64 {
	l.t.Helper()
	m, err := l.metricFamily(i, "groupd_dropped_packets_total", "reason")
	if err != nil {
		l.t.Fatalf("node %d: /metrics: %v", i, err)
	}
	return m
}

func diff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func formatCounts(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.0f", k, m[k])
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// pid returns the pid of node i's daemon.
func (l *tlab) pid(i int) int {
	l.t.Helper()
	pid, err := l.PID(i)
	if err != nil {
		l.t.Fatalf("e2e: %v; log:\n%s", err, l.LogTail(i, 20))
	}
	return pid
}

// rssKB reads VmRSS of pid from /proc, in KiB.
func rssKB(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				return strconv.Atoi(f[0])
			}
		}
	}
	return 0, errors.New("no VmRSS")
}

// logSize is the size of a daemon log: lines appended after it was taken
// are counted by logLinesSince.
func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logLinesSince returns the lines logged to path after offset.
func logLinesSince(path string, off int64) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil
	}
	b, _ := io.ReadAll(f)
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// stableGroups asserts that each node of ids stayed in the group of its
// view in before over [from, to): its recorded events show no other group
// and no member but ids, and its view now is the same group, coordinator
// and members.
func (l *tlab) stableGroups(what string, ids []int, before map[int]group.Status, from, to time.Time) {
	t := l.t
	t.Helper()
	h, err := l.History()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ids {
		want := before[i]
		gs := h.Groups(wire.NodeID(i), from, to)
		for _, g := range gs {
			if g != want.Group {
				t.Errorf("%s: node %d changed group: %v during the attack (was %s)", what, i, gs, want.Group)
				break
			}
		}
		now, err := l.Status(i)
		if err != nil {
			t.Errorf("%s: node %d: %v", what, i, err)
			continue
		}
		if now.Group != want.Group || now.Coordinator != want.Coordinator || !slices.Equal(now.Members, want.Members) || now.State != wire.StateNormal {
			t.Errorf("%s: node %d is now %s, was %s", what, i, now, want)
		}
	}
	for _, ev := range h.Events(from, to) {
		if !slices.Contains(ids, int(ev.Node)) {
			continue
		}
		for _, m := range ev.New.Members {
			if !slices.Contains(ids, int(m)) {
				t.Errorf("%s: node %d listed member %d: %s", what, ev.Node, m, ev)
			}
		}
	}
}

// noStrangers asserts that nodes ids do not know any of strangers: not in
// memberlist, not in their address book, not in their group.
func (l *tlab) noStrangers(ids []int, strangers []wire.NodeID) {
	t := l.t
	t.Helper()
	for _, i := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ms, err := l.Client(i).Members(ctx)
		cancel()
		if err != nil {
			t.Errorf("node %d: /v1/members: %v", i, err)
			continue
		}
		for _, m := range ms {
			if slices.Contains(strangers, m.ID) {
				t.Errorf("node %d knows the rogue node %d: %+v", i, m.ID, m)
			}
		}
	}
}

// rogueMsg encodes a message from node from (priority prio, group g in
// state st), with counter ctr.
func rogueMsg(t *testing.T, from wire.NodeID, prio uint8, g wire.GroupNumber, st wire.State, ctr uint64, body wire.Body) []byte {
	t.Helper()
	b, err := wire.Encode(wire.Message{Header: wire.Header{From: from, Priority: prio,
		Boot: uint64(time.Now().UnixNano()), Counter: ctr, Group: g, State: st}, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRogueNodes: nodes 1-3 share a key. Three rogues, each with the
// highest ID around and priority 255, try to take over for 15 s: node 4 is
// a real groupd with a wrong key, node 5 a real groupd without a key (both
// beacon, ask AreYouCoordinator, invite, and try to join memberlist), and
// the test process in namespace 6 sends crafted packets without a key and
// with the wrong key, unicast and multicast: beacons, AreYouCoordinator,
// Yes, Invitations, Accepts, AreYouThere, bully messages, and Ready
// messages forged in the name of node 3, the real coordinator, that list
// the rogue as a member. The keyed nodes must not change group at all,
// must not list any rogue anywhere, and must count the packets as "auth"
// drops.
//
// Like the other attacks (TestReplayCaptured, TestFuzzPackets) it runs
// alone, before the tests that run side by side: it asserts that no group
// changes at all, and on a machine loaded by a dozen labs a failure
// detector starved of CPU would change one for reasons of its own.
func TestRogueNodes(t *testing.T) {
	l := newLab(t, 6, "lan")
	_, good := newKey(t)
	_, wrongPath := newKey(t)
	wrongKey, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(readFile(t, wrongPath)))
	keyed := []int{1, 2, 3}
	l.startWith(lab.Options{Env: []string{"GROUPD_KEY_FILE=" + good, "GROUPD_PRIORITY=100"}}, keyed...)
	before, _ := l.waitFor("keyed nodes 1-3 converge", keyed, 60*time.Second, lab.Converged(keyed))
	G := before[1].Group
	t.Logf("keyed nodes 1-3 in group %s (coordinator %d)", G, before[1].Coordinator)

	// The rogue daemons: highest IDs of the lab, highest priority.
	l.startWith(lab.Options{Env: []string{"GROUPD_KEY_FILE=" + wrongPath, "GROUPD_PRIORITY=255"}}, 4)
	l.startWith(lab.Options{Env: []string{"GROUPD_KEY_FILE=", "GROUPD_PRIORITY=255"}}, 5)

	dropsBefore := map[int]map[string]float64{}
	for _, i := range keyed {
		dropsBefore[i] = l.drops(i)
	}
	from := time.Now()

	// The crafted packets, from namespace 6.
	const rogueID = wire.NodeID(1<<53 - 1)
	rg := wire.GroupNumber{Seq: 1 << 40, ID: rogueID}
	conn := udpIn(t, l, 6, l.Addr(6))
	wrong, err := wire.NewSealer(wrongKey)
	if err != nil {
		t.Fatal(err)
	}
	rogueAddr := net.JoinHostPort(l.Addr(6).String(), strconv.Itoa(gossipPort))
	var ctr uint64
	next := func() uint64 { ctr++; return ctr }
	packets := func(to int) [][]byte {
		v := before[to].Version
		fromRogue := []wire.Body{
			wire.Beacon{Addr: rogueAddr},
			wire.AreYouCoordinator{},
			wire.Yes{Query: wire.TypeAreYouCoordinator, Version: 1},
			wire.Invitation{Group: rg},
			wire.Ready{Group: rg, Version: 1, Total: 2, Members: []wire.Member{{ID: wire.NodeID(to), Priority: 100}, {ID: rogueID, Priority: 255}}},
			wire.Accept{Group: G},
			wire.AreYouThere{Group: G},
			wire.Election{Group: G},
			wire.Answer{Group: G},
			wire.Coordinator{Group: rg},
		}
		var out [][]byte
		for _, b := range fromRogue {
			out = append(out, rogueMsg(t, rogueID, 255, rg, wire.StateNormal, next(), b))
		}
		// Forged in the name of the real coordinator: a new member
		// list with the rogue in it, and an invitation to the
		// rogue's group.
		members := []wire.Member{{ID: 1, Priority: 100}, {ID: 2, Priority: 100}, {ID: 3, Priority: 100}, {ID: rogueID, Priority: 255}}
		out = append(out,
			rogueMsg(t, G.ID, 100, G, wire.StateNormal, 1<<62+next(), wire.Ready{Group: G, Version: v + 1, Total: 4, Members: members}),
			rogueMsg(t, G.ID, 100, G, wire.StateNormal, 1<<62+next(), wire.Invitation{Group: rg}),
			rogueMsg(t, G.ID, 100, G, wire.StateNormal, 1<<62+next(), wire.No{Query: wire.TypeAreYouThere}))
		// Each also sealed with the wrong key, for the target and for
		// everyone.
		n := len(out)
		for _, p := range out[:n] {
			for _, dst := range []wire.NodeID{wire.NodeID(to), wire.Broadcast} {
				s, err := wrong.SealTo(nil, p, dst)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
		return out
	}
	const attack = 15 * time.Second
	sent := 0
	for time.Since(from) < attack {
		for _, i := range keyed {
			dst := &net.UDPAddr{IP: l.Addr(i).AsSlice(), Port: wirePort}
			for _, p := range packets(i) {
				if _, err := conn.WriteToUDP(p, dst); err == nil {
					sent++
				}
			}
		}
		for _, p := range packets(int(G.ID))[:2] { // beacon and AreYouCoordinator
			if _, err := conn.WriteToUDP(p, mcastAddr); err == nil {
				sent++
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // let late effects show
	to := time.Now()
	t.Logf("rogues: %d crafted packets in %v (about %.0f/s), plus rogue daemons 4 (wrong key) and 5 (no key), priority 255",
		sent, attack, float64(sent)/attack.Seconds())

	l.stableGroups("rogues", keyed, before, from, to)
	l.noStrangers(keyed, []wire.NodeID{4, 5, rogueID})
	for _, i := range keyed {
		d := diff(l.drops(i), dropsBefore[i])
		t.Logf("node %d dropped during the attack: %s", i, formatCounts(d))
		if d["auth"] == 0 {
			t.Errorf("node %d counted no unauthenticated packet", i)
		}
	}
	for _, i := range []int{4, 5} {
		if s, err := l.Status(i); err == nil {
			t.Logf("rogue daemon %d: %s", i, s)
			if slices.ContainsFunc(s.Members, func(id wire.NodeID) bool { return id <= 3 }) {
				t.Errorf("rogue daemon %d lists a keyed node: %s", i, s)
			}
		}
	}
}

// TestReplayCaptured: an attacker with a tap on the LAN (AF_PACKET on the
// root side of every keyed node's veth) records the sealed traffic of
// nodes 1-3 while they fail over and merge (the coordinator restarted, a
// participant killed and restarted, so the recording holds beacons,
// AreYouCoordinator, Yes, Invitations, Accepts, Readys, ReadyAcks and
// bully messages of old and current incarnations). Then, from namespace 4,
// it replays every recorded wire packet to every node's wire port and to
// the multicast group, and the recorded memberlist datagrams to every
// node's memberlist port. No group may change: the replay window drops
// what a node has seen, or that is older than the window or than the
// sender's incarnation, and packets sealed for another node do not open.
//
// It runs alone, as TestRogueNodes does.
func TestReplayCaptured(t *testing.T) {
	l := newLab(t, 4, "lan")
	goodKey, good := newKey(t)
	keyed := []int{1, 2, 3}
	l.startWith(lab.Options{Env: []string{"GROUPD_KEY_FILE=" + good, "GROUPD_PRIORITY=100"}}, keyed...)
	l.waitFor("keyed nodes converge", keyed, 60*time.Second, lab.Converged(keyed))

	var caps []*capture
	for _, i := range keyed {
		c, err := startCapture(l.Veth(i))
		if err != nil {
			t.Skipf("cannot capture on %s (AF_PACKET): %v", l.Veth(i), err)
		}
		caps = append(caps, c)
	}
	// Traffic worth recording: a coordinator that leaves and comes back,
	// a participant killed and restarted (each with its key: a node keeps
	// its options).
	l.restart(3, false)
	l.waitFor("converge after restarting 3", keyed, 60*time.Second, lab.Converged(keyed))
	l.restart(1, true)
	l.waitFor("converge after kill -9 and restart of 1", keyed, 60*time.Second, lab.Converged(keyed))
	time.Sleep(2 * time.Second) // some steady-state traffic too
	var rec []captured
	seen := map[string]bool{}
	for _, c := range caps {
		for _, p := range c.stop() {
			if !seen[string(p.payload)] {
				seen[string(p.payload)] = true
				rec = append(rec, p)
			}
		}
	}
	var wirePkts, mlPkts [][]byte
	for _, p := range rec {
		switch p.dport {
		case wirePort, mcastAddr.Port:
			wirePkts = append(wirePkts, p.payload)
		case gossipPort:
			mlPkts = append(mlPkts, p.payload)
		}
	}
	kinds, senders := census(t, goodKey, wirePkts)
	t.Logf("recorded %d distinct wire packets (%s) and %d memberlist datagrams",
		len(wirePkts), kinds, len(mlPkts))
	if len(wirePkts) < 50 {
		t.Fatalf("recorded only %d wire packets", len(wirePkts))
	}

	before, _ := l.waitFor("keyed nodes converged before the replay", keyed, 30*time.Second, lab.Converged(keyed))
	dropsBefore := map[int]map[string]float64{}
	recvBefore := map[int]map[string]float64{}
	for _, i := range keyed {
		dropsBefore[i] = l.drops(i)
		recvBefore[i], _ = l.metricFamily(i, "groupd_messages_received_total", "type")
	}
	// Four source addresses, each under the per-source rate limit (500/s):
	// the replayed packets must reach the replay window, not be turned
	// away by the limiter.
	srcs := l.addAddrs(t, 4, 200, 4)
	var conns []*net.UDPConn
	for _, ip := range append(srcs, l.Addr(4)) {
		conns = append(conns, udpIn(t, l, 4, ip))
	}
	from := time.Now()
	sent := 0
	var wg sync.WaitGroup
	var mu sync.Mutex
	dsts := []*net.UDPAddr{mcastAddr}
	for _, i := range keyed {
		dsts = append(dsts, &net.UDPAddr{IP: l.Addr(i).AsSlice(), Port: wirePort})
	}
	for k, dst := range dsts {
		wg.Add(1)
		go func(c *net.UDPConn, dst *net.UDPAddr) {
			defer wg.Done()
			tick := time.NewTicker(time.Second / 300) // 300/s per source
			defer tick.Stop()
			n := 0
			for _, p := range wirePkts {
				<-tick.C
				if _, err := c.WriteToUDP(p, dst); err == nil {
					n++
				}
			}
			mu.Lock()
			sent += n
			mu.Unlock()
		}(conns[k], dst)
	}
	wg.Wait()
	mlSent := 0
	for _, i := range keyed {
		dst := &net.UDPAddr{IP: l.Addr(i).AsSlice(), Port: gossipPort}
		for _, p := range mlPkts {
			if _, err := conns[4].WriteToUDP(p, dst); err == nil {
				mlSent++
			}
			time.Sleep(time.Millisecond)
		}
	}
	time.Sleep(3 * time.Second)
	to := time.Now()
	t.Logf("replayed %d wire packets (%d recorded × %d destinations) and %d memberlist datagrams in %.1fs",
		sent, len(wirePkts), len(dsts), mlSent, to.Sub(from).Seconds())
	l.stableGroups("replay", keyed, before, from, to)
	for _, i := range keyed {
		d := diff(l.drops(i), dropsBefore[i])
		r, _ := l.metricFamily(i, "groupd_messages_received_total", "type")
		t.Logf("node %d during the replay: dropped %s; accepted %s", i, formatCounts(d), formatCounts(diff(r, recvBefore[i])))
		if d["replay"] == 0 {
			t.Errorf("node %d dropped nothing as a replay", i)
		}
		// Every replayed packet reached node i twice (its wire port and
		// the multicast group); its own are ignored silently, all the
		// others must have been dropped, none accepted.
		if want := 2 * (len(wirePkts) - senders[wire.NodeID(i)]); d["replay"]+d["auth"] < float64(want) {
			t.Errorf("node %d dropped %v replayed packets (replay %v, auth %v), want at least %d: some were accepted",
				i, d["replay"]+d["auth"], d["replay"], d["auth"], want)
		}
		if d["rate_limited"] > 0 {
			t.Logf("node %d: %v replayed packets were rate-limited before reaching the replay window", i, d["rate_limited"])
		}
	}
}

// census opens the recorded packets with the key (the test knows it; the
// attacker does not need to) and counts them by type and destination, and
// by sender.
func census(t *testing.T, key []byte, pkts [][]byte) (string, map[wire.NodeID]int) {
	t.Helper()
	s, err := wire.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	senders := map[wire.NodeID]int{}
	for _, p := range pkts {
		what := "unopened"
		for _, to := range []wire.NodeID{wire.Broadcast, 1, 2, 3} {
			if plain, err := s.OpenFor(nil, p, to); err == nil {
				if m, err := wire.Decode(plain); err == nil {
					what = m.Body.Type().String()
					if to != wire.Broadcast {
						what += "→node"
					}
					senders[m.From]++
				}
				break
			}
		}
		counts[what]++
	}
	return formatCounts(counts), senders
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ---------------------------------------------------------------- capture

// captured is one recorded UDP datagram.
type captured struct {
	src, dst     net.IP
	sport, dport int
	payload      []byte
}

// capture records the UDP/IPv4 datagrams crossing one interface of the root
// namespace (both directions), with an AF_PACKET socket.
type capture struct {
	fd   int
	mu   sync.Mutex
	pkts []captured
	quit chan struct{}
	done chan struct{}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func startCapture(ifname string) (*capture, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100000}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	c := &capture{fd: fd, quit: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c, nil
}

func (c *capture) loop() {
	defer close(c.done)
	buf := make([]byte, 65536)
	for {
		select {
		case <-c.quit:
			return
		default:
		}
		n, _, err := unix.Recvfrom(c.fd, buf, 0)
		if err != nil {
			continue // timeout (EAGAIN) or EINTR
		}
		if p, ok := parseUDP(buf[:n]); ok {
			c.mu.Lock()
			c.pkts = append(c.pkts, p)
			c.mu.Unlock()
		}
	}
}

// stop ends the capture and returns what it recorded.
func (c *capture) stop() []captured {
	close(c.quit)
	<-c.done
	unix.Close(c.fd)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pkts
}

// parseUDP extracts an unfragmented UDP datagram from an IPv4 packet.
func parseUDP(b []byte) (captured, bool) {
	if len(b) < 20 || b[0]>>4 != 4 || b[9] != unix.IPPROTO_UDP {
		return captured{}, false
	}
	ihl := int(b[0]&0x0f) * 4
	if ihl < 20 || len(b) < ihl+8 || binary.BigEndian.Uint16(b[6:])&0x3fff != 0 { // MF or offset: a fragment
		return captured{}, false
	}
	u := b[ihl:]
	ulen := int(binary.BigEndian.Uint16(u[4:]))
	if ulen < 8 || ulen > len(u) {
		return captured{}, false
	}
	return captured{
		src: net.IP(slices.Clone(b[12:16])), dst: net.IP(slices.Clone(b[16:20])),
		sport: int(binary.BigEndian.Uint16(u[0:])), dport: int(binary.BigEndian.Uint16(u[2:])),
		payload: slices.Clone(u[8:ulen]),
	}, true
}
