package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// Default ports (contract: never 7946 or 8300-8302, which serf and consul
// use).
const (
	// DefaultPort is the UDP port of the wire protocol.
	DefaultPort = 7950
	// DefaultMulticast is the IPv4 multicast group and port of the
	// beacons: an address in the IPv4 organisation-local scope
	// (239.192.0.0/14, RFC 2365), which routers at a site boundary do not
	// forward. DefaultMulticast6 is the IPv6 one.
	DefaultMulticast = "239.192.79.50:7952"
	// DefaultMulticastGroups is Config.Multicast's default: both groups;
	// a node joins those of the families it binds.
	DefaultMulticastGroups = DefaultMulticast + "," + DefaultMulticast6
	// DefaultAPI is the local HTTP API's address: loopback only.
	DefaultAPI = "127.0.0.1:7953"
	// DefaultResolveInterval is Config.ResolveInterval's default: DNS
	// seeds are looked up again every 10 s (a few queries a minute per
	// node), and a node that appears in their records is joined within
	// that. The fast profile uses 2 s.
	DefaultResolveInterval = 10 * time.Second
)

// Profile names accepted by Config.Profile and ConfigForProfile.
const (
	ProfileLAN  = "lan"
	ProfileFast = "fast"
)

// ErrConfig is wrapped by every error that is the operator's to fix: a bad
// value, an address that cannot be bound, a data dir that cannot be used or
// holds another node's or corrupt state. The CLI exits with status 2 on
// these (errors.Is(err, ErrConfig)); the error's text is the one line to
// print.
var ErrConfig = errors.New("group: configuration error")

// configError carries the operator-facing message and, where there is one,
// the underlying error, while matching ErrConfig.
type configError struct {
	msg   string
	cause error
}

func (e *configError) Error() string { return e.msg }

func (e *configError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrConfig, e.cause}
	}
	return []error{ErrConfig}
}

// configErrorf returns an error wrapping ErrConfig. A %w verb in format
// also makes the wrapped error reachable through errors.Is/As.
func configErrorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &configError{msg: err.Error(), cause: errors.Unwrap(err)}
}

// Config configures an Agent. Start from DefaultLANConfig or
// DefaultFastConfig and override fields; the zero Config is not valid.
type Config struct {
	// ID is the node ID. Zero takes the ID from the data dir's state
	// file, or generates a random one on the first start. A non-zero ID
	// must match the state file's, if there is one: a data dir belongs
	// to one node, so that its group-number counter does too. Two live
	// processes with one ID are an error: the one that started second
	// gives way (Run returns ErrDuplicateID).
	ID wire.NodeID
	// Name is a name for people: shown in status, members, watch, events,
	// hooks and the live view, and announced to the other nodes. Empty
	// means the host name. At most MaxNameLen bytes.
	Name string
	// Tags are key=value pairs announced to every node (for example the
	// leader's application endpoint); other nodes see them in
	// Agent.Members and /v1/members. Keys are 1-MaxTagKeyLen letters,
	// digits, '_', '.' or '-'; see MaxTags for the limits.
	Tags map[string]string
	// Priority is the first part of the node's rank (priority, ID):
	// the highest-ranked live node coordinates the group.
	Priority uint8
	// Bind is the address the wire and gossip sockets bind to, IPv4 or
	// IPv6: "0.0.0.0" binds every IPv4 address, "::" every
	// address of both families (dual stack), a specific address its
	// family only. Link-local IPv6 addresses are refused (memberlist
	// carries no zone).
	Bind string
	// Advertise is the address other nodes reach this one at (its
	// memberlist address), of a family Bind covers. Empty: the first
	// address of Interface (IPv4 first; IPv6 not link-local), else Bind if
	// it is a specific address, else the default route's source address,
	// else the first address of an up, multicast-capable, non-loopback
	// interface, else loopback.
	Advertise string
	// Interface names the network interface for multicast. Empty: the
	// interface holding Bind, or, when Bind is a wildcard, every up,
	// multicast-capable, non-loopback interface with an address of the
	// group's family (loopback if there is none). Beacons go out on each
	// of them.
	Interface string
	// Port is the UDP port of the wire protocol. Zero picks a free port
	// (for tests and examples; see Agent.Addrs).
	Port int
	// GossipPort is memberlist's UDP and TCP port. Zero means Port+1,
	// or a free port when Port is zero too.
	GossipPort int
	// Multicast lists the beacons' multicast groups, at most one per
	// family, comma-separated: "239.192.79.50:7952,[ff15::7952]:7952"
	// (DefaultMulticastGroups). A node joins and sends to those of the
	// families Bind covers; one of them at least must be there. Empty or
	// "off" disables multicast: discovery then relies on Join.
	Multicast string
	// Join lists memberlist seeds: "host:port" ("[addr]:port" for IPv6),
	// or "host" (this node's gossip port), where host is an address or a
	// DNS name whose A and AAAA records all count, or "srv:NAME", an SRV
	// name whose records give the targets and their gossip ports (e.g.
	// srv:_groupd._udp.example.lan). Names are resolved with the
	// standard resolver on every attempt to join them, and every
	// ResolveInterval while they are joined, so that nodes added to the
	// records are found. Without multicast the seeds are the only way to
	// find the other nodes; a seed that cannot be joined is retried 1 s
	// later, then 2, 4 ... up to ResolveInterval apart, with one warning
	// until it works again. New refuses seeds that are all this node's own
	// gossip address (it would join nobody); among others, this node's
	// own address is skipped.
	Join []string
	// ResolveInterval is how often a joined --join seed is resolved
	// again, and the longest wait between attempts at one that fails:
	// a node added to a seed's records is joined within it. Zero means
	// DefaultResolveInterval.
	ResolveInterval time.Duration
	// DataDir holds the node's durable state (see package store).
	DataDir string
	// MinCounter raises the stored group-number counter to at least this
	// value at start (store.InitOptions.MinCounter; the --min-counter
	// that the store's corruption message tells operators to use after
	// moving corrupt state files away). Zero leaves it alone.
	MinCounter uint64
	// API is the local HTTP API's address: "host:port" (TCP), or
	// "unix:/path" (a unix socket, mode 0600), or "" (no API). The API is
	// read-only; a non-loopback host is accepted with a warning in the
	// log, because anyone who reaches it can read the group's state.
	API string
	// Profile names the timing profile Timing came from ("lan" or
	// "fast"); it is informational once Timing is set.
	Profile string
	// Timing holds the protocol's intervals (design §5). It also tunes
	// memberlist's failure detector (see DefaultLANConfig).
	Timing invitation.Timing
	// Election is the algorithm a failed coordinator's survivors run:
	// invitation.ElectionBully (default) or ElectionRing. Every node of a
	// LAN must use the same one.
	Election invitation.Election
	// Quorum turns on primary-partition mode (see Quorum): a leader is
	// primary, and IsLeader, only while a majority of Quorum.Expect holds
	// its lease.
	Quorum Quorum
	// NoPreempt keeps a leader leading when a node of higher priority
	// returns (keepalived's nopreempt): the returning node joins its
	// group instead of taking over, which saves a leader change and, in
	// quorum mode, a Lease without a primary leader. The default
	// preempts: the highest-ranked node leads, as priorities say.
	NoPreempt bool
	// Key, when set, is the 32-byte shared key: it seals every wire
	// packet (AES-256-GCM) and is memberlist's encryption key. Nil sends
	// everything in the clear (the agent warns at start).
	Key []byte
	// AcceptKeys are further 32-byte keys accepted from other nodes but
	// never used to send: during a key rotation a node seals with Key and
	// still opens packets sealed with an older (or the next) key. They
	// join memberlist's keyring the same way. Ignored without Key.
	AcceptKeys [][]byte
	// RateLimit is how many packets per second the wire and multicast
	// sockets accept from one source IP address, before any decryption or
	// decoding (a token bucket with two seconds' burst); the excess is
	// dropped and counted as "rate_limited". DefaultLANConfig sets
	// DefaultRateLimit; zero or less turns the limit off.
	RateLimit int
	// OnEvent, if set, is called with every event the node publishes
	// (every change of its view, and each leadership transition:
	// leader-start, leader-stop, leader-term), exactly once each and in
	// order, never two at once: synchronously, on the goroutine that
	// publishes it (the event loop; the lease timer, when a lease runs out
	// while the loop is busy; Run, for the leader-stop of a leader that
	// stops). Unlike Subscribe's channel it never drops an event, and an
	// event reaches it before Run goes on: a leader-stop is seen as soon
	// as the lease ends. It gets no snapshot; the event's views are its
	// own copies. It must return at once: it holds up the event loop
	// (queue the work for a goroutine of your own, as groupd's
	// --on-change hook runner does), and it must not call Run, Close or
	// Kill, nor wait (NameOf waits for a name: call it from that
	// goroutine). Status and Members may be called from it.
	OnEvent func(Event)
	// BeforeLeave, if set, is called by Run when it stops (its context
	// done, or it gave way to another process with its ID; not after
	// Kill), once the leader-stop of a leader that stops has reached
	// OnEvent, the subscribers and the callbacks, and before memberlist
	// announces the leave: the other nodes take over only once it returns,
	// so a stopping leader can undo what it did as leader first (groupd
	// waits there for its leader-stop hook). Its context ends a second
	// after the call, within the 2 s a stop may take; Run goes on then.
	BeforeLeave func(ctx context.Context)
	// WrapAPI, if set, wraps the handler the API's listener (Config.API)
	// serves: it gets Handler's and returns what to serve instead, so that
	// an embedder can add its own routes or middleware (groupd serves its
	// live view at /ui/ this way). Nil serves Handler as it is.
	WrapAPI func(http.Handler) http.Handler
	// TickInterval is the event loop's timer resolution: the loop sleeps
	// until the protocol's next deadline, but never less than this, so a
	// burst of deadlines is handled in one pass. Zero means 10ms.
	TickInterval time.Duration
	// Logger receives the agent's logs; each component adds a
	// "component" field. The zero Logger, which DefaultLANConfig leaves,
	// discards everything: the warnings about seeds that cannot be
	// joined, dropped packets or a missing Key, and the errors Run also
	// returns. Set one to see them, for example
	// zerolog.New(os.Stderr).With().Timestamp().Logger(), or with a level:
	// zerolog.New(os.Stderr).Level(zerolog.WarnLevel).
	Logger zerolog.Logger
	// Leader, if any callback is set, is told when this node starts and
	// stops leading, and who leads (see LeaderCallbacks).
	Leader LeaderCallbacks
	// Transport carries the wire protocol; nil means UDP sockets on Bind,
	// Port and Multicast (package group/udp, which an embedder can also
	// open with options of its own). Tests and embedders can pass an
	// in-memory one (package group/memnet). The agent closes it.
	Transport Transport
	// GossipTransport is memberlist's transport; nil means its UDP/TCP
	// transport on Bind and GossipPort. The agent shuts it down.
	GossipTransport memberlist.Transport
	// Pprof mounts net/http/pprof at /debug/pprof/ on the API (Handler),
	// for profiling a running daemon. Off by default: profiles show
	// memory and the API may be reachable by other local users.
	Pprof bool
	// InputLog, if set, receives every input of the state machine with
	// what it answered (NDJSON, see driver.LogWriter): enough to replay the
	// run, input by input, with driver.Replay. A debugging aid; it grows
	// by a few hundred bytes per packet.
	InputLog io.Writer
}

// DefaultLANConfig returns the lan profile (design §5): every value below
// is the default of the matching groupd flag.
//
// An agent with this Config is a node of the LAN's groupd, as `groupd run`
// is: it binds DefaultPort (and DefaultPort+1 for memberlist) on every
// address, beacons on the multicast group DefaultMulticast (IPv4; and on
// DefaultMulticast6 where it binds IPv6), and serves the
// API on DefaultAPI. It forms groups with every groupd and every embedded
// agent that uses the same multicast group, and a second process on one
// host with these defaults cannot bind the ports. To keep an
// application's nodes apart, give them a Multicast group (and Port and
// API) of their own, or set Multicast to "off" and list the other nodes'
// gossip addresses (Addrs.Gossip) in Join.
//
// Three failure detectors watch the nodes. A group's coordinator
// heartbeats every AliveInterval, and its members suspect it after
// AliveTimeout of silence: a coordinator that stopped is noticed within
// AliveInterval + AliveTimeout, 1 s in this profile, and its members elect
// another. The members acknowledge a heartbeat every AckInterval, and a
// member that stops is dropped from its group within
// Timing.MemberLossBound (2 s here). Memberlist, the membership list, is
// the slow and cheap one, tuned from Timing: with ProbeInterval =
// MemberTimeout/5 (6 s here) and SuspicionMult = 2 it declares a stopped
// node dead ProbeInterval + SuspicionMult × max(1, log10 n) × ProbeInterval
// after the first probe the node misses, n being the number of nodes: in
// this profile 18 s below 10 nodes, 20.4 s at 16 and 27.7 s at 64. Every
// node probes the others in turn, one per ProbeInterval, so that probe
// comes about a ProbeInterval after the stop on average and at most n−1
// ProbeIntervals after it: with 3 nodes, 18 s to 30 s after the stop.
// Until then Agent.Members lists the node as alive (a member that left the
// group shows so in its group fields).
func DefaultLANConfig() Config {
	return Config{
		Priority: wire.DefaultPriority, // keepalived's default, so operators can reason the same way
		Bind:     "0.0.0.0",            // every address; Advertise and Interface are derived
		Port:     DefaultPort,
		// GossipPort 0: Port+1, so moving --port moves both.
		Multicast:       DefaultMulticastGroups,
		DataDir:         DefaultDataDir(),
		API:             DefaultAPI,
		Profile:         ProfileLAN,
		Timing:          invitation.DefaultTiming(),
		Election:        invitation.ElectionBully,
		ResolveInterval: DefaultResolveInterval,
		TickInterval:    10 * time.Millisecond, // 1/10 of the shortest lan interval (AnswerTimeout)
		RateLimit:       DefaultRateLimit,      // see limits.go
	}
}

// DefaultFastConfig returns the fast profile: DefaultLANConfig with every
// protocol interval divided by five (invitation.FastTiming), for
// experiments on a quiet lab network and for tests.
func DefaultFastConfig() Config {
	c := DefaultLANConfig()
	c.Profile = ProfileFast
	c.Timing = invitation.FastTiming()
	c.TickInterval = 5 * time.Millisecond
	c.ResolveInterval = DefaultResolveInterval / 5
	return c
}

// ConfigForProfile returns DefaultLANConfig or DefaultFastConfig by name.
// An unknown name is an error wrapping ErrConfig.
func ConfigForProfile(name string) (Config, error) {
	switch name {
	case ProfileLAN, "":
		return DefaultLANConfig(), nil
	case ProfileFast:
		return DefaultFastConfig(), nil
	}
	return Config{}, configErrorf("group: unknown profile %q (want lan or fast)", name)
}

// DefaultDataDir is the contract's default data dir: /var/lib/groupd when
// running as root, else $XDG_STATE_HOME/groupd, else
// ~/.local/state/groupd.
func DefaultDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/groupd"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "groupd")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "groupd")
	}
	return "groupd-state" // no home: the current directory, as a last resort
}

// MulticastEnabled reports whether c uses multicast beacons.
func (c Config) MulticastEnabled() bool {
	return c.Multicast != "" && c.Multicast != "off"
}

// gossipPort returns the effective gossip port: GossipPort, else Port+1,
// else 0 (a free port).
func (c Config) gossipPort() int {
	if c.GossipPort != 0 || c.Port == 0 {
		return c.GossipPort
	}
	return c.Port + 1
}

// Validate checks every field that can be checked without touching the
// system and returns the first problem, as one line naming the field
// (Config.Port), in an error wrapping ErrConfig. New calls it; it also checks what needs
// the system (interfaces, ports, the data dir).
func (c Config) Validate() error {
	for _, p := range []struct {
		field string
		v     int
	}{{"Config.Port", c.Port}, {"Config.GossipPort", c.GossipPort}} {
		if p.v < 0 || p.v > 65535 {
			return configErrorf("group: %s %d out of range (0-65535)", p.field, p.v)
		}
	}
	if gp := c.gossipPort(); gp > 65535 {
		return configErrorf("group: Config.Port %d: its gossip port %d (Config.Port+1) is out of range; set Config.GossipPort", c.Port, gp)
	} else if gp != 0 && gp == c.Port {
		return configErrorf("group: Config.GossipPort %d is the same as Config.Port", gp)
	}
	bind, err := parseIP("Config.Bind", c.Bind, true)
	if err != nil {
		return err
	}
	if c.Advertise != "" {
		adv, err := parseIP("Config.Advertise", c.Advertise, false)
		if err != nil {
			return err
		}
		if !covers(bind, adv) {
			return configErrorf("group: Config.Advertise %s is %s, but Config.Bind %s is %s only: bind :: for both",
				c.Advertise, familyName(adv.To4() == nil), c.Bind, familyName(adv.To4() != nil))
		}
	}
	if _, err := c.multicastGroups(bind); err != nil {
		return err
	}
	for _, j := range c.Join {
		if _, err := parseSeed(j); err != nil {
			return err
		}
	}
	if c.ResolveInterval < 0 {
		return configErrorf("group: Config.ResolveInterval must be > 0, got %v", c.ResolveInterval)
	}
	if strings.TrimSpace(c.DataDir) == "" {
		return configErrorf("group: Config.DataDir is empty")
	}
	if c.API != "" {
		if _, _, err := parseAPI(c.API); err != nil {
			return err
		}
	}
	switch c.Profile {
	case "", ProfileLAN, ProfileFast:
	default:
		return configErrorf("group: Config.Profile %q: want lan or fast", c.Profile)
	}
	if err := c.Timing.Validate(); err != nil {
		return configErrorf("group: %s", trimInvitation(err))
	}
	if _, err := invitation.ParseElection(string(c.Election)); err != nil {
		return configErrorf("group: Config.Election %q: want bully or ring", c.Election)
	}
	if err := validateQuorum(c.Quorum); err != nil {
		return err
	}
	if c.Key != nil && len(c.Key) != wire.KeySize {
		return configErrorf("group: Config.Key is %d bytes, want %d", len(c.Key), wire.KeySize)
	}
	for i, k := range c.AcceptKeys {
		if len(k) != wire.KeySize {
			return configErrorf("group: Config.AcceptKeys[%d] is %d bytes, want %d", i, len(k), wire.KeySize)
		}
	}
	if c.TickInterval < 0 {
		return configErrorf("group: Config.TickInterval must be > 0, got %v", c.TickInterval)
	}
	return checkNameTags(c.Name, c.Tags)
}

// parseAPI splits the --api value into a network ("tcp" or "unix") and an
// address.
func parseAPI(s string) (network, addr string, err error) {
	if path, ok := strings.CutPrefix(s, "unix:"); ok {
		if path == "" {
			return "", "", configErrorf("group: Config.API %q: empty socket path", s)
		}
		return "unix", path, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", "", configErrorf("group: Config.API %q: want host:port or unix:/path: %v", s, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return "", "", configErrorf("group: Config.API %q: port %q out of range (0-65535)", s, port)
	}
	if host != "" && host != "localhost" && net.ParseIP(host) == nil {
		return "", "", configErrorf("group: Config.API %q: host must be an IP address or localhost", s)
	}
	return "tcp", s, nil
}

// trimInvitation drops package invitation's prefix from its errors, and
// names its fields as Config's: Timing.Lease becomes Config.Timing.Lease.
func trimInvitation(err error) string {
	return invitationField.ReplaceAllString(strings.TrimPrefix(err.Error(), "invitation: "), "Config.$1")
}

// invitationField is a field of invitation's Timing or Quorum in its
// messages.
var invitationField = regexp.MustCompile(`\b((?:Timing|Quorum)\.[A-Z])`)

// memberlistConfig returns memberlist's configuration for this node:
// DefaultLANConfig, relaxed. Memberlist is groupd's slow, cheap failure
// detector: it reports failed nodes outside this node's group (and
// members, as a backstop) and carries the gossip meta, while the
// coordinator's heartbeat, every AliveInterval, watches the coordinator,
// and the members' acknowledgements, every AckInterval, watch the members.
// So memberlist only has to report a dead node within MemberTimeout, and
// costs an idle node about a third of a packet a second.
//
// Memberlist's detection time is roughly: the dead node's turn to be
// probed (about one ProbeInterval with several probers), ProbeTimeout, the
// rest of the ProbeInterval for indirect probes, then the suspicion
// timeout, SuspicionMult × ProbeInterval × max(1, log10(n)) (with
// SuspicionMaxTimeoutMult 1, confirmations do not matter). With
//
//	ProbeInterval  = MemberTimeout/5       (lan 6 s; memberlist: 1 s)
//	ProbeTimeout   = 2 × AnswerTimeout      (lan 200 ms; memberlist: 500 ms; a LAN RTT is < 1 ms)
//	SuspicionMult  = 2                      (lan 12 s below 10 nodes, 14.4 s at 16, 21.7 s at 64)
//
// a dead node is reported 18 s after the first probe it misses below 10
// nodes and 27.7 s at 64 (memberlistDeadAfter), and that probe comes about
// a ProbeInterval after its stop (at most n−1 of them); within MemberTimeout
// (30 s) with up to 3 nodes, and a few ProbeIntervals later in larger LANs,
// which only the membership list waits for. An idle node probes one node
// per ProbeInterval and acknowledges about as many probes: 1/3 of a packet
// per second. Lifeguard (AwarenessMaxMultiplier, kept at 8) still
// stretches the timeouts of a node that notices it is itself slow. The
// probe interval and timeout have floors (100 ms and 50 ms) so that the
// fast profile stays robust on a loaded machine (tests under -race).
//
// GossipInterval = BeaconInterval, at least 200 ms (lan 1 s; memberlist:
// 200 ms): gossip costs nothing but a wakeup while there is nothing to
// spread, and a death or a meta change still spreads in a few seconds,
// well within MemberTimeout. PushPullInterval is 120 s (memberlist: 30 s):
// beacons, not anti-entropy, heal partitions here, and each push/pull is
// a TCP exchange of about ten packets. Compression is off (memberlist: on):
// the messages are a few hundred bytes, and each compressed one allocated
// about 10 KiB of compressor state. TCPTimeout (10 s) is cut to
// 2×BeaconInterval, at least 1 s: it bounds a push/pull and each Join
// attempt, and a LAN answers in milliseconds. DeadNodeReclaimTime =
// PeerTimeout lets a node that crashed and came back on another address
// (DHCP, a new port) reclaim its name once it has been dead that long;
// memberlist's default (never) would lock it out until the dead entry is
// reaped (GossipToTheDeadTime, 30 s).
func memberlistConfig(t invitation.Timing) *memberlist.Config {
	mc := memberlist.DefaultLANConfig()
	mc.ProbeInterval = max(t.MemberTimeout/5, 100*time.Millisecond)
	mc.ProbeTimeout = max(2*t.AnswerTimeout, 50*time.Millisecond)
	mc.SuspicionMult = 2
	mc.SuspicionMaxTimeoutMult = 1
	mc.GossipInterval = max(t.BeaconInterval, 200*time.Millisecond)
	mc.PushPullInterval = 120 * time.Second
	mc.EnableCompression = false
	mc.TCPTimeout = max(2*t.BeaconInterval, time.Second)
	mc.DeadNodeReclaimTime = t.PeerTimeout
	return mc
}
