package group

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/groupd/groupd/wire"
)

// memberlist integration.
//
// Memberlist is groupd's membership list and second failure detector. Its
// node name is the decimal node ID and its meta (nodeMeta) carries the
// node's priority, wire port, group and state. Its callbacks run on
// memberlist's goroutines, often with its locks held, so they only update
// the address book (short, no I/O) and enqueue "peer down" for the event
// loop on a bounded channel, dropping (and counting) when it is full:
// they never block.

// gossipEvent tells the loop memberlist declared a node dead or gone.
type gossipEvent struct {
	id    wire.NodeID
	addr  string       // the dead node's gossip address
	left  bool         // it left gracefully (it stopped): no longer a voter
	named bool         // not down: the coordinator's name arrived (names.go)
	probe *net.UDPAddr // not down: another process with this node's ID, at this wire address (dupid.go)
}

// gossipDelegate is memberlist's Delegate and EventDelegate.
type gossipDelegate struct{ a *Agent }

// NodeMeta returns this node's current meta. It must not block: it reads
// an atomically published copy.
func (d gossipDelegate) NodeMeta(limit int) []byte {
	b := d.a.meta.Load()
	if b == nil || len(*b) > limit {
		return nil
	}
	return *b
}

// NotifyMsg ignores memberlist user messages: groupd's protocol has its own
// socket.
func (gossipDelegate) NotifyMsg([]byte) {}

// GetBroadcasts has nothing to piggyback.
func (gossipDelegate) GetBroadcasts(int, int) [][]byte { return nil }

// LocalState has no extra state for push/pull.
func (gossipDelegate) LocalState(bool) []byte { return nil }

// MergeRemoteState ignores the (empty) remote state.
func (gossipDelegate) MergeRemoteState([]byte, bool) {}

// NotifyJoin records a node memberlist now lists as alive.
func (d gossipDelegate) NotifyJoin(n *memberlist.Node) { d.a.onGossip(n, GossipAlive) }

// NotifyUpdate records a node's new meta.
func (d gossipDelegate) NotifyUpdate(n *memberlist.Node) { d.a.onGossip(n, GossipAlive) }

// NotifyLeave records a node that left or was declared dead.
func (d gossipDelegate) NotifyLeave(n *memberlist.Node) {
	state := GossipDead
	if n.State == memberlist.StateLeft {
		state = GossipLeft
	}
	d.a.onGossip(n, state)
}

// NotifyConflict is told when memberlist hears of a node with a name it
// knows at another address. When the name is this node's, another process
// uses its ID: the wire protocol settles which one gives way (package
// invitation, design §3.6). Without multicast the two would never hear
// each other's packets, so the loop is asked to probe the other process's
// wire port (dupid.go); memberlist calls this on both processes, the first
// when the second's alive message reaches it, the second when it pulls
// the first's state.
func (d gossipDelegate) NotifyConflict(existing, other *memberlist.Node) {
	if existing == nil || other == nil {
		return
	}
	id, ok := parseNodeName(existing.Name)
	if !ok {
		return
	}
	if id == d.a.id {
		d.a.glog.Warn().Uint64("id", uint64(id)).Str("addr", existing.Address()).Str("other_addr", other.Address()).
			Msg("memberlist: another process announces this node's ID")
		d.a.conflictReported(other)
		return
	}
	d.a.glog.Debug().Uint64("id", uint64(id)).Str("addr", existing.Address()).Str("other_addr", other.Address()).
		Msg("memberlist: two processes announce one node ID")
}

// NotifyAlive admits a node into memberlist's list only if its name is a
// node ID and the address book has room for it (maxPeers). Without a key
// anyone can gossip made-up nodes, and memberlist itself sets no bound; with
// a key nobody without it gets this far. Memberlist logs a refusal as a
// warning (rate-limited, see mlLogWriter).
func (d gossipDelegate) NotifyAlive(n *memberlist.Node) error {
	id, ok := parseNodeName(n.Name)
	if !ok {
		return fmt.Errorf("node name %q is not a groupd node ID", n.Name)
	}
	if id != d.a.id && !d.a.peers.admit(id) {
		return fmt.Errorf("the address book is full (%d nodes)", maxPeers)
	}
	return nil
}

// parseNodeName returns the node ID a memberlist node name stands for.
func parseNodeName(name string) (wire.NodeID, bool) {
	id, err := strconv.ParseUint(name, 10, 64)
	if err != nil || id == 0 {
		return 0, false
	}
	return wire.NodeID(id), true
}

// onGossip handles a memberlist event; it runs on memberlist's goroutine.
func (a *Agent) onGossip(n *memberlist.Node, state string) {
	id, ok := parseNodeName(n.Name)
	if !ok {
		a.glog.Debug().Str("name", n.Name).Msg("ignoring memberlist node whose name is not a node ID")
		return
	}
	if id == a.id {
		return
	}
	var meta *nodeMeta
	if len(n.Meta) > 0 {
		if m, err := decodeMeta(n.Meta); err == nil {
			meta = &m
		} else {
			a.glog.Debug().Err(err).Uint64("peer", uint64(id)).Msg("ignoring bad node meta")
		}
	}
	if a.peers.noteGossip(id, state, n.Address(), n.Addr, meta, time.Now()) {
		a.nameLearned(id)
	}
	a.glog.Debug().Uint64("peer", uint64(id)).Str("gossip", state).Str("addr", n.Address()).Msg("memberlist event")
	if state == GossipAlive {
		return
	}
	select {
	case a.gossipCh <- gossipEvent{id: id, addr: n.Address(), left: state == GossipLeft}:
	default:
		a.metrics.dropped.WithLabelValues(dropQueueFull).Inc()
	}
}

// publishMeta publishes this node's meta for NodeMeta and asks the meta
// updater to re-advertise it.
func (a *Agent) publishMeta(s Status) {
	b := encodeMeta(nodeMeta{Priority: a.cfg.Priority, Port: uint16(a.tr.Addr().Port), Group: s.Group, State: s.State,
		Leader: s.Leader, Degraded: s.Degraded, Name: a.name, Tags: a.cfg.Tags})
	a.meta.Store(&b)
	select {
	case a.metaWake <- struct{}{}:
	default: // an update is already pending; it will read the newest meta
	}
}

// metaUpdater re-advertises the meta after changes. UpdateNode waits for
// the broadcast, so it runs here rather than on the loop. It stops with
// ctx, at most metaUpdateTimeout later.
func (a *Agent) metaUpdater(ctx context.Context, ml *memberlist.Memberlist) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.metaWake:
		}
		if err := ml.UpdateNode(metaUpdateTimeout); err != nil {
			a.glog.Debug().Err(err).Msg("meta update not yet broadcast")
		}
	}
}

// metaUpdateTimeout bounds how long the meta updater waits for memberlist
// to broadcast an update (it is also a bound on shutdown).
const metaUpdateTimeout = 250 * time.Millisecond

// joiner runs the memberlist Joins that beacons prompt, one at a time, off
// the loop (a Join blocks for up to TCPTimeout).
func (a *Agent) joiner(ctx context.Context, ml *memberlist.Memberlist) {
	for {
		select {
		case <-ctx.Done():
			return
		case addr := <-a.joinCh:
			a.join(ctx, ml, "beacon", []string{addr})
		}
	}
}

// join calls memberlist Join on addrs, in parallel so that one dead
// address does not delay the others, and counts the outcome. It returns
// the error of each address that failed.
func (a *Agent) join(ctx context.Context, ml *memberlist.Memberlist, why string, addrs []string) map[string]error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := map[string]error{}
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ctx.Err() != nil {
				return
			}
			_, err := ml.Join([]string{addr})
			if err != nil {
				err = oneLine(err) // memberlist's is a multi-line multierror
				a.metrics.joins.WithLabelValues("error").Inc()
				a.glog.Debug().Err(err).Str("addr", addr).Str("why", why).Msg("memberlist join failed")
				mu.Lock()
				failed[addr] = err
				mu.Unlock()
				return
			}
			a.metrics.joins.WithLabelValues("ok").Inc()
			a.glog.Debug().Str("addr", addr).Str("why", why).Msg("memberlist joined")
		}()
	}
	wg.Wait()
	return failed
}

// reconnectInterval is how often the reconnect loop retries failed
// members when there is no multicast: a few seconds in the lan profile.
func (a *Agent) reconnectInterval() time.Duration {
	return max(2*a.cfg.Timing.BeaconInterval, time.Second)
}

// reconnectTick is how often the reconnect loop looks at the seeds and
// failed members. With multicast and no seeds it only reaps the address
// book, every reapTick: a timer that fires every second wakes an idle
// daemon (and the Go runtime's sysmon with it) for nothing.
const (
	reconnectTick = time.Second
	reapTick      = time.Minute
)

// Seed back-off: a seed that cannot be joined (or resolves to nothing)
// is tried again after 1 s, then twice as long each time, up to
// ResolveInterval: a node whose seeds all vanished finds them within that
// interval of their return.
const seedRetryMin = time.Second

// seedState is the reconnect loop's record of one --join seed.
type seedState struct {
	next    time.Time     // earliest next attempt (a new resolution)
	backoff time.Duration // wait after the next failure
	failing bool          // the last attempt failed (warned once)
	addrs   []string      // what the seed resolved to last
}

// seedOutcome is how one attempt at a seed went.
type seedOutcome uint8

const (
	seedJoined seedOutcome = iota // every node it names is alive, or one of them was joined
	seedAlone                     // it names this node only
	seedFailed                    // it names nobody, or no join succeeded
)

// reconnect joins the --join seeds at start and keeps them joined: each
// attempt resolves the seed again (seeds.go) and joins the addresses it
// names that memberlist does not list as alive. A seed that is joined is
// resolved again every ResolveInterval (nodes added to its records are
// joined); one that fails is retried with back-off, with one warning per
// streak of failures (an operator should hear that a seed is wrong or
// down, not once a second) and a line when it works again. Without
// multicast it also re-joins, every reconnectInterval, the members
// memberlist declared dead in the last peerForget: without beacons this is
// what re-merges the two sides of a partition once it heals. It also reaps
// old address-book entries.
func (a *Agent) reconnect(ctx context.Context, ml *memberlist.Memberlist) {
	tick := reconnectTick
	if len(a.seeds) == 0 && a.tr.MulticastGroup() != "" {
		tick = reapTick // beacons re-merge partitions; nothing to rejoin
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	states := make([]seedState, len(a.seeds))
	for i := range states {
		states[i].backoff = seedRetryMin
	}
	var lastFailed time.Time
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		now := time.Now()
		// The due seeds at once, each with its own state: a seed that
		// is down (a join waits up to TCPTimeout) holds back neither
		// the others nor this loop's rejoins for longer than one wait.
		var wg sync.WaitGroup
		for i, s := range a.seeds {
			if st := &states[i]; !now.Before(st.next) {
				wg.Go(func() { a.attemptSeed(ctx, ml, s, st, first) })
			}
		}
		wg.Wait()
		if a.tr.MulticastGroup() == "" && now.Sub(lastFailed) >= a.reconnectInterval() {
			lastFailed = now
			if targets := a.peers.failedGossipAddrs(now, peerForget); len(targets) > 0 {
				a.join(ctx, ml, "reconnect", targets)
			}
		}
		a.peers.reap(now)
	}
}

// attemptSeed resolves one seed, joins what it names that is not alive,
// and schedules the next attempt.
func (a *Agent) attemptSeed(ctx context.Context, ml *memberlist.Memberlist, s seedSpec, st *seedState, first bool) {
	out, why := a.trySeed(ctx, ml, s, st, first)
	now := time.Now()
	refresh := a.resolveInterval()
	log := a.glog.With().Str("seed", s.String()).Strs("addrs", st.addrs).Logger()
	switch out {
	case seedJoined:
		if st.failing {
			log.Info().Msg("--join seed reachable again")
		}
		st.failing, st.backoff, st.next = false, seedRetryMin, now.Add(refresh)
		return
	case seedAlone:
		// The first node of a LAN (a StatefulSet's pod 0) is alone in
		// its seed's records: no warning, but look again soon, as for
		// a failure.
		log.Debug().Dur("retry_in", st.backoff).Msg("--join seed names only this node")
	case seedFailed:
		if !st.failing {
			w := log.Warn().Err(why).Dur("retry_in", st.backoff)
			if try := a.protocolPortSeed(s, st.addrs); try != "" {
				w = w.Str("try", try)
			}
			w.Msg("cannot join --join seed; retrying with back-off, resolving it again each time (check the name or address, " +
				"that groupd runs there, and that the port is its gossip port, by default its protocol port + 1)")
		} else {
			log.Debug().Err(why).Dur("retry_in", st.backoff).Msg("--join seed still failing")
		}
		st.failing = true
	}
	st.next = now.Add(st.backoff)
	st.backoff = min(2*st.backoff, max(refresh, seedRetryMin))
}

// trySeed is one attempt at a seed: resolve, then join what is not alive.
func (a *Agent) trySeed(ctx context.Context, ml *memberlist.Memberlist, s seedSpec, st *seedState, first bool) (seedOutcome, error) {
	port := 0
	if a.gnet != nil {
		port = a.gnet.Port()
	} else if _, p, err := net.SplitHostPort(a.gossipAddr); err == nil {
		port, _ = strconv.Atoi(p)
	}
	addrs, err := resolveSeed(ctx, a.resolver, s, port, a.usableIP)
	if err != nil {
		return seedFailed, err
	}
	st.addrs = addrs
	if len(addrs) == 0 {
		return seedFailed, errors.New("it names no address of a family this node binds")
	}
	alive := a.peers.aliveGossipAddrs()
	others := slices.DeleteFunc(slices.Clone(addrs), a.ownGossipAddr)
	due := slices.DeleteFunc(slices.Clone(others), func(s string) bool { return alive[s] })
	switch {
	case len(others) == 0 && len(alive) == 0:
		return seedAlone, nil
	case len(due) == 0:
		return seedJoined, nil
	}
	why := "reconnect"
	if first {
		why = "seed"
	}
	failed := a.join(ctx, ml, why, due)
	if len(failed) < len(due) {
		return seedJoined, nil
	}
	if len(due) < len(others) {
		// Some of the nodes it names are alive: the seed did its job,
		// and the others are down or gone (a removed pod's stale record).
		return seedJoined, nil
	}
	parts := make([]string, 0, len(due))
	for _, addr := range due {
		parts = append(parts, addr+": "+failed[addr].Error())
	}
	return seedFailed, errors.New(strings.Join(parts, "; ")) // one line
}

// resolveInterval is how often a joined seed is resolved again.
func (a *Agent) resolveInterval() time.Duration {
	return cmp.Or(a.cfg.ResolveInterval, DefaultResolveInterval)
}
