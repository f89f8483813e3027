package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/internal/history"
	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

const experimentUsage = `usage: experiment.sh SCENARIO [options] [-- GROUPD-RUN-ARGS...]
scenarios:
  split-heal         partition into 1..N/2 | rest, let each side settle, hold, heal
  coordinator-crash  kill -9 the coordinator (node N); survivors elect; then restart it
  flapping           partition and heal every --period seconds, --flaps times
  lossy              20% loss on every link, then a split-heal under that loss
  rolling-restart    restart nodes 1..N one at a time, waiting for convergence after each
  chaos              for --minutes M: rounds of 1-3 random faults (partitions into 2 or 3
                     sides, one-way cuts, loss, kill -9, restarts) held 2..--fault-max s, then
                     a quiet period: heal, restart the killed, wait --settle s (T_heal + slack),
                     then a check point where every node must be converged (L1), then --quiet s;
                     the recorded history must show no S1-S4 violation and L1 at every check
                     point (internal/history, as internal/cmd/checkhistory)
options:
  --nodes N          lab size (default 5; 8 for chaos)
  --out DIR          where results go (default /tmp/groupd-experiments/SCENARIO-TIMESTAMP)
  --timeout S        deadline for every convergence wait (default 60)
  --hold S           how long a fault stays once the sides settled (default 5)
  --flaps K          flapping: number of partition/heal cycles (default 4)
  --period S         flapping: seconds between partition and heal (default 3)
  --profile P        groupd interval profile, lan or fast (default $GROUPD_PROFILE or lan)
  --minutes M        chaos: how long to inject faults (default 10; the round running at
                     the deadline finishes)
  --seed S           chaos: seed of the fault schedule (default: random, printed)
  --fault-max S      chaos: longest a round's faults stay (default 8)
  --settle S         chaos: from the heal (and restarts) to the L1 check point (default:
                     T_heal + 2 s rounded up: 11 for lan, 4 for fast, from the profile)
  --quiet S          chaos: quiet time after each check point (default 3)
  --keep             leave the lab up (and the daemons running) at the end
The lab (run dir $GROUPD_LAB_DIR, default /tmp/groupd-lab) is reset first: any
running lab is stopped and its node directories and history are removed.`

// experiment is one run of experiment.sh.
type experiment struct {
	c        *cli
	e        env
	scenario string
	n        int
	out      string
	timeout  time.Duration
	hold     time.Duration
	flaps    int
	period   time.Duration
	keep     bool
	minutes  int
	seed     uint64
	faultMax time.Duration
	settle   time.Duration
	quiet    time.Duration
	runArgs  []string

	l         *lab.Lab
	notes     []string
	converged bool
	rounds    int
	// The instants the summary measures between: the fault, the
	// recovery point, and when the nodes were seen converged after it.
	tFault, tRecover, tConv, tStop time.Time
}

func (c *cli) experiment(args []string) error {
	x := &experiment{c: c, converged: true}
	var err error
	if x.e, err = readEnv(); err != nil {
		return err
	}
	if err := x.parse(args); err != nil {
		return err
	}
	if err := needRoot(); err != nil {
		return err
	}
	if err := lab.HaveIptables(); err != nil {
		return err
	}
	if err := os.MkdirAll(x.out, 0o755); err != nil {
		return err
	}
	if x.out, err = filepath.Abs(x.out); err != nil {
		return err
	}
	// A trap on every exit, Ctrl-C included: the lab goes unless --keep.
	defer lab.OnSignal(func(os.Signal) {
		x.cleanup()
		os.Exit(130)
	})()
	defer x.cleanup()
	return x.run()
}

func (x *experiment) parse(args []string) error {
	nums := map[string]*int{}
	var n, timeout, hold, period, faultMax, quiet, settle, seed int = 0, 60, 5, 3, 8, 3, -1, -1
	x.flaps, x.minutes = 4, 10
	for k, p := range map[string]*int{"--nodes": &n, "--timeout": &timeout, "--hold": &hold, "--flaps": &x.flaps, "--period": &period,
		"--minutes": &x.minutes, "--seed": &seed, "--fault-max": &faultMax, "--quiet": &quiet, "--settle": &settle} {
		nums[k] = p
	}
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "-h" || a == "--help":
			fmt.Println(experimentUsage)
			os.Exit(0)
		case a == "--keep":
			x.keep = true
			args = args[1:]
		case a == "--":
			x.runArgs = args[1:]
			args = nil
		case a == "--out" || a == "--profile":
			if len(args) < 2 {
				return fmt.Errorf("%s needs a value", a)
			}
			if a == "--out" {
				x.out = args[1]
			} else {
				x.e.profile = args[1]
			}
			args = args[2:]
		case nums[a] != nil:
			if len(args) < 2 {
				return fmt.Errorf("%s needs a value", a)
			}
			v, err := strconv.Atoi(args[1])
			if err != nil || v < 0 {
				return fmt.Errorf("%s wants a whole number, got '%s'", a, args[1])
			}
			*nums[a] = v
			args = args[2:]
		case strings.HasPrefix(a, "-"):
			return fmt.Errorf("unknown option %s (see --help)", a)
		default:
			if x.scenario != "" {
				return fmt.Errorf("one scenario at a time (got %s and %s)", x.scenario, a)
			}
			x.scenario = a
			args = args[1:]
		}
	}
	switch x.scenario {
	case "split-heal", "coordinator-crash", "flapping", "lossy", "rolling-restart", "chaos":
	case "":
		return usageError("%s", experimentUsage)
	default:
		return fmt.Errorf("unknown scenario '%s' (split-heal, coordinator-crash, flapping, lossy, rolling-restart, chaos)", x.scenario)
	}
	if x.e.profile != "lan" && x.e.profile != "fast" {
		return fmt.Errorf("--profile wants lan or fast, not %q", x.e.profile)
	}
	if n == 0 {
		n = 5
		if x.scenario == "chaos" {
			n = 8
		}
	}
	if n < 2 || n > lab.MaxNodes {
		return fmt.Errorf("--nodes must be 2..%d", lab.MaxNodes)
	}
	if faultMax < 2 {
		return errors.New("--fault-max must be at least 2")
	}
	if settle < 0 {
		// T_heal (README, "The T_failover and T_heal bounds") plus 2 s
		// of slack, in whole seconds.
		t := invitation.DefaultTiming()
		if x.e.profile == "fast" {
			t = invitation.FastTiming()
		}
		settle = int((t.HealBound() + 3*time.Second - 1) / time.Second)
	}
	if seed < 0 {
		seed = rand.IntN(1 << 30)
	}
	sec := func(v int) time.Duration { return time.Duration(v) * time.Second }
	x.n, x.timeout, x.hold, x.period = n, sec(timeout), sec(hold), sec(period)
	x.faultMax, x.quiet, x.settle, x.seed = sec(faultMax), sec(quiet), sec(settle), uint64(seed)
	if x.out == "" {
		x.out = "/tmp/groupd-experiments/" + x.scenario + "-" + time.Now().Format("20060102-150405")
	}
	return nil
}

// say prints a line as the script prog would.
func (x *experiment) say(prog, format string, args ...any) {
	fmt.Printf("%s: %s\n", prog, fmt.Sprintf(format, args...))
}

func (x *experiment) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	x.notes = append(x.notes, s)
	x.say("experiment", "note: %s", s)
}

func (x *experiment) run() error {
	x.say("experiment", "scenario %s with %d nodes (profile %s); results in %s", x.scenario, x.n, x.e.profile, x.out)
	if err := x.reset(); err != nil {
		return err
	}
	cfg, err := x.c.config(x.e, x.n)
	if err != nil {
		return err
	}
	cfg.Logf = x.c.labLog
	if x.l, err = lab.Up(context.Background(), cfg); err != nil {
		return err
	}
	bin, err := x.c.groupdBin(x.e)
	if err != nil {
		return err
	}
	if err := x.l.Configure(bin, x.e.profile, x.runArgs); err != nil {
		return err
	}
	if _, err := x.l.Start(x.all()...); err != nil {
		return err
	}
	x.say("lab", "started %d node(s) (profile %s)", x.n, x.e.profile)
	x.await(x.all(), "at start")
	time.Sleep(time.Second)

	if err := x.scenarioRun(); err != nil {
		return err
	}

	msgs := x.messagesSent()
	x.tStop = time.Now()
	if !x.keep {
		if err := errors.Join(x.l.Stop(x.all()...), x.l.StopRecording()); err != nil {
			x.note("stopping the lab: %v", err)
		}
		x.say("lab", "stopped %d daemon(s)", x.n)
	}
	time.Sleep(300 * time.Millisecond) // the recorder's last lines
	h, err := lab.ReadHistory(x.e.dir)
	if err != nil {
		return err
	}
	if err := x.collect(h); err != nil {
		return err
	}
	x.timeline()
	sum := x.summary(h, msgs)
	var rep *history.Report
	if x.scenario == "chaos" {
		r := history.NewReport(h.Replay(), h.Bad())
		rep = &r
		var b strings.Builder
		r.WriteText(&b)
		for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			fmt.Printf("check: %s\n", line)
		}
		if err := os.WriteFile(filepath.Join(x.out, "check.txt"), []byte(b.String()), 0o644); err != nil {
			return err
		}
		if err := writeJSON(filepath.Join(x.out, "check.json"), r); err != nil {
			return err
		}
		sum.Rounds, sum.Seed, sum.Minutes, sum.Check = &x.rounds, &x.seed, &x.minutes, rep
	}
	if err := writeJSON(filepath.Join(x.out, "summary.json"), sum); err != nil {
		return err
	}
	x.say("experiment", "results in %s:", x.out)
	entries, _ := os.ReadDir(x.out)
	for _, en := range entries {
		fmt.Printf("  %s\n", en.Name())
	}
	if x.scenario == "chaos" {
		sum.Groups = nil // hundreds of them; summary.json has them
	}
	b, _ := json.MarshalIndent(sum, "", "  ")
	fmt.Println(string(b))
	if !x.converged {
		return errors.New("FAILED: some convergence wait timed out (see notes in summary.json)")
	}
	if rep != nil && !rep.OK {
		return errors.New("FAILED: the invariant checker found violations (see check.txt)")
	}
	return nil
}

// reset stops and removes any lab in the run dir, with its node dirs and
// history: a fresh lab, no old data dirs, events or faults.
func (x *experiment) reset() error {
	logf := x.c.labLog
	if l, err := lab.Open(x.e.dir, logf); err == nil {
		if err := l.Down(); err != nil {
			return err
		}
	} else if err := lab.Remove(x.e.dir, x.e.prefix, x.e.bridge, logf); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(x.e.dir, "node[0-9]*"))
	for _, p := range append(old, filepath.Join(x.e.dir, lab.HistoryFile), filepath.Join(x.e.dir, "recorder.log")) {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

func (x *experiment) cleanup() {
	if x.l == nil {
		return
	}
	if x.keep {
		x.say("experiment", "--keep: lab left up (lab.sh status; lab.sh stop; lab.sh down)")
		return
	}
	if err := x.l.Down(); err != nil {
		x.c.warn("lab.sh down failed (%v); run it by hand", err)
	}
}

func (x *experiment) all() []int { return lab.Span(1, x.n) }

// await waits for the nodes of ids to converge; on timeout it notes it and
// carries on, so that the results are still collected.
func (x *experiment) await(ids []int, what string) bool {
	start := time.Now()
	sts, seen, err := x.l.WaitFor(what, ids, x.timeout, lab.Converged(ids))
	if err != nil {
		x.converged = false
		x.note("nodes %s did not converge within %v %s", joinInts(ids, ","), x.timeout, what)
		return false
	}
	s := sts[ids[0]]
	x.say("lab", "converged: nodes %s in group %s coordinator %d after %.1fs", joinInts(ids, ","), s.Group, s.Coordinator, seen.Sub(start).Seconds())
	return true
}

func (x *experiment) sideA() []int { return lab.Span(1, x.n/2) }
func (x *experiment) sideB() []int { return lab.Span(x.n/2+1, x.n) }

func (x *experiment) partition() error {
	w, err := x.l.Partition(x.sideA(), x.sideB())
	if err != nil {
		return err
	}
	if x.tFault.IsZero() {
		x.tFault = w.Start
	}
	x.say("partition", "partition: %s | %s (nodes on different sides exchange no packets)", joinInts(x.sideA(), ","), joinInts(x.sideB(), ","))
	return nil
}

func (x *experiment) heal(partitionsOnly bool) error {
	w, err := x.l.Heal(partitionsOnly)
	if err != nil {
		return err
	}
	x.tRecover = w.Start
	if partitionsOnly {
		x.say("heal", "healed partitions and one-way cuts on %d node(s) (loss/delay kept)", x.n)
	} else {
		x.say("heal", "healed: no partitions, cuts, loss or delay on %d node(s)", x.n)
	}
	return nil
}

// splitHeal partitions the lab into halves, waits for each to converge,
// holds, heals (only the partition with partitionsOnly) and waits for all.
func (x *experiment) splitHeal(partitionsOnly bool, during, after string) error {
	if err := x.partition(); err != nil {
		return err
	}
	x.await(x.sideA(), "(side A, "+during+")")
	x.await(x.sideB(), "(side B, "+during+")")
	time.Sleep(x.hold)
	if err := x.heal(partitionsOnly); err != nil {
		return err
	}
	x.await(x.all(), after)
	x.tConv = time.Now()
	return nil
}

func (x *experiment) scenarioRun() error {
	switch x.scenario {
	case "split-heal":
		return x.splitHeal(false, "during the partition", "after the heal")
	case "coordinator-crash":
		w, err := x.l.Kill(x.n)
		if err != nil {
			return err
		}
		x.say("lab", "killed node %d (SIGKILL)", x.n)
		x.tFault, x.tRecover = w.Start, w.Start
		x.await(lab.Span(1, x.n-1), "after the coordinator's crash")
		x.tConv = time.Now()
		x.note("time_to_converge_s is the failover: from the kill until nodes 1..%d agree on coordinator %d", x.n-1, x.n-1)
		time.Sleep(x.hold)
		if _, err := x.l.Restart(x.n, false); err != nil {
			return err
		}
		x.say("lab", "restarted node %d", x.n)
		x.await(x.all(), fmt.Sprintf("after node %d came back", x.n))
	case "flapping":
		for k := 1; k <= x.flaps; k++ {
			if err := x.partition(); err != nil {
				return err
			}
			time.Sleep(x.period)
			if err := x.heal(false); err != nil {
				return err
			}
			if k < x.flaps {
				time.Sleep(x.period)
			}
		}
		x.await(x.all(), "after the last heal")
		x.tConv = time.Now()
	case "lossy":
		if _, _, err := x.l.Degrade(lab.Degradation{LossPct: 20}); err != nil {
			return err
		}
		x.say("degrade", "loss: 20%% on packets sent by node(s) %s", joinInts(x.all(), ","))
		time.Sleep(x.hold)
		if err := x.splitHeal(true, "partition under 20% loss", "after the partition healed, under 20% loss"); err != nil {
			return err
		}
		x.note("20%% loss on every link for the whole run; detection and convergence are measured for the partition and its heal under that loss")
		if _, err := x.l.Heal(false); err != nil {
			return err
		}
	case "rolling-restart":
		for i := 1; i <= x.n; i++ {
			t := time.Now()
			if _, err := x.l.Restart(i, false); err != nil {
				return err
			}
			x.say("lab", "restarted node %d", i)
			if x.tFault.IsZero() {
				x.tFault = t
			}
			x.tRecover = t
			x.await(x.all(), fmt.Sprintf("after restarting node %d", i))
		}
		x.tConv = time.Now()
		x.note("time_to_converge_s is measured from the last restart command (node %d, the coordinator; includes its graceful stop)", x.n)
	case "chaos":
		x.say("experiment", "chaos: seed %d, %d minute(s), faults held 2..%v, L1 check %v after each heal, then %v quiet", x.seed, x.minutes, x.faultMax, x.settle, x.quiet)
		r, err := lab.Chaos(context.Background(), x.l, lab.ChaosOptions{Duration: time.Duration(x.minutes) * time.Minute, Seed: x.seed,
			FaultMax: x.faultMax, Settle: x.settle, Quiet: x.quiet, Timeout: x.timeout,
			Logf: func(format string, args ...any) { x.say("experiment", format, args...) }})
		x.rounds = r.Rounds
		x.converged = x.converged && r.Converged
		x.notes = append(x.notes, r.Notes...)
		x.tFault, x.tRecover, x.tConv = r.FirstFault, r.LastHeal, r.LastConverged
		return err
	}
	return nil
}

// messagesSent is the sum of groupd_messages_sent_total over the live
// nodes; nil (with a note) when no node serves it.
func (x *experiment) messagesSent() *float64 {
	var sum float64
	got := 0
	for i := 1; i <= x.n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		fams, err := x.l.Client(i).Metrics(ctx)
		cancel()
		f := fams["groupd_messages_sent_total"]
		if err != nil || f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
		got++
	}
	if got == 0 {
		x.note("messages_sent omitted: no node served groupd_messages_sent_total at /metrics")
		return nil
	}
	if got < x.n {
		x.note("messages_sent sums %d of %d nodes (the others did not answer /metrics)", got, x.n)
	}
	if x.scenario == "coordinator-crash" || x.scenario == "rolling-restart" || x.scenario == "chaos" {
		x.note("messages_sent counts only the processes alive at the end: a killed or restarted daemon's counters start again from 0")
	}
	return &sum
}

// collect writes the results: events.ndjson (every node's events before the
// final stop, sorted by time), faults.ndjson, and logs/ (each node's
// daemon log and events, and the whole history, the final stop included).
func (x *experiment) collect(h *history.History) error {
	if err := writeHistory(h, x.out, x.tStop); err != nil {
		return err
	}
	logs := filepath.Join(x.out, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	copyFile := func(from, to string) {
		if b, err := os.ReadFile(from); err == nil {
			_ = os.WriteFile(to, b, 0o644)
		}
	}
	copyFile(filepath.Join(x.e.dir, lab.HistoryFile), filepath.Join(logs, lab.HistoryFile))
	for i := 1; i <= x.n; i++ {
		copyFile(x.l.LogFile(i), filepath.Join(logs, fmt.Sprintf("node%d.log", i)))
		var b strings.Builder
		for _, ev := range h.Events(time.Time{}, time.Time{}) {
			if ev.Node == wire.NodeID(i) {
				line, _ := json.Marshal(ev)
				b.Write(append(line, '\n'))
			}
		}
		_ = os.WriteFile(filepath.Join(logs, fmt.Sprintf("node%d.events.ndjson", i)), []byte(b.String()), 0o644)
	}
	return nil
}

// summary is summary.json (see scripts/netem/README.md).
type summary struct {
	Scenario      string   `json:"scenario"`
	Nodes         int      `json:"nodes"`
	Detect        *float64 `json:"time_to_detect_s"`
	Converge      *float64 `json:"time_to_converge_s"`
	GroupsSeen    int      `json:"groups_seen"`
	Messages      *float64 `json:"messages_sent,omitempty"`
	Converged     bool     `json:"converged"`
	Groups        []string `json:"groups,omitempty"`
	FaultTime     string   `json:"fault_time"`
	RecoverTime   string   `json:"recover_time"`
	ConvergedTime string   `json:"converged_time"`
	Profile       string   `json:"profile"`
	Mechanism     string   `json:"fault_mechanism"`
	Notes         []string `json:"notes"`
	// chaos
	Rounds  *int            `json:"rounds,omitempty"`
	Seed    *uint64         `json:"seed,omitempty"`
	Minutes *int            `json:"minutes,omitempty"`
	Check   *history.Report `json:"check,omitempty"`
}

// summary computes summary.json from the events before the final stop.
func (x *experiment) summary(h *history.History, msgs *float64) summary {
	var evs []schema.Event
	for _, ev := range h.Events(time.Time{}, x.tStop) {
		if ev.Reason != schema.ReasonSnapshot {
			evs = append(evs, ev)
		}
	}
	secs := func(d time.Duration) *float64 {
		v := float64(d.Round(time.Millisecond)) / 1e9
		return &v
	}
	s := summary{Scenario: x.scenario, Nodes: x.n, Messages: msgs, Converged: x.converged, Profile: x.e.profile, Notes: slices.Clone(x.notes)}
	if !x.tFault.IsZero() {
		for _, ev := range evs {
			if ev.Time.After(x.tFault) {
				s.Detect = secs(ev.Time.Sub(x.tFault))
				break
			}
		}
		if s.Detect == nil {
			s.Notes = append(s.Notes, "no event after the fault: nothing detected")
		}
	}
	if !x.tRecover.IsZero() && !x.tConv.IsZero() {
		s.Converge = secs(0)
		for _, ev := range evs {
			if ev.Time.After(x.tRecover) && !ev.Time.After(x.tConv) {
				s.Converge = secs(ev.Time.Sub(x.tRecover))
			}
		}
	}
	seen := map[wire.GroupNumber]bool{}
	for _, ev := range h.Events(time.Time{}, x.tStop) {
		seen[ev.New.Group] = true
		if ev.Old != nil {
			seen[ev.Old.Group] = true
		}
	}
	delete(seen, wire.GroupNumber{})
	gs := slices.Collect(maps.Keys(seen))
	slices.SortFunc(gs, func(a, b wire.GroupNumber) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID))
	})
	for _, g := range gs {
		s.Groups = append(s.Groups, g.String())
	}
	s.GroupsSeen = len(s.Groups)
	if s.Notes == nil {
		s.Notes = []string{}
	}
	s.Mechanism, _ = x.l.Mechanism()
	if s.Mechanism == "tc netem" {
		s.Mechanism = "tc netem (loss/delay) + iptables (cuts)"
	}
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	s.FaultTime, s.RecoverTime, s.ConvergedTime = ts(x.tFault), ts(x.tRecover), ts(x.tConv)
	return s
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
