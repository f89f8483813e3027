package group

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/net/ipv4"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/store"
	"github.com/groupd/groupd/wire"
)

// Queue sizes. Each input is bounded: when the loop falls behind, the
// newest input is dropped and counted, and the protocol's retransmissions
// and timeouts cover the loss, as they cover a lost datagram.
const (
	inboxSize    = 1024 // decoded wire packets waiting for the loop
	gossipQSize  = 256  // memberlist "peer down" events
	joinQSize    = 64   // beacon-prompted memberlist Joins
	subBufSize   = 256  // events buffered per subscriber
	maxLoopSleep = time.Second
	leaveTimeout = 500 * time.Millisecond
)

// inbound is one accepted wire packet on its way to the loop.
type inbound struct {
	msg wire.Message
}

// Addrs are the addresses an agent bound or advertises, with the ports
// actually chosen when Config asked for port 0.
type Addrs struct {
	// Wire is the wire protocol's address, as other nodes reach it
	// (advertised IP, bound port).
	Wire string
	// Gossip is memberlist's address, as other nodes reach it: what to
	// give another node as a --join seed.
	Gossip string
	// Multicast is the beacons' group:port, "" without multicast.
	Multicast string
	// API is the HTTP API's address ("host:port" or "unix:/path"), ""
	// without an API.
	API string
}

// Agent is one groupd node: the invitation algorithm's runtime. Create it
// with New, run it with Run; Status, Members, Subscribe, Addrs and Handler
// are safe to call from any goroutine, before, during and after Run.
//
// One goroutine, the event loop, owns the invitation.Node: every input
// (wire packets, beacons, memberlist events, timers) reaches it through a
// channel, and everything the node asks for (sends, counter saves, events)
// is done by the loop or handed to a goroutine that cannot block it.
type Agent struct {
	cfg  Config
	log  zerolog.Logger // component=group
	glog zerolog.Logger // component=memberlist (our side of it)

	id          wire.NodeID
	incarnation uint64
	bootCounter uint64
	savedSeq    uint64 // highest group sequence saved as LastGroup or counter; owned by the loop
	store       *store.Store

	// Sockets, bound by New.
	uc        *net.UDPConn
	ucp       *ipv4.PacketConn // uc, for its multicast options
	wirePort  int
	mcast     *mcastSocket // nil without multicast
	transport *memberlist.NetTransport
	mlConf    *memberlist.Config
	advertise net.IP
	// gossipAddr is memberlist's advertised host:port, sent in beacons.
	gossipAddr string
	apiLn      net.Listener
	apiAddr    string
	apiSrv     *http.Server

	sealer     *wire.Sealer       // nil without a key
	replay     *wire.ReplayWindow // nil without a key (see receive)
	pktCounter atomic.Uint64
	limiter    *sourceLimiter // per source IP, before decoding; nil: off
	dropLog    *logLimiter    // one "dropped packet" line per reason per logEvery

	metrics *metrics
	hooks   *hookRunner // nil without OnChange
	peers   *peerBook

	inbox    chan inbound
	gossipCh chan gossipEvent
	joinCh   chan string
	metaWake chan struct{}
	meta     atomic.Pointer[[]byte]
	ml       atomic.Pointer[memberlist.Memberlist]

	// Loop-owned send buffers.
	sendBuf, sealBuf []byte
	lastPersistErr   string

	mu         sync.Mutex // guards status, prios, subs, subsClosed
	status     Status
	prios      map[wire.NodeID]uint8 // priorities of the group's members
	subs       map[*subscription]struct{}
	subsClosed bool

	started  atomic.Bool
	running  atomic.Bool // the loop runs: /healthz is ok
	stopping atomic.Bool
	crashCh  chan struct{} // tests: stop like a crash (no Leave, no final save)
	done     chan struct{} // closed when Run returns
	closeMu  sync.Mutex
	released bool
}

// subscription is one Subscribe call.
type subscription struct {
	ch chan Event
}

// New validates cfg, opens and locks the data dir, loads the node's state
// (bumping and saving its incarnation), and binds every socket: the wire
// port, the multicast group, memberlist's port and the API. Errors that
// are the operator's to fix (bad values, ports in use, an unusable data
// dir, another node's or corrupt state) wrap ErrConfig.
//
// New sends nothing; Run starts the protocol. An Agent that will not be
// run must be closed with Close to release the data dir and sockets.
func New(cfg Config) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.HookTimeout == 0 {
		cfg.HookTimeout = DefaultHookTimeout
	}
	if cfg.TickInterval == 0 {
		cfg.TickInterval = 10 * time.Millisecond
	}
	if cfg.Profile == "" {
		cfg.Profile = ProfileLAN
	}
	a := &Agent{
		cfg:      cfg,
		inbox:    make(chan inbound, inboxSize),
		gossipCh: make(chan gossipEvent, gossipQSize),
		joinCh:   make(chan string, joinQSize),
		metaWake: make(chan struct{}, 1),
		subs:     make(map[*subscription]struct{}),
		crashCh:  make(chan struct{}),
		done:     make(chan struct{}),
		sendBuf:  make([]byte, 0, wire.MaxPacketSize),
		sealBuf:  make([]byte, 0, wire.MaxDatagramSize),
	}
	ok := false
	defer func() {
		if !ok {
			a.release()
		}
	}()
	if err := a.openStore(); err != nil {
		return nil, err
	}
	a.log = cfg.Logger.With().Str("component", "group").Uint64("node", uint64(a.id)).Logger()
	a.glog = cfg.Logger.With().Str("component", "memberlist").Uint64("node", uint64(a.id)).Logger()
	a.peers = newPeerBook(a.id)
	a.metrics = newMetrics(a.sinceLastChange, a.gossipAlive)
	a.status = Status{
		ID: a.id, Priority: cfg.Priority, State: wire.StateElection, Role: invitation.Participant,
		Members: []wire.NodeID{}, Counter: a.bootCounter, Incarnation: a.incarnation, Since: time.Now(),
		Expect: cfg.Quorum.Expect,
	}
	if cfg.Key != nil {
		s, err := wire.NewSealer(cfg.Key, cfg.AcceptKeys...)
		if err != nil {
			return nil, configErrorf("group: --key-file: %v", err)
		}
		a.sealer = s
		// Sized well above any LAN's node count (see ReplayWindow).
		// Strict: after a restart of this node, a recorded packet of a
		// peer is refused once the peer's first live packet arrived.
		a.replay = wire.NewReplayWindow(maxPeers)
		a.replay.Strict = true
	}
	a.limiter = newSourceLimiter(cfg.RateLimit)
	a.dropLog = newLogLimiter(logEvery)
	if err := a.openSockets(); err != nil {
		return nil, err
	}
	if err := a.openGossip(); err != nil {
		return nil, err
	}
	if cfg.API != "" {
		if err := a.openAPI(); err != nil {
			return nil, err
		}
	}
	a.publishMeta(a.status)
	ok = true
	return a, nil
}

// openStore opens the data dir and loads (or creates) the node's state:
// its ID, counter and a new incarnation, saved before anything is sent.
func (a *Agent) openStore() error {
	s, err := store.Open(a.cfg.DataDir)
	if err != nil {
		return &configError{msg: "group: " + err.Error(), cause: err}
	}
	a.store = s
	prev, err := s.Load()
	switch {
	case errors.Is(err, store.ErrNoState):
	case err != nil:
		// Corrupt state, or a slot that cannot be read: the store's
		// message tells the operator what to do.
		return &configError{msg: "group: " + err.Error(), cause: err}
	case a.cfg.ID != 0 && prev.NodeID != a.cfg.ID:
		return configErrorf("group: data dir %s belongs to node %d, not %d (--id); give each node its own data dir",
			a.cfg.DataDir, prev.NodeID, a.cfg.ID)
	}
	// The incarnation is at least the Unix time (store.InitOptions), so
	// that a restored or recreated state file cannot make it go back.
	boot, err := s.LoadOrInit(store.InitOptions{ID: a.cfg.ID, MinCounter: a.cfg.MinCounter,
		MinIncarnation: uint64(max(time.Now().Unix(), 0))})
	if err != nil {
		return &configError{msg: "group: " + err.Error(), cause: err}
	}
	a.id = boot.State.NodeID
	a.incarnation = boot.State.Incarnation
	// The last group this node was in is a number it has seen: new
	// numbers go above it too (DESIGN §1: max(counter, highest seen)+1),
	// so that after a restart this node's groups are newer than the one
	// it left, even one another node created.
	a.bootCounter = max(boot.State.Counter, boot.State.LastGroup.Seq)
	a.savedSeq = a.bootCounter
	for _, w := range boot.Warnings {
		a.cfg.Logger.Warn().Str("component", "group").Err(w).Msg("skipped an invalid state slot; the next save rewrites it")
	}
	return nil
}

// openSockets binds the wire socket and, with multicast, the multicast
// socket, and works out the advertised address.
func (a *Agent) openSockets() error {
	bind := net.ParseIP(a.cfg.Bind).To4()
	adv, err := chooseAdvertise(a.cfg, bind)
	if err != nil {
		return err
	}
	a.advertise = adv
	a.uc, err = net.ListenUDP("udp4", &net.UDPAddr{IP: bind, Port: a.cfg.Port})
	if err != nil {
		return configErrorf("group: --port %d: %w", a.cfg.Port, err)
	}
	a.wirePort = a.uc.LocalAddr().(*net.UDPAddr).Port
	a.ucp = ipv4.NewPacketConn(a.uc)
	if !a.cfg.MulticastEnabled() {
		return nil
	}
	group, err := parseMulticast(a.cfg.Multicast)
	if err != nil {
		return err
	}
	ifaces, err := selectInterfaces(a.cfg.Interface, bind)
	if err != nil {
		return err
	}
	if err := setupMulticastSender(a.ucp, ifaces); err != nil {
		return configErrorf("%w", err)
	}
	if a.mcast, err = openMulticast(group, ifaces); err != nil {
		return err
	}
	names := make([]string, len(ifaces))
	for i, ifi := range ifaces {
		names[i] = ifi.Name
	}
	a.log.Info().Str("group", group.String()).Strs("interfaces", names).Msg("multicast beacons on")
	return nil
}

// openGossip binds memberlist's port (its transport) and prepares its
// configuration; Run creates the memberlist itself.
func (a *Agent) openGossip() error {
	mlLogger := newStdLogger(a.glog)
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{a.cfg.Bind},
		BindPort:  a.cfg.gossipPort(),
		Logger:    mlLogger,
	})
	if err != nil {
		return configErrorf("group: --gossip-port %d: %w", a.cfg.gossipPort(), err)
	}
	a.transport = nt
	port := nt.GetAutoBindPort()
	mc := memberlistConfig(a.cfg.Timing)
	mc.Name = strconv.FormatUint(uint64(a.id), 10)
	mc.BindAddr = a.cfg.Bind
	mc.BindPort = port
	mc.AdvertiseAddr = a.advertise.String()
	mc.AdvertisePort = port
	mc.Transport = nt
	mc.Logger = mlLogger
	mc.Delegate = gossipDelegate{a}
	mc.Events = gossipDelegate{a}
	mc.Alive = gossipDelegate{a}
	if a.cfg.Key != nil {
		// The keyring holds every key; the primary encrypts. Memberlist
		// then refuses unencrypted gossip (GossipVerifyIncoming).
		kr, err := memberlist.NewKeyring(a.cfg.AcceptKeys, a.cfg.Key)
		if err != nil {
			return configErrorf("group: --key-file: %v", err)
		}
		mc.Keyring = kr
		mc.SecretKey = a.cfg.Key
	}
	a.mlConf = mc
	a.gossipAddr = net.JoinHostPort(a.advertise.String(), strconv.Itoa(port))
	return nil
}

// Addrs returns the addresses the agent bound and advertises.
func (a *Agent) Addrs() Addrs {
	ad := Addrs{
		Wire:   net.JoinHostPort(a.advertise.String(), strconv.Itoa(a.wirePort)),
		Gossip: a.gossipAddr,
		API:    a.apiAddr,
	}
	if a.mcast != nil {
		ad.Multicast = a.mcast.group.String()
	}
	return ad
}

// ID returns the node's ID (from Config, the state file, or generated).
func (a *Agent) ID() wire.NodeID { return a.id }

// Registry returns the agent's Prometheus registry (what /metrics serves),
// so that an embedder can serve or gather it elsewhere.
func (a *Agent) Registry() *prometheus.Registry { return a.metrics.reg }

// Run runs the protocol until ctx is done, then leaves memberlist (so
// peers react at once), releases the data dir and sockets, and returns nil
// within about a second. It returns an error if memberlist cannot start.
// Run may be called once.
func (a *Agent) Run(ctx context.Context) error {
	if !a.started.CompareAndSwap(false, true) {
		return errors.New("group: Run called twice")
	}
	defer close(a.done)
	ml, err := memberlist.Create(a.mlConf)
	if err != nil {
		a.release()
		return fmt.Errorf("group: start memberlist: %w", err)
	}
	a.ml.Store(ml)
	node, err := invitation.New(invitation.Config{
		ID:       a.id,
		Priority: a.cfg.Priority,
		Counter:  a.bootCounter,
		Timing:   a.cfg.Timing,
		Election: a.cfg.Election,
		Rand:     newRand(),
	}, time.Now())
	if err != nil {
		ml.Shutdown()
		a.release()
		return configErrorf("group: %w", err)
	}
	if a.sealer == nil {
		a.log.Warn().Str("fix", "head -c 32 /dev/urandom | base64 > /etc/groupd/key; then --key-file /etc/groupd/key on every node").
			Msg("NO KEY (--key-file): wire packets and memberlist gossip are neither authenticated nor encrypted;" +
				" anyone on the LAN can forge them, take over as coordinator or split the group")
	}
	a.log.Info().Uint64("incarnation", a.incarnation).Uint64("counter", a.bootCounter).
		Str("wire", a.Addrs().Wire).Str("gossip", a.gossipAddr).Str("multicast", a.Addrs().Multicast).
		Str("api", a.apiAddr).Str("profile", a.cfg.Profile).Msg("starting")

	if a.cfg.OnChange != "" {
		a.hooks = newHookRunner(a.cfg.OnChange, a.cfg.HookTimeout,
			a.cfg.Logger.With().Str("component", "hooks").Uint64("node", uint64(a.id)).Logger(), a.metrics)
	}
	bg, stopBG := context.WithCancel(context.Background())
	var metaWG, readWG sync.WaitGroup
	metaWG.Add(1)
	go func() { defer metaWG.Done(); a.metaUpdater(bg, ml) }()
	// The joiner and the reconnect loop are not waited for: a Join in
	// progress may block for TCPTimeout, longer than shutdown may take.
	// They stop at their next step, and a Join on a shut-down memberlist
	// just fails.
	go a.joiner(bg, ml)
	go a.reconnect(bg, ml)
	readWG.Add(1)
	go func() { defer readWG.Done(); a.readLoop(a.uc, false) }()
	if a.mcast != nil {
		readWG.Add(1)
		go func() { defer readWG.Done(); a.readLoop(a.mcast.conn, true) }()
	}
	if a.apiSrv != nil {
		go a.serveAPI()
	}

	a.running.Store(true)
	crashed := a.loop(ctx, node)
	a.running.Store(false)
	a.stopping.Store(true)

	// Shutdown. Order matters: the loop is stopped, so nothing new is
	// sent; the final state is saved; memberlist announces our leave
	// while its sockets still work; then everything is closed.
	stopBG()
	if !crashed {
		st := node.Status()
		if err := a.store.Save(store.State{NodeID: a.id, Counter: st.Counter, Incarnation: a.incarnation, LastGroup: st.Group}); err != nil {
			a.log.Warn().Err(err).Msg("final state save failed (the counter saved earlier stands)")
		}
	}
	metaWG.Wait()
	if !crashed {
		if err := ml.Leave(leaveTimeout); err != nil {
			a.glog.Debug().Err(err).Msg("leave not confirmed")
		}
	}
	if err := ml.Shutdown(); err != nil {
		a.glog.Warn().Err(err).Msg("memberlist shutdown")
	}
	a.release()
	readWG.Wait()
	if crashed {
		a.log.Warn().Msg("stopped abruptly (test crash)")
	} else {
		a.log.Info().Msg("stopped")
	}
	return nil
}

// newRand returns the jitter source for the node, seeded from crypto/rand
// so that nodes started together drift apart.
func newRand() *mrand.Rand {
	var b [8]byte
	_, _ = rand.Read(b[:]) // on failure the zero seed still works
	return mrand.New(mrand.NewSource(int64(binary.LittleEndian.Uint64(b[:]))))
}

// release closes everything New opened. It is idempotent.
func (a *Agent) release() {
	a.closeMu.Lock()
	defer a.closeMu.Unlock()
	if a.released {
		return
	}
	a.released = true
	a.stopping.Store(true)
	a.closeSubscriptions()
	if a.apiSrv != nil {
		// Event streams ended with the subscriptions above, so
		// Shutdown only waits for requests in flight.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		if err := a.apiSrv.Shutdown(ctx); err != nil {
			a.apiSrv.Close()
		}
		cancel()
	}
	if a.apiLn != nil {
		a.apiLn.Close() // not closed by Shutdown if Serve never ran
	}
	if a.hooks != nil {
		a.hooks.stop()
	}
	if a.mcast != nil {
		a.mcast.close()
	}
	if a.uc != nil {
		a.uc.Close()
	}
	if a.transport != nil && a.ml.Load() == nil {
		// Never handed to memberlist (New failed or Run never ran).
		a.transport.Shutdown()
	}
	if a.store != nil {
		if err := a.store.Close(); err != nil {
			a.log.Warn().Err(err).Msg("closing the data dir")
		}
	}
}

// Close releases the data dir and sockets of an agent that was not run.
// It does nothing to an agent whose Run started: Run releases everything
// when its context is done.
func (a *Agent) Close() error {
	if a.started.Load() {
		return nil
	}
	a.started.Store(true) // Run must not start on released resources
	a.release()
	close(a.done)
	return nil
}

// crash stops a running agent the way a killed process stops: no
// memberlist Leave, no final save (tests only). It waits for Run to
// return.
func (a *Agent) crash() {
	close(a.crashCh)
	<-a.done
}

// loop is the event loop. It returns true if it stopped for crash.
func (a *Agent) loop(ctx context.Context, node *invitation.Node) bool {
	timer := time.NewTimer(0)
	defer timer.Stop()
	a.drain(node, time.Now())
	for {
		select {
		case <-ctx.Done():
			return false
		case <-a.crashCh:
			return true
		case in := <-a.inbox:
			a.handleInbound(node, in, time.Now())
		case ev := <-a.gossipCh:
			a.peerDown(node, ev, time.Now())
		case <-timer.C:
		}
		now := time.Now()
		if !now.Before(node.NextDeadline()) {
			node.Tick(now)
		}
		a.drain(node, now)
		wait := time.Until(node.NextDeadline())
		timer.Reset(min(max(wait, a.cfg.TickInterval), maxLoopSleep))
	}
}

// handleInbound feeds one packet to the node, after the runtime's own
// use of beacons: joining memberlist to a node it does not list as alive.
func (a *Agent) handleInbound(node *invitation.Node, in inbound, now time.Time) {
	m := in.msg
	if b, ok := m.Body.(wire.Beacon); ok {
		a.maybeJoin(m.From, b.Addr, now)
	}
	node.Step(now, m)
}

// peerDown tells the node that memberlist declared a peer dead or gone,
// unless the news is about a previous instance of the peer (see
// peerBook.staleDown).
func (a *Agent) peerDown(node *invitation.Node, ev gossipEvent, now time.Time) {
	if a.peers.staleDown(ev.id, ev.addr, now, a.cfg.Timing.PeerTimeout) {
		a.log.Debug().Uint64("peer", uint64(ev.id)).Str("addr", ev.addr).
			Msg("memberlist: a previous instance of the peer is down; the peer announces another address")
		return
	}
	a.log.Debug().Uint64("peer", uint64(ev.id)).Str("addr", ev.addr).Msg("memberlist: peer down")
	node.PeerDown(now, ev.id)
}

// maybeJoin asks the joiner to join memberlist to the beacon's sender when
// memberlist does not list it as alive: this is what re-merges the two
// sides of a healed partition, however long it lasted (plain memberlist
// gives up on dead nodes). Rate-limited per node to once per
// BeaconInterval.
func (a *Agent) maybeJoin(id wire.NodeID, addr string, now time.Time) {
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
	if !a.peers.shouldJoin(id, now, a.cfg.Timing.BeaconInterval) {
		return
	}
	select {
	case a.joinCh <- addr:
		a.log.Debug().Uint64("peer", uint64(id)).Str("addr", addr).Msg("beacon from a node memberlist does not list: joining")
	default:
	}
}

// drain does what the node asked for until it asks for nothing more.
// Saving the counter may unblock the next step (Persisted creates the
// group and its invitations), hence the loop; the bound only guards
// against a bug ping-ponging forever.
func (a *Agent) drain(node *invitation.Node, now time.Time) {
	changed := false
	for i := 0; node.HasOutput() && i < 64; i++ {
		out := node.Output()
		for _, env := range out.Messages {
			a.send(env, now)
		}
		for _, ev := range out.Events {
			a.publish(ev)
			changed = true
		}
		if p := out.Persist; p != nil {
			a.persist(node, now, p.Counter)
			changed = true
		}
	}
	if changed {
		// Keep the snapshot current for fields that change without an
		// event (the counter, after a save that changed no view).
		a.setStatus(node.Status(), now)
	}
}

// persist saves counter seq durably and tells the node. A new group
// number leaves this node only after this Save returned nil: the node
// sends nothing carrying it before Persisted. Saving takes a few
// milliseconds (fsync), so it is done right here on the loop.
func (a *Agent) persist(node *invitation.Node, now time.Time, seq uint64) {
	cur := node.Status()
	last := cur.Group
	if last.ID == a.id && last.Seq > seq {
		last = wire.GroupNumber{} // cannot happen: seq is above every number we made
	}
	err := a.store.Save(store.State{NodeID: a.id, Counter: seq, Incarnation: a.incarnation, LastGroup: last})
	// The node's next events (the new group) happen now, after the fsync,
	// not at the loop's earlier now: stamped with that, a group's first
	// event could precede a status snapshot taken during the fsync, which
	// still shows the previous group.
	if t := time.Now(); t.After(now) {
		now = t
	}
	if err != nil {
		a.metrics.persistFails.Inc()
		if msg := err.Error(); msg != a.lastPersistErr {
			a.lastPersistErr = msg
			a.log.Error().Err(err).Uint64("counter", seq).
				Msg("cannot save the group-number counter; no new group until a save succeeds (retrying)")
		}
		node.PersistFailed(now, seq, err)
		return
	}
	if a.lastPersistErr != "" {
		a.lastPersistErr = ""
		a.log.Info().Uint64("counter", seq).Msg("group-number counter saved again")
	}
	a.savedSeq = max(a.savedSeq, seq)
	node.Persisted(now, seq)
}

// publish hands one change of the node's view to the log, the metrics,
// the subscribers, the hook and memberlist's meta.
func (a *Agent) publish(ie invitation.Event) {
	// Saved before anyone hears of the group, so a history never shows a
	// group the data dir does not cover. The change then happens after the
	// fsync: stamped earlier, it could precede a snapshot that a new
	// subscriber took during the fsync, which still shows the old view,
	// and a recorded history would seem to go back and forth.
	if a.rememberGroup(ie.New) {
		if t := time.Now(); t.After(ie.Time) {
			ie.Time = t
		}
	}
	old := a.view(ie.Old, ie.Time)
	e := Event{Time: ie.Time, Node: a.id, Reason: string(ie.Reason), Old: &old, New: a.view(ie.New, ie.Time)}
	n := e.New
	a.log.Info().Str("reason", e.Reason).
		Str("old_group", old.Group.String()).Str("group", n.Group.String()).
		Str("old_state", old.State.String()).Str("state", n.State.String()).
		Str("role", n.Role.String()).Uint64("coordinator", uint64(n.Coordinator)).
		Str("members", idList(n.Members)).Uint64("version", n.Version).
		Msg("state change " + old.Group.String() + " -> " + n.Group.String())
	a.metrics.observe(e)

	a.mu.Lock()
	a.status = n
	a.prios = priorities(ie.New.Members)
	for s := range a.subs {
		select {
		case s.ch <- e:
		default:
			a.metrics.subDropped.Inc()
		}
	}
	a.mu.Unlock()

	if a.hooks != nil && hookWorthy(e) {
		a.hooks.enqueue(e)
	}
	if old.Group != n.Group || old.State != n.State {
		a.publishMeta(n)
	}
}

// rememberGroup saves the group the node moved to (joined, or waits for
// the Ready of) when its sequence is above what the data dir holds. Boot
// starts the counter above the saved last group, so a node restarted after
// kill -9 creates a number above every group it belonged to, not only above
// those it created (DESIGN §1: numbers grow over time). A failed save only
// weakens that ordering, never uniqueness (the counter guards that), so it
// is logged and the loop goes on.
// It reports whether it saved.
func (a *Agent) rememberGroup(s invitation.Status) bool {
	if s.Group.Seq <= a.savedSeq {
		return false
	}
	err := a.store.Save(store.State{NodeID: a.id, Counter: s.Counter, Incarnation: a.incarnation, LastGroup: s.Group})
	if err != nil {
		// The disk fault is logged once per distinct error, like the
		// counter's, not once per group change.
		if msg := err.Error(); msg != a.lastPersistErr {
			a.lastPersistErr = msg
			a.log.Warn().Err(err).Str("group", s.Group.String()).Msg("cannot save the last group (numbers stay unique)")
		}
		return false
	}
	a.savedSeq = s.Group.Seq
	return true
}

// setStatus publishes the node's view for Status and Members.
func (a *Agent) setStatus(s invitation.Status, now time.Time) {
	st := a.view(s, now)
	prios := priorities(s.Members)
	a.mu.Lock()
	a.status, a.prios = st, prios
	a.mu.Unlock()
}

// view converts the machine's status into the agent's, with the primary
// flag of the configured quorum.
func (a *Agent) view(s invitation.Status, now time.Time) Status {
	st := fromNode(s, a.incarnation, now)
	st.Expect = a.cfg.Quorum.Expect
	st.Primary = a.cfg.Quorum.Primary(st)
	return st
}

func priorities(ms []wire.Member) map[wire.NodeID]uint8 {
	p := make(map[wire.NodeID]uint8, len(ms))
	for _, m := range ms {
		p[m.ID] = m.Priority
	}
	return p
}

func idList(ids []wire.NodeID) string {
	b := make([]byte, 0, 8*len(ids))
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(id), 10)
	}
	return string(b)
}

// Status returns the node's current view of its group.
func (a *Agent) Status() Status {
	a.mu.Lock()
	s := a.status
	a.mu.Unlock()
	s.Members = append([]wire.NodeID{}, s.Members...)
	s.Time = time.Now()
	return s
}

// Subscribe returns a channel of the node's view changes, starting with a
// ReasonSnapshot event of the current status (so nothing is missed between
// reading the status and subscribing), and a function that ends the
// subscription. The channel is buffered; a subscriber that falls behind
// loses events (counted in groupd_subscriber_dropped_events_total) rather
// than slow the agent. The channel is closed when the subscription ends or
// the agent stops.
func (a *Agent) Subscribe() (<-chan Event, func()) {
	s := &subscription{ch: make(chan Event, subBufSize)}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.subsClosed {
		close(s.ch)
		return s.ch, func() {}
	}
	st := a.status
	st.Members = append([]wire.NodeID{}, st.Members...)
	// The snapshot is stamped with when its view became current, not
	// with now: the loop may already be past a change it has not yet
	// published, and a snapshot stamped later than that change would put
	// the old view after it in a recorded history.
	at := st.Time
	st.Time = time.Now()
	if at.IsZero() {
		at = st.Time
	}
	s.ch <- Event{Time: at, Node: a.id, Reason: ReasonSnapshot, New: st}
	a.subs[s] = struct{}{}
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if _, ok := a.subs[s]; ok {
				delete(a.subs, s)
				close(s.ch)
			}
		})
	}
}

// closeSubscriptions ends every subscription (the agent stops).
func (a *Agent) closeSubscriptions() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.subsClosed = true
	for s := range a.subs {
		close(s.ch)
		delete(a.subs, s)
	}
}

// Done returns a channel closed when Run has returned (or Close released
// an agent that never ran).
func (a *Agent) Done() <-chan struct{} { return a.done }

// sinceLastChange is the seconds_since_last_change gauge.
func (a *Agent) sinceLastChange() float64 {
	a.mu.Lock()
	since := a.status.Since
	a.mu.Unlock()
	return sinceSeconds(since)
}

// gossipAlive is the gossip_alive_members gauge.
func (a *Agent) gossipAlive() float64 {
	if ml := a.ml.Load(); ml != nil {
		return float64(ml.NumMembers())
	}
	return 0
}
