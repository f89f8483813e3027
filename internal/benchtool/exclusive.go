//go:build linux

package main

// benchtool exclusive: exclusive leadership under faults, for groupd and
// its peers (corosync with votequorum, keepalived), on one lab of N
// namespaces (GROUPD_LAB_PREFIX, default px; GROUPD_LAB_SUBNET, default
// 10.96.0). scripts/bench/exclusive.sh calls it.
//
//	benchtool exclusive run     --peers LIST --faults LIST --rounds K --out DIR [--nodes N] [--loss PCT --loss-for S] [--force] [--no-install] [-- GROUPD-ARGS]
//	benchtool exclusive report  --in FILE[,FILE...] [-o FILE]
//	benchtool exclusive cleanup --dir RUN --prefix P   (after a crash: what a run left)
//
// A round: wait until node N is the only primary leader and every node
// answers (and sees all N), wait a random phase, apply the fault to the
// leader (node N), keep it for --hold (--freeze for a freeze), end it,
// wait until one primary leader is left for --stable, then compute the
// figures from every node's polls (exclCompute) and restart a killed
// leader. Every node is polled every --poll throughout.
//
// The loss fault (not run by default) is the lease under sustained loss:
// the lowest nodes are killed until a bare quorum is left, and the
// survivors lose --loss % of each other's packets for --loss-for; the
// round counts the leader's lapses (exclLossCompute). Issue 33's figure
// is --nodes 3: two nodes of three, 10 % loss, one minute.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	netlab "github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/schema"
)

// The faults run by default, in the report's order.
var exclFaults = []string{"partition", "freeze", "asym-out", "asym-in", "kill"}

// exclAllFaults are every fault --faults accepts, in the report's order:
// the defaults, then loss (a bare quorum under random loss, for the
// lease's lapses), which runs only when asked for: a round lasts
// --loss-for (a minute), and it measures what the others do not.
var exclAllFaults = append(slices.Clone(exclFaults), "loss")

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

	// Loss: the loss fault's own figures (lapses a minute).
	Loss *exclLossFigures `json:"loss,omitempty"`

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
	out           string
	poll, timeout time.Duration
	hold, freeze  time.Duration
	lossPct       float64
	lossFor       time.Duration
	phase, pre    time.Duration
	stable        time.Duration
	settle, ready time.Duration
	force         bool
	install       bool
	groupdArgs    []string
}

func parseExclOpts(args []string) (*exclOpts, error) {
	o := &exclOpts{}
	fs := flag.NewFlagSet("exclusive run", flag.ContinueOnError)
	peers := fs.String("peers", strings.Join(exclPeers, ","), "implementations: "+strings.Join(exclPeers, ","))
	faults := fs.String("faults", strings.Join(exclFaults, ","), "faults: "+strings.Join(exclAllFaults, ",")+" (loss only when named)")
	noInstall := fs.Bool("no-install", false, "never apt-get install a missing peer")
	fs.IntVar(&o.rounds, "rounds", 5, "rounds per peer and fault")
	fs.IntVar(&o.n, "nodes", 5, "lab size (node N leads; the partition cuts off N and the nodes just below it, a minority)")
	fs.StringVar(&o.out, "out", "", "results: DIR/exclusive.ndjson (appended to), DIR/exclusive.md, DIR/loads.txt (default /tmp/groupd-exclusive-TIME)")
	fs.DurationVar(&o.poll, "poll", 20*time.Millisecond, "poll every node this often")
	fs.DurationVar(&o.timeout, "answer-timeout", time.Second, "a poll without an answer by then counts as no answer")
	o.hold, o.freeze = 20*time.Second, 3*time.Second
	fs.Var(seconds{&o.hold}, "hold", "how long a partition, one-way cut or kill lasts before the heal (restart): seconds or a duration")
	fs.Var(seconds{&o.freeze}, "freeze", "how long the leader is stopped (SIGSTOP .. SIGCONT): seconds or a duration")
	fs.Float64Var(&o.lossPct, "loss", 10, "loss fault: percent of the packets between the live nodes dropped, each direction")
	o.lossFor = 60 * time.Second
	fs.Var(seconds{&o.lossFor}, "loss-for", "loss fault: how long the loss lasts: seconds or a duration")
	fs.DurationVar(&o.phase, "phase", time.Second, "random wait in [0, phase) before the fault")
	fs.DurationVar(&o.pre, "pre", time.Second, "the window starts this long before the fault")
	fs.DurationVar(&o.stable, "stable", 2*time.Second, "one primary leader for this long ends a round, and node N alone for this long starts one")
	fs.DurationVar(&o.settle, "settle", 60*time.Second, "after the fault ended, give up waiting for one primary leader after this")
	fs.DurationVar(&o.ready, "ready", 180*time.Second, "give up waiting for the lab's steady state (node N the only primary leader) after this")
	fs.BoolVar(&o.force, "force", false, "take down a lab of this prefix that is already up")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.groupdArgs, o.install = fs.Args(), !*noInstall
	var err error
	if o.peers, err = listFlag(*peers, exclPeers, "--peers"); err != nil {
		return nil, err
	}
	if o.faults, err = listFlag(*faults, exclAllFaults, "--faults"); err != nil {
		return nil, err
	}
	switch {
	case o.rounds < 1:
		return nil, fmt.Errorf("--rounds %d: want 1 or more", o.rounds)
	case o.n < 3:
		return nil, fmt.Errorf("--nodes %d: want 3 or more (a majority without the leader)", o.n)
	case o.poll <= 0 || o.timeout <= 0:
		return nil, errors.New("--poll and --answer-timeout must be positive")
	case o.lossPct <= 0 || o.lossPct > 100 || o.lossFor <= 0:
		return nil, fmt.Errorf("--loss %v --loss-for %v: want a loss in (0, 100] %% for a positive time", o.lossPct, o.lossFor)
	}
	return o, nil
}

// exclRunner runs the rounds of one run.
type exclRunner struct {
	o *exclOpts
	b *bench
	l *netlab.Lab
}

func (r *exclRunner) emit(v any) error {
	if err := r.b.emit("exclusive.ndjson", v); err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	return nil
}

func (r *exclRunner) note(peer, fault string, round int, format string, args ...any) error {
	n := ExclNote{Kind: "note", Peer: peer, Fault: fault, Round: round, Note: fmt.Sprintf(format, args...), Time: time.Now().UTC(), Load: load()}
	r.b.say("NOTE %s %s round %d: %s", peer, fault, round, n.Note)
	return r.emit(n)
}

func cmdExclusiveRun(args []string) error {
	o, err := parseExclOpts(args)
	if err != nil {
		return err
	}
	if err := netlab.HaveIptables(); err != nil {
		return err
	}
	r := &exclRunner{o: o}
	if r.b, err = newBench("exclusive", o.out, "px", "10.96.0", o.force); err != nil {
		return err
	}
	defer r.b.finish()
	var current exclPeer
	r.b.onSignal = func() {
		if current != nil {
			_ = current.stopAll()
		}
	}
	for _, p := range o.peers {
		if s := peerSpecs[p]; o.install && len(s.progs) > 0 {
			if err := r.b.install(exclProgs(p), s.pkgs); err != nil {
				r.b.say("%v", err)
			}
		}
	}
	labArgs := append([]string{"--expect", strconv.Itoa(o.n)}, o.groupdArgs...)
	if r.l, err = r.b.labUp(o.n, "lan", labArgs...); err != nil {
		return fmt.Errorf("lab up: %w", err)
	}
	_ = appendLine(r.b.path("loads.txt"), fmt.Sprintf("%s start %s %s x%d: load %s", time.Now().UTC().Format(time.RFC3339),
		strings.Join(o.peers, ","), strings.Join(o.faults, ","), o.rounds, loadString()))
	if err := r.emit(r.env(labArgs)); err != nil {
		return err
	}
	for _, name := range o.peers {
		if err := r.peerBlock(name, &current); err != nil {
			if nerr := r.note(name, "", 0, "%v", err); nerr != nil {
				return nerr
			}
		}
	}
	_ = appendLine(r.b.path("loads.txt"), fmt.Sprintf("%s end: load %s", time.Now().UTC().Format(time.RFC3339), loadString()))
	if err := cmdExclusiveReport([]string{"--in", r.b.path("exclusive.ndjson"), "-o", r.b.path("exclusive.md")}); err != nil {
		return err
	}
	md, err := os.ReadFile(r.b.path("exclusive.md"))
	fmt.Print(string(md))
	return err
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
	mech, err := r.l.Mechanism()
	if err != nil {
		mech = "unknown: " + err.Error()
	}
	v := map[string]string{"kernel": unix.ByteSliceToString(uts.Release[:]), "iptables": version("iptables", "--version")}
	if slices.Contains(o.peers, "groupd") {
		v["groupd"] = r.b.groupdVersion()
	}
	if slices.Contains(o.peers, "corosync") {
		v["corosync"] = version("corosync", "-v")
	}
	if slices.Contains(o.peers, "keepalived") {
		v["keepalived"] = version("keepalived", "--version")
	}
	return ExclEnv{Kind: "env", Started: time.Now().UTC(), Command: strings.Join(os.Args, " "), N: o.n, Peers: o.peers,
		Faults: o.faults, Rounds: o.rounds,
		Lab: fmt.Sprintf("prefix %s, bridge %s, %v, run dir %s", r.b.env.Prefix, r.l.Bridge(), r.l.Config().Subnet, r.l.Dir()),
		Settings: map[string]string{"poll": o.poll.String(), "answer_timeout": o.timeout.String(), "hold": o.hold.String(),
			"freeze": o.freeze.String(), "phase": o.phase.String(), "pre": o.pre.String(), "stable": o.stable.String(),
			"loss": strconv.FormatFloat(o.lossPct, 'f', -1, 64) + "%", "loss_for": o.lossFor.String(),
			"groupd_args": "--profile lan " + strings.Join(labArgs, " "),
			"partitions":  "iptables DROP rules on INPUT of the receivers, source-matched (internal/lab); loss/delay mechanism here: " + mech},
		Versions: v, Load: load()}
}

// peerBlock runs every fault's rounds on one implementation.
func (r *exclRunner) peerBlock(name string, current *exclPeer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := newExclPeer(r.b.peerEnv(ctx, r.l), name)
	if err != nil {
		return err
	}
	*current = p
	defer func() {
		cancel() // corosync's monitors: not started again while corosync stops
		if err := p.stopAll(); err != nil {
			r.b.say("stopping %s: %v", name, err)
		}
		*current = nil
	}()
	r.b.section("%s: starting %d nodes", name, r.o.n)
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
		r.b.section("%s %s: %d rounds", name, fault, r.o.rounds)
		for k := 1; k <= r.o.rounds; k++ {
			res, err := r.round(p, poller, fault, k)
			if err == nil {
				err = r.emit(res)
				r.b.say("%s %-9s round %2d: overlap %7.0f ms, step-down %s, takeover %s, gap %s, term violations %d (%s)%s",
					name, fault, k, res.OverlapMS, showFig(res.StepDownS, res.Kept, "kept"), showFig(res.TakeoverS, false, "none"),
					showMS(res.GapMS), res.TermViolations, describeSpans(res.exclFigures), settledSay(res)+lossSay(res.Loss))
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

// showMS writes an optional figure in ms ("none" when absent).
func showMS(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprintf("%.0f ms", *v)
}

// lossSay writes a loss round's lapses for the round's line.
func lossSay(f *exclLossFigures) string {
	if f == nil {
		return ""
	}
	s := fmt.Sprintf("; %d lapses in %.0f s of %g%% loss (%.2f a minute)", f.Lapses, f.LossS, f.LossPct, f.LapsesPerMin)
	if f.LeaderStops != nil {
		s += fmt.Sprintf(", %d leader-stop events", *f.LeaderStops)
	}
	return s
}

func settledSay(res ExclRound) string {
	if res.Settled {
		return ""
	}
	return "; NOT settled"
}

// recover heals the network (partitions, cuts and loss), restarts dead
// nodes and waits for the steady state, after a failed round.
func (r *exclRunner) recover(p exclPeer, poller *exclPoller) error {
	if _, err := r.l.Heal(false); err != nil {
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
	return r.waitReady(p, poller, netlab.Span(1, r.o.n))
}

// fresh is how old a node's last answer may be and still count as its
// state now.
func (r *exclRunner) fresh() time.Duration { return max(10*r.o.poll, 500*time.Millisecond) }

// steady says whether node N is the only primary leader and every node
// of live answers and, when every node is live, sees all N ("" if so,
// else why not). Nodes not in live (stopped by the loss fault) are not
// asked about.
func (r *exclRunner) steady(poller *exclPoller, live []int) string {
	latest, _ := poller.now()
	now := time.Now()
	for _, i := range live {
		s, ok := latest[i]
		switch {
		case !ok || !s.OK || now.Sub(s.At) > r.fresh():
			return fmt.Sprintf("node %d does not answer", i)
		case i == r.o.n && !s.PL:
			return fmt.Sprintf("node %d is not the primary leader", i)
		case i != r.o.n && s.PL:
			return fmt.Sprintf("node %d is a primary leader", i)
		case !s.Full && len(live) == r.o.n:
			return fmt.Sprintf("node %d does not see all %d", i, r.o.n)
		}
	}
	return ""
}

// waitReady waits for the steady state of the nodes of live to hold for
// --stable.
func (r *exclRunner) waitReady(p exclPeer, poller *exclPoller, live []int) error {
	deadline := time.Now().Add(r.o.ready)
	if err := p.ready(live, r.o.ready); err != nil {
		return fmt.Errorf("not steady: %w", err)
	}
	var since time.Time
	for {
		why := r.steady(poller, live)
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
	if err := r.waitReady(p, poller, netlab.Span(1, n)); err != nil {
		return res, fmt.Errorf("before the fault: %w", err)
	}
	latest, _ := poller.now()
	res = ExclRound{Kind: "exclusive", Peer: p.name(), Fault: fault, N: n, Round: k, LeaderDef: p.leaderDef(),
		PollMS: float64(o.poll.Microseconds()) / 1000, LeaderBefore: leader, TermBefore: latest[leader].Term.String()}
	res.PhaseS = secs(phaseSleep(o.phase))
	others := slices.DeleteFunc(netlab.Span(1, n), func(i int) bool { return i == leader })

	var tF, tEnd time.Time
	var w netlab.Window
	var lossLive, lossStopped []int
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
		if _, err := l.Mark(schema.KindPause, strconv.Itoa(leader), "", tF); err != nil {
			return res, err
		}
		sleepUntil(tF.Add(o.freeze))
		tEnd = time.Now()
		if err := signalAll(reversed(pids), syscall.SIGCONT); err != nil {
			return res, fmt.Errorf("thaw: %w", err)
		}
		if _, err := l.Mark(schema.KindResume, strconv.Itoa(leader), "", tEnd); err != nil {
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
	case "loss":
		// A bare quorum: with --expect N, a majority of N is left, so
		// that every lost acknowledgement counts.
		q := n/2 + 1
		lossStopped, lossLive = netlab.Span(1, n-q), netlab.Span(n-q+1, n)
		mech, err := l.Mechanism()
		if err != nil {
			return res, fmt.Errorf("loss: %w", err)
		}
		res.Mechanism = fmt.Sprintf("SIGKILL of node(s) %s; then each packet between the live nodes dropped with probability %g %% (%s; internal/lab Degrade)",
			joinInts(lossStopped), o.lossPct, mech)
		res.FaultSpec = fmt.Sprintf("%g%% loss between %s for %v, both directions; node(s) %s stopped (quorum %d of %d)",
			o.lossPct, joinInts(lossLive), o.lossFor, joinInts(lossStopped), q, n)
		defer func() {
			for _, i := range lossStopped {
				if serr := p.start(i); serr != nil && err == nil {
					err = fmt.Errorf("restarting node %d after the round: %w", i, serr)
				}
			}
		}()
		for _, i := range lossStopped {
			if _, err := p.kill(i); err != nil {
				return res, fmt.Errorf("loss: stopping node %d: %w", i, err)
			}
		}
		if err := r.waitReady(p, poller, lossLive); err != nil {
			return res, fmt.Errorf("loss: with node(s) %s stopped: %w", joinInts(lossStopped), err)
		}
		w, notes, err := l.Degrade(netlab.Degradation{LossPct: o.lossPct, Nodes: lossLive})
		tF = w.Start
		if err != nil {
			if _, herr := l.Heal(false); herr != nil {
				err = errors.Join(err, herr)
			}
			return res, fmt.Errorf("loss: %w", err)
		}
		res.FaultCmdMS = float64(w.End.Sub(w.Start).Microseconds()) / 1000
		res.Note = strings.Join(notes, "; ")
		sleepUntil(tF.Add(o.lossFor))
		hw, err := l.Heal(false)
		if err != nil {
			return res, fmt.Errorf("loss: heal: %w", err)
		}
		tEnd = hw.Start
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
		res.Note = strings.TrimPrefix(res.Note+"; "+fmt.Sprintf("no single primary leader for %v within %v of the fault's end; polls: %s",
			o.stable, o.settle, poller.describe(n)), "; ")
	}
	res.exclFigures = exclCompute(samples, tF, leader, o.poll, from, to)
	if fault == "loss" {
		lf := exclLossCompute(samples, tF, tF, tEnd)
		lf.LossPct, lf.Live, lf.Stopped = o.lossPct, lossLive, lossStopped
		if p.name() == "groupd" {
			stops, err := r.leaderStops(tF, tEnd)
			if err != nil {
				res.Note = strings.TrimPrefix(res.Note+"; leader-stop events not counted: "+err.Error(), "; ")
			} else {
				perMin := float64(stops) * 60 / lf.LossS
				lf.LeaderStops, lf.LeaderStopsPerMin = &stops, &perMin
			}
		}
		res.Loss = &lf
	}
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

// leaderStops counts the leader-stop events of every groupd node seen in
// [from, to) (exclLeaderStops), from the lab's recorded history: each
// lapse of a lease is one, however short (the polls see only those that
// last across a poll).
func (r *exclRunner) leaderStops(from, to time.Time) (int, error) {
	h, err := r.l.History()
	if err != nil {
		return 0, fmt.Errorf("the lab's history: %w", err)
	}
	// Every event: a leader-stop's own time may lie long before the
	// window it belongs to (exclLeaderStops).
	return exclLeaderStops(h.Events(time.Time{}, time.Time{}), from, to), nil
}

// ---- cleanup ---------------------------------------------------------------

func cmdExclusiveCleanup(args []string) error {
	e, err := netlab.FromEnv("px", "10.96.0")
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("exclusive cleanup", flag.ContinueOnError)
	dir := fs.String("dir", e.Dir, "the run dir")
	prefix := fs.String("prefix", e.Prefix, "the lab's prefix")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return cleanupLab(*dir, *prefix)
}
