package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/internal/history"
	"github.com/groupd/groupd/internal/lab"
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
                     the profile's T_heal (Timing.HealBound) + 2 s, rounded up to seconds)
  --quiet S          chaos: quiet time after each check point (default 3)
  --keep             leave the lab up (and the daemons running) at the end
The lab (run dir $GROUPD_LAB_DIR, default /tmp/groupd-lab) is reset first: any
running lab is stopped and its node directories and history are removed.`

// experiment is one run of experiment.sh: the scenario runs in package
// lab (lab.RunExperiment); this keeps its options and its files.
type experiment struct {
	c        *cli
	e        lab.Env
	scenario string
	n        int
	out      string
	keep     bool
	minutes  int
	seed     uint64
	o        lab.ExperimentOptions
	runArgs  []string
	l        *lab.Lab
}

func (c *cli) experiment(args []string) error {
	x := &experiment{c: c}
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
	var n, timeout, hold, flaps, period, faultMax, quiet, settle, seed int = 0, 60, 5, 4, 3, 8, 3, -1, -1
	x.minutes = 10
	for k, p := range map[string]*int{"--nodes": &n, "--timeout": &timeout, "--hold": &hold, "--flaps": &flaps, "--period": &period,
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
				x.e.Profile = args[1]
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
	switch {
	case x.scenario == "":
		return usageError("%s", experimentUsage)
	case !slices.Contains(lab.Scenarios, x.scenario):
		return fmt.Errorf("unknown scenario '%s' (%s)", x.scenario, strings.Join(lab.Scenarios, ", "))
	}
	if x.e.Profile != "lan" && x.e.Profile != "fast" {
		return fmt.Errorf("--profile wants lan or fast, not %q", x.e.Profile)
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
		// T_heal (docs/design.md §4) plus 2 s
		// of slack, in whole seconds.
		settle = int((lab.ProfileTiming(x.e.Profile).HealBound() + 3*time.Second - 1) / time.Second)
	}
	if seed < 0 {
		seed = rand.IntN(1 << 30)
	}
	sec := func(v int) time.Duration { return time.Duration(v) * time.Second }
	x.n, x.seed = n, uint64(seed)
	x.o = lab.ExperimentOptions{Scenario: x.scenario, Timeout: sec(timeout), Hold: sec(hold), Flaps: flaps, Period: sec(period), Say: x.say,
		Chaos: lab.ChaosOptions{Duration: time.Duration(x.minutes) * time.Minute, Seed: x.seed, FaultMax: sec(faultMax), Settle: sec(settle), Quiet: sec(quiet)}}
	if x.out == "" {
		x.out = "/tmp/groupd-experiments/" + x.scenario + "-" + time.Now().Format("20060102-150405")
	}
	return nil
}

func (x *experiment) say(prog, format string, args ...any) {
	fmt.Printf("%s: %s\n", prog, fmt.Sprintf(format, args...))
}

func (x *experiment) run() error {
	x.say("experiment", "scenario %s with %d nodes (profile %s); results in %s", x.scenario, x.n, x.e.Profile, x.out)
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
	if err := x.l.Configure(bin, x.e.Profile, x.runArgs); err != nil {
		return err
	}
	all := lab.Span(1, x.n)
	if _, err := x.l.Start(all...); err != nil {
		return err
	}
	x.say("lab", "started %d node(s) (profile %s)", x.n, x.e.Profile)
	if _, _, err := x.l.WaitFor("at start", all, x.o.Timeout, lab.Converged(all)); err != nil {
		return err
	}
	time.Sleep(time.Second)
	if x.scenario == "chaos" {
		x.say("experiment", "chaos: seed %d, %d minute(s), faults held 2..%v, L1 check %v after each heal, then %v quiet", x.seed, x.minutes, x.o.Chaos.FaultMax, x.o.Chaos.Settle, x.o.Chaos.Quiet)
	}
	xr, err := lab.RunExperiment(context.Background(), x.l, x.o)
	if err != nil {
		return err
	}
	msgs, answered := x.l.MessagesSent()
	stop := time.Now()
	if !x.keep {
		if err := errors.Join(x.l.Stop(all...), x.l.StopRecording()); err != nil {
			x.say("experiment", "note: stopping the lab: %v", err)
		}
		x.say("lab", "stopped %d daemon(s)", x.n)
	}
	time.Sleep(300 * time.Millisecond) // the recorder's last lines
	h, err := lab.ReadHistory(x.e.Dir)
	if err != nil {
		return err
	}
	if err := x.collect(h, stop); err != nil {
		return err
	}
	x.timeline()
	sum := xr.Summarize(h, stop)
	sum.Profile, sum.Messages = x.e.Profile, x.messages(msgs, answered, &sum)
	if sum.Mechanism, _ = x.l.Mechanism(); sum.Mechanism == "tc netem" {
		sum.Mechanism = "tc netem (loss/delay) + iptables (cuts)"
	}
	if x.scenario == "chaos" {
		if err := x.check(h, &sum, xr.Rounds); err != nil {
			return err
		}
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
	if !xr.Converged {
		return errors.New("FAILED: some convergence wait timed out (see notes in summary.json)")
	}
	if sum.Check != nil && !sum.Check.OK {
		return errors.New("FAILED: the invariant checker found violations (see check.txt)")
	}
	return nil
}

// messages is messages_sent for the summary; nil (with a note) when no
// node served it.
func (x *experiment) messages(sum float64, answered int, s *lab.Summary) *float64 {
	switch {
	case answered == 0:
		s.Notes = append(s.Notes, "messages_sent omitted: no node served groupd_messages_sent_total at /metrics")
		return nil
	case answered < x.n:
		s.Notes = append(s.Notes, fmt.Sprintf("messages_sent sums %d of %d nodes (the others did not answer /metrics)", answered, x.n))
	}
	if x.scenario == "coordinator-crash" || x.scenario == "rolling-restart" || x.scenario == "chaos" {
		s.Notes = append(s.Notes, "messages_sent counts only the processes alive at the end: a killed or restarted daemon's counters start again from 0")
	}
	return &sum
}

// check replays the whole history (chaos) into check.txt and check.json.
func (x *experiment) check(h *history.History, sum *lab.Summary, rounds int) error {
	r := history.NewReport(h.Replay(), h.Bad())
	var b strings.Builder
	r.WriteText(&b)
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		fmt.Printf("check: %s\n", line)
	}
	if err := os.WriteFile(filepath.Join(x.out, "check.txt"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	sum.Rounds, sum.Seed, sum.Minutes, sum.Check = &rounds, &x.seed, &x.minutes, &r
	return writeJSON(filepath.Join(x.out, "check.json"), r)
}

// reset stops and removes any lab in the run dir, with its node dirs and
// history: a fresh lab, no old data dirs, events or faults.
func (x *experiment) reset() error {
	logf := x.c.labLog
	if l, err := lab.Open(x.e.Dir, logf); err == nil {
		if err := l.Down(); err != nil {
			return err
		}
	} else if err := lab.Remove(x.e.Dir, x.e.Prefix, x.e.Bridge, logf); err != nil {
		return err
	}
	return lab.ClearRunDir(x.e.Dir)
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

// collect writes the results: events.ndjson (every node's events before the
// final stop, sorted by time), faults.ndjson, and logs/ (each node's
// daemon log and events, and the whole history, the final stop included).
func (x *experiment) collect(h *history.History, stop time.Time) error {
	if err := writeHistory(h, x.out, stop); err != nil {
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
	copyFile(filepath.Join(x.e.Dir, lab.HistoryFile), filepath.Join(logs, lab.HistoryFile))
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

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
