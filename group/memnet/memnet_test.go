package memnet_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/groupd/groupd/group/memnet"
)

// wait bounds how long a test waits for something that must happen.
const wait = 5 * time.Second

// rx is what one Wire received, in order.
type rx struct {
	from  string
	data  string
	mcast bool
}

// listen starts w and returns the channel of what it receives.
func listen(t *testing.T, w *memnet.Wire) <-chan rx {
	t.Helper()
	ch := make(chan rx, 8192)
	w.Start(func(pkt []byte, src *net.UDPAddr, multicast bool) {
		ch <- rx{from: src.String(), data: string(pkt), mcast: multicast}
	})
	t.Cleanup(func() { w.Close() })
	return ch
}

// next returns the next datagram received, failing after wait.
func next(t *testing.T, ch <-chan rx) rx {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(wait):
		t.Fatal("nothing received")
		return rx{}
	}
}

// expect receives datagrams until the marker and fails unless what came
// before it is want, in order. A receiver drains its queue in order, so a
// datagram queued before the marker was sent arrives before it: nothing
// else is waited for.
func expect(t *testing.T, ch <-chan rx, marker string, want ...string) {
	t.Helper()
	var got []string
	for {
		r := next(t, ch)
		if r.data == marker {
			break
		}
		got = append(got, r.data)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("received %q before %s, want %q", got, marker, want)
	}
}

// lan is a network of hosts 10.0.0.1..n, each with a multicast Wire on
// port 7950, listening.
type lan struct {
	nw    *memnet.Network
	wires []*memnet.Wire
	rx    []<-chan rx
}

func newLAN(t *testing.T, n int) *lan {
	l := &lan{nw: memnet.New(1)}
	for i := 1; i <= n; i++ {
		w := l.nw.Host(ip(i)).Wire(7950)
		l.wires = append(l.wires, w)
		l.rx = append(l.rx, listen(t, w))
	}
	return l
}

func ip(i int) string { return fmt.Sprintf("10.0.0.%d", i) }

// send sends data from host i to host j's wire.
func (l *lan) send(t *testing.T, i, j int, data string) {
	t.Helper()
	if err := l.wires[i-1].Send([]byte(data), l.wires[j-1].Addr()); err != nil {
		t.Fatal(err)
	}
}

func TestWireDelivery(t *testing.T) {
	l := newLAN(t, 2)
	l.send(t, 1, 2, "hello")
	r := next(t, l.rx[1])
	if r != (rx{from: "10.0.0.1:7950", data: "hello"}) {
		t.Fatalf("received %+v", r)
	}
	// The datagram is a copy: the sender may reuse its buffer.
	buf := []byte("one")
	if err := l.wires[0].Send(buf, l.wires[1].Addr()); err != nil {
		t.Fatal(err)
	}
	copy(buf, "two")
	if r := next(t, l.rx[1]); r.data != "one" {
		t.Fatalf("received %q, want the datagram as sent", r.data)
	}
	// To an address nobody listens on: lost, as UDP would lose it.
	if err := l.wires[0].Send([]byte("void"), &net.UDPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 7950}); err != nil {
		t.Fatalf("Send to nobody: %v", err)
	}
}

func TestMulticast(t *testing.T) {
	l := newLAN(t, 3)
	uni := l.nw.Host(ip(4)).WireUnicast(7950)
	urx := listen(t, uni)
	if l.wires[0].MulticastGroup() != memnet.Group || uni.MulticastGroup() != "" {
		t.Fatalf("multicast groups %q and %q", l.wires[0].MulticastGroup(), uni.MulticastGroup())
	}
	n, err := l.wires[0].Multicast([]byte("all"))
	if n != 1 || err != nil {
		t.Fatalf("Multicast: %d, %v", n, err)
	}
	// Every wire with multicast receives it, the sender too (as with
	// IP_MULTICAST_LOOP), flagged as multicast.
	for i := range l.rx {
		if r := next(t, l.rx[i]); r != (rx{from: "10.0.0.1:7950", data: "all", mcast: true}) {
			t.Fatalf("host %d received %+v", i+1, r)
		}
	}
	// A wire without multicast neither sends nor receives it, but
	// unicast works both ways.
	if _, err := uni.Multicast([]byte("x")); !errors.Is(err, memnet.ErrNoMulticast) {
		t.Fatalf("Multicast without multicast: %v", err)
	}
	if err := l.wires[1].Send([]byte("marker"), uni.Addr()); err != nil {
		t.Fatal(err)
	}
	expect(t, urx, "marker")
	if err := uni.Send([]byte("up"), l.wires[1].Addr()); err != nil {
		t.Fatal(err)
	}
	if r := next(t, l.rx[1]); r != (rx{from: "10.0.0.4:7950", data: "up"}) {
		t.Fatalf("received %+v", r)
	}
}

// TestPartitions: sides, hosts left out of every side, one-way cuts and
// heal, for unicast and multicast alike.
func TestPartitions(t *testing.T) {
	l := newLAN(t, 4)
	// 4 is on no listed side: it forms one with the other unlisted hosts.
	l.nw.Partition([]string{ip(1), ip(2)}, []string{ip(3)})
	l.send(t, 1, 3, "across")
	l.send(t, 1, 4, "across")
	l.send(t, 1, 2, "within")
	if _, err := l.wires[0].Multicast([]byte("m")); err != nil {
		t.Fatal(err)
	}
	l.send(t, 2, 1, "marker")
	l.send(t, 2, 2, "marker")
	l.send(t, 3, 3, "marker")
	l.send(t, 4, 4, "marker")
	expect(t, l.rx[0], "marker", "m") // its own multicast
	expect(t, l.rx[1], "marker", "within", "m")
	expect(t, l.rx[2], "marker")
	expect(t, l.rx[3], "marker")

	// A one-way cut: 1 → 2 is dropped, 2 → 1 is not.
	l.nw.Heal()
	l.nw.Cut(ip(1), ip(2))
	l.send(t, 1, 2, "cut")
	l.send(t, 2, 1, "back")
	l.send(t, 3, 2, "marker")
	l.send(t, 3, 1, "marker")
	expect(t, l.rx[1], "marker")
	expect(t, l.rx[0], "marker", "back")

	// A new partition replaces the old one; cuts stay until Heal.
	l.nw.Partition([]string{ip(1)})
	l.nw.Partition([]string{ip(4)})
	l.send(t, 1, 3, "now")
	l.send(t, 1, 2, "still cut")
	l.send(t, 3, 3, "marker")
	l.send(t, 3, 2, "marker")
	expect(t, l.rx[2], "marker", "now")
	expect(t, l.rx[1], "marker")
	l.nw.Heal()
	l.send(t, 1, 2, "healed")
	l.send(t, 3, 2, "marker")
	expect(t, l.rx[1], "marker", "healed")
}

// TestCutMulticast: a multicast-only cut drops 1's multicast at 2, one
// way, while unicast passes; Heal lifts it.
func TestCutMulticast(t *testing.T) {
	l := newLAN(t, 3)
	l.nw.CutMulticast(ip(1), ip(2))
	if _, err := l.wires[0].Multicast([]byte("m1")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.wires[1].Multicast([]byte("m2")); err != nil {
		t.Fatal(err)
	}
	l.send(t, 1, 2, "unicast")
	for i := range 3 {
		l.send(t, 3, i+1, "marker")
	}
	expect(t, l.rx[0], "marker", "m1", "m2")
	expect(t, l.rx[1], "marker", "m2", "unicast")
	expect(t, l.rx[2], "marker", "m1", "m2")
	l.nw.Heal()
	if _, err := l.wires[0].Multicast([]byte("healed")); err != nil {
		t.Fatal(err)
	}
	l.send(t, 3, 2, "marker")
	expect(t, l.rx[1], "marker", "healed")
}

func TestLoss(t *testing.T) {
	l := newLAN(t, 2)
	l.nw.SetLoss(1)
	for range 100 {
		l.send(t, 1, 2, "lost")
	}
	l.nw.SetLoss(0.5)
	for range 1000 {
		l.send(t, 1, 2, "maybe")
	}
	l.nw.Heal() // loss too
	l.send(t, 1, 2, "marker")
	n := 0
	for r := next(t, l.rx[1]); r.data != "marker"; r = next(t, l.rx[1]) {
		if r.data != "maybe" {
			t.Fatalf("received %q", r.data)
		}
		n++
	}
	// Deterministic in the seed; about half in any case.
	if n < 400 || n > 600 {
		t.Fatalf("%d of 1000 datagrams got through at 50%% loss", n)
	}
	t.Logf("seed 1: %d of 1000 datagrams got through at 50%% loss", n)
}

// TestQueueFull: a receiver that does not keep up loses what its queue
// (4096 datagrams) cannot hold, as a full socket buffer would.
func TestQueueFull(t *testing.T) {
	nw := memnet.New(1)
	a, b := nw.Host(ip(1)).Wire(7950), nw.Host(ip(2)).Wire(7950)
	defer a.Close()
	for i := range 5000 {
		if err := a.Send([]byte(fmt.Sprint(i)), b.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	ch := listen(t, b) // starts draining now
	for i := range 4096 {
		if r := next(t, ch); r.data != fmt.Sprint(i) {
			t.Fatalf("datagram %d is %q", i, r.data)
		}
	}
	// Nothing after the first 4096: the next is one sent now.
	if err := a.Send([]byte("marker"), b.Addr()); err != nil {
		t.Fatal(err)
	}
	if r := next(t, ch); r.data != "marker" {
		t.Fatalf("received %q after the queue's 4096, want the marker", r.data)
	}
}

func TestBind(t *testing.T) {
	nw := memnet.New(1)
	h := nw.Host(ip(1))
	if nw.Host(ip(1)) != h || h.IP() != ip(1) {
		t.Fatal("Host does not return the host it created")
	}
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("%s did not panic", what)
			}
		}()
		f()
	}
	w := h.Wire(7950)
	mustPanic("a second Wire on one address", func() { h.WireUnicast(7950) })
	g := h.Gossip(7951)
	mustPanic("a second Gossip on one address", func() { h.Gossip(7951) })
	mustPanic("a host that is not IPv4", func() { nw.Host("fe80::1") })
	// Closed, the addresses can be bound again.
	w.Close()
	g.Shutdown()
	g.Shutdown() // twice is fine
	h.Wire(7950).Close()
	h.Gossip(7951).Shutdown()
}

func TestGossipPackets(t *testing.T) {
	nw := memnet.New(1)
	a, b := nw.Host(ip(1)).Gossip(7951), nw.Host(ip(2)).Gossip(7951)
	defer a.Shutdown()
	defer b.Shutdown()
	if ip, port, err := a.FinalAdvertiseAddr("", 0); err != nil || ip.String() != "10.0.0.1" || port != 7951 {
		t.Fatalf("FinalAdvertiseAddr: %v %d %v", ip, port, err)
	}
	packet := func() *memberlist.Packet {
		t.Helper()
		select {
		case p := <-b.PacketCh():
			return p
		case <-time.After(wait):
			t.Fatal("no packet")
			return nil
		}
	}
	if _, err := a.WriteTo([]byte("ping"), b.Addr()); err != nil {
		t.Fatal(err)
	}
	if p := packet(); string(p.Buf) != "ping" || p.From.String() != a.Addr() || p.Timestamp.IsZero() {
		t.Fatalf("packet %q from %s at %v", p.Buf, p.From, p.Timestamp)
	}
	if _, err := a.WriteToAddress([]byte("ack"), memberlist.Address{Addr: b.Addr(), Name: "2"}); err != nil {
		t.Fatal(err)
	}
	if p := packet(); string(p.Buf) != "ack" {
		t.Fatalf("packet %q", p.Buf)
	}
	// Across a partition, or to nobody: lost, no error.
	nw.Partition([]string{ip(1)})
	if _, err := a.WriteTo([]byte("lost"), b.Addr()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteTo([]byte("lost"), "10.0.0.9:7951"); err != nil {
		t.Fatal(err)
	}
	nw.Heal()
	if _, err := a.WriteTo([]byte("marker"), b.Addr()); err != nil {
		t.Fatal(err)
	}
	if p := packet(); string(p.Buf) != "marker" {
		t.Fatalf("packet %q crossed the partition", p.Buf)
	}
}

func TestGossipStreams(t *testing.T) {
	nw := memnet.New(1)
	a, b := nw.Host(ip(1)).Gossip(7951), nw.Host(ip(2)).Gossip(7951)
	defer a.Shutdown()
	defer b.Shutdown()
	c, err := a.DialTimeout(b.Addr(), wait)
	if err != nil {
		t.Fatal(err)
	}
	var s net.Conn
	select {
	case s = <-b.StreamCh():
	case <-time.After(wait):
		t.Fatal("no stream")
	}
	if c.LocalAddr().String() != a.Addr() || c.RemoteAddr().String() != b.Addr() ||
		s.LocalAddr().String() != b.Addr() || s.RemoteAddr().String() != a.Addr() {
		t.Fatalf("addresses: %s→%s and %s→%s", c.LocalAddr(), c.RemoteAddr(), s.LocalAddr(), s.RemoteAddr())
	}
	go func() {
		c.Write([]byte("push-pull"))
		c.Close()
	}()
	got, err := io.ReadAll(s)
	if err != nil || string(got) != "push-pull" {
		t.Fatalf("read %q, %v", got, err)
	}
	s.Close()

	// Through NodeAwareTransport too.
	c, err = a.DialAddressTimeout(memberlist.Address{Addr: b.Addr(), Name: "2"}, wait)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	(<-b.StreamCh()).Close()

	// To nobody, or to a malformed address: an error at once.
	for _, addr := range []string{"10.0.0.9:7951", "10.0.0.2", "10.0.0.2:http"} {
		if _, err := a.DialTimeout(addr, wait); err == nil {
			t.Fatalf("a dial to %q worked", addr)
		}
	}
}

// TestGossipDialAcrossPartition: a dial across a partition (either way)
// fails, after its timeout, as a TCP connect would.
func TestGossipDialAcrossPartition(t *testing.T) {
	nw := memnet.New(1)
	a, b := nw.Host(ip(1)).Gossip(7951), nw.Host(ip(2)).Gossip(7951)
	defer a.Shutdown()
	defer b.Shutdown()
	const timeout = 50 * time.Millisecond
	for _, cut := range []func(){
		func() { nw.Partition([]string{ip(1)}) },
		func() { nw.Cut(ip(2), ip(1)) }, // the answers could not come back
	} {
		nw.Heal()
		cut()
		start := time.Now()
		c, err := a.DialTimeout(b.Addr(), timeout)
		if err == nil {
			c.Close()
			t.Fatal("a dial across the partition worked")
		}
		if took := time.Since(start); took < timeout {
			t.Fatalf("the dial failed after %v, before its timeout (%v)", took, timeout)
		}
		if !strings.Contains(err.Error(), "host unreachable") {
			t.Fatalf("error %v", err)
		}
	}
	// A dial waiting out its timeout ends when the dialer shuts down.
	nw.Partition([]string{ip(1)})
	done := make(chan error, 1)
	go func() {
		_, err := a.DialTimeout(b.Addr(), time.Hour)
		done <- err
	}()
	if err := memnet.WaitParked(wait, "select", "memnet.(*GossipLayer).DialTimeout", "TestGossipDialAcrossPartition"); err != nil {
		t.Fatal(err)
	}
	a.Shutdown()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the dial worked")
		}
	case <-time.After(wait):
		t.Fatal("the dial did not end at Shutdown")
	}
}
