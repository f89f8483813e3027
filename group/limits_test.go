package group

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/groupd/groupd/wire"
)

func udpAddr(s string) *net.UDPAddr {
	a, err := net.ResolveUDPAddr("udp4", s)
	if err != nil {
		panic(err)
	}
	return a
}

func TestSourceLimiter(t *testing.T) {
	if newSourceLimiter(0) != nil || newSourceLimiter(-1) != nil {
		t.Fatal("a zero or negative rate must mean no limiter")
	}
	var off *sourceLimiter
	if !off.allow(udpAddr("10.0.0.1:1"), time.Now()) {
		t.Fatal("a nil limiter refused a packet")
	}

	l := newSourceLimiter(100) // burst 200
	t0 := time.Unix(1000, 0)
	a, b := udpAddr("10.0.0.1:7950"), udpAddr("10.0.0.2:7950")
	n := 0
	for range 1000 {
		if l.allow(a, t0) {
			n++
		}
	}
	if n != 200 {
		t.Fatalf("burst: %d packets allowed at once, want 200", n)
	}
	// Another address has its own bucket; another port of the same
	// address does not.
	if !l.allow(b, t0) {
		t.Fatal("a second source was limited by the first one's flood")
	}
	if l.allow(udpAddr("10.0.0.1:9999"), t0) {
		t.Fatal("another port of a flooding address got through")
	}
	// Refill: 100 per second.
	n = 0
	for i := range 1000 {
		if l.allow(a, t0.Add(time.Duration(i)*time.Millisecond)) {
			n++
		}
	}
	if n < 95 || n > 105 {
		t.Fatalf("one second at 1000/s: %d allowed, want about 100", n)
	}
	// IPv4-mapped IPv6 is the same address: at 999 ms the bucket holds
	// 0.9 of a token (the last one was taken at 990 ms).
	if l.allow(&net.UDPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 1}, t0.Add(999*time.Millisecond)) {
		t.Fatal("IPv4-mapped form of a flooding address got through")
	}
	if !l.allow(nil, t0) || !l.allow(&net.UDPAddr{}, t0) {
		t.Fatal("unknown sources must pass (nothing to key them by)")
	}
}

// TestSourceLimiterBounded: spoofed addresses never grow the table past
// maxSources; idle buckets are reclaimed; meanwhile new addresses share
// the overflow bucket.
func TestSourceLimiterBounded(t *testing.T) {
	l := newSourceLimiter(10)
	t0 := time.Unix(1000, 0)
	for i := range maxSources + 500 {
		l.allow(&net.UDPAddr{IP: net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)), Port: 1}, t0)
	}
	if got := l.sources(); got != maxSources {
		t.Fatalf("%d buckets, want %d", got, maxSources)
	}
	// The overflow bucket (burst 20) was shared by the 500 extra
	// addresses: it is empty.
	if l.allow(udpAddr("192.0.2.1:1"), t0) {
		t.Fatal("the overflow bucket should be empty")
	}
	// Two seconds later every bucket is full again: the sweep reclaims
	// them and new addresses get their own.
	later := t0.Add(2 * time.Second)
	if !l.allow(udpAddr("192.0.2.1:1"), later) {
		t.Fatal("a new address after the sweep was refused")
	}
	if got := l.sources(); got != 1 {
		t.Fatalf("%d buckets after the sweep, want 1", got)
	}
}

func TestSourceLimiterConcurrent(t *testing.T) {
	l := newSourceLimiter(1000)
	now := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				if l.allow(&net.UDPAddr{IP: net.IPv4(10, 0, 0, byte(i%2)), Port: g}, now) {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if allowed != 2*2000 { // two addresses, burst 2000 each
		t.Fatalf("%d allowed, want 4000", allowed)
	}
}

func TestLogLimiter(t *testing.T) {
	l := newLogLimiter(10 * time.Second)
	t0 := time.Unix(1000, 0)
	if ok, n := l.allow("auth", t0); !ok || n != 0 {
		t.Fatalf("first line: %v %d", ok, n)
	}
	for i := range 99 {
		if ok, _ := l.allow("auth", t0.Add(time.Duration(i)*time.Millisecond)); ok {
			t.Fatal("a second line within the interval got through")
		}
	}
	if ok, _ := l.allow("truncated", t0); !ok {
		t.Fatal("another reason is limited separately")
	}
	if ok, n := l.allow("auth", t0.Add(10*time.Second)); !ok || n != 99 {
		t.Fatalf("after the interval: %v, suppressed %d, want true, 99", ok, n)
	}
	if ok, n := l.allow("auth", t0.Add(25*time.Second)); !ok || n != 0 {
		t.Fatalf("quiet interval: %v, suppressed %d", ok, n)
	}
	// Keys are bounded.
	for i := range 3 * maxLogKeys {
		l.allow(fmt.Sprint("k", i), t0)
	}
	if len(l.keys) > maxLogKeys+1 {
		t.Fatalf("%d keys, want at most %d", len(l.keys), maxLogKeys+1)
	}
}

func TestMemberlistLogKey(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"Decrypt packet failed: cipher: message authentication failed from=10.0.0.1:7951",
			"Decrypt packet failed: No installed keys could decrypt the message from=10.0.0.9:1"},
		{"msg type (12) not supported from=10.0.0.1:7951", "msg type (200) not supported from=10.0.0.2:7951"},
		{"Received invalid msgType (9) from=10.0.0.1:3", "Received invalid msgType (77) from=10.0.0.8:4"},
		{"Got ping for unexpected node 'x' from=1.2.3.4:5", "Got ping for unexpected node 'yy' from=1.2.3.4:6"},
		{"ignoring alive message for 'abc': node name \"abc\" is not", "ignoring alive message for '99999': the address book"},
	} {
		ka, kb := memberlistLogKey("error", tc.a), memberlistLogKey("error", tc.b)
		if ka != kb {
			t.Errorf("%q and %q: keys %q and %q differ", tc.a, tc.b, ka, kb)
		}
	}
	if memberlistLogKey("error", "Decrypt packet failed: x") == memberlistLogKey("warn", "Decrypt packet failed: x") {
		t.Error("the level is part of the key")
	}
	if memberlistLogKey("error", "Failed to send ack: x") == memberlistLogKey("error", "Failed to decode ping: x") {
		t.Error("different complaints share a key")
	}
}

// TestMemberlistLogRateLimited: a flood of one memberlist complaint gives
// one line per logEvery; other complaints and info lines are not held back.
func TestMemberlistLogRateLimited(t *testing.T) {
	var buf bytes.Buffer
	l := newStdLogger(zerolog.New(&buf).Level(zerolog.InfoLevel))
	for i := range 1000 {
		l.Printf("[ERR] memberlist: Decrypt packet failed: no key %d from=10.0.0.%d:7951", i, i%250)
	}
	l.Printf("[WARN] memberlist: Got ping for unexpected node 'x' from=10.0.0.1:1")
	l.Printf("[INFO] memberlist: Suspect 3 has failed, no acks received")
	l.Printf("[INFO] memberlist: Suspect 4 has failed, no acks received")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), buf.String())
	}
}

// newReceiver returns an agent (not run) for feeding receive directly,
// with its log in buf.
func newReceiver(t *testing.T, id wire.NodeID, key []byte, rate int, buf *bytes.Buffer, tr Transport) *Agent {
	t.Helper()
	c := newTestConfig(t)
	c.ID = id
	c.Key = key
	c.RateLimit = rate
	c.Transport = tr
	c.Logger = zerolog.New(&lockedWriter{w: buf}).Level(zerolog.InfoLevel)
	a, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func encodeT(t *testing.T, m wire.Message) []byte {
	t.Helper()
	b, err := wire.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// captureTransport is a Transport that keeps what is sent, for tests of
// the receive path (which answers and sends challenges).
type captureTransport struct {
	mu   sync.Mutex
	sent [][]byte
	to   []*net.UDPAddr
}

func (c *captureTransport) Start(func([]byte, *net.UDPAddr, bool)) {}
func (c *captureTransport) Addr() *net.UDPAddr                     { return udpAddr("10.0.0.1:7950") }
func (c *captureTransport) Send(pkt []byte, addr *net.UDPAddr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, bytes.Clone(pkt))
	c.to = append(c.to, addr)
	return nil
}
func (c *captureTransport) Multicast(pkt []byte) (int, error) { return 1, c.Send(pkt, nil) }
func (c *captureTransport) MulticastGroup() string            { return "239.192.0.1:7952" }
func (c *captureTransport) Close() error                      { return nil }

// take returns and forgets what was sent.
func (c *captureTransport) take() ([][]byte, []*net.UDPAddr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, to := c.sent, c.to
	c.sent, c.to = nil, nil
	return s, to
}

// TestReceiveKeyed feeds the receive path of a keyed node (ID 1) the
// packets a rogue or a replayer would send, and a peer's restarts, and
// checks what it accepts and how it counts and logs the rest.
func TestReceiveKeyed(t *testing.T) {
	key, wrong := bytes.Repeat([]byte{1}, wire.KeySize), bytes.Repeat([]byte{2}, wire.KeySize)
	var logs bytes.Buffer
	tr := &captureTransport{}
	a := newReceiver(t, 1, key, 50, &logs, tr)
	good, _ := wire.NewSealer(key)
	bad, _ := wire.NewSealer(wrong)
	src := udpAddr("10.0.0.2:7950")
	msgBoot := func(boot, ctr uint64, body wire.Body) []byte {
		return encodeT(t, wire.Message{Header: wire.Header{From: 2, Priority: 255, Boot: boot, Counter: ctr,
			Group: wire.GroupNumber{Seq: 9, ID: 2}, State: wire.StateNormal}, Body: body})
	}
	msg := func(ctr uint64, body wire.Body) []byte { return msgBoot(7, ctr, body) }
	inv := wire.Invitation{Group: wire.GroupNumber{Seq: 10, ID: 2}}
	seal := func(s *wire.Sealer, p []byte, to wire.NodeID) []byte {
		out, err := s.SealTo(nil, p, to)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	dropped := func(reason string) float64 { return metricValue(a.metrics.dropped.WithLabelValues(reason)) }
	accepted := func() int { return len(a.inbox) + len(a.beacons) }
	// answer plays node 2 at boot: it opens the challenge node 1 sent and
	// returns the Response (sealed for node 1), with counter ctr.
	answer := func(boot, ctr uint64) []byte {
		t.Helper()
		sent, to := tr.take()
		if len(sent) != 1 || to[0].String() != src.String() {
			t.Fatalf("want one challenge to %s, got %d packets to %v", src, len(sent), to)
		}
		plain, err := good.OpenFor(nil, sent[0], 2)
		if err != nil {
			t.Fatalf("the challenge does not open for node 2: %v", err)
		}
		m, err := wire.Decode(plain)
		ch, ok := m.Body.(wire.Challenge)
		if err != nil || !ok || m.From != 1 {
			t.Fatalf("want a Challenge from 1, got %v, %v", m, err)
		}
		return seal(good, msgBoot(boot, ctr, wire.Response{Nonce: ch.Nonce}), 1)
	}

	a.receive(msg(5, inv), src, false) // plain
	a.receive(seal(bad, msg(6, inv), 1), src, false)
	a.receive(seal(good, msg(7, inv), 3), src, false) // sealed for node 3
	if accepted() != 0 || dropped("auth") != 3 {
		t.Fatalf("plain, wrong-key and misaddressed packets: %d accepted, %v auth drops", accepted(), dropped("auth"))
	}
	// The first genuine packet of boot 7: held, and node 2 challenged.
	a.receive(seal(good, msg(10, inv), 1), src, false)
	if accepted() != 0 || dropped("unverified") != 1 {
		t.Fatalf("first packet of a boot: %d accepted, %v unverified drops", accepted(), dropped("unverified"))
	}
	resp := answer(7, 11)
	a.receive(resp, src, false)
	if accepted() != 1 {
		t.Fatalf("after the Response: %d accepted, want the held packet", accepted())
	}
	a.receive(resp, src, false) // a replayed Response: nothing waits for it
	a.receive(seal(good, msg(12, wire.Beacon{Addr: "10.0.0.2:7951"}), wire.Broadcast), src, true)
	if accepted() != 2 {
		t.Fatalf("genuine packets: %d accepted, want 2", accepted())
	}
	a.receive(seal(good, msg(10, inv), 1), src, false) // the same counter again
	a.receive(seal(good, msg(9, inv), 1), src, false)  // below the verified floor
	a.receive(seal(good, msg(13, inv), 1), src, false) // new
	a.receive(seal(good, msg(13, inv), 1), src, false) // replayed
	if accepted() != 3 || dropped("replay") != 3 {
		t.Fatalf("replays: %d accepted (want 3), %v replay drops (want 3)", accepted(), dropped("replay"))
	}
	// Node 2 restarts (boot 8, counters from 1, as after a wiped data
	// dir): verified in one round trip, after which boot 7's packets are
	// replays.
	a.receive(seal(good, msgBoot(8, 1, inv), 1), src, false)
	a.receive(answer(8, 2), src, false)
	if accepted() != 4 {
		t.Fatalf("restarted peer: %d accepted, want 4", accepted())
	}
	// A packet of boot 7 again: dropped, and boot 7 asked once (a
	// recording does not answer; a process that still runs does), not
	// again for challengeOldEvery however many come.
	a.receive(seal(good, msg(14, inv), 1), src, false)
	a.receive(seal(good, msg(15, inv), 1), src, false)
	if accepted() != 4 || dropped("replay") != 5 {
		t.Fatalf("old boot after a restart: %d accepted, %v replay drops", accepted(), dropped("replay"))
	}
	// Boot 8 was a second process with the ID, which gave way: boot 7
	// answers (answer checks that one challenge was sent) and is the
	// live boot again, and its held packet passes.
	a.receive(answer(7, 17), src, false)
	if accepted() != 5 {
		t.Fatalf("a superseded boot that answered: %d accepted, want its held packet (5)", accepted())
	}
	a.receive(seal(good, msgBoot(8, 3, inv), 1), src, false)
	if accepted() != 5 || dropped("replay") != 6 {
		t.Fatalf("boot 8 after boot 7 answered again: %d accepted, %v replay drops", accepted(), dropped("replay"))
	}
	if sent, _ := tr.take(); len(sent) != 0 {
		t.Fatalf("boot 8, superseded within challengeOldEvery of the last such challenge: %d challenges, want 0", len(sent))
	}
	a.receive(make([]byte, wire.MaxDatagramSize+1), src, false)
	if dropped("too_large") != 1 {
		t.Fatalf("oversized: %v too_large drops", dropped("too_large"))
	}
	// A flood from one address: the burst (2×50) passes the limiter
	// (and fails authentication), the rest is dropped before any work.
	flood := udpAddr("10.0.0.66:1234")
	for range 1000 {
		a.receive([]byte{0x81, 1, 2, 3}, flood, false)
	}
	if got := dropped("rate_limited"); got < 850 || got > 900 {
		t.Fatalf("flood of 1000: %v rate_limited drops, want about 900", got)
	}
	// Meanwhile the genuine sender still gets through.
	a.receive(seal(good, msgBoot(8, 3, inv), 1), src, false)
	if accepted() != 5 {
		t.Fatalf("genuine sender during a flood: %d accepted, want 5", accepted())
	}
	// Logs: one warn line per reason (the interval is 10s); replays and
	// unverified boots are at debug, so not shown at info.
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, "dropped packet") {
			for _, r := range []string{"auth", "replay", "unverified", "too_large", "rate_limited"} {
				if strings.Contains(line, `"reason":"`+r+`"`) {
					counts[r]++
				}
			}
		}
	}
	want := map[string]int{"auth": 1, "too_large": 1, "rate_limited": 1}
	for r, n := range want {
		if counts[r] != n {
			t.Errorf("%d log lines for %s, want %d\n%s", counts[r], r, n, logs.String())
		}
	}
	if counts["replay"] != 0 || counts["unverified"] != 0 {
		t.Errorf("replays logged at info:\n%s", logs.String())
	}
}

// TestReceiveChallengeAnswered: a keyed node answers a challenge from a
// peer with a Response, sealed for the peer, echoing its nonce.
func TestReceiveChallengeAnswered(t *testing.T) {
	key := bytes.Repeat([]byte{1}, wire.KeySize)
	var logs bytes.Buffer
	tr := &captureTransport{}
	a := newReceiver(t, 1, key, 0, &logs, tr)
	s, _ := wire.NewSealer(key)
	src := udpAddr("10.0.0.2:7950")
	ch := encodeT(t, wire.Message{Header: wire.Header{From: 2, Boot: 9, Counter: 1, State: wire.StateElection},
		Body: wire.Challenge{Nonce: 0xabc}})
	sealed, _ := s.SealTo(nil, ch, 1)
	a.receive(sealed, src, false)
	sent, to := tr.take()
	if len(sent) != 1 || to[0].String() != src.String() {
		t.Fatalf("%d packets to %v, want a Response to %s", len(sent), to, src)
	}
	plain, err := s.OpenFor(nil, sent[0], 2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := wire.Decode(plain)
	if r, ok := m.Body.(wire.Response); err != nil || !ok || r.Nonce != 0xabc || m.Boot != a.boot {
		t.Fatalf("answer %v, %v", m, err)
	}
	if len(a.inbox) != 0 {
		t.Fatal("a Challenge reached the state machine")
	}
}

// TestReceiveUnkeyed: without a key, sealed packets and garbage are
// dropped by reason; decoding errors are counted, never fatal.
func TestReceiveUnkeyed(t *testing.T) {
	var logs bytes.Buffer
	a := newReceiver(t, 1, nil, 0, &logs, nil)
	src := udpAddr("10.0.0.2:7950")
	s, _ := wire.NewSealer(bytes.Repeat([]byte{1}, wire.KeySize))
	good := encodeT(t, wire.Message{Header: wire.Header{From: 2, Boot: 1, Counter: 1, State: wire.StateNormal},
		Body: wire.AreYouCoordinator{}})
	sealed, _ := s.Seal(nil, good)
	for _, p := range [][]byte{sealed, {}, {9}, good[:10], append(bytes.Clone(good), 0), {wire.Version, 99}} {
		a.receive(p, src, false)
	}
	for reason, want := range map[string]float64{"auth": 1, "truncated": 2, "version": 1, "malformed": 1, "type": 1} {
		if got := metricValue(a.metrics.dropped.WithLabelValues(reason)); got != want {
			t.Errorf("%s drops: %v, want %v", reason, got, want)
		}
	}
	if len(a.inbox) != 0 {
		t.Errorf("%d packets accepted", len(a.inbox))
	}
}

// TestAPILoopbackByDefault: the API listens on loopback unless told
// otherwise (a unix socket is the other local choice).
func TestAPILoopbackByDefault(t *testing.T) {
	for _, cfg := range []Config{DefaultLANConfig(), DefaultFastConfig()} {
		network, addr, err := parseAPI(cfg.API)
		if err != nil || network != "tcp" {
			t.Fatalf("default API %q: %s, %v", cfg.API, network, err)
		}
		host, _, _ := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			t.Errorf("default API %q is not on loopback", cfg.API)
		}
	}
}

// BenchmarkSourceLimiter is the per-packet cost on the socket readers: a
// flood from one address, and traffic from many.
func BenchmarkSourceLimiter(b *testing.B) {
	for _, sources := range []int{1, 1000} {
		b.Run(fmt.Sprint(sources, " sources"), func(b *testing.B) {
			l := newSourceLimiter(DefaultRateLimit)
			addrs := make([]*net.UDPAddr, sources)
			for i := range addrs {
				addrs[i] = &net.UDPAddr{IP: net.IPv4(10, 0, byte(i>>8), byte(i)), Port: 7950}
			}
			now := time.Unix(1000, 0)
			b.ResetTimer()
			for i := range b.N {
				l.allow(addrs[i%sources], now.Add(time.Duration(i)*time.Microsecond))
			}
		})
	}
}

// TestShedBeacons: beacons queue apart, up to inboxShed, and are dropped
// as "shed" beyond; everything else still queues, up to inboxSize.
func TestShedBeacons(t *testing.T) {
	cfg := DefaultFastConfig()
	cfg.Bind, cfg.Port, cfg.Multicast, cfg.API, cfg.DataDir = "127.0.0.1", 0, "off", "", t.TempDir()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	src := udpAddr("127.0.0.1:9")
	hdr := wire.Header{From: 2, Priority: 100, State: wire.StateNormal, Group: wire.GroupNumber{Seq: 1, ID: 2}}
	beacon := wire.Message{Header: hdr, Body: wire.Beacon{Addr: "127.0.0.1:7951"}}
	accept := wire.Message{Header: hdr, Body: wire.Accept{Group: wire.GroupNumber{Seq: 9, ID: 3}}}
	shed := func() float64 { return value(t, a.metrics.dropped.WithLabelValues(dropShed)) }

	for range inboxShed {
		a.accept(beacon, src, false, time.Now())
	}
	if len(a.beacons) != inboxShed || len(a.inbox) != 0 || shed() != 0 {
		t.Fatalf("beacons' queue filled: beacons %d, inbox %d, shed %v", len(a.beacons), len(a.inbox), shed())
	}
	a.accept(beacon, src, false, time.Now()) // shed
	a.accept(accept, src, false, time.Now()) // queued
	if len(a.beacons) != inboxShed || len(a.inbox) != 1 || shed() != 1 {
		t.Fatalf("beacons' queue full: beacons %d, inbox %d, shed %v; want %d, 1 and 1", len(a.beacons), len(a.inbox), shed(), inboxShed)
	}
	for len(a.inbox) < inboxSize {
		a.accept(accept, src, false, time.Now())
	}
	a.accept(accept, src, false, time.Now())
	if full := value(t, a.metrics.dropped.WithLabelValues(dropQueueFull)); full != 1 || shed() != 1 {
		t.Fatalf("full inbox: queue_full %v, shed %v; want 1 and 1", full, shed())
	}
}
