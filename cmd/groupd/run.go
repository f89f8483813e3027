package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/groupd/groupd/cmd/groupd/daemon"
	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/store"
	"github.com/groupd/groupd/wire"
)

// stopGrace bounds how long run waits for the agent to leave and stop after
// SIGINT or SIGTERM. The agent promises 2 s; past this the daemon gives up
// and exits 1 rather than hang a service manager.
const stopGrace = 4 * time.Second

// intervalFlags are the protocol interval flags: one per field of
// invitation.Timing, from the one table of those fields (TimingFields), so
// that a new interval gets its flag, its scaling and its validation
// together. Defaults come from the profile; only a flag that is set
// overrides its one value.
var intervalFlags = invitation.TimingFields()

// envName is the environment variable of a run flag: GROUPD_DATA_DIR for
// --data-dir.
func envName(flag string) string {
	return "GROUPD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

const runDescription = `Runs the groupd daemon in the foreground. Every flag can also be set by an
environment variable GROUPD_<FLAG>, e.g. GROUPD_DATA_DIR for --data-dir; a flag
on the command line wins over the environment, and an error about a value from
a variable names it. A GROUPD_* variable that no flag reads is logged as a
warning at start (GROUPD_DATADIR: did you mean GROUPD_DATA_DIR?).

--profile picks the protocol intervals (lan: the defaults of docs/design.md §5;
fast: five times shorter, for experiments); an interval flag overrides its one
value. Nodes on different profiles work together: inside a group, the
coordinator's intervals apply, and each node logs the difference once.

Without --key-file, traffic is not authenticated and groupd warns at start.
Generate a key with:

   head -c 32 /dev/urandom | base64 > /etc/groupd/key

The key file may hold several keys, one per line: the first seals, all are
accepted; that is how a key is rotated without a flag day (see docs/security.md).

Logs go to stderr: lines for people on a terminal, JSON lines elsewhere (a
file, a pipe, the journal); --log-format console or json picks one.

Signals: SIGINT and SIGTERM make the node leave the group (memberlist Leave)
and exit 0 within 2 s. SIGHUP is ignored: there are no log files to reopen.

Exit codes: 0 stopped by a signal; 1 runtime failure (including a state file
that cannot be written at start: a supervisor should retry); 2 bad
configuration, or another live process uses this node's --id (one line
"groupd: <problem>" on stderr).`

func runCommand() *cli.Command {
	lan, fast := group.DefaultLANConfig(), group.DefaultFastConfig()
	env := func(name string) []string { return []string{envName(name)} }
	// Categories, as the help lists them (urfave/cli sorts them by name).
	const (
		identity = "Identity"
		addrs    = "Addresses"
		disco    = "Discovery"
		data     = "Data"
		api      = "API"
		timing   = "Protocol timing"
		election = "Election and quorum"
		hooks    = "Hooks"
		security = "Security"
		logging  = "Logging"
	)
	flags := []cli.Flag{
		// urfave/cli files a command's flags into categories before it
		// adds --help, which then appears in none: listed here, it comes
		// first, in the category without a name.
		cli.HelpFlag,
		&cli.Uint64Flag{Name: "id", EnvVars: env("id"), Category: identity,
			DefaultText: "kept in the data dir, random on first start",
			Usage:       "node `ID` (>= 1), unique on the LAN"},
		&cli.StringFlag{Name: "name", EnvVars: env("name"), Category: identity, DefaultText: "the host name",
			Usage: "a `NAME` for people, shown in status, members, watch, hooks and the live view"},
		&cli.StringSliceFlag{Name: "tag", EnvVars: env("tag"), Category: identity,
			Usage: "`KEY=VALUE` announced to every node (repeat; e.g. --tag endpoint=10.0.0.3:5432)"},
		&cli.UintFlag{Name: "priority", EnvVars: env("priority"), Category: identity, Value: uint(lan.Priority),
			Usage: "election `PRIORITY` 0-255; the highest (priority, id) coordinates"},
		&cli.StringFlag{Name: "bind", EnvVars: env("bind"), Category: addrs, Value: lan.Bind,
			Usage: "`IP` to bind the protocol and gossip sockets to: IPv4, IPv6, or :: for both (dual stack)"},
		&cli.StringFlag{Name: "advertise", EnvVars: env("advertise"), Category: addrs,
			DefaultText: "address of --interface, --bind or the first non-loopback",
			Usage:       "`IP` other nodes reach this one at"},
		&cli.StringFlag{Name: "interface", EnvVars: env("interface"), Category: addrs,
			DefaultText: "the one holding --bind, or the system default",
			Usage:       "network interface `NAME` for multicast"},
		&cli.IntFlag{Name: "port", EnvVars: env("port"), Category: addrs, Value: lan.Port,
			Usage: "UDP `PORT` of the protocol (unicast)"},
		&cli.IntFlag{Name: "gossip-port", EnvVars: env("gossip-port"), Category: addrs, DefaultText: "--port + 1",
			Usage: "UDP and TCP `PORT` of memberlist gossip"},
		&cli.StringFlag{Name: "multicast", EnvVars: env("multicast"), Category: disco, Value: lan.Multicast,
			Usage: "multicast `GROUPS` for beacons, one per family (IPv6 [addr]:port), or off (then use --join)"},
		&cli.StringSliceFlag{Name: "join", EnvVars: env("join"), Category: disco,
			Usage: "`SEEDS` to join: HOST[:GOSSIP-PORT], GOSSIP-PORT being the other node's --gossip-port (its --port + 1 by default: 7951, not 7950; left out, this node's), HOST an address or a DNS name (all its A/AAAA records); or srv:NAME (repeat or comma-separate)"},
		&cli.DurationFlag{Name: "resolve-interval", EnvVars: env("resolve-interval"), Category: disco,
			DefaultText: fmt.Sprintf("%v (lan), %v (fast)", lan.ResolveInterval, fast.ResolveInterval),
			Usage:       "resolve --join names again every `DURATION` (and at every attempt to join them)"},
		&cli.StringFlag{Name: "start-at", EnvVars: env("start-at"), Category: disco,
			Usage: "open the sockets now but start the protocol at `TIME` (RFC 3339, or Unix seconds): lab cold starts"},
		&cli.StringFlag{Name: "data-dir", EnvVars: env("data-dir"), Category: data, Value: lan.DataDir,
			DefaultText: "/var/lib/groupd as root, else $XDG_STATE_HOME/groupd",
			Usage:       "`DIR` for the node's durable state (node id, group-number counter)"},
		&cli.Uint64Flag{Name: "min-counter", EnvVars: env("min-counter"), Category: data,
			Usage: "raise the saved group-number counter to at least `N` at start (to recover from lost or corrupt state)"},
		&cli.StringFlag{Name: "api", EnvVars: env("api"), Category: api, Value: lan.API,
			Usage: "local HTTP API: `HOST:PORT`, unix:/path, or off"},
		&cli.StringFlag{Name: "profile", EnvVars: env("profile"), Category: timing, Value: "lan",
			Usage: "interval `PROFILE`: lan or fast (five times shorter); an interval flag overrides one value"},
		&cli.StringFlag{Name: "election", EnvVars: env("election"), Category: election, Value: "bully",
			Usage: "`ALGORITHM` a failed coordinator's survivors run: bully or ring (a group runs its coordinator's)"},
		&cli.IntFlag{Name: "expect", EnvVars: env("expect"), Category: election,
			Usage: "expected cluster size `N`: a leader is primary while more than N/2 nodes hold its lease, so two never are (0: off)"},
		&cli.BoolFlag{Name: "no-preempt", EnvVars: env("no-preempt"), Category: election,
			Usage: "a leader keeps leading when a node of higher priority returns (keepalived's nopreempt)"},
		&cli.Uint64Flag{Name: "tie-breaker", EnvVars: env("tie-breaker"), Category: election,
			Usage: "node `ID` whose side is primary in an exact half split (needs --expect)"},
		&cli.StringFlag{Name: "on-change", EnvVars: env("on-change"), Category: hooks,
			Usage: "`COMMAND` run by /bin/sh -c on every role or group change (env GROUPD_EVENT, GROUPD_ROLE, ...)"},
		&cli.DurationFlag{Name: "hook-timeout", EnvVars: env("hook-timeout"), Category: hooks, Value: daemon.DefaultHookTimeout,
			Usage: "kill an --on-change command still running after `DURATION`"},
		&cli.StringFlag{Name: "key-file", EnvVars: env("key-file"), Category: security,
			Usage: "`FILE` of base64 32-byte keys, one per line: the first seals all traffic, the others are also accepted (key rotation)"},
		&cli.IntFlag{Name: "rate-limit", EnvVars: env("rate-limit"), Category: security, Value: lan.RateLimit,
			Usage: "`PACKETS` per second accepted from one source address before decoding; the rest is dropped (0: no limit)"},
		&cli.StringFlag{Name: "log-level", EnvVars: env("log-level"), Category: logging, Value: "info",
			Usage: "`LEVEL`: debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", EnvVars: env("log-format"), Category: logging, Value: "auto",
			Usage: "`FORMAT`: console (lines for people), json (one object a line), or auto: console when stderr is a terminal, else json"},
		&cli.BoolFlag{Name: "pprof", EnvVars: env("pprof"), Category: logging,
			Usage: "serve Go's profiler at /debug/pprof/ on the API (its address's access rules apply)"},
	}
	for _, f := range intervalFlags {
		flags = append(flags, &cli.DurationFlag{
			Name:        f.Name,
			EnvVars:     env(f.Name),
			Category:    timing,
			Usage:       f.Usage,
			DefaultText: fmt.Sprintf("%v (lan), %v (fast)", *f.Field(&lan.Timing), *f.Field(&fast.Timing)),
		})
	}
	return &cli.Command{
		Name:        "run",
		Category:    catDaemon,
		Usage:       "run the daemon",
		ArgsUsage:   " ",
		Description: runDescription,
		Flags:       flags,
		Action:      runAction,
	}
}

// runSettings is what runAction needs besides the agent's configuration.
type runSettings struct {
	keyMode os.FileMode    // permissions of --key-file, 0 without one
	startAt time.Time      // --start-at, zero without one
	daemon  daemon.Options // --on-change, --hook-timeout
}

// maxStartAhead bounds --start-at: a time further ahead is a mistake (a
// date in the wrong zone, milliseconds for seconds), not a plan.
const maxStartAhead = time.Hour

// parseStartAt reads --start-at: RFC 3339 with or without fractions, or
// Unix seconds with an optional fraction (date +%s.%N).
func parseStartAt(v string, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || f <= 0 || math.IsInf(f, 0) {
			return time.Time{}, badConfig("--start-at %q: want an RFC 3339 time or Unix seconds", v)
		}
		sec, frac := math.Modf(f)
		t = time.Unix(int64(sec), int64(frac*1e9))
	}
	if t.Sub(now) > maxStartAhead {
		return time.Time{}, badConfig("--start-at %s is %v ahead; at most %v", t.UTC().Format(time.RFC3339Nano), t.Sub(now).Round(time.Second), maxStartAhead)
	}
	return t, nil
}

func runAction(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	log, err := newLogger(c.App.ErrWriter, c.String("log-level"), c.String("log-format"))
	if err != nil {
		return err
	}
	for _, u := range unknownEnv(c.Command.Flags, os.Environ()) {
		w := log.Warn().Str("variable", u[0])
		if u[1] != "" {
			w = w.Str("did_you_mean", u[1])
		}
		w.Msg(unknownEnvMessage(u[0], u[1]))
	}
	cfg, rs, err := configFromFlags(c)
	if err != nil {
		return err
	}
	cfg.Logger = log
	rs.daemon.Logger = log
	// The daemon's own parts: the --on-change hook and the live view.
	d := daemon.New(rs.daemon)
	d.Configure(&cfg)
	if os.Getenv("GOMAXPROCS") == "" {
		// One P. The daemon handles a few small packets a second, each in
		// microseconds; with more Ps, every wakeup also woke an idle
		// thread to look for work, a futex round trip per packet. On 16
		// idle lab nodes this cut CPU by a quarter (0.40% to 0.30% per
		// node). Set GOMAXPROCS to override.
		runtime.GOMAXPROCS(1)
	}

	agent, err := group.New(cfg)
	if err != nil {
		return classify(err)
	}
	if err := d.Attach(agent); err != nil {
		agent.Close()
		return failure("%v", err)
	}
	// After Run (which gave a stopping leader's leader-stop hook up to a
	// second): a hook still running is killed.
	defer d.Stop()
	// The agent logs its own start line (addresses, profile, incarnation)
	// and, without a key, the warning that traffic is not authenticated.
	bi := readBuildInfo()
	start := log.Info().Str("version", bi.Version).Str("go", bi.GoVersion)
	if id := bi.commitID(); id != "" {
		start = start.Str("commit", id)
	}
	start.Uint64("node", uint64(agent.ID())).Str("data_dir", cfg.DataDir).Msg("groupd " + bi.Version)
	if cfg.Key != nil && rs.keyMode&0o077 != 0 {
		log.Warn().Str("key_file", c.String("key-file")).Str("mode", rs.keyMode.String()).
			Msg("key file is readable by other users; chmod 600 it")
	}

	ctx := c.Context
	// systemd (Type=notify): READY=1 in a group, STATUS=, the watchdog.
	sdn := daemon.NewNotifier(agent, log)
	sdCtx, sdStop := context.WithCancel(context.Background())
	defer sdStop()
	go sdn.Run(sdCtx)
	if hupSignals != nil {
		go func() {
			for {
				select {
				case <-hupSignals:
					log.Info().Msg("SIGHUP ignored: logs go to stderr, there is nothing to reopen")
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	if wait := time.Until(rs.startAt); wait > 0 {
		// A lab's cold start: N daemons exec'd one by one on one host
		// begin together, as N machines powering up would; their exec and
		// start-up costs (seconds for 64 daemons on two cores) are the
		// host's, not the protocol's.
		log.Info().Time("start_at", rs.startAt).Dur("wait", wait).Msg("holding the protocol until --start-at")
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			agent.Close()
			log.Info().Msg("groupd stopped before --start-at")
			return nil
		}
	}
	done := make(chan error, 1)
	go func() { done <- agent.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			return classify(err)
		}
		if ctx.Err() == nil {
			return failure("agent stopped on its own")
		}
	case <-ctx.Done():
		log.Info().Msg("signal received: leaving the group")
		sdn.Stopping()
		select {
		case err := <-done:
			if err != nil {
				return classify(err)
			}
		case <-time.After(stopGrace):
			return failure("agent did not stop within %v of the signal", stopGrace)
		}
	}
	log.Info().Msg("groupd stopped")
	return nil
}

// classify gives an agent error its exit code: 2 for configuration
// problems (group.ErrConfig, a data dir in use, an address in use or not
// available, no permission), 1 for the rest.
func classify(err error) error {
	switch {
	case errors.Is(err, group.ErrConfig),
		errors.Is(err, store.ErrLocked),
		errors.Is(err, syscall.EADDRINUSE),
		errors.Is(err, syscall.EADDRNOTAVAIL),
		errors.Is(err, syscall.EACCES),
		errors.Is(err, syscall.EPERM),
		errors.Is(err, syscall.EROFS):
		// group's messages name Config's fields, which become flags;
		// its package prefix would read "groupd: group: --port ...".
		if errors.Is(err, group.ErrPersist) {
			break // a full disk at start: let a supervisor restart us
		}
		return cli.Exit(agentMessage(err), exitConfig)
	case errors.Is(err, group.ErrDuplicateID):
		// The agent logged which ID, and where the other process is.
		return cli.Exit(agentMessage(err)+": give every node its own --id", exitConfig)
	}
	return cli.Exit(agentMessage(err), exitFailure)
}

// agentMessage is an error of the agent in the command line's words:
// without group's prefix, naming flags rather than Config's fields.
func agentMessage(err error) string {
	return flagTerms(strings.TrimPrefix(err.Error(), "group: "))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// newLogger returns the daemon's logger writing to w, in format auto,
// console or json (auto: console on a terminal, else json).
func newLogger(w io.Writer, level, format string) (zerolog.Logger, error) {
	// zerolog's own names, in any case. groupd offers four of them:
	// trace floods the journal, and fatal, panic and disabled would hide
	// the error that says why the daemon stops. ParseLevel also takes
	// numbers, which the help does not offer.
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || lvl < zerolog.DebugLevel || lvl > zerolog.ErrorLevel || !strings.EqualFold(level, lvl.String()) {
		return zerolog.Nop(), badConfig("--log-level %q: want debug, info, warn or error", level)
	}
	tty := isTerminal(w)
	if format == "auto" {
		format = "json"
		if tty {
			format = "console"
		}
	}
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: !tty}
	default:
		return zerolog.Nop(), badConfig("--log-format %q: want auto, console or json", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// configFromFlags builds the agent's configuration: the --profile defaults,
// then every flag. Interval flags apply only when set, so that they override
// the profile one value at a time.
func configFromFlags(c *cli.Context) (group.Config, runSettings, error) {
	var rs runSettings
	profile := c.String("profile")
	cfg, err := group.ConfigForProfile(profile)
	if err != nil || profile == "" {
		return group.Config{}, rs, badConfig("--profile %q: want lan or fast", profile)
	}

	if c.IsSet("id") {
		id := c.Uint64("id")
		if id == 0 {
			return cfg, rs, badConfig("--id must be >= 1 (leave it out to keep the data dir's id, or generate one)")
		}
		cfg.ID = wire.NodeID(id)
	}
	if v := c.String("start-at"); v != "" {
		t, err := parseStartAt(v, time.Now())
		if err != nil {
			return cfg, rs, err
		}
		rs.startAt = t
	}
	cfg.Name = c.String("name")
	if vals := c.StringSlice("tag"); len(vals) > 0 {
		cfg.Tags = make(map[string]string, len(vals))
		for _, kv := range vals {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return cfg, rs, badConfig("--tag %q: want KEY=VALUE", kv)
			}
			if _, dup := cfg.Tags[k]; dup {
				return cfg, rs, badConfig("--tag %q: key %q given twice", kv, k)
			}
			cfg.Tags[k] = v
		}
	}
	prio := c.Uint("priority")
	if prio > 255 {
		return cfg, rs, badConfig("--priority %d out of range 0-255", prio)
	}
	cfg.Priority = uint8(prio)

	// Addresses, ports and the data dir are checked by group.New (which
	// also checks what needs the system: interfaces, free ports, a
	// writable data dir), so that the CLI and embedders get the same
	// messages.
	cfg.Bind = c.String("bind")
	cfg.Advertise = c.String("advertise")
	cfg.Interface = c.String("interface")
	cfg.Port = c.Int("port")
	cfg.GossipPort = c.Int("gossip-port")
	cfg.Multicast = c.String("multicast")
	cfg.Join = nil
	for _, j := range c.StringSlice("join") {
		if j = strings.TrimSpace(j); j != "" {
			cfg.Join = append(cfg.Join, j)
		}
	}
	if c.IsSet("resolve-interval") {
		if cfg.ResolveInterval = c.Duration("resolve-interval"); cfg.ResolveInterval <= 0 {
			return cfg, rs, badConfig("--resolve-interval must be > 0, got %v", cfg.ResolveInterval)
		}
	}
	cfg.DataDir = c.String("data-dir")
	cfg.API = c.String("api")
	if cfg.API == "off" {
		cfg.API = ""
	}
	cfg.Pprof = c.Bool("pprof")

	alg, err := invitation.ParseElection(c.String("election"))
	if err != nil {
		return cfg, rs, badConfig("--election %q: want bully or ring", c.String("election"))
	}
	cfg.Election = alg
	cfg.Quorum = group.Quorum{Expect: c.Int("expect"), TieBreaker: wire.NodeID(c.Uint64("tie-breaker"))}
	cfg.NoPreempt = c.Bool("no-preempt")
	if cfg.Quorum.Expect < 0 {
		return cfg, rs, badConfig("--expect must be >= 0, got %d", cfg.Quorum.Expect)
	}
	if cfg.Quorum.TieBreaker != 0 && cfg.Quorum.Expect == 0 {
		return cfg, rs, badConfig("--tie-breaker needs --expect")
	}

	rs.daemon.OnChange = c.String("on-change")
	rs.daemon.HookTimeout = c.Duration("hook-timeout")
	if rs.daemon.HookTimeout <= 0 {
		return cfg, rs, badConfig("--hook-timeout must be > 0, got %v", rs.daemon.HookTimeout)
	}

	for _, f := range intervalFlags {
		if !c.IsSet(f.Name) {
			continue
		}
		d := c.Duration(f.Name)
		if d <= 0 {
			return cfg, rs, badConfig("--%s must be > 0, got %v", f.Name, d)
		}
		*f.Field(&cfg.Timing) = d
	}
	if err := cfg.Timing.Validate(); err != nil {
		// "invitation: Timing.AliveTimeout (...) must be >=
		// Timing.AliveInterval (...)" names the fields.
		return cfg, rs, badConfig("%s", flagTerms(strings.TrimPrefix(err.Error(), "invitation: ")))
	}

	if path := c.String("key-file"); path != "" {
		key, others, mode, err := readKeyFile(path)
		if err != nil {
			return cfg, rs, err
		}
		cfg.Key, cfg.AcceptKeys, rs.keyMode = key, others, mode
	}
	cfg.RateLimit = c.Int("rate-limit")
	if cfg.RateLimit < 0 {
		return cfg, rs, badConfig("--rate-limit must be >= 0 (0: no limit), got %d", cfg.RateLimit)
	}
	cfg.MinCounter = c.Uint64("min-counter")
	return cfg, rs, nil
}

// readKeyFile reads and parses --key-file: one key per line (wire.ParseKeys),
// the first one primary, the others accepted during a key rotation.
func readKeyFile(path string) ([]byte, [][]byte, os.FileMode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, badConfig("--key-file: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, 0, badConfig("--key-file: %v", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, 0, badConfig("--key-file %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, nil, 0, badConfig("--key-file: %v", err)
	}
	key, others, err := wire.ParseKeys(data)
	if err != nil {
		return nil, nil, 0, badConfig("--key-file %s: %s (generate one with: head -c 32 /dev/urandom | base64)",
			path, strings.TrimPrefix(err.Error(), "wire: "))
	}
	return key, others, fi.Mode().Perm(), nil
}
