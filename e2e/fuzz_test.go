//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/wire"
)

// The packet fuzzer (issue 7, "bad input"). From namespace 4 it sends
// random, truncated, oversized and bit-flipped datagrams at node 1's wire
// port, at the multicast group (all nodes) and at node 1's memberlist port
// (UDP, plus garbage TCP connections), for GROUPD_FUZZ_DURATION (default
// 5s, 30s with GROUPD_E2E_LONG=1; the full run is 60s) at
// GROUPD_FUZZ_RATE packets per second (default 5000). 40 % of the packets come from one address (well over the
// per-source rate limit), the rest from 16 other addresses (each under it),
// so both the limiter and the decoders are exercised.
//
// It runs twice: "keyed" (the nodes share a key; the mutated packets are
// genuine sealed packets with bits flipped or cut short, so nothing
// authenticates) and "plain" (no key; every packet sent is one that
// wire.Decode rejects, so that no fuzz packet is a valid forgery, which an
// unkeyed LAN cannot refuse by design).
//
// The daemons must not crash, no group may change, RSS must stay within
// fuzzRSSSlack of what it was before, the drops must be counted by reason
// in /metrics and the logs must stay rate-limited: at most
// fuzzLogLinesPerKey lines per log key (drop reason or kind of memberlist
// complaint) per 10 s.
//
// It does not run beside the other tests (no t.Parallel): it keeps both
// cores busy, and the others' timing bounds are not about that.
func TestFuzzPackets(t *testing.T) {
	requireLab(t)
	def := 5 * time.Second
	if long() {
		def = 30 * time.Second
	}
	d := envDuration(t, "GROUPD_FUZZ_DURATION", def)
	rate := envInt(t, "GROUPD_FUZZ_RATE", 5000)
	t.Run("keyed", func(t *testing.T) { fuzzRun(t, true, d, rate) })
	t.Run("plain", func(t *testing.T) { fuzzRun(t, false, d, rate) })
}

// fuzzRSSSlack is how much a daemon's RSS may grow over the fuzz run. The
// Go heap grows with the allocation rate (every dropped packet costs a
// small error value) before the collector catches up, and the runtime
// returns freed memory to the OS lazily: a few MiB of growth is
// expected. A leak per packet would show hundreds of MiB over 50,000 to
// 300,000 packets.
const fuzzRSSSlack = 24 << 10 // KiB

// fuzzLogKeys bounds the distinct log keys a flood can produce: the drop
// reasons (wire.DropReasons, queue_full, rate_limited: 9) and memberlist's
// kinds of complaint about bad packets (about 20 without a key, where it
// decodes what it gets; a handful with one). Measured over 60 s at
// 5000/s: 57 lines (keyed), 158 (plain), for 300,000 packets.
const fuzzLogKeys = 32

// envDuration reads a positive duration from the environment (def when
// unset).
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	return envPositive(t, name, def, time.ParseDuration)
}

// envInt reads a positive number from the environment (def when unset).
func envInt(t *testing.T, name string, def int) int { return envPositive(t, name, def, strconv.Atoi) }

func envPositive[T int | time.Duration](t *testing.T, name string, def T, parse func(string) (T, error)) T {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := parse(s)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: want a positive %T", name, s, def)
	}
	return v
}

type fuzzer struct {
	rng    *rand.Rand
	keyed  bool
	sealer *wire.Sealer // the nodes' key (keyed) to make genuine-looking packets
	seeds  [][]byte
}

// seedsFor returns valid encoded messages of every type from node ids.
func seedMessages() [][]byte {
	g := wire.GroupNumber{Seq: 12, ID: 3}
	bodies := []wire.Body{
		wire.Beacon{Addr: "10.78.0.9:7951"}, wire.AreYouCoordinator{}, wire.Yes{Query: wire.TypeAreYouThere, Version: 3},
		wire.No{Query: wire.TypeAreYouThere}, wire.AreYouThere{Group: g}, wire.Invitation{Group: g}, wire.Accept{Group: g},
		wire.Ready{Group: g, Version: 2, Total: 3, Members: []wire.Member{{ID: 1, Priority: 100}, {ID: 2, Priority: 100}, {ID: 3, Priority: 100}}},
		wire.ReadyAck{Group: g, Version: 2}, wire.Election{Group: g}, wire.Answer{Group: g}, wire.Coordinator{Group: g},
		wire.RingElection{Group: g, Round: 1, Candidate: wire.Member{ID: 2, Priority: 100}},
		wire.RingElected{Group: g, Round: 1, Leader: wire.Member{ID: 2, Priority: 100}},
		wire.RingAck{Group: g, Of: wire.TypeRingElection, Round: 1, Candidate: wire.Member{ID: 2, Priority: 100}},
		wire.Challenge{Nonce: 0x5eed}, wire.Response{Nonce: 0x5eed},
	}
	var out [][]byte
	for i, b := range bodies {
		p, err := wire.Encode(wire.Message{Header: wire.Header{From: wire.NodeID(1000 + i), Priority: 100,
			Boot: 1, Counter: uint64(i + 1), Group: g, State: wire.StateNormal}, Body: b})
		if err != nil {
			panic(err)
		}
		out = append(out, p)
	}
	return out
}

// wirePacket returns one mutated packet for a wire or multicast port, and
// its kind.
func (f *fuzzer) wirePacket() ([]byte, string) {
	for {
		seed := f.seeds[f.rng.IntN(len(f.seeds))]
		if f.keyed {
			to := []wire.NodeID{wire.Broadcast, 1, 2, 3}[f.rng.IntN(4)]
			sealed, err := f.sealer.SealTo(nil, seed, to)
			if err != nil {
				panic(err)
			}
			seed = sealed
		}
		var p []byte
		kind := ""
		switch f.rng.IntN(4) {
		case 0:
			kind = "random"
			p = make([]byte, f.rng.IntN(1500))
			if f.rng.IntN(4) == 0 {
				p = p[:f.rng.IntN(min(60, len(p)+1))]
			}
			fill(f.rng, p)
		case 1:
			kind = "truncated"
			p = slices.Clone(seed[:f.rng.IntN(len(seed))])
		case 2:
			kind = "oversized"
			p = make([]byte, wire.MaxDatagramSize+1+f.rng.IntN(6000))
			fill(f.rng, p)
			copy(p, seed) // a plausible start
		default:
			kind = "bitflip"
			p = slices.Clone(seed)
			for range 1 + f.rng.IntN(8) {
				i := f.rng.IntN(len(p) * 8)
				p[i/8] ^= 1 << (i % 8)
			}
		}
		if f.valid(p) {
			continue // never send a valid packet: see TestFuzzPackets
		}
		return p, kind
	}
}

// valid reports whether a node would accept p (before the replay window).
func (f *fuzzer) valid(p []byte) bool {
	if f.keyed {
		for _, to := range []wire.NodeID{1, 2, 3} {
			if _, err := f.sealer.OpenFor(nil, p, to); err == nil {
				return true
			}
		}
		return false
	}
	_, err := wire.Decode(p)
	return err == nil
}

// gossipPacket returns one packet for memberlist's UDP port: random bytes,
// or a plausible message type byte (memberlist's are below 20) followed by
// random bytes, sometimes oversized.
func (f *fuzzer) gossipPacket() []byte {
	n := f.rng.IntN(1400)
	if f.rng.IntN(10) == 0 {
		n = 1400 + f.rng.IntN(8000)
	}
	p := make([]byte, n)
	fill(f.rng, p)
	if len(p) > 0 && f.rng.IntN(2) == 0 {
		p[0] = byte(f.rng.IntN(20))
	}
	return p
}

func fill(r *rand.Rand, p []byte) {
	for i := 0; i < len(p); i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < len(p); j++ {
			p[i+j] = byte(v >> (8 * j))
		}
	}
}

func fuzzRun(t *testing.T, keyed bool, d time.Duration, rate int) {
	l := newLab(t, 4, "lan")
	f := &fuzzer{rng: rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano()))), keyed: keyed, seeds: seedMessages()}
	env := []string{"GROUPD_PRIORITY=100", "GROUPD_KEY_FILE="}
	if keyed {
		key, path := newKey(t)
		env[1] += path
		var err error
		if f.sealer, err = wire.NewSealer(key); err != nil {
			t.Fatal(err)
		}
	}
	ids := []int{1, 2, 3}
	l.startWith(lab.Options{Env: env}, ids...)
	before, _ := l.waitFor("nodes 1-3 converge", ids, 60*time.Second, lab.Converged(ids))

	// Sources: node 4's address (heavy) and 16 more.
	const fz = 4
	src := fuzzSources{heavy: udpIn(t, l, fz, l.Addr(fz)),
		wire:   &net.UDPAddr{IP: l.Addr(1).AsSlice(), Port: wirePort},
		gossip: &net.UDPAddr{IP: l.Addr(1).AsSlice(), Port: gossipPort}}
	for _, ip := range l.addAddrs(t, fz, 100, 16) {
		src.light = append(src.light, udpIn(t, l, fz, ip))
	}

	time.Sleep(time.Second) // a quiet second after start-up before the RSS baseline: a hold, not a wait for a state
	base := fuzzBaseline(t, l, ids)
	stop := fuzzBackground(l, fz, ids, base, src.gossip)
	st := f.flood(src, d, rate)
	tcpConns := stop()
	time.Sleep(2 * time.Second) // the last packets, and late effects
	to := time.Now()

	t.Logf("fuzzer: %d datagrams (%.1f MB) in %.1fs = %.0f/s (target %d/s; %d send errors) and %d garbage TCP connections; by target: %s; by kind: %s",
		st.total, float64(st.bytes)/1e6, st.elapsed.Seconds(), float64(st.total)/st.elapsed.Seconds(), rate, st.errs, tcpConns,
		formatCounts(st.byTarget), formatCounts(st.byKind))
	for _, i := range ids {
		if !l.Alive(i) {
			t.Fatalf("node %d died; log:\n%s", i, l.LogTail(i, 30))
		}
	}
	l.stableGroups("fuzz", ids, before, st.from, to)
	for _, i := range ids {
		checkFuzzedNode(t, l, i, keyed, base, st.from, to)
	}
	// The logs say what happened, once per reason and period.
	var b bytes.Buffer
	for _, line := range logLinesSince(l.LogFile(1), base.logOff[1]) {
		if strings.Contains(line, "dropped packet") || strings.Contains(line, `"component":"memberlist"`) {
			fmt.Fprintln(&b, line)
		}
	}
	t.Logf("node 1's log lines about the flood:\n%s", b.String())
}

// fuzzSources are the fuzzer's sockets (in node 4's namespace) and the
// addresses it floods.
type fuzzSources struct {
	heavy        *net.UDPConn   // node 4's own address: 40 % of the datagrams
	light        []*net.UDPConn // 16 more addresses
	wire, gossip *net.UDPAddr   // node 1's protocol and memberlist ports
}

// fuzzBase is what the nodes looked like before the flood, and their RSS
// peak during it.
type fuzzBase struct {
	pids, rss, rssPeak map[int]int
	drops              map[int]map[string]float64
	logOff             map[int]int64
	mu                 sync.Mutex // rssPeak, during the flood
}

func fuzzBaseline(t *testing.T, l *tlab, ids []int) *fuzzBase {
	b := &fuzzBase{pids: map[int]int{}, rss: map[int]int{}, rssPeak: map[int]int{},
		drops: map[int]map[string]float64{}, logOff: map[int]int64{}}
	for _, i := range ids {
		b.pids[i] = l.pid(i)
		r, err := rssKB(b.pids[i])
		if err != nil {
			t.Fatal(err)
		}
		b.rss[i], b.rssPeak[i] = r, r
		b.drops[i] = l.drops(i)
		b.logOff[i] = logSize(l.LogFile(i))
	}
	return b
}

// fuzzBackground samples the nodes' RSS every 500 ms and opens ten garbage
// TCP connections a second to node 1's memberlist, from node fz, until the
// returned stop is called; stop returns how many connections it opened.
func fuzzBackground(l *tlab, fz int, ids []int, base *fuzzBase, gossip *net.UDPAddr) (stop func() int64) {
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for !done.Load() {
			time.Sleep(500 * time.Millisecond)
			for _, i := range ids {
				if r, err := rssKB(base.pids[i]); err == nil {
					base.mu.Lock()
					base.rssPeak[i] = max(base.rssPeak[i], r)
					base.mu.Unlock()
				}
			}
		}
	}()
	var conns atomic.Int64
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(2, 3))
		for !done.Load() {
			_ = l.Do(fz, func() error {
				c, err := net.DialTimeout("tcp", gossip.String(), time.Second)
				if err != nil {
					return err
				}
				go func() {
					defer c.Close()
					junk := make([]byte, r.IntN(4000))
					fill(r, junk)
					c.SetDeadline(time.Now().Add(2 * time.Second))
					c.Write(junk)
				}()
				conns.Add(1)
				return nil
			})
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() int64 {
		done.Store(true)
		wg.Wait()
		return conns.Load()
	}
}

// floodStats is what flood sent.
type floodStats struct {
	total, errs      int
	bytes            int64
	from             time.Time
	elapsed          time.Duration
	byTarget, byKind map[string]float64
}

// flood sends rate datagrams a second for d: 40 % to the protocol port,
// 30 % to the multicast group, 30 % to memberlist.
func (f *fuzzer) flood(src fuzzSources, d time.Duration, rate int) floodStats {
	st := floodStats{from: time.Now(), byTarget: map[string]float64{}, byKind: map[string]float64{}}
	for el := time.Duration(0); el < d; el = time.Since(st.from) {
		for want := int(el.Seconds() * float64(rate)); st.total < want; st.total++ {
			conn := src.heavy
			if f.rng.IntN(10) >= 4 {
				conn = src.light[f.rng.IntN(len(src.light))]
			}
			var p []byte
			var kind, target string
			var dst *net.UDPAddr
			switch x := f.rng.IntN(10); {
			case x < 4:
				p, kind = f.wirePacket()
				dst, target = src.wire, "wire"
			case x < 7:
				p, kind = f.wirePacket()
				dst, target = mcastAddr, "multicast"
			default:
				p, kind = f.gossipPacket(), "random"
				dst, target = src.gossip, "memberlist"
			}
			if _, err := conn.WriteToUDP(p, dst); err != nil {
				st.errs++
			}
			st.byTarget[target]++
			st.byKind[kind]++
			st.bytes += int64(len(p))
		}
		time.Sleep(time.Millisecond)
	}
	st.elapsed = time.Since(st.from)
	return st
}

// checkFuzzedNode checks node i after the flood: its RSS, how much it
// logged, and that it counted the drops the flood must have caused.
func checkFuzzedNode(t *testing.T, l *tlab, i int, keyed bool, base *fuzzBase, from, to time.Time) {
	t.Helper()
	rssAfter, err := rssKB(base.pids[i])
	if err != nil {
		t.Fatal(err)
	}
	d := diff(l.drops(i), base.drops[i])
	lines := logLinesSince(l.LogFile(i), base.logOff[i])
	before, peak := base.rss[i], base.rssPeak[i]
	t.Logf("node %d: dropped %s; RSS %d KiB before, %d peak, %d after (%+d KiB); %d log lines during the run",
		i, formatCounts(d), before, peak, rssAfter, rssAfter-before, len(lines))
	if rssAfter-before > fuzzRSSSlack || peak-before > 2*fuzzRSSSlack {
		t.Errorf("node %d: RSS grew from %d to %d KiB (peak %d), over the %d KiB slack", i, before, rssAfter, peak, fuzzRSSSlack)
	}
	periods := int(to.Sub(from)/(10*time.Second)) + 2
	if maxLines := fuzzLogKeys * periods; len(lines) > maxLines {
		t.Errorf("node %d logged %d lines during the run, over %d (%d keys × %d periods of 10s):\n%s",
			i, len(lines), maxLines, fuzzLogKeys, periods, strings.Join(lines[:min(len(lines), 30)], "\n"))
	}
	want := []string{"too_large"}
	if keyed {
		want = append(want, "auth")
	} else {
		want = append(want, "truncated", "version", "malformed")
	}
	if i == 1 {
		want = append(want, "rate_limited")
	}
	for _, r := range want {
		if d[r] == 0 {
			t.Errorf("node %d counted no %q drop", i, r)
		}
	}
}
