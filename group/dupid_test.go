package group

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// probeSink collects the wire messages another process with the agent's
// ID would receive at 10.9.9.9:7950 on the cluster's memnet.
type probeSink struct {
	mu   sync.Mutex
	msgs []wire.Message
}

func newProbeSink(t *testing.T, c *cluster) (*probeSink, *net.UDPAddr) {
	s := &probeSink{}
	w := c.nw.Host("10.9.9.9").WireUnicast(7950)
	w.Start(func(pkt []byte, _ *net.UDPAddr, _ bool) {
		m, err := wire.Decode(pkt)
		if err != nil {
			t.Errorf("a probe does not decode: %v", err)
			return
		}
		s.mu.Lock()
		s.msgs = append(s.msgs, m)
		s.mu.Unlock()
	})
	t.Cleanup(func() { w.Close() })
	return s, w.Addr()
}

// count waits for in-flight datagrams (memnet delivers asynchronously) and
// returns how many arrived.
func (s *probeSink) count() int {
	time.Sleep(20 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

// TestDuplicateProbes: the probes of dupid.go, on an agent that is not
// run (the loop's calls made by hand, at made-up times). A conflict report
// starts a burst of probeBurst Hellos, AnswerTimeout apart, each with the
// header of the machine's last message (its settled flag) but not its
// broadcast flag; a report within BeaconInterval of the burst's start
// starts none, a later one does; a packet of the other process stops the
// burst and is answered at once, at most once per AnswerTimeout; and a
// forged flood of reports is remembered for maxDupTargets addresses only.
func TestDuplicateProbes(t *testing.T) {
	c := newCluster(t, memSeeds)
	a, err := New(c.config(5, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	sink, to := newProbeSink(t, c)
	at, bi := c.timing.AnswerTimeout, c.timing.BeaconInterval

	t0 := time.Unix(1000, 0)
	a.probeConflict(to, t0)
	a.tendDuplicate(t0)
	if n := sink.count(); n != 0 {
		t.Fatalf("%d probes before the machine sent anything: there is no header to send", n)
	}
	hdr := wire.Header{Version: wire.Version, Type: wire.TypeBeacon, From: 5, Priority: 100, Boot: a.boot,
		Flags: wire.FlagSettled | wire.FlagBroadcast, Group: wire.GroupNumber{Seq: 77, ID: 5}, State: wire.StateNormal}
	a.observeOutput(t0, nil, invitation.Output{Messages: []wire.Envelope{{To: wire.Broadcast, Msg: wire.Message{Header: hdr, Body: wire.Beacon{}}}}})
	a.dup.targets = nil // start again, with a header

	a.probeConflict(to, t0)
	for _, d := range []time.Duration{0, at / 2, at, at + at/2, 2 * at, 3 * at, 4 * at} {
		a.tendDuplicate(t0.Add(d))
	}
	if n := sink.count(); n != probeBurst {
		t.Fatalf("a burst sent %d probes, want %d", n, probeBurst)
	}
	sink.mu.Lock()
	m := sink.msgs[0]
	sink.mu.Unlock()
	if _, ok := m.Body.(wire.Hello); !ok || m.From != 5 || m.Boot != a.boot || m.Group != hdr.Group || m.State != hdr.State ||
		m.Flags&wire.FlagSettled == 0 || m.Flags&wire.FlagBroadcast != 0 {
		t.Errorf("the probe is %s (flags %b), want a Hello with the machine's header, settled, not broadcast", m, m.Flags)
	}

	a.probeConflict(to, t0.Add(bi-time.Millisecond)) // memberlist repeats itself
	a.tendDuplicate(t0.Add(bi))
	if n := sink.count(); n != probeBurst {
		t.Fatalf("a report within BeaconInterval started a burst: %d probes", n)
	}
	t1 := t0.Add(2 * bi)
	a.probeConflict(to, t1)
	a.tendDuplicate(t1)
	if n := sink.count(); n != probeBurst+1 {
		t.Fatalf("a report BeaconInterval later: %d probes in all, want %d", n, probeBurst+1)
	}
	// The other process answers: no more probes of the burst; the
	// answer to it goes at once, but not twice within AnswerTimeout.
	a.noteDuplicate(0xbeef, to, t1.Add(at))
	a.noteDuplicate(0xbeef, to, t1.Add(at+at/2))
	for _, d := range []time.Duration{2 * at, 3 * at, 4 * at} {
		a.tendDuplicate(t1.Add(d))
	}
	if n := sink.count(); n != probeBurst+2 {
		t.Fatalf("after the other process's packets: %d probes in all, want %d (one answer, the burst stopped)", n, probeBurst+2)
	}
	a.noteDuplicate(0xbeef, to, t1.Add(5*at))
	if n := sink.count(); n != probeBurst+3 {
		t.Fatalf("a packet AnswerTimeout later is not answered: %d probes in all", n)
	}

	for i := range 3 * maxDupTargets {
		a.probeConflict(&net.UDPAddr{IP: net.IPv4(10, 66, 0, byte(i)), Port: 7950}, t1.Add(time.Duration(i)*time.Millisecond))
	}
	if n := len(a.dup.targets); n != maxDupTargets {
		t.Errorf("%d addresses remembered after a flood of reports, want %d", n, maxDupTargets)
	}
	// Forgotten once their bursts are sent and they were idle for
	// MemberTimeout.
	for k := range probeBurst + 1 {
		a.tendDuplicate(t1.Add(time.Duration(k+1) * time.Hour))
	}
	if n := len(a.dup.targets); n != 0 {
		t.Errorf("%d addresses remembered after an hour of silence", n)
	}
}

// TestDuplicateConflictReport: memberlist's conflict report for this
// node's own name queues a probe of the other process's wire port (its
// meta's) for the loop; one without a wire port in its meta, or about
// another node's name, queues nothing.
func TestDuplicateConflictReport(t *testing.T) {
	c := newCluster(t, memSeeds)
	a, err := New(c.config(5, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	d := gossipDelegate{a}
	self := &memberlist.Node{Name: "5", Addr: net.IPv4(10, 0, 0, 5), Port: 7951}
	meta := encodeMeta(nodeMeta{Priority: 100, Port: 7960, State: wire.StateElection})
	d.NotifyConflict(self, &memberlist.Node{Name: "5", Addr: net.IPv4(10, 9, 9, 9), Port: 7951, Meta: meta})
	d.NotifyConflict(self, &memberlist.Node{Name: "5", Addr: net.IPv4(10, 9, 9, 8), Port: 7951})
	d.NotifyConflict(&memberlist.Node{Name: "6", Addr: net.IPv4(10, 0, 0, 6), Port: 7951},
		&memberlist.Node{Name: "6", Addr: net.IPv4(10, 9, 9, 7), Port: 7951, Meta: meta})
	select {
	case ev := <-a.gossipCh:
		if ev.probe == nil || ev.probe.String() != "10.9.9.9:7960" || ev.id != 5 {
			t.Errorf("queued %+v, want a probe of 10.9.9.9:7960", ev)
		}
	default:
		t.Fatal("nothing queued for the loop")
	}
	select {
	case ev := <-a.gossipCh:
		t.Errorf("also queued %+v", ev)
	default:
	}
}

// TestDuplicateIDSeedsAlone is issue 33's case: without multicast, a node
// with ID 5 leads alone; a second process with ID 5 joins it (--join its
// gossip address). Memberlist reports the conflict on both; the second
// process's Run returns ErrDuplicateID within a boot window or two (it
// never coordinates), and the first keeps leading under its term and
// shows the duplicate in its status. Before, both led, under different
// terms, and the second's Run never returned.
func TestDuplicateIDSeedsAlone(t *testing.T) {
	t.Parallel()
	c := newCluster(t, memSeeds)
	first := c.start(5, "").a
	c.waitConverged(convergeBound(c))
	term := first.Status().Term
	flaps := watchLeadership(first)
	cfg := c.configAt(5, t.TempDir(), "10.9.9.9")
	cfg.Join = []string{first.Addrs().Gossip}
	second, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	events, _ := second.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- second.Run(ctx) }()
	select {
	case err := <-done:
		t.Logf("the second process gave way after %v", time.Since(start))
		if !errors.Is(err, ErrDuplicateID) {
			t.Errorf("Run = %v, want ErrDuplicateID", err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("gave way after %v, want within 3 s", took)
		}
	case <-time.After(10 * time.Second):
		st := second.Status()
		cancel()
		<-done
		t.Fatalf("the second process still ran after 10 s: %s; the first: %s", st, first.Status())
	}
	for e := range events {
		if e.New.Role == Coordinator || !e.New.Group.IsZero() {
			t.Errorf("the second process was in group %s (%s)", e.New.Group, e.New.Role)
		}
	}
	time.Sleep(c.stableFor())
	if f := flaps(); len(f) > 0 {
		t.Errorf("the first process stopped leading: %q", f)
	}
	st := first.Status()
	if st.Term != term {
		t.Errorf("the first process's term went from %s to %s", term, st.Term)
	}
	if st.DuplicateID == nil || st.DuplicateID.Addr != "10.9.9.9:7950" {
		t.Errorf("the first process's status shows %+v, want the duplicate at 10.9.9.9:7950", st.DuplicateID)
	}
}

// TestPeerBookDuplicateRoute: a process without a group (booting: a
// second process with a node's ID, before it gives way) does not become
// the route to the ID while another process holds it: the one whose
// packets arrived, or, before any did, the one memberlist lists as alive
// at its meta's wire address (an idle participant, which the other
// participants know from memberlist alone). It is answered at its own
// address by boot. Nobody holding the ID, or the process at the meta's
// address (a restart in place), it takes the route; a process in a group
// always does.
func TestPeerBookDuplicateRoute(t *testing.T) {
	const first, second = 0xf1, 0x5ec
	meta := &nodeMeta{Priority: 100, Port: 7950, State: wire.StateNormal}
	dupSrc := udpAddr("10.9.9.9:7950")
	for _, tc := range []struct {
		name  string
		setup func(b *peerBook)
		src   *net.UDPAddr
		want  string // route(3, 0) after the booting packet
	}{
		{"heard in a group", func(b *peerBook) {
			b.noteUDP(3, 100, first, true, kindOther, udpAddr("10.0.0.3:7950"), false, time.Now())
		}, dupSrc, "10.0.0.3:7950"},
		{"alive in memberlist only", func(b *peerBook) {
			b.noteGossip(3, GossipAlive, "10.0.0.3:7951", net.IPv4(10, 0, 0, 3), meta, time.Now())
		}, dupSrc, "10.0.0.3:7950"},
		{"restart in place", func(b *peerBook) {
			b.noteGossip(3, GossipAlive, "10.0.0.3:7951", net.IPv4(10, 0, 0, 3), meta, time.Now())
		}, udpAddr("10.0.0.3:7950"), "10.0.0.3:7950"},
		{"dead in memberlist", func(b *peerBook) {
			b.noteGossip(3, GossipDead, "10.0.0.3:7951", net.IPv4(10, 0, 0, 3), meta, time.Now())
		}, dupSrc, "10.9.9.9:7950"},
		{"unknown", func(*peerBook) {}, dupSrc, "10.9.9.9:7950"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newPeerBook(1)
			tc.setup(b)
			b.noteUDP(3, 100, second, false, kindBeacon, tc.src, false, time.Now())
			if got := b.route(3, 0); got == nil || got.String() != tc.want {
				t.Errorf("route(3) = %v, want %s", got, tc.want)
			}
			if got := b.route(3, second); got == nil || got.String() != tc.src.String() {
				t.Errorf("route(3, the booting process) = %v, want %v", got, tc.src)
			}
			// In a group, it owns the route.
			b.noteUDP(3, 100, second, true, kindOther, tc.src, false, time.Now())
			if got := b.route(3, 0); got == nil || got.String() != tc.src.String() {
				t.Errorf("after a packet of it in a group: route(3) = %v, want %v", got, tc.src)
			}
		})
	}
}
