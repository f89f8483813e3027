package main

// benchtool exclusive: exclusive leadership under faults, for groupd and
// its peers (corosync with votequorum, keepalived), on one lab of N
// namespaces. scripts/bench/exclusive.sh is its driver.
//
//	benchtool exclusive run     --peers LIST --faults LIST --rounds K --out FILE [-- GROUPD-ARGS]
//	benchtool exclusive report  --in FILE[,FILE...] [-o FILE]
//	benchtool exclusive cleanup --dir RUN --prefix P   (after a crash: what a run left)
//
// A round: wait until node N is the only primary leader and every node
// answers (and sees all N), wait a random phase, apply the fault to the
// leader (node N), keep it for --hold (--freeze for a freeze), end it,
// wait until one primary leader is left for --stable, then compute the
// figures from every node's polls (exclCompute) and restart a killed
// leader. Every node is polled every --poll throughout.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/groupd/groupd/internal/history"
	netlab "github.com/groupd/groupd/internal/lab"
)

// The faults, in the report's order.
var exclFaults = []string{"partition", "freeze", "asym-out", "asym-in", "kill"}

// exclPeers are the implementations measured, in the report's order.
var exclPeers = []string{"groupd", "corosync", "keepalived"}

// ExclRound is one round: a line of the results.
type ExclRound struct {
	Kind  string `json:"kind"` // "exclusive"
	Peer  string `json:"peer"`
	Fault string `json:"fault"`
	N     int    `json:"n"`
	Round int    `json:"round"`

	Source    string  `json:"source"`         // what was polled
	LeaderDef string  `json:"leader_def"`     // what a primary leader is, for this peer
	Mechanism string  `json:"mechanism"`      // how the fault was made
	FaultSpec string  `json:"fault_spec"`     // "1,2,3|4,5", "1->5,2->5,...", "node 5 stopped for 3s"
	Pids      []int   `json:"pids,omitempty"` // freeze, kill: the processes signalled, in order
	PollMS    float64 `json:"poll_ms"`

	LeaderBefore int       `json:"leader_before"`
	TermBefore   string    `json:"term_before,omitempty"`
	LeaderAfter  int       `json:"leader_after,omitempty"` // the one primary leader at the end
	FaultTime    time.Time `json:"fault_time"`
	FaultCmdMS   float64   `json:"fault_cmd_ms"` // applying the fault (every namespace's iptables-restore, the signals)
	FaultEndS    float64   `json:"fault_end_s"`  // heal / SIGCONT / (kill) the end of the hold, from the fault
	WindowFromS  float64   `json:"window_from_s"`
	WindowToS    float64   `json:"window_to_s"`
	Settled      bool      `json:"settled"`             // one primary leader for --stable before the window ended
	SettledS     *float64  `json:"settled_s,omitempty"` // from the fault to the start of that stable stretch
	PhaseS       float64   `json:"phase_s"`

	exclFigures

	// VIPLeft (keepalived, kill): the killed MASTER's namespace still held
	// the VIP at the end of the window (kill -9 leaves it in the kernel).
	VIPLeft *bool `json:"vip_left_by_killed_master,omitempty"`

	Polls map[string]exclPollStat `json:"polls"`
	Runs  []exclRun               `json:"runs"`
	Check string                  `json:"check,omitempty"`
	Note  string                  `json:"note,omitempty"`
	Load  [3]float64              `json:"load"`
}

// ExclNote is a line about something that did not run or failed.
type ExclNote struct {
	Kind  string     `json:"kind"` // "note"
	Peer  string     `json:"peer"`
	Fault string     `json:"fault,omitempty"`
	Round int        `json:"round,omitempty"`
	Note  string     `json:"note"`
	Time  time.Time  `json:"time"`
	Load  [3]float64 `json:"load"`
}

// ExclEnv is the first line of a run: where and how it ran.
type ExclEnv struct {
	Kind     string            `json:"kind"` // "env"
	Started  time.Time         `json:"started"`
	Command  string            `json:"command"`
	N        int               `json:"n"`
	Peers    []string          `json:"peers"`
	Faults   []string          `json:"faults"`
	Rounds   int               `json:"rounds"`
	Lab      string            `json:"lab"`
	Settings map[string]string `json:"settings"`
	Versions map[string]string `json:"versions"`
	Load     [3]float64        `json:"load"`
}

func cmdExclusive(args []string) error {
	subs := map[string]func([]string) error{
		"run":     cmdExclusiveRun,
		"report":  cmdExclusiveReport,
		"cleanup": cmdExclusiveCleanup,
	}
	if len(args) == 0 || subs[args[0]] == nil {
		return errors.New("usage: benchtool exclusive run|report|cleanup [FLAGS] (see scripts/bench/README.md, \"Exclusive leadership\")")
	}
	return subs[args[0]](args[1:])
}

// exclOpts are run's flags.
type exclOpts struct {
	peers, faults []string
	rounds, n     int
	prefix        string
	subnet        netip.Prefix
	dir, bin, src string
	out           string
	commit        string
	poll, timeout time.Duration
	hold, freeze  time.Duration
	phase, pre    time.Duration
	stable        time.Duration
	settle, ready time.Duration
	force         bool
	groupdArgs    []string
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func listFlag(s string, allowed []string, what string) ([]string, error) {
	var out []string
	for _, x := range strings.Split(s, ",") {
		x = strings.TrimSpace(x)
		if x == "" {
			continue
		}
		if !slices.Contains(allowed, x) {
			return nil, fmt.Errorf("%s %q: want some of %s", what, x, strings.Join(allowed, ","))
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s given", what)
	}
	return out, nil
}

func parseExclOpts(args []string) (*exclOpts, error) {
	o := &exclOpts{}
	fs := flag.NewFlagSet("exclusive run", flag.ContinueOnError)
	peers := fs.String("peers", strings.Join(exclPeers, ","), "implementations: "+strings.Join(exclPeers, ","))
	faults := fs.String("faults", strings.Join(exclFaults, ","), "faults: "+strings.Join(exclFaults, ","))
	subnet := fs.String("subnet", envOr("GROUPD_LAB_SUBNET", "10.96.0"), "the lab's subnet (10.96.0 or a CIDR prefix)")
	fs.IntVar(&o.rounds, "rounds", 5, "rounds per peer and fault")
	fs.IntVar(&o.n, "nodes", 5, "lab size (node N leads; the partition cuts off N and the nodes just below it, a minority)")
	fs.StringVar(&o.prefix, "prefix", envOr("GROUPD_LAB_PREFIX", "px"), "the lab's namespace prefix (namespaces PREFIX-1..N)")
	fs.StringVar(&o.dir, "dir", envOr("GROUPD_LAB_DIR", "/tmp/groupd-px-lab"), "the lab's run dir")
	fs.StringVar(&o.bin, "bin", "", "the groupd binary (for groupd)")
	fs.StringVar(&o.src, "src", "scripts/bench/peers", "the peers' configuration templates (corosync.conf.in, keepalived.conf.in)")
	fs.StringVar(&o.out, "out", "-", "append the results (NDJSON) here; - for stdout")
	fs.StringVar(&o.commit, "commit", "", "groupd's commit, for the record")
	fs.DurationVar(&o.poll, "poll", 20*time.Millisecond, "poll every node this often")
	fs.DurationVar(&o.timeout, "answer-timeout", time.Second, "a poll without an answer by then counts as no answer")
	fs.DurationVar(&o.hold, "hold", 20*time.Second, "how long a partition, one-way cut or kill lasts before the heal (restart)")
	fs.DurationVar(&o.freeze, "freeze", 3*time.Second, "how long the leader is stopped (SIGSTOP .. SIGCONT)")
	fs.DurationVar(&o.phase, "phase", time.Second, "random wait in [0, phase) before the fault")
	fs.DurationVar(&o.pre, "pre", time.Second, "the window starts this long before the fault")
	fs.DurationVar(&o.stable, "stable", 2*time.Second, "one primary leader for this long ends a round, and node N alone for this long starts one")
	fs.DurationVar(&o.settle, "settle", 60*time.Second, "after the fault ended, give up waiting for one primary leader after this")
	fs.DurationVar(&o.ready, "ready", 180*time.Second, "give up waiting for the lab's steady state (node N the only primary leader) after this")
	fs.BoolVar(&o.force, "force", false, "take down a lab of this prefix that is already up")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.groupdArgs = fs.Args()
	var err error
	if o.peers, err = listFlag(*peers, exclPeers, "--peers"); err != nil {
		return nil, err
	}
	if o.faults, err = listFlag(*faults, exclFaults, "--faults"); err != nil {
		return nil, err
	}
	if o.subnet, err = netlab.ParseSubnet(*subnet); err != nil {
		return nil, err
	}
	switch {
	case o.rounds < 1:
		return nil, fmt.Errorf("--rounds %d: want 1 or more", o.rounds)
	case o.n < 3:
		return nil, fmt.Errorf("--nodes %d: want 3 or more (a majority without the leader)", o.n)
	case o.poll <= 0 || o.timeout <= 0:
		return nil, errors.New("--poll and --answer-timeout must be positive")
	case slices.Contains(o.peers, "groupd") && o.bin == "":
		return nil, errors.New("--bin (the groupd binary) is needed for groupd")
	}
	if o.src, err = filepath.Abs(o.src); err != nil {
		return nil, err
	}
	return o, nil
}

// exclRunner runs the rounds of one run.
type exclRunner struct {
	o   *exclOpts
	l   *netlab.Lab
	cfg *peersCfg
	out *json.Encoder
}

func (r *exclRunner) emit(v any) error {
	if err := r.out.Encode(v); err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	return nil
}

func (r *exclRunner) note(peer, fault string, round int, format string, args ...any) error {
	n := ExclNote{Kind: "note", Peer: peer, Fault: fault, Round: round, Note: fmt.Sprintf(format, args...), Time: time.Now().UTC(), Load: load()}
	say("exclusive: NOTE %s %s round %d: %s", peer, fault, round, n.Note)
	return r.emit(n)
}

// labUp reports whether namespaces of prefix exist.
func labUp(prefix string) bool {
	ents, _ := os.ReadDir("/run/netns")
	re := regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + `-[0-9]+$`)
	for _, e := range ents {
		if re.MatchString(e.Name()) {
			return true
		}
	}
	return false
}

func cmdExclusiveRun(args []string) error {
	o, err := parseExclOpts(args)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("must run as root (network namespaces)")
	}
	if err := netlab.HaveIptables(); err != nil {
		return err
	}
	if labUp(o.prefix) {
		if !o.force {
			return fmt.Errorf("a %s-* lab is already up (another run?): benchtool exclusive cleanup --dir %s --prefix %s, or --force", o.prefix, o.dir, o.prefix)
		}
		if err := exclCleanup(o.dir, o.prefix); err != nil {
			return fmt.Errorf("--force: taking the %s-* lab down: %w", o.prefix, err)
		}
	}
	w := os.Stdout
	if o.out != "-" {
		f, err := os.OpenFile(o.out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		defer f.Close()
		w = f
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return fmt.Errorf("run dir: %w", err)
	}
	cfg := &peersCfg{dir: filepath.Join(o.dir, "peers"), lab: o.dir, prefix: o.prefix}
	if err := os.RemoveAll(cfg.dir); err != nil {
		return fmt.Errorf("run dir: %w", err)
	}
	labArgs := append([]string{"--expect", strconv.Itoa(o.n)}, o.groupdArgs...)
	l, err := netlab.Up(context.Background(), netlab.Config{Nodes: o.n, Prefix: o.prefix, Subnet: o.subnet, Dir: o.dir,
		Bin: o.bin, Profile: "lan", Args: labArgs, Logf: func(f string, a ...any) { say("lab: "+f, a...) }})
	if err != nil {
		return fmt.Errorf("lab up: %w", err)
	}
	r := &exclRunner{o: o, l: l, cfg: cfg, out: json.NewEncoder(w)}
	notifyDir := "/run/groupd-" + o.prefix + "-notify"
	var current exclPeer
	stopSig := netlab.CloseOnSignal(func() {
		if current != nil {
			_ = current.stopAll()
		}
		_ = os.RemoveAll(notifyDir)
	})
	defer stopSig()
	defer os.RemoveAll(notifyDir)
	defer l.Close()

	if err := r.emit(r.env(labArgs)); err != nil {
		return err
	}
	for _, name := range o.peers {
		if err := r.peerBlock(name, notifyDir, &current); err != nil {
			if nerr := r.note(name, "", 0, "%v", err); nerr != nil {
				return nerr
			}
		}
	}
	return nil
}

// env describes the run.
func (r *exclRunner) env(labArgs []string) ExclEnv {
	o := r.o
	version := func(name string, args ...string) string {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil && len(out) == 0 {
			return "unavailable: " + err.Error()
		}
		line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return line
	}
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	kernel := unix.ByteSliceToString(uts.Release[:])
	mech, err := r.l.Mechanism()
	if err != nil {
		mech = "unknown: " + err.Error()
	}
	v := map[string]string{"kernel": kernel, "iptables": version("iptables", "--version")}
	if slices.Contains(o.peers, "groupd") {
		v["groupd"] = strings.TrimSpace(o.commit + " " + o.bin)
	}
	if slices.Contains(o.peers, "corosync") {
		v["corosync"] = version("corosync", "-v")
	}
	if slices.Contains(o.peers, "keepalived") {
		v["keepalived"] = version("keepalived", "--version")
	}
	return ExclEnv{Kind: "env", Started: time.Now().UTC(), Command: strings.Join(os.Args, " "), N: o.n, Peers: o.peers,
		Faults: o.faults, Rounds: o.rounds,
		Lab: fmt.Sprintf("prefix %s, bridge %s, %v, run dir %s", o.prefix, r.l.Bridge(), o.subnet, o.dir),
		Settings: map[string]string{"poll": o.poll.String(), "answer_timeout": o.timeout.String(), "hold": o.hold.String(),
			"freeze": o.freeze.String(), "phase": o.phase.String(), "pre": o.pre.String(), "stable": o.stable.String(),
			"groupd_args": "--profile lan " + strings.Join(labArgs, " "),
			"partitions":  "iptables DROP rules on INPUT of the receivers, source-matched (internal/lab); loss/delay mechanism here: " + mech},
		Versions: v, Load: load()}
}

// newPeer sets up one implementation on the lab.
func (r *exclRunner) newPeer(ctx context.Context, name, notifyDir string) (exclPeer, error) {
	e := &exclEnv{l: r.l, n: r.o.n, cfg: r.cfg, src: r.o.src, ctx: ctx}
	need := map[string][]string{"corosync": {"corosync", "corosync-quorumtool", "stdbuf"}, "keepalived": {"keepalived"}}
	for _, c := range need[name] {
		if _, err := exec.LookPath(c); err != nil {
			return nil, fmt.Errorf("%s is not installed (%s missing): apt-get install -y %s", name, c, name)
		}
	}
	base := r.o.subnet.Masked().Addr().As4()
	switch name {
	case "groupd":
		return &exclGroupd{groupdProber: &groupdProber{client: r.l.Client, n: r.o.n}, e: e}, nil
	case "corosync":
		// The lab's own multicast group: 239.192.B.1, B the subnet's
		// second octet (96 for 10.96.0.0/24; peers.sh's lab, 10.91.0,
		// uses 239.192.91.1).
		return newExclCorosync(e, fmt.Sprintf("239.192.%d.1", base[1]), 5405)
	case "keepalived":
		// VRRP router id: the subnet's second octet (1..255); VIP: .250.
		if base[1] == 0 {
			return nil, fmt.Errorf("keepalived: subnet %v: its second octet is the VRRP router id, and 0 is none", r.o.subnet)
		}
		vip := netip.AddrFrom4([4]byte{base[0], base[1], base[2], 250})
		return newExclKeepalived(e, int(base[1]), vip, notifyDir)
	}
	return nil, fmt.Errorf("unknown peer %q", name)
}

// peerBlock runs every fault's rounds on one implementation.
func (r *exclRunner) peerBlock(name, notifyDir string, current *exclPeer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := r.newPeer(ctx, name, notifyDir)
	if err != nil {
		return err
	}
	*current = p
	defer func() {
		cancel() // corosync's monitors: not started again while corosync stops
		if err := p.stopAll(); err != nil {
			say("exclusive: stopping %s: %v", name, err)
		}
		*current = nil
	}()
	say("exclusive: == %s: starting %d nodes; load %v", name, r.o.n, load())
	if err := p.startAll(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	pctx, pcancel := context.WithCancel(ctx)
	poller := startPoller(pctx, p, r.o.n, r.o.poll, r.o.timeout)
	defer func() {
		pcancel()
		poller.wait()
	}()
	for _, fault := range r.o.faults {
		say("exclusive: == %s %s: %d rounds; load %v", name, fault, r.o.rounds, load())
		for k := 1; k <= r.o.rounds; k++ {
			res, err := r.round(p, poller, fault, k)
			if err == nil {
				err = r.emit(res)
				say("exclusive: %s %-9s round %2d: overlap %7.0f ms, step-down %s, takeover %s, term violations %d (%s)%s",
					name, fault, k, res.OverlapMS, showFig(res.StepDownS, res.Kept, "kept"), showFig(res.TakeoverS, false, "none"),
					res.TermViolations, describeSpans(res.exclFigures), settledSay(res))
				if err != nil {
					return err
				}
				continue
			}
			if nerr := r.note(name, fault, k, "%v", err); nerr != nil {
				return nerr
			}
			if rerr := r.recover(p, poller); rerr != nil {
				return fmt.Errorf("%s round %d failed (%v) and the lab did not recover: %w", fault, k, err, rerr)
			}
		}
	}
	return nil
}

func showFig(v *float64, kept bool, none string) string {
	switch {
	case kept:
		return "kept"
	case v == nil:
		return none
	}
	return fmt.Sprintf("%.3fs", *v)
}

func settledSay(res ExclRound) string {
	if res.Settled {
		return ""
	}
	return "; NOT settled"
}

// recover heals the network, restarts dead nodes and waits for the steady
// state, after a failed round.
func (r *exclRunner) recover(p exclPeer, poller *exclPoller) error {
	if _, err := r.l.Heal(true); err != nil {
		return err
	}
	for i := 1; i <= r.o.n; i++ {
		if pids, err := p.pids(i); err == nil {
			_ = signalAll(pids, syscall.SIGCONT)
		}
	}
	for i := 1; i <= r.o.n; i++ {
		if _, err := p.probe(context.Background(), i); err != nil {
			if pids, perr := p.pids(i); perr != nil || len(pids) == 0 || procAliveOrStopped(pids[0]) != nil {
				if err := p.start(i); err != nil {
					return fmt.Errorf("restarting node %d: %w", i, err)
				}
			}
		}
	}
	return r.waitReady(p, poller)
}

// fresh is how old a node's last answer may be and still count as its
// state now.
func (r *exclRunner) fresh() time.Duration { return max(10*r.o.poll, 500*time.Millisecond) }

// steady says whether node N is the only primary leader and every node
// answers and sees all N ("" if so, else why not).
func (r *exclRunner) steady(poller *exclPoller) string {
	latest, _ := poller.now()
	now := time.Now()
	for i := 1; i <= r.o.n; i++ {
		s, ok := latest[i]
		switch {
		case !ok || !s.OK || now.Sub(s.At) > r.fresh():
			return fmt.Sprintf("node %d does not answer", i)
		case i == r.o.n && !s.PL:
			return fmt.Sprintf("node %d is not the primary leader", i)
		case i != r.o.n && s.PL:
			return fmt.Sprintf("node %d is a primary leader", i)
		case !s.Full:
			return fmt.Sprintf("node %d does not see all %d", i, r.o.n)
		}
	}
	return ""
}

// waitReady waits for the steady state to hold for --stable.
func (r *exclRunner) waitReady(p exclPeer, poller *exclPoller) error {
	deadline := time.Now().Add(r.o.ready)
	if err := p.ready(r.o.ready); err != nil {
		return fmt.Errorf("not steady: %w", err)
	}
	var since time.Time
	for {
		why := r.steady(poller)
		now := time.Now()
		switch {
		case why != "":
			since = time.Time{}
		case since.IsZero():
			since = now
		case now.Sub(since) >= r.o.stable:
			return nil
		}
		if now.After(deadline) {
			return fmt.Errorf("no steady state (node %d the only primary leader, all answering) within %v: %s; polls: %s",
				r.o.n, r.o.ready, why, poller.describe(r.o.n))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitOne waits until exactly one node answers primary leader (the others
// that answer do not) for --stable, or until deadline. It returns that
// leader and when the stable stretch began (0 and zero if never).
func (r *exclRunner) waitOne(poller *exclPoller, deadline time.Time) (int, time.Time) {
	var since time.Time
	leader := 0
	for {
		latest, _ := poller.now()
		now := time.Now()
		var pls []int
		for i := 1; i <= r.o.n; i++ {
			if s, ok := latest[i]; ok && s.OK && now.Sub(s.At) <= r.fresh() && s.PL {
				pls = append(pls, i)
			}
		}
		switch {
		case len(pls) != 1:
			since, leader = time.Time{}, 0
		case since.IsZero() || pls[0] != leader:
			since, leader = now, pls[0]
		case now.Sub(since) >= r.o.stable:
			return leader, since
		}
		if now.After(deadline) {
			return 0, time.Time{}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reversed returns xs in reverse order.
func reversed(xs []int) []int {
	out := slices.Clone(xs)
	slices.Reverse(out)
	return out
}

// sleepUntil sleeps until t.
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// round runs one round of fault on p.
func (r *exclRunner) round(p exclPeer, poller *exclPoller, fault string, k int) (res ExclRound, err error) {
	o, l, n := r.o, r.l, r.o.n
	leader := n
	if err := r.waitReady(p, poller); err != nil {
		return res, fmt.Errorf("before the fault: %w", err)
	}
	latest, _ := poller.now()
	res = ExclRound{Kind: "exclusive", Peer: p.name(), Fault: fault, N: n, Round: k, LeaderDef: p.leaderDef(),
		PollMS: float64(o.poll.Microseconds()) / 1000, LeaderBefore: leader, TermBefore: latest[leader].Term.String()}
	res.PhaseS = secs(phaseSleep(o.phase))
	others := slices.DeleteFunc(netlab.Span(1, n), func(i int) bool { return i == leader })

	var tF, tEnd time.Time
	var w netlab.Window
	switch fault {
	case "partition", "asym-out", "asym-in":
		res.Mechanism = "iptables DROP on INPUT of the receivers (source match; unicast and multicast), every namespace at once"
		switch fault {
		case "partition":
			m := (n - 1) / 2 // the leader's side: a minority
			minority, majority := netlab.Span(n-m+1, n), netlab.Span(1, n-m)
			res.FaultSpec = joinInts(majority) + "|" + joinInts(minority)
			w, err = l.Partition(majority, minority)
		case "asym-out":
			var pairs [][2]int
			var spec []string
			for _, j := range others {
				pairs = append(pairs, [2]int{j, leader})
				spec = append(spec, fmt.Sprintf("%d->%d", j, leader))
			}
			res.FaultSpec = strings.Join(spec, ",") + " (the leader hears nobody)"
			w, err = l.Cuts(pairs...)
		case "asym-in":
			var spec []string
			for _, j := range others {
				spec = append(spec, fmt.Sprintf("%d->%d", leader, j))
			}
			res.FaultSpec = strings.Join(spec, ",") + " (nobody hears the leader)"
			w, err = l.Cut(leader, others...)
		}
		tF = w.Start
		defer func() {
			if err != nil {
				_, _ = l.Heal(true)
			}
		}()
		if err != nil {
			return res, fmt.Errorf("%s: %w", fault, err)
		}
		res.FaultCmdMS = float64(w.End.Sub(w.Start).Microseconds()) / 1000
		sleepUntil(tF.Add(o.hold))
		hw, err := l.Heal(true)
		if err != nil {
			return res, fmt.Errorf("heal: %w", err)
		}
		tEnd = hw.Start
	case "freeze":
		pids, err := p.pids(leader)
		if err != nil {
			return res, fmt.Errorf("freeze: %w", err)
		}
		res.Mechanism = "SIGSTOP, then SIGCONT"
		res.FaultSpec, res.Pids = fmt.Sprintf("node %d stopped for %v", leader, o.freeze), pids
		tF = time.Now()
		err = signalAll(pids, syscall.SIGSTOP)
		res.FaultCmdMS = float64(time.Since(tF).Microseconds()) / 1000
		defer func() { _ = signalAll(reversed(pids), syscall.SIGCONT) }()
		if err != nil {
			return res, fmt.Errorf("freeze: %w", err)
		}
		if _, err := l.Mark(history.KindPause, strconv.Itoa(leader), "", tF); err != nil {
			return res, err
		}
		sleepUntil(tF.Add(o.freeze))
		tEnd = time.Now()
		if err := signalAll(reversed(pids), syscall.SIGCONT); err != nil {
			return res, fmt.Errorf("thaw: %w", err)
		}
		if _, err := l.Mark(history.KindResume, strconv.Itoa(leader), "", tEnd); err != nil {
			return res, err
		}
	case "kill":
		pids, _ := p.pids(leader)
		res.Mechanism = "SIGKILL (kill -9) of every process of the leader"
		res.FaultSpec, res.Pids = fmt.Sprintf("node %d killed, restarted after %v", leader, o.hold), pids
		tF, err = p.kill(leader)
		if err != nil {
			return res, fmt.Errorf("kill: %w", err)
		}
		res.FaultCmdMS = float64(time.Since(tF).Microseconds()) / 1000
		defer func() {
			if serr := p.start(leader); serr != nil && err == nil {
				err = fmt.Errorf("restarting node %d after the round: %w", leader, serr)
			}
		}()
		sleepUntil(tF.Add(o.hold))
		tEnd = time.Now()
	}
	one, since := r.waitOne(poller, tEnd.Add(o.settle))
	to := time.Now()
	from := tF.Add(-o.pre)
	samples := poller.take(from, to)
	res.Source = p.source()
	res.FaultTime = tF.UTC()
	res.FaultEndS = secs(tEnd.Sub(tF))
	res.WindowFromS, res.WindowToS = secs(from.Sub(tF)), secs(to.Sub(tF))
	res.Settled, res.LeaderAfter = one != 0, one
	if one != 0 {
		s := secs(since.Sub(tF))
		res.SettledS = &s
	} else {
		res.Note = fmt.Sprintf("no single primary leader for %v within %v of the fault's end; polls: %s", o.stable, o.settle, poller.describe(n))
	}
	res.exclFigures = exclCompute(samples, tF, leader, o.poll, from, to)
	res.Runs = exclRuns(samples, tF, o.poll, from, to)
	res.Polls = exclPollStats(samples, from, to)
	res.Check = p.check()
	if ka, ok := p.(*exclKeepalived); ok && fault == "kill" {
		has, herr := hasAddr(l, leader, ka.vip)
		if herr == nil {
			res.VIPLeft = &has
		}
	}
	res.Load = load()
	return res, nil
}

// ---- cleanup ---------------------------------------------------------------

func cmdExclusiveCleanup(args []string) error {
	fs := flag.NewFlagSet("exclusive cleanup", flag.ContinueOnError)
	dir := fs.String("dir", envOr("GROUPD_LAB_DIR", "/tmp/groupd-px-lab"), "the run dir")
	prefix := fs.String("prefix", envOr("GROUPD_LAB_PREFIX", "px"), "the lab's prefix")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return exclCleanup(*dir, *prefix)
}

// exclCleanup stops what a run with run dir dir left: the peers' processes
// whose pid files are in dir and whose command lines name dir, the groupd
// daemons and the network of prefix (lab.Remove), and the notify scripts.
func exclCleanup(dir, prefix string) error {
	var errs []error
	files, _ := filepath.Glob(filepath.Join(dir, "peers", "*", "n*", "*pid"))
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue // gone, or not ours (a recycled pid)
		}
		pids = append(pids, pid)
	}
	// A stopped process would not see SIGTERM.
	_ = signalAll(pids, syscall.SIGCONT)
	_ = signalAll(pids, syscall.SIGTERM)
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for procRunning(pid) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if procAliveOrStopped(pid) == nil {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				errs = append(errs, fmt.Errorf("kill -9 %d: %w", pid, err))
			}
		}
	}
	corosyncCleanShm(filepath.Join(dir, "peers", "corosync"))
	if err := netlab.Remove(dir, prefix, "", func(f string, a ...any) { say("lab: "+f, a...) }); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll("/run/groupd-" + prefix + "-notify"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
