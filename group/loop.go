package group

import (
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	"github.com/groupd/groupd/driver"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/store"
	"github.com/groupd/groupd/wire"
)

// inbound is one accepted wire packet on its way to the loop, with the
// address it came from.
type inbound struct {
	msg wire.Message
	src *net.UDPAddr
}

// loop is the event loop: it feeds every input to the machine through the
// driver, and ticks it at its deadlines (at TickInterval resolution).
func (a *Agent) loop(ctx context.Context, d *driver.Driver) loopEnd {
	timer := time.NewTimer(0)
	defer func() { timer.Stop() }()
	var armed time.Time // when timer fires; zero once it has
	for {
		select {
		case <-ctx.Done():
			return endStopped
		case <-a.crashCh:
			return endCrashed
		case in := <-a.inbox:
			a.clocks.sample(time.Now()) // a suspend since the last turn shows here first (bootClock)
			a.handleInbound(d, in, time.Now())
		case in := <-a.beacons:
			a.clocks.sample(time.Now())
			// Every other packet first. A beacon says again what the
			// sender's last one said; an Accept or a ReadyAck that
			// waits behind hundreds of them misses its window. In a
			// 256-node lab on two cores the top node's queue held
			// about 512 beacons for minutes (235,289 shed of 286,694
			// received), and its 169 merges, for 5,206 Accepts
			// received, sent 333 Readies: groups of one or two.
			for k := len(a.inbox); k > 0; k-- {
				a.handleInbound(d, <-a.inbox, time.Now())
			}
			a.handleInbound(d, in, time.Now())
		case ev := <-a.gossipCh:
			a.clocks.sample(time.Now())
			switch {
			case ev.named:
				a.pub.nameKnown(ev.id)
			case ev.probe != nil:
				a.probeConflict(ev.probe, time.Now())
			default:
				a.peerDown(d, ev, time.Now())
			}
		case <-timer.C:
			a.clocks.sample(time.Now())
			armed = time.Time{}
		}
		a.turned.Store(time.Now().UnixNano()) // LoopTurned: the loop is not wedged
		if !d.Tick(time.Now()) {
			a.log.Error().Str("status", d.Node().Status().String()).
				Msg("the state machine still has work due after ticking it repeatedly (a bug); going on")
		}
		if d.Node().Stopped() {
			return endYielded
		}
		// A lease is renewed without a change of view: publish its end
		// after every input, for readers and the lease timer.
		_, until := d.Node().Lease()
		a.pub.armLease(time.Now(), until)
		a.tendDuplicate(time.Now())
		if a.gnet != nil {
			a.gnet.confirmDue(time.Now())
		}
		if due := a.syncDue; !due.IsZero() && !time.Now().Before(due) {
			a.syncDue = time.Time{}
			a.syncGossip(d.Node().Status())
		}
		wait := time.Until(d.Deadline())
		if !a.syncDue.IsZero() {
			wait = min(wait, time.Until(a.syncDue))
		}
		timer, armed = rearm(timer, armed, min(max(wait, a.cfg.TickInterval), maxLoopSleep))
	}
}

// rearm sets the loop's timer to fire after wait and returns it with the
// time it fires. A deadline that moved later gets a new timer: the
// runtime keeps a timer reset to a later time at its old place in the
// timer heap until it comes due, and the thread wakes for it then, for
// nothing. A participant's deadline moves later with every heartbeat, so
// Reset cost it a second wakeup per heartbeat (and one of sysmon, which
// sleeps until the same next timer): adding a new timer drops the
// stopped one from the head of the heap instead. Within a millisecond of
// the armed time, the timer is left as it is.
func rearm(t *time.Timer, armed time.Time, wait time.Duration) (*time.Timer, time.Time) {
	at := time.Now().Add(wait)
	switch {
	case armed.IsZero() || at.Before(armed.Add(-time.Millisecond)):
		t.Reset(wait)
	case at.After(armed.Add(time.Millisecond)):
		t.Stop()
		t = time.NewTimer(wait)
	default:
		return t, armed
	}
	return t, at
}

// handleInbound feeds one packet to the machine, after the runtime's own
// use of beacons: joining memberlist to a coordinator it does not list as
// alive, and noting where a duplicate of this node's ID speaks from.
//
// Only a coordinator's beacon prompts a join. Joining one node of a
// memberlist cluster is enough (gossip brings the rest), and every node
// that matters hears a coordinator: after a heal, each side hears the
// other's; a booting node hears the one that invites it. Booting nodes
// beacon too, and when every beacon prompted a join, N nodes started
// together ran up to N(N−1) TCP push/pulls in their first second: at
// N = 64 on two cores that storm held the group's formation back by
// seconds.
func (a *Agent) handleInbound(d *driver.Driver, in inbound, now time.Time) {
	m := in.msg
	if b, ok := m.Body.(wire.Beacon); ok && m.From != a.id {
		a.maybeJoin(m.From, b.Addr, m.Group.ID == m.From, now)
	}
	if m.From == a.id && m.Boot != a.boot {
		a.pub.duplicateSeen(m.Boot, in.src, now)
		a.noteDuplicate(m.Boot, in.src, now)
	}
	d.Step(now, invitation.Receive{Msg: m})
}

// peerDown tells the machine that memberlist declared a peer dead or gone,
// unless the news is about a previous instance of the peer (see
// peerBook.staleDown).
func (a *Agent) peerDown(d *driver.Driver, ev gossipEvent, now time.Time) {
	if a.peers.staleDown(ev.id, ev.addr, now, a.cfg.Timing.PeerTimeout) {
		a.log.Debug().Uint64("peer", uint64(ev.id)).Str("addr", ev.addr).
			Msg("memberlist: a previous instance of the peer is down; the peer announces another address")
		return
	}
	a.log.Debug().Uint64("peer", uint64(ev.id)).Str("addr", ev.addr).Bool("left", ev.left).Msg("memberlist: peer down")
	d.Step(now, invitation.PeerDown{ID: ev.id, Left: ev.left})
}

// maybeJoin records the gossip address a beacon announced, and asks the
// joiner to join memberlist to the beacon's sender when it coordinates
// and memberlist does not list it as alive: this is what re-merges the two
// sides of a healed partition, however long it lasted (plain memberlist
// gives up on dead nodes). Rate-limited per node to once per
// BeaconInterval. The address is recorded for every sender: a participant
// that restarted on a new address beacons only while it boots, and
// staleDown needs that address to tell its old instance's death from its
// own.
func (a *Agent) maybeJoin(id wire.NodeID, addr string, coordinator bool, now time.Time) {
	if addr == "" || addr == a.gossipAddr {
		return
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return
	}
	a.peers.noteBeacon(id, addr, now)
	if !coordinator || !a.peers.shouldJoin(id, now, a.cfg.Timing.BeaconInterval) {
		return
	}
	select {
	case a.joinCh <- addr:
		a.log.Debug().Uint64("peer", uint64(id)).Str("addr", addr).Msg("beacon from a node memberlist does not list: joining")
	default:
	}
}

// scheduleSync arranges a syncGossip after a participant's member list
// changed, one to two BeaconIntervals later: gossip usually fills the gaps
// by then, and when 63 members of a cold start all asked the coordinator
// for a push/pull at once, on one 2-core host, the group took seconds
// longer to form (p50 0.54 s -> 3.2 s at N = 64). Changes while one is
// due wait for it, so syncs are at least a BeaconInterval apart.
func (a *Agent) scheduleSync(now time.Time) {
	if a.syncDue.IsZero() {
		bi := a.cfg.Timing.BeaconInterval
		a.syncDue = now.Add(bi + rand.N(bi))
	}
}

// syncGossip asks memberlist for a push/pull with the coordinator when a
// participant's member list names members memberlist does not list
// as alive. Only a coordinator's beacon prompts a join (handleInbound), so
// each member joins the coordinator, and a member that joined before
// others learns of them from memberlist's gossip, whose retransmissions
// are limited, or its push/pull every 120 s: seconds to minutes with a
// member list that says who is there. One push/pull with the coordinator,
// which every member joined, brings them all.
func (a *Agent) syncGossip(st invitation.Status) {
	if a.ml.Load() == nil || st.State != wire.StateNormal || st.Group.IsZero() || st.Group.ID == a.id {
		return
	}
	addr, missing := a.peers.gossipGaps(st.Group.ID, st.Members)
	if addr == "" || missing == 0 {
		return // all listed, or the coordinator's beacons prompt that join
	}
	select {
	case a.joinCh <- addr:
		a.log.Debug().Int("missing", missing).Str("addr", addr).Msg("member list names nodes memberlist does not list: push/pull with the coordinator")
	default:
	}
}

// loopEnv is the machine's runtime (driver.Env): everything it runs on
// runs on the loop.
type loopEnv struct{ a *Agent }

func (e loopEnv) Send(env wire.Envelope) { e.a.send(env, time.Now()) }

// Save saves the machine's durable state with fsync, on the loop: a new
// group number leaves this node only after this returned nil (the machine
// sends nothing carrying it before Saved). Saving takes a few
// milliseconds.
func (e loopEnv) Save(d invitation.Durable) (bool, error) {
	a := e.a
	err := a.store.Save(store.State{NodeID: a.id, Counter: d.Counter, Incarnation: a.incarnation, LastGroup: d.LastGroup, Term: d.Term,
		RuleVoters: d.Rule.Voters, RuleTie: d.Rule.Tie})
	if err != nil {
		a.metrics.persistFails.Inc()
	}
	return true, err
}

func (e loopEnv) Report(now time.Time, out invitation.Output) { e.a.pub.report(now, out) }

// send encodes, seals and sends one envelope from the machine. The runtime
// fills a Beacon's gossip address. Wire.Broadcast goes out as one
// multicast datagram, plus a unicast copy to every memberlist member not
// heard over multicast recently (to all of them without multicast).
func (a *Agent) send(env wire.Envelope, now time.Time) {
	msg := env.Msg
	if b, ok := msg.Body.(wire.Beacon); ok && b.Addr == "" {
		b.Addr = a.gossipAddr
		msg.Body = b
	}
	t := msg.Body.Type().String()
	if e := a.log.Trace(); e.Enabled() {
		e.Str("msg", env.String()).Msg("send")
	}
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	pkt, ok := a.seal(msg, env.To)
	if !ok {
		return
	}
	if env.To != wire.Broadcast {
		addr := a.peers.route(env.To, env.ToBoot)
		if addr == nil {
			a.metrics.sendErrors.WithLabelValues("no_route").Inc()
			a.log.Debug().Uint64("to", uint64(env.To)).Str("type", t).Msg("no address for node; message not sent")
			return
		}
		a.writeTo(pkt, addr, t)
		return
	}
	multicast := a.tr.MulticastGroup() != ""
	if multicast {
		a.multicast(pkt, t)
	}
	targets := a.peers.unicastBroadcastTargets(multicast)
	for _, addr := range targets {
		a.writeTo(pkt, addr, t)
	}
	if multicast {
		a.metrics.copies.Add(float64(len(targets)))
	}
}

// multicast sends one datagram to the multicast group and counts it.
func (a *Agent) multicast(pkt []byte, typ string) {
	sent, err := a.tr.Multicast(pkt)
	if err != nil {
		a.metrics.sendErrors.WithLabelValues("multicast").Inc()
		a.log.Debug().Err(err).Msg("multicast send failed")
	}
	a.metrics.msgsSent.WithLabelValues(typ).Add(float64(sent))
	a.metrics.bytesSent.WithLabelValues(typ).Add(float64(sent * len(pkt)))
}

// seal encodes msg and, with a key, seals it for to. Call with sendMu
// held; the result lives in the send buffers until the next call.
func (a *Agent) seal(msg wire.Message, to wire.NodeID) ([]byte, bool) {
	pkt, err := wire.AppendEncode(a.sendBuf[:0], msg)
	if err != nil {
		// The machine built a message the codec refuses: a bug, not a
		// network condition. Log it loudly and carry on.
		a.metrics.sendErrors.WithLabelValues("encode").Inc()
		a.log.Error().Err(err).Str("msg", msg.String()).Msg("cannot encode message")
		return nil, false
	}
	if a.sealer != nil {
		// Sealed for its destination: replayed to another node, it
		// does not open (wire.Sealer.SealTo). Broadcasts, multicast or
		// unicast copies, are sealed for everyone.
		if pkt, err = a.sealer.SealTo(a.sealBuf[:0], pkt, to); err != nil {
			a.metrics.sendErrors.WithLabelValues("seal").Inc()
			a.log.Error().Err(err).Msg("cannot seal message")
			return nil, false
		}
	}
	return pkt, true
}

// writeTo sends one unicast datagram and counts it.
func (a *Agent) writeTo(pkt []byte, addr *net.UDPAddr, typ string) {
	if err := a.tr.Send(pkt, addr); err != nil {
		a.metrics.sendErrors.WithLabelValues("write").Inc()
		a.log.Debug().Err(err).Stringer("to", addr).Msg("send failed")
		return
	}
	a.metrics.msgsSent.WithLabelValues(typ).Inc()
	a.metrics.bytesSent.WithLabelValues(typ).Add(float64(len(pkt)))
}
