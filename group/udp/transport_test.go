package udp

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

var loopback = net.IPv4(127, 0, 0, 1).To4()

// datagram is one delivery to a Start callback.
type datagram struct {
	data      string
	src       string
	multicast bool
}

// start opens a transport with o and starts it delivering to the returned
// channel; the transport is closed when the test ends.
func start(t *testing.T, o Options) (*Transport, <-chan datagram) {
	t.Helper()
	tr, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	ch := make(chan datagram, 16)
	tr.Start(func(pkt []byte, src *net.UDPAddr, multicast bool) {
		select {
		case ch <- datagram{string(pkt), src.String(), multicast}:
		default: // recv must not block; a test never sends this many
		}
	})
	return tr, ch
}

// expect fails unless the next datagram on ch, within 5 s, is want.
func expect(t *testing.T, ch <-chan datagram, want datagram) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no datagram within 5 s; want %+v", want)
	}
}

// TestUnicast: a datagram sent to a transport's Addr arrives with the
// sender's Addr as source; without groups there is no multicast.
func TestUnicast(t *testing.T) {
	a, ach := start(t, Options{Bind: loopback})
	b, bch := start(t, Options{Bind: loopback})
	if a.Addr().Port == 0 || !a.Addr().IP.Equal(loopback) {
		t.Fatalf("Addr %v: want 127.0.0.1 and the bound port", a.Addr())
	}
	if err := a.Send([]byte("ping"), b.Addr()); err != nil {
		t.Fatal(err)
	}
	expect(t, bch, datagram{"ping", a.Addr().String(), false})
	if err := b.Send([]byte("pong"), a.Addr()); err != nil {
		t.Fatal(err)
	}
	expect(t, ach, datagram{"pong", b.Addr().String(), false})
	if g := a.MulticastGroup(); g != "" {
		t.Errorf("MulticastGroup %q without groups", g)
	}
	if _, err := a.Multicast([]byte("x")); err == nil {
		t.Error("Multicast without groups: no error")
	}
	if err := a.Send([]byte("x"), &net.UDPAddr{IP: net.IPv6loopback, Port: 9}); err == nil {
		t.Error("Send to IPv6 from an IPv4 transport: no error")
	}
}

// TestDualStack: "::" binds both families on one port, and each reaches
// the transport.
func TestDualStack(t *testing.T) {
	if c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	} else {
		c.Close()
	}
	a, ach := start(t, Options{Bind: net.IPv6unspecified, Advertise: loopback})
	if len(a.socks) != 2 || portOf(a.socks[0].uc) != portOf(a.socks[1].uc) {
		t.Fatalf("want two sockets on one port, got %d", len(a.socks))
	}
	for _, bind := range []net.IP{loopback, net.IPv6loopback} {
		b, _ := start(t, Options{Bind: bind})
		to := &net.UDPAddr{IP: bind, Port: a.Addr().Port}
		if err := b.Send([]byte("hi"), to); err != nil {
			t.Fatal(err)
		}
		expect(t, ach, datagram{"hi", b.Addr().String(), false})
	}
}

// TestOpenErrors: the errors a field of Options causes say which.
func TestOpenErrors(t *testing.T) {
	busy, _ := start(t, Options{Bind: loopback})
	group4 := &net.UDPAddr{IP: net.IPv4(239, 192, 79, 50), Port: 7952}
	for _, tc := range []struct {
		name   string
		o      Options
		option string
	}{
		{"port in use", Options{Bind: loopback, Port: busy.Addr().Port}, "Port"},
		{"wildcard without Advertise", Options{Bind: net.IPv4zero}, "Advertise"},
		{"group of another family", Options{Bind: loopback, Multicast: []Group{{Addr: &net.UDPAddr{IP: net.ParseIP("ff15::7952"), Port: 7952}}}}, "Multicast"},
		{"two groups of a family", Options{Bind: loopback, Multicast: []Group{{Addr: group4}, {Addr: group4}}}, "Multicast"},
		{"not a group", Options{Bind: loopback, Multicast: []Group{{Addr: &net.UDPAddr{IP: loopback, Port: 7952}}}}, "Multicast"},
		{"link-local group on two interfaces", Options{Bind: net.IPv6unspecified, Advertise: loopback,
			Multicast: []Group{{Addr: &net.UDPAddr{IP: net.ParseIP("ff02::7952"), Port: 7952}, Interfaces: make([]net.Interface, 2)}}}, "Multicast"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Open(tc.o)
			if err == nil {
				tr.Close()
				t.Fatal("no error")
			}
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Option != tc.option {
				t.Fatalf("%v: want an OptionError of %s", err, tc.option)
			}
		})
	}
}

// TestClose: recv is not called once Close has returned, and a second
// Close is harmless.
func TestClose(t *testing.T) {
	a, err := Open(Options{Bind: loopback})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := start(t, Options{Bind: loopback})
	var closed atomic.Bool
	got := make(chan struct{}, 1)
	a.Start(func([]byte, *net.UDPAddr, bool) {
		if closed.Load() {
			t.Error("recv after Close")
		}
		select {
		case got <- struct{}{}:
		default:
		}
	})
	b.Send([]byte("1"), a.Addr())
	<-got
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	closed.Store(true)
	b.Send([]byte("2"), a.Addr())
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // for a wrong delivery to show
}

// TestMulticastLoopback: a beacon reaches every transport on the group
// on one host (SO_REUSEPORT), the sender's own included (multicast
// loopback), with the sender's unicast address as source, and each
// transport's unicast socket gets none of it.
func TestMulticastLoopback(t *testing.T) {
	lo := loopbackInterface(t)
	group := &net.UDPAddr{IP: randomGroup(), Port: freePort(t)}
	skipWithoutLoopbackMulticast(t, lo, group)
	var chs []<-chan datagram
	var trs []*Transport
	for range 2 {
		tr, ch := start(t, Options{Bind: loopback, Multicast: []Group{{Addr: group, Interfaces: []net.Interface{*lo}}}})
		trs, chs = append(trs, tr), append(chs, ch)
	}
	if g := trs[0].MulticastGroup(); g != group.String() {
		t.Errorf("MulticastGroup %q, want %q", g, group)
	}
	if n, err := trs[0].Multicast([]byte("beacon")); err != nil || n != 1 {
		t.Fatalf("Multicast: %d %v", n, err)
	}
	for _, ch := range chs {
		expect(t, ch, datagram{"beacon", trs[0].Addr().String(), true})
	}
	time.Sleep(50 * time.Millisecond) // for a second copy to show
	for i, ch := range chs {
		select {
		case d := <-ch:
			t.Errorf("transport %d got a second copy: %+v", i, d)
		default:
		}
	}
}

// TestInterfacesByDefault: a group without interfaces is joined on those
// Interfaces picks for Bind: loopback's, for 127.0.0.1.
func TestInterfacesByDefault(t *testing.T) {
	lo := loopbackInterface(t)
	group := &net.UDPAddr{IP: randomGroup(), Port: freePort(t)}
	skipWithoutLoopbackMulticast(t, lo, group)
	tr, ch := start(t, Options{Bind: loopback, Multicast: []Group{{Addr: group}}})
	if _, err := tr.Multicast([]byte("beacon")); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, datagram{"beacon", tr.Addr().String(), true})
}

func loopbackInterface(t *testing.T) *net.Interface {
	t.Helper()
	ifs, err := Interfaces(loopback, false)
	if err != nil || len(ifs) != 1 {
		t.Skipf("no loopback interface with 127.0.0.1: %v %v", ifs, err)
	}
	return &ifs[0]
}

// randomGroup returns a random organisation-local group, so that
// concurrent test runs and a groupd on the host do not hear each other.
func randomGroup() net.IP {
	return net.IPv4(239, 192, byte(100+rand.IntN(100)), byte(1+rand.IntN(250))).To4()
}

func freePort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: loopback})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// probed caches, per test binary, whether this host delivers multicast
// over loopback at all, asked with the standard library's calls rather
// than this package's, so that a broken transport fails instead of
// skipping.
var probed = struct {
	sync.Once
	err error
}{}

func skipWithoutLoopbackMulticast(t *testing.T, lo *net.Interface, group *net.UDPAddr) {
	t.Helper()
	probed.Do(func() { probed.err = probeLoopbackMulticast(lo, group) })
	if probed.err != nil {
		t.Skipf("multicast over loopback does not work here: %v", probed.err)
	}
}

func probeLoopbackMulticast(lo *net.Interface, group *net.UDPAddr) error {
	rc, err := net.ListenMulticastUDP("udp4", lo, group)
	if err != nil {
		return err
	}
	defer rc.Close()
	sc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: loopback})
	if err != nil {
		return err
	}
	defer sc.Close()
	p := ipv4.NewPacketConn(sc)
	if err := p.SetMulticastInterface(lo); err != nil {
		return err
	}
	if err := p.SetMulticastLoopback(true); err != nil {
		return err
	}
	probe := fmt.Sprintf("probe-%d", rand.Uint64())
	buf := make([]byte, 64)
	for range 3 {
		if _, err := sc.WriteToUDP([]byte(probe), group); err != nil {
			return err
		}
		rc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if n, _, err := rc.ReadFrom(buf); err == nil && string(buf[:n]) == probe {
			return nil
		}
	}
	return errors.New("a probe sent through lo did not come back")
}
