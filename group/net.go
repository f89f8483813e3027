package group

import (
	"errors"
	"net"
	"time"

	"github.com/rs/zerolog"

	"github.com/groupd/groupd/wire"
)

// The wire protocol's socket I/O.

// readLoop reads datagrams from conn until it is closed, and passes each
// to receive. One goroutine per socket: the wire socket and the multicast
// socket.
func (a *Agent) readLoop(conn net.PacketConn, viaMulticast bool) {
	// One byte more than the largest valid datagram, to detect (and
	// drop) longer ones rather than silently truncate them.
	buf := make([]byte, wire.MaxDatagramSize+1)
	open := make([]byte, 0, wire.MaxDatagramSize)
	for {
		n, src, err := conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || a.stopping.Load() {
				return
			}
			// A transient error (ICMP port unreachable surfacing as
			// ECONNREFUSED, say) must not stop the node.
			a.log.Debug().Err(err).Bool("multicast", viaMulticast).Msg("read error")
			time.Sleep(10 * time.Millisecond)
			continue
		}
		udp, _ := src.(*net.UDPAddr)
		a.receive(buf[:n], udp, viaMulticast, open)
	}
}

// receive checks one datagram and, if it is an acceptable message from
// another node, records its source and queues it for the loop. Every check
// that fails drops the packet and counts it by reason; nothing here panics
// on any input.
//
// Order: size; the source's rate limit (limits.go: before any work that
// costs more than a map lookup); unseal (with a key: a packet that does not
// authenticate, or was sealed for another node, is dropped as "auth");
// decode; ignore our own packets (multicast loopback brings every beacon
// back); then, with a key, the replay window.
//
// Replay protection runs only with a key, as package wire prescribes:
// without one, anyone can forge a fresh header, so the window protects
// nothing, while it would make every peer ignore a node whose data dir was
// wiped, or whose clock is wrong (its incarnation can go back), until the
// window forgot it.
func (a *Agent) receive(pkt []byte, src *net.UDPAddr, viaMulticast bool, openBuf []byte) {
	if len(pkt) > wire.MaxDatagramSize {
		a.dropReason("too_large", nil, src)
		return
	}
	if !a.limiter.allow(src, time.Now()) {
		a.dropReason(dropRateLimited, nil, src)
		return
	}
	plain := pkt
	if a.sealer != nil {
		var err error
		if plain, err = a.sealer.OpenFor(openBuf[:0], pkt, a.id); err != nil {
			a.drop(err, src)
			return
		}
	}
	msg, err := wire.Decode(plain)
	if err != nil {
		a.drop(err, src)
		return
	}
	if msg.From == a.id {
		return
	}
	if a.replay != nil {
		if err := a.replay.Accept(msg.Header); err != nil {
			a.drop(err, src)
			return
		}
	}
	t := msg.Body.Type().String()
	a.metrics.msgsRecv.WithLabelValues(t).Inc()
	a.metrics.bytesRecv.WithLabelValues(t).Add(float64(len(pkt)))
	a.peers.noteUDP(msg.From, msg.Priority, src, viaMulticast, time.Now())
	if e := a.log.Trace(); e.Enabled() {
		e.Str("msg", msg.String()).Stringer("src", src).Bool("multicast", viaMulticast).Msg("recv")
	}
	select {
	case a.inbox <- inbound{msg: msg}:
	default:
		if !a.stopping.Load() {
			a.dropReason(dropQueueFull, nil, src)
		}
	}
}

// drop counts and logs a rejected packet.
func (a *Agent) drop(err error, src *net.UDPAddr) {
	a.dropReason(wire.DropReason(err), err, src)
}

// dropReason counts a dropped packet by reason and logs it, rate-limited:
// at most one line per reason every logEvery (a hostile sender must not
// flood the log), with the number of drops of that reason not logged in
// between. Replays are logged at debug (duplicates happen: a broadcast
// that arrives both by multicast and by unicast, reordering right after a
// restart), the rest at warn: a node with a wrong or missing key, garbage
// at our port, a flood.
func (a *Agent) dropReason(reason string, err error, src *net.UDPAddr) {
	a.metrics.dropped.WithLabelValues(reason).Inc()
	level := zerolog.WarnLevel
	if reason == "replay" {
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

// send encodes, seals and sends one envelope from the node. The runtime
// fills what the algorithm leaves to it: the boot incarnation, the packet
// counter, and a Beacon's gossip address. Wire.Broadcast goes out as one
// multicast datagram, plus a unicast copy to every memberlist member not
// heard over multicast recently (to all of them without multicast).
func (a *Agent) send(env wire.Envelope, now time.Time) {
	msg := env.Msg
	if b, ok := msg.Body.(wire.Beacon); ok && b.Addr == "" {
		msg.Body = wire.Beacon{Addr: a.gossipAddr}
	}
	msg.Incarnation = a.incarnation
	msg.Counter = a.pktCounter.Add(1)
	pkt, err := wire.AppendEncode(a.sendBuf[:0], msg)
	if err != nil {
		// The algorithm built a message the codec refuses: a bug, not
		// a network condition. Log it loudly and carry on.
		a.metrics.sendErrors.WithLabelValues("encode").Inc()
		a.log.Error().Err(err).Str("msg", env.String()).Msg("cannot encode message")
		return
	}
	if a.sealer != nil {
		// Sealed for its destination: replayed to another node, it
		// does not open (wire.Sealer.SealTo). Broadcasts, multicast
		// or unicast copies, are sealed for everyone.
		if pkt, err = a.sealer.SealTo(a.sealBuf[:0], pkt, env.To); err != nil {
			a.metrics.sendErrors.WithLabelValues("seal").Inc()
			a.log.Error().Err(err).Msg("cannot seal message")
			return
		}
	}
	t := msg.Body.Type().String()
	if e := a.log.Trace(); e.Enabled() {
		e.Str("msg", env.String()).Msg("send")
	}
	if env.To != wire.Broadcast {
		addr := a.peers.route(env.To)
		if addr == nil {
			a.metrics.sendErrors.WithLabelValues("no_route").Inc()
			a.log.Debug().Uint64("to", uint64(env.To)).Str("type", t).Msg("no address for node; message not sent")
			return
		}
		a.writeTo(pkt, addr, t)
		return
	}
	fresh := time.Duration(0)
	if a.mcast != nil {
		sent, err := a.mcast.send(a.ucp, pkt)
		if err != nil {
			a.metrics.sendErrors.WithLabelValues("multicast").Inc()
			a.log.Debug().Err(err).Msg("multicast send failed")
		}
		a.metrics.msgsSent.WithLabelValues(t).Add(float64(sent))
		a.metrics.bytesSent.WithLabelValues(t).Add(float64(sent * len(pkt)))
		// A node heard over multicast within three beacon intervals
		// gets this one the same way.
		fresh = 3 * a.cfg.Timing.BeaconInterval
	}
	for _, addr := range a.peers.unicastBroadcastTargets(now, fresh) {
		a.writeTo(pkt, addr, t)
	}
}

// writeTo sends one unicast datagram and counts it.
func (a *Agent) writeTo(pkt []byte, addr *net.UDPAddr, typ string) {
	if _, err := a.uc.WriteToUDP(pkt, addr); err != nil {
		a.metrics.sendErrors.WithLabelValues("write").Inc()
		a.log.Debug().Err(err).Stringer("to", addr).Msg("send failed")
		return
	}
	a.metrics.msgsSent.WithLabelValues(typ).Inc()
	a.metrics.bytesSent.WithLabelValues(typ).Add(float64(len(pkt)))
}
