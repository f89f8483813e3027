package group

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/store"
	"github.com/groupd/groupd/wire"
)

// This file builds an Agent: New validates the configuration, opens the
// data dir and binds every socket. run.go runs it, loop.go is its event
// loop, receive.go its receive path, publish.go hands its changes out.

// Queue sizes. Each input is bounded: when the loop falls behind, the
// newest input is dropped and counted, and the protocol's retransmissions
// and timeouts cover the loss, as they cover a lost datagram.
const (
	inboxSize    = 1024          // decoded wire packets but beacons waiting for the loop
	inboxShed    = inboxSize / 2 // beacons waiting for the loop, after every other packet (limits.go)
	gossipQSize  = 256           // memberlist "peer down" events
	joinQSize    = 64            // beacon-prompted memberlist Joins
	subBufSize   = 256           // events buffered per subscriber
	maxLoopSleep = time.Second
	leaveTimeout = 500 * time.Millisecond
)

// ErrDuplicateID is what Run returns when another live process uses this
// node's ID and this one gave way (it had started later). The daemon exits
// with status 2: it is the operator's to fix.
var ErrDuplicateID = errors.New("group: another live process uses this node ID")

// ErrPersist wraps a failure to write the state file at start. It is not a
// configuration error (the daemon exits 1, so that a supervisor restarts
// it once the disk has room).
var ErrPersist = errors.New("group: cannot write the state file")

// ErrClosed is what Run returns for an agent that was closed, or already
// run.
var ErrClosed = errors.New("group: agent closed or already run")

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
// with New, run it with Run; Status, Members, Subscribe, WatchLeader, Addrs
// and Handler are safe to call from any goroutine, before, during and after
// Run.
//
// One goroutine, the event loop, owns the state machine (through its
// driver, package driver): every input (wire packets, beacons, memberlist
// events, timers) reaches it through a channel, and everything it asks for
// (sends, saves, events) is done by the loop or handed to a goroutine that
// cannot block it.
type Agent struct {
	cfg  Config
	log  zerolog.Logger // component=group
	glog zerolog.Logger // component=memberlist (our side of it)

	id          wire.NodeID
	name        string
	boot        uint64 // random, drawn at every start (wire.Header.Boot)
	incarnation uint64 // count of starts, from the data dir
	durable     invitation.Durable
	home        uint32 // where this node keeps its state (homeOf)
	store       *store.Store

	tr        Transport
	gossipTr  memberlist.Transport
	gnet      *gossipNet // gossipTr, when it is ours (not Config.GossipTransport)
	mlConf    *memberlist.Config
	advertise net.IP
	// gossipAddr is memberlist's advertised host:port, sent in beacons.
	gossipAddr string
	seeds      []seedSpec   // Config.Join, parsed
	resolver   seedResolver // resolves named seeds (net.DefaultResolver)
	apiLn      net.Listener
	apiAddr    string
	apiSrv     *http.Server

	sealer     *wire.Sealer       // nil without a key
	replay     *wire.ReplayWindow // nil without a key (see receive)
	challenges *challenges        // nil without a key
	pktCounter atomic.Uint64
	limiter    *sourceLimiter // per source IP, before decoding; nil: off
	dropLog    *logLimiter    // one "dropped packet" line per reason per logEvery
	hello      helloPacer     // when copies received prompt a Hello (hello.go)
	sendMu     sync.Mutex     // guards sendBuf, sealBuf (the loop and challenge replies send)
	sendBuf    []byte
	sealBuf    []byte

	metrics *metrics
	hooks   *hookRunner // nil without OnChange
	peers   *peerBook

	inbox    chan inbound
	beacons  chan inbound // beacons' own lane: the loop takes them last
	gossipCh chan gossipEvent
	joinCh   chan string
	syncDue  time.Time // when the loop next runs syncGossip (loop only; zero: none)
	dupLast  time.Time // the last packet of another process with this ID (loop only; dupid.go)
	dup      dupState  // probes to another process with this ID (loop only; dupid.go)
	metaWake chan struct{}
	meta     atomic.Pointer[[]byte]
	ml       atomic.Pointer[memberlist.Memberlist]

	pub    publisher  // status, subscribers, leadership (publish.go)
	lease  lease      // a quorum-mode leader's lease, as the loop last computed it (primary.go)
	clocks *bootClock // the monotonic clock's instants on the boot clock (primary.go)
	names  nameBoard  // wakes waiters for other nodes' names (names.go)
	guards guards     // `groupd exec`'s guards (guard.go)

	started  atomic.Bool
	running  atomic.Bool  // the loop runs: /healthz is ok unless persist_error
	turned   atomic.Int64 // when the loop last went round (Unix ns; LoopTurned)
	stopping atomic.Bool
	crashCh  chan struct{} // closed by Kill: stop like a crash (no Leave)
	killOnce sync.Once
	done     chan struct{} // closed when Run returns
	runErr   error         // what Run returned; read after done is closed
	closeMu  sync.Mutex
	released bool
}

// New validates cfg, opens and locks the data dir, loads the node's state
// (counting the start in its incarnation), and binds every socket: the wire
// port, the multicast group, memberlist's port and the API. Errors that are
// the operator's to fix (bad values, ports in use, an unusable data dir,
// another node's or corrupt state) wrap ErrConfig; a state file that
// cannot be written (a full disk) wraps ErrPersist.
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
		name:     cfg.Name,
		inbox:    make(chan inbound, inboxSize),
		beacons:  make(chan inbound, inboxShed),
		gossipCh: make(chan gossipEvent, gossipQSize),
		joinCh:   make(chan string, joinQSize),
		metaWake: make(chan struct{}, 1),
		crashCh:  make(chan struct{}),
		done:     make(chan struct{}),
		sendBuf:  make([]byte, 0, wire.MaxPacketSize),
		sealBuf:  make([]byte, 0, wire.MaxDatagramSize),
		boot:     newBoot(),
		clocks:   newBootClock(time.Now()),
	}
	for _, j := range cfg.Join {
		sp, err := parseSeed(j) // Validate checked it
		if err != nil {
			return nil, err
		}
		a.seeds = append(a.seeds, sp)
	}
	a.resolver = net.DefaultResolver
	if a.name == "" {
		a.name, _ = os.Hostname()
		if len(a.name) > MaxNameLen {
			a.name = a.name[:MaxNameLen]
		}
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
	a.metrics = newMetrics(liveGauges{sinceLastChange: a.sinceLastChange, gossipAlive: a.gossipAlive,
		leader:  func() float64 { return boolGauge(a.Status().IsLeader()) },
		primary: func() float64 { return boolGauge(a.Status().Primary) }})
	a.pub.init(a)
	a.guards.a = a
	if cfg.Key != nil {
		s, err := wire.NewSealer(cfg.Key, cfg.AcceptKeys...)
		if err != nil {
			return nil, configErrorf("group: --key-file: %v", err)
		}
		a.sealer = s
		// Sized well above any LAN's node count (see ReplayWindow).
		a.replay = wire.NewReplayWindow(maxPeers)
		a.challenges = newChallenges()
	}
	a.limiter = newSourceLimiter(cfg.RateLimit)
	a.dropLog = newLogLimiter(logEvery)
	if err := a.openTransport(); err != nil {
		return nil, err
	}
	if err := a.openGossip(); err != nil {
		return nil, err
	}
	if err := a.checkSelfSeeds(); err != nil {
		return nil, err
	}
	if cfg.API != "" {
		if err := a.openAPI(); err != nil {
			return nil, err
		}
	}
	a.publishMeta(a.pub.status())
	ok = true
	return a, nil
}

// newBoot draws a boot nonce: random, never zero.
func newBoot() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; the clock keeps two boots
		// apart if it ever does.
		return uint64(time.Now().UnixNano()) | 1
	}
	return binary.LittleEndian.Uint64(b[:]) | 1
}

// openStore opens the data dir and loads (or creates) the node's state:
// its ID, counter, last group and a new incarnation, saved before anything
// is sent.
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
	// The incarnation counts starts; it is at least the Unix time, so
	// that it keeps growing when the state file is lost or restored
	// (status and recorded histories order a node's lives by it).
	boot, err := s.LoadOrInit(store.InitOptions{ID: a.cfg.ID, MinCounter: a.cfg.MinCounter,
		MinIncarnation: uint64(max(time.Now().Unix(), 0))})
	if err != nil {
		var ce *store.CorruptError
		if errors.As(err, &ce) {
			return &configError{msg: "group: " + err.Error(), cause: err}
		}
		return persistError{err}
	}
	a.id = boot.State.NodeID
	a.incarnation = boot.State.Incarnation
	a.durable = invitation.Durable{Counter: boot.State.Counter, LastGroup: boot.State.LastGroup, Term: boot.State.Term,
		Rule: wire.Quorum{Voters: boot.State.RuleVoters, Tie: boot.State.RuleTie}}
	a.home = homeOf(a.cfg.DataDir)
	for _, w := range boot.Warnings {
		a.cfg.Logger.Warn().Str("component", "group").Err(w).Msg("skipped an invalid state slot; the next save rewrites it")
	}
	return nil
}

// persistError is a failure to write the state file at start: ErrPersist,
// with the store's message.
type persistError struct{ err error }

func (e persistError) Error() string   { return "group: " + e.err.Error() }
func (e persistError) Unwrap() []error { return []error{ErrPersist, e.err} }

// openTransport sets up the wire protocol's transport: Config.Transport,
// or UDP sockets (the wire port and, with multicast, the multicast group).
func (a *Agent) openTransport() error {
	bind := net.ParseIP(a.cfg.Bind)
	if v4 := bind.To4(); v4 != nil {
		bind = v4
	}
	if t := a.cfg.Transport; t != nil {
		a.tr = t
		a.advertise = t.Addr().IP
		return nil
	}
	adv, err := chooseAdvertise(a.cfg, bind)
	if err != nil {
		return err
	}
	a.advertise = adv
	groups, err := a.cfg.multicastGroups(bind)
	if err != nil {
		return err
	}
	ifaces := map[bool][]net.Interface{}
	var usable []*net.UDPAddr
	var first error
	for _, g := range groups {
		v6 := g.IP.To4() == nil
		ifs, err := selectInterfaces(a.cfg.Interface, bind, v6)
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		ifaces[v6], usable = ifs, append(usable, g)
	}
	switch {
	case len(usable) == 0 && first != nil:
		return first
	case first != nil:
		// Dual stack on a host that has one family only on its LAN
		// interfaces: the other family's beacons have nowhere to go.
		a.log.Info().Str("skipped", first.Error()).Msg("multicast on one family only")
	}
	groups = usable
	t, err := openUDPTransport(bind, a.cfg.Port, adv, groups, ifaces)
	if err != nil {
		return err
	}
	t.onError = func(err error, multicast bool) {
		a.log.Debug().Err(err).Bool("multicast", multicast).Msg("read error")
	}
	a.tr = t
	for _, g := range groups {
		a.log.Info().Str("group", g.String()).Strs("interfaces", interfaceNames(ifaces[g.IP.To4() == nil])).Msg("multicast beacons on")
	}
	return nil
}

// openGossip binds memberlist's port (its transport) and prepares its
// configuration; Run creates the memberlist itself.
func (a *Agent) openGossip() error {
	mlLogger := newStdLogger(a.glog)
	mc := memberlistConfig(a.cfg.Timing)
	mc.Name = strconv.FormatUint(uint64(a.id), 10)
	mc.Logger = mlLogger
	if t := a.cfg.GossipTransport; t != nil {
		ip, port, err := t.FinalAdvertiseAddr("", 0)
		if err != nil {
			return configErrorf("group: gossip transport: %w", err)
		}
		a.gossipTr = t
		mc.Transport = t
		mc.AdvertiseAddr, mc.AdvertisePort = ip.String(), port
		mc.BindAddr, mc.BindPort = ip.String(), port
	} else {
		nt, err := newGossipNet(a.cfg.Bind, a.cfg.gossipPort(), a.glog)
		if err != nil {
			return configErrorf("group: --gossip-port %d: %w", a.cfg.gossipPort(), err)
		}
		a.gossipTr, a.gnet = nt, nt
		port := nt.Port()
		mc.BindAddr, mc.BindPort = a.cfg.Bind, port
		mc.AdvertiseAddr, mc.AdvertisePort = a.advertise.String(), port
		mc.Transport = nt
	}
	mc.Delegate = gossipDelegate{a}
	mc.Events = gossipDelegate{a}
	mc.Alive = gossipDelegate{a}
	mc.Conflict = gossipDelegate{a}
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
	a.gossipAddr = net.JoinHostPort(mc.AdvertiseAddr, strconv.Itoa(mc.AdvertisePort))
	return nil
}

// Addrs returns the addresses the agent bound and advertises.
func (a *Agent) Addrs() Addrs {
	ad := Addrs{Gossip: a.gossipAddr, API: a.apiAddr}
	if a.tr != nil {
		ad.Wire = a.tr.Addr().String()
		ad.Multicast = a.tr.MulticastGroup()
	}
	return ad
}

// ID returns the node's ID (from Config, the state file, or generated).
func (a *Agent) ID() wire.NodeID { return a.id }

// Name returns the node's name (Config.Name, or the host name).
func (a *Agent) Name() string { return a.name }

// Registry returns the agent's Prometheus registry (what /metrics serves),
// so that an embedder can serve or gather it elsewhere.
func (a *Agent) Registry() *prometheus.Registry { return a.metrics.reg }

// release closes everything New opened. It is idempotent.
func (a *Agent) release() {
	a.closeMu.Lock()
	defer a.closeMu.Unlock()
	if a.released {
		return
	}
	a.released = true
	a.stopping.Store(true)
	a.pub.close()
	// Before the API's Shutdown: a guard's answer stays open until the
	// guard ends.
	a.guards.close()
	if a.apiSrv != nil {
		// Event streams ended with the subscriptions above, so
		// Shutdown only waits for requests in flight.
		ctx, cancel := contextWithTimeout(300 * time.Millisecond)
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
	if a.tr != nil {
		a.tr.Close()
	}
	if a.gossipTr != nil && a.ml.Load() == nil {
		// Never handed to memberlist (New failed or Run never ran).
		a.gossipTr.Shutdown()
	}
	if a.store != nil {
		if err := a.store.Close(); err != nil {
			a.log.Warn().Err(err).Msg("closing the data dir")
		}
	}
}

// Close releases the data dir and sockets of an agent that was not run;
// Run then returns ErrClosed. It does nothing to an agent whose Run
// started (Run releases everything when its context is done), nor to one
// already closed. It may be called alongside Run: whichever starts first
// owns the agent's resources.
func (a *Agent) Close() error {
	// One atomic step with Run's: a check and a later store let both
	// pass, and Close released the sockets under a running loop and
	// closed done twice.
	if !a.started.CompareAndSwap(false, true) {
		return nil
	}
	a.release()
	close(a.done)
	return nil
}

// Done returns a channel closed when Run has returned (or Close released
// an agent that never ran).
func (a *Agent) Done() <-chan struct{} { return a.done }
