package group

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/groupd/groupd/wire"
)

// The receive path: what happens to a datagram between the transport and
// the loop.

// openBufs holds buffers for unsealing received packets.
var openBufs = sync.Pool{New: func() any { return new([wire.MaxDatagramSize]byte) }}

// receive checks one datagram and, if it is an acceptable message from
// another node, records its source and queues it for the loop. Every check
// that fails drops the packet and counts it by reason; nothing here panics
// on any input. It runs on the transport's goroutines.
//
// Order: size; the source's rate limit (limits.go: before any work that
// costs more than a map lookup); unseal (with a key: a packet that does not
// authenticate, or was sealed for another node, is dropped as "auth");
// decode; ignore our own packets (multicast loopback brings every beacon
// back); the runtime's Hello, and copies that call for one (hello.go);
// then, with a key, the runtime's Challenge and Response, and the replay
// window (see challenges).
//
// Replay protection runs only with a key, as package wire prescribes:
// without one, anyone can forge a fresh header, so the window protects
// nothing.
func (a *Agent) receive(pkt []byte, src *net.UDPAddr, viaMulticast bool) {
	if len(pkt) > wire.MaxDatagramSize {
		a.dropReason("too_large", nil, src)
		return
	}
	now := time.Now()
	if !a.limiter.allow(src, now) {
		a.dropReason(dropRateLimited, nil, src)
		return
	}
	plain := pkt
	if a.sealer != nil {
		// A pooled buffer: a local array would escape to the heap and
		// cost 4 KiB per packet, sealed or not. Decoded messages keep
		// no reference into it.
		buf := openBufs.Get().(*[wire.MaxDatagramSize]byte)
		defer openBufs.Put(buf)
		var err error
		if plain, err = a.sealer.OpenFor(buf[:0], pkt, a.id); err != nil {
			a.drop(err, src)
			return
		}
	}
	msg, err := wire.Decode(plain)
	if err != nil {
		a.drop(err, src)
		return
	}
	if msg.From == a.id && msg.Boot == a.boot {
		return // my own multicast, looped back
	}
	if _, ok := msg.Body.(wire.Hello); ok && msg.From != a.id {
		// Runtime-only, and only meaningful over multicast. Not
		// replay-checked: the worst a replayed Hello does is stop or
		// restart copies to a node that hears multicast anyway. A
		// Hello with this node's ID is another process's probe
		// (dupid.go): it goes on, through the replay window, to the
		// machine, like any packet of that process.
		a.metrics.msgsRecv.WithLabelValues(wire.TypeHello.String()).Inc()
		if viaMulticast {
			a.peers.noteHello(msg.From, msg.Boot)
		}
		return
	}
	if msg.From != a.id && a.peers.noteCopy(msg.From, msg.Boot, msg.Counter, viaMulticast) && a.hello.due(now) {
		a.sendHello()
	}
	if a.replay != nil {
		switch b := msg.Body.(type) {
		case wire.Challenge:
			a.answerChallenge(msg, b, src)
			return
		case wire.Response:
			if held, ok := a.challenges.verified(a.replay, msg, b); ok && held != nil {
				a.accept(*held, src, viaMulticast, now)
			}
			return
		}
		if err := a.replay.Accept(msg.Header); err != nil {
			switch {
			case errors.Is(err, wire.ErrUnverified):
				a.challenge(msg, src, now, false)
			case errors.Is(err, wire.ErrReplay) && a.replay.Superseded(msg.Header):
				// A boot verified before the live one: a recording,
				// or the process that still holds the ID after a
				// second one, verified meanwhile, gave way (design
				// 3.6). Only a live process answers.
				a.challenge(msg, src, now, true)
			}
			a.drop(err, src)
			return
		}
	}
	a.accept(msg, src, viaMulticast, now)
}

// accept counts an accepted message, records its source and queues it for
// the loop.
func (a *Agent) accept(msg wire.Message, src *net.UDPAddr, viaMulticast bool, now time.Time) {
	t := msg.Body.Type().String()
	a.metrics.msgsRecv.WithLabelValues(t).Inc()
	if msg.From != a.id {
		a.peers.noteUDP(msg.From, msg.Priority, msg.Boot, !msg.Booting(), kindOf(msg), src, viaMulticast, now)
	}
	if e := a.log.Trace(); e.Enabled() {
		e.Str("msg", msg.String()).Stringer("src", src).Bool("multicast", viaMulticast).Msg("recv")
	}
	q, full := a.inbox, dropQueueFull
	if msg.Body.Type() == wire.TypeBeacon {
		q, full = a.beacons, dropShed
	}
	select {
	case q <- inbound{msg: msg, src: src}:
	default:
		if !a.stopping.Load() {
			a.dropReason(full, nil, src)
		}
	}
}

// challenges are the runtime's outstanding replay challenges, one per
// sender: the nonce sent, when, and the packet that prompted it (the
// newest one, held until the sender's boot is verified).
type challenges struct {
	mu      sync.Mutex
	pending map[wire.NodeID]*challenge
	// old is when a superseded boot of each sender was last challenged
	// (oldDue); it outlives the challenge, which a Response ends.
	old map[wire.NodeID]time.Time
}

type challenge struct {
	nonce uint64
	sent  time.Time
	held  *wire.Message
	src   *net.UDPAddr
	via   bool
}

// challengeEvery bounds how often one sender is challenged; a superseded
// boot of it is challenged at most every challengeOldEvery, since a
// recording of an old boot's packets can be replayed at will and every
// challenge is a packet sent to the recording's source.
const (
	challengeEvery    = 50 * time.Millisecond
	challengeOldEvery = time.Second
)

func newChallenges() *challenges {
	return &challenges{pending: make(map[wire.NodeID]*challenge), old: make(map[wire.NodeID]time.Time)}
}

// oldDue reports whether a superseded boot of from may be challenged now,
// and if so notes that it is. The map holds senders challenged within
// challengeOldEvery; at maxPeers, the others are swept first.
func (c *challenges) oldDue(from wire.NodeID, now time.Time) bool {
	if t, ok := c.old[from]; ok && now.Sub(t) < challengeOldEvery {
		return false
	}
	if len(c.old) >= maxPeers {
		for id, t := range c.old {
			if now.Sub(t) >= challengeOldEvery {
				delete(c.old, id)
			}
		}
		if len(c.old) >= maxPeers {
			return false
		}
	}
	c.old[from] = now
	return true
}

// challenge holds msg, from a boot of its sender not verified yet (or
// superseded: old), and asks the sender (at the address the packet came
// from, which is where the live process is if the packet is live) to prove
// that boot is live.
func (a *Agent) challenge(msg wire.Message, src *net.UDPAddr, now time.Time, old bool) {
	c := a.challenges
	c.mu.Lock()
	if old && !c.oldDue(msg.From, now) {
		c.mu.Unlock()
		return
	}
	ch := c.pending[msg.From]
	if ch == nil {
		if len(c.pending) >= maxPeers {
			c.mu.Unlock()
			return
		}
		ch = &challenge{}
		c.pending[msg.From] = ch
	}
	m := msg
	ch.held, ch.src = &m, src
	if ch.nonce != 0 && now.Sub(ch.sent) < challengeEvery {
		c.mu.Unlock()
		return
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	ch.nonce, ch.sent = binary.LittleEndian.Uint64(b[:])|1, now
	nonce := ch.nonce
	c.mu.Unlock()
	a.sendRuntime(wire.Challenge{Nonce: nonce}, msg.From, src)
}

// verified handles a Response: if it answers this node's challenge of its
// sender, the sender's boot is verified in w, and the held packet (if it
// is of that boot) is returned to be accepted.
func (c *challenges) verified(w *wire.ReplayWindow, resp wire.Message, b wire.Response) (*wire.Message, bool) {
	c.mu.Lock()
	ch := c.pending[resp.From]
	if ch == nil || ch.nonce != b.Nonce {
		c.mu.Unlock()
		return nil, false // not ours, or a replay of an old Response
	}
	delete(c.pending, resp.From)
	c.mu.Unlock()
	held := ch.held
	floor := resp.Counter
	if held != nil && held.Boot == resp.Boot && held.Counter < floor {
		floor = held.Counter
	}
	w.Verify(resp.Header, floor)
	if held == nil || held.Boot != resp.Boot || w.Accept(held.Header) != nil {
		return nil, true
	}
	return held, true
}

// answerChallenge proves this boot is live to a node that asks: a
// Response, sealed for it, echoing its nonce, to where it asked from.
func (a *Agent) answerChallenge(msg wire.Message, b wire.Challenge, src *net.UDPAddr) {
	a.sendRuntime(wire.Response{Nonce: b.Nonce}, msg.From, src)
}

// runtimeMessage returns a message of the runtime's own (Challenge,
// Response, Hello), stamped with this boot's next packet counter.
func (a *Agent) runtimeMessage(body wire.Body) wire.Message {
	return wire.Message{Header: wire.Header{
		Version: wire.Version, Type: body.Type(), From: a.id, Priority: a.cfg.Priority,
		Boot: a.boot, Counter: a.pktCounter.Add(1), State: wire.StateElection,
	}, Body: body}
}

// sendRuntime sends a runtime message to node to at addr.
func (a *Agent) sendRuntime(body wire.Body, to wire.NodeID, addr *net.UDPAddr) {
	msg := a.runtimeMessage(body)
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	if pkt, ok := a.seal(msg, to); ok {
		a.writeTo(pkt, addr, body.Type().String())
	}
}

// drop counts and logs a rejected packet.
func (a *Agent) drop(err error, src *net.UDPAddr) {
	a.dropReason(wire.DropReason(err), err, src)
}

// dropReason counts a dropped packet by reason and logs it, rate-limited:
// at most one line per reason every logEvery (a hostile sender must not
// flood the log), with the number of drops of that reason not logged in
// between. Replays and unverified boots are logged at debug (duplicates
// happen: a broadcast that arrives both by multicast and by unicast; a
// restarted peer's first packets wait for its verification), the rest at
// warn: a node with a wrong or missing key, garbage at our port, a flood.
func (a *Agent) dropReason(reason string, err error, src *net.UDPAddr) {
	a.metrics.dropped.WithLabelValues(reason).Inc()
	level := zerolog.WarnLevel
	if reason == "replay" || reason == "unverified" {
		level = zerolog.DebugLevel
	}
	if a.log.GetLevel() > level {
		return
	}
	ok, n := a.dropLog.allow(reason, time.Now())
	if !ok {
		return
	}
	e := a.log.WithLevel(level).Str("reason", reason).Uint64("suppressed", n)
	if err != nil {
		e = e.Err(err)
	}
	if src != nil {
		e = e.Stringer("src", src)
	}
	e.Msg("dropped packet (logged at most once per reason every " + logEvery.String() + ")")
}
