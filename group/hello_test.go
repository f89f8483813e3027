package group

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// TestHelloPacer: the first copy of an episode prompts a Hello at once;
// each later one waits a pause that doubles up to helloMax; a copy long
// after the pause ended starts again at helloMin.
func TestHelloPacer(t *testing.T) {
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at   time.Duration // since t0
		want bool
	}{
		{0, true}, // first: at once, pause 1 s
		{250 * time.Millisecond, false},
		{time.Second, true}, // pause 2 s
		{2 * time.Second, false},
		{3 * time.Second, true}, // pause 4 s
		{6 * time.Second, false},
		{7 * time.Second, true},   // pause 8 s
		{15 * time.Second, true},  // pause 16 s
		{31 * time.Second, true},  // pause 32 s
		{63 * time.Second, true},  // pause 60 s (capped)
		{123 * time.Second, true}, // still 60 s
		{150 * time.Second, false},
		// Quiet: nothing prompted a Hello for over pause+helloMax.
		{123*time.Second + 2*helloMax, true}, // a new episode: pause 1 s
		{123*time.Second + 2*helloMax + 500*time.Millisecond, false},
		{123*time.Second + 2*helloMax + time.Second, true},
	}
	var h helloPacer
	for i, s := range steps {
		if got := h.due(t0.Add(s.at)); got != s.want {
			t.Fatalf("step %d (at %v): due = %v, want %v", i, s.at, got, s.want)
		}
	}
}

// TestPeerBookCopies: a packet heard both ways, in either order, is a
// copy; one heard once, or two packets with different counters, are not.
// A Hello marks the boot as heard over multicast, so broadcasts stop
// being copied to it.
func TestPeerBookCopies(t *testing.T) {
	b := newPeerBook(1)
	const boot = 0xb007
	if b.noteCopy(2, boot, 10, true) {
		t.Fatal("first arrival reported as a copy")
	}
	if !b.noteCopy(2, boot, 10, false) {
		t.Fatal("unicast after multicast of one packet not reported")
	}
	if b.noteCopy(2, boot, 11, false) || !b.noteCopy(2, boot, 11, true) {
		t.Fatal("multicast after unicast of one packet not reported, or unicast alone reported")
	}
	if b.noteCopy(2, boot, 12, false) || b.noteCopy(2, boot, 13, true) || b.noteCopy(2, boot+1, 12, true) {
		t.Fatal("different packets reported as a copy")
	}

	src := udpAddr("10.0.0.2:7947")
	b.noteUDP(2, 100, boot, true, kindOther, src, false, time.Now())
	b.noteGossip(2, GossipAlive, "10.0.0.2:7946", nil, nil, time.Now())
	if got := b.unicastBroadcastTargets(true); len(got) != 1 {
		t.Fatalf("before the Hello: copies to %v, want one", got)
	}
	b.noteHello(2, boot)
	if got := b.unicastBroadcastTargets(true); len(got) != 0 {
		t.Fatalf("after the Hello: copies to %v, want none", got)
	}
	if got := b.unicastBroadcastTargets(false); len(got) != 1 {
		t.Fatalf("without multicast: unicast to %v, want one", got)
	}
}

// TestHelloStopsCopies: a coordinator that never heard its participants
// over multicast (they were quiet by the time it listened; here its
// multicast reception from them is cut) copies every heartbeat to them.
// Once the cut is lifted, they notice the copies, multicast a Hello, and
// the copies stop. Without Hello they would go on for ever.
// With a key the Hello is sealed for every node, and the copy is dropped
// as a replay after it was noticed.
func TestHelloStopsCopies(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			t.Parallel()
			testHelloStopsCopies(t, keyed)
		})
	}
}

func testHelloStopsCopies(t *testing.T, keyed bool) {
	c := newCluster(t, memMulticast)
	if keyed {
		c.key = bytes.Repeat([]byte{7}, wire.KeySize)
	}
	for id := wire.NodeID(1); id <= 2; id++ {
		c.nw.CutMulticast(hostIP(id), hostIP(3))
	}
	for id := wire.NodeID(1); id <= 3; id++ {
		c.start(id, "")
	}
	g, _ := c.waitConverged(convergeBound(c))
	if g.ID != 3 {
		t.Fatalf("group %s, want coordinator 3", g)
	}
	coord := c.node(3).a
	before := value(t, coord.metrics.copies)
	time.Sleep(4 * c.timing.AliveInterval)
	if value(t, coord.metrics.copies) <= before {
		t.Fatalf("no broadcast copies while node 3 cannot hear multicast from 1 and 2: the test proves nothing")
	}

	c.nw.Heal()
	// The participants' Hellos back off while the cut holds: up to 2^k s.
	window := 4 * c.timing.AliveInterval
	waitFor(t, 2*helloMax, "node 3 to stop copying broadcasts", func() bool {
		n := value(t, coord.metrics.copies)
		time.Sleep(window)
		return value(t, coord.metrics.copies) == n
	})
	for id := wire.NodeID(1); id <= 2; id++ {
		sent := value(t, c.node(id).a.metrics.msgsSent.WithLabelValues(wire.TypeHello.String()))
		if sent == 0 {
			t.Errorf("node %d sent no Hello", id)
		}
	}
	if _, ok := c.converged(); ok != "" {
		t.Errorf("not converged after the Hellos: %s", ok)
	}
}
