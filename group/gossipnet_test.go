package group

import (
	"io"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"
)

func newTestGossipNet(t *testing.T) *gossipNet {
	t.Helper()
	g, err := newGossipNet("127.0.0.1", 0, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Shutdown() })
	return g
}

func recvPacket(t *testing.T, g *gossipNet) *memberlist.Packet {
	t.Helper()
	select {
	case p := <-g.PacketCh():
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no packet within 5 s")
		return nil
	}
}

// TestGossipNet: packets both ways, the answer sent with a neighbour
// confirmation (its sender just heard the peer) and the first not; a
// stream; a second Shutdown.
func TestGossipNet(t *testing.T) {
	t.Parallel()
	a, b := newTestGossipNet(t), newTestGossipNet(t)
	if a.Port() == 0 || a.Port() == b.Port() {
		t.Fatalf("ports %d and %d", a.Port(), b.Port())
	}
	addrOf := func(g *gossipNet) string { return net.JoinHostPort("127.0.0.1", itoa(g.Port())) }

	if _, err := a.WriteTo([]byte("ping"), addrOf(b)); err != nil {
		t.Fatal(err)
	}
	p := recvPacket(t, b)
	if string(p.Buf) != "ping" || p.From.(*net.UDPAddr).Port != a.Port() {
		t.Fatalf("b got %q from %v", p.Buf, p.From)
	}
	if _, err := b.WriteToAddress([]byte("ack"), memberlist.Address{Addr: addrOf(a), Name: "1"}); err != nil {
		t.Fatal(err)
	}
	if p := recvPacket(t, a); string(p.Buf) != "ack" {
		t.Fatalf("a got %q", p.Buf)
	}
	// b confirms a after answering it, a confirms b on hearing the
	// answer to its own datagram, each confirmDelay later; nobody
	// confirms before an answer.
	if c := a.confirmed.Load() + b.confirmed.Load(); c != 0 {
		t.Errorf("%d neighbour confirmations at once, want them %v later", c, confirmDelay)
	}
	if runtime.GOOS == "linux" {
		deadline := time.Now().Add(confirmDelay + 3*time.Second)
		for (a.confirmed.Load() < 1 || b.confirmed.Load() < 1) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			a.confirmDue(time.Now()) // the agent's loop does this
			b.confirmDue(time.Now())
		}
		if a.confirmed.Load() != 1 || b.confirmed.Load() != 1 {
			t.Errorf("neighbour confirmations: a %d, b %d; want 1 each", a.confirmed.Load(), b.confirmed.Load())
		}
	}
	// The buffer handed over is memberlist's to keep.
	if _, err := a.WriteTo([]byte("second"), addrOf(b)); err != nil {
		t.Fatal(err)
	}
	if q := recvPacket(t, b); string(q.Buf) != "second" || string(p.Buf) != "ping" {
		t.Fatalf("buffers shared: %q, %q", q.Buf, p.Buf)
	}

	c, err := a.DialTimeout(addrOf(b), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("push-pull")); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	select {
	case s := <-b.StreamCh():
		got, err := io.ReadAll(s)
		s.Close()
		if err != nil || string(got) != "push-pull" {
			t.Fatalf("stream: %q, %v", got, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no stream within 5 s")
	}

	if _, err := a.WriteTo([]byte("x"), "not an address"); err == nil {
		t.Error("WriteTo an unparsable address: no error")
	}
	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := a.Shutdown(); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

// TestGossipNetPortTaken: an explicit port whose UDP half is taken is an
// error naming it, not a retry on another port.
func TestGossipNetPortTaken(t *testing.T) {
	u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	port := u.LocalAddr().(*net.UDPAddr).Port
	if g, err := newGossipNet("127.0.0.1", port, zerolog.Nop()); err == nil {
		g.Shutdown()
		t.Fatalf("bound port %d twice", port)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
