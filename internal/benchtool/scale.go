//go:build linux

package main

// The lab at scale (benchtool scale, scripts/bench/scale.sh, and the
// suite's labscale section: one path) and under sustained loss
// (benchtool loss, scripts/bench/loss.sh).

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	netlab "github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/invariant"
)

// scaleOpts say what one size of the lab-scale path measures.
type scaleOpts struct {
	// kinds of cold start, each colds times: "together" (every daemon
	// exec'd at once with --start-at a gate 2 s + 60 ms per node ahead,
	// timed from the gate) and "execd" (exec'd and started at once, timed
	// from the start call).
	kinds     []string
	colds     int
	heals     int
	failovers int
	idle      time.Duration // an idle window after the cold starts (0: none)
	args      []string      // more `groupd run` flags for every daemon
	file      string        // the results file
	diagnose  bool          // on a failure, keep what limits the lab (labscale-N-WHAT.txt)
}

func cmdScale(args []string) error {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	sizes := fs.String("nodes", "64,256", "lab sizes, comma-separated")
	trials := fs.Int("trials", 3, "trials of each measure per size")
	out := fs.String("out", "", "results directory (default /tmp/groupd-scale-TIME)")
	extra := fs.String("args", "", "more flags for every daemon, e.g. its timing; every raw line's note names them")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ns, err := parseInts(*sizes)
	if err != nil {
		return err
	}
	// 256 nodes need a /23.
	b, err := newBench("scale", *out, "sc", "10.94.0.0/23", true)
	if err != nil {
		return err
	}
	defer b.finish()
	if err := b.writeEnv("args:       " + *extra); err != nil {
		return err
	}
	o := scaleOpts{kinds: []string{"together", "execd"}, colds: *trials, heals: *trials, failovers: *trials, args: strings.Fields(*extra), file: "scale.ndjson"}
	for _, n := range ns {
		if err := b.scale(n, o); err != nil {
			b.say("N=%d: %v", n, err)
		}
	}
	b.say("results in %s", b.path(o.file))
	return nil
}

// scale measures a lab of n nodes: cold starts, an idle window, heals (a
// 10 s partition into halves) and failovers (kill -9 of the coordinator),
// each from the lab's recorded history.
func (b *bench) scale(n int, o scaleOpts) error {
	b.section("lab scale N=%d", n)
	l, err := b.labUp(n, "lan", o.args...)
	if err != nil {
		return err
	}
	all := netlab.Span(1, n)
	fail := func(what string, t int, err error) {
		b.note(o.file, Note{What: what, N: n, Trial: t, Note: fmt.Sprintf("trial %d: %v (load %s)", t, err, loadString())})
		if o.diagnose {
			b.diagnose(l, o.file, fmt.Sprintf("%s-%d", what, t))
		}
	}
	_ = b.emit(o.file, map[string]any{"kind": "config", "n": n, "args": strings.Join(o.args, " "), "load": loadString()})
	for _, kind := range o.kinds {
		for t := 1; t <= o.colds; t++ {
			if r, err := b.coldStart(l, kind, t, o.args); err != nil {
				fail("cold", t, err)
			} else if err := b.emit(o.file, r); err != nil {
				return err
			}
		}
	}
	if _, _, err := l.WaitFor("converge", all, 120*time.Second, netlab.Converged(all)); err != nil {
		return err
	}
	time.Sleep(5 * time.Second)
	if o.idle > 0 {
		s, err := window(l, fmt.Sprintf("N=%d idle", n), o.idle, map[string][]int{fmt.Sprintf("all %d groupd daemons", n): pidsOf(l)}, true)
		if err == nil {
			err = b.emit(o.file, s)
		}
		if err != nil {
			return err
		}
	}
	for t := 1; t <= o.heals; t++ {
		r, err := labHeal(l, "groupd-lan", t, 10*time.Second, time.Second, 120*time.Second)
		if err == nil {
			err = b.emit(o.file, r)
		} else {
			fail("heal", t, err)
			_, _ = l.Heal(false)
		}
		if _, _, err := l.WaitFor("converge", all, 120*time.Second, netlab.Converged(all)); err != nil {
			return err
		}
	}
	for t := 1; t <= o.failovers; t++ {
		r, err := labFailover(l, n, "groupd-lan", t, time.Second, 60*time.Second)
		if err == nil {
			err = b.emit(o.file, r)
		} else {
			fail("failover", t, err)
		}
		if _, err := l.Start(n); err != nil { // the killed node comes back for the next trial
			return err
		}
		if _, _, err := l.WaitFor("the restarted node rejoins", all, 120*time.Second, netlab.Converged(all)); err != nil {
			return err
		}
	}
	return nil
}

// coldStart starts every daemon of the lab at once, with empty data dirs,
// and times it (labConverge) from the gate (together) or from the call
// (execd).
func (b *bench) coldStart(l *netlab.Lab, kind string, t int, args []string) (Result, error) {
	n, all := l.N(), netlab.Span(1, l.N())
	if err := l.Stop(all...); err != nil {
		return Result{}, err
	}
	for _, i := range all {
		if err := l.Wipe(i); err != nil {
			return Result{}, err
		}
	}
	held0, ahead := holding(l), 2*time.Second+time.Duration(n)*60*time.Millisecond
	since := time.Now()
	note := fmt.Sprintf("cold start %d, exec'd together: all %d exec'd and started at once, timed from the start call", t, n)
	if kind == "together" {
		since = since.Add(ahead)
		gate := strconv.FormatFloat(float64(since.UnixNano())/1e9, 'f', 6, 64)
		if err := l.Configure(b.bin, "lan", append(args, "--start-at", gate)); err != nil {
			return Result{}, err
		}
		defer l.Configure(b.bin, "lan", args)
	}
	if _, err := l.Start(all...); err != nil {
		return Result{}, err
	}
	if kind == "together" {
		note = fmt.Sprintf("cold start %d, together: all %d exec'd at once with --start-at %.2fs ahead, timed from the gate; %d of %d held at the gate",
			t, n, ahead.Seconds(), holding(l)-held0, n)
	}
	return labConverge(l, since, note, 180*time.Second)
}

// holding counts the daemons' log lines that say they held the protocol
// until their --start-at gate.
func holding(l *netlab.Lab) int {
	k := 0
	for i := 1; i <= l.N(); i++ {
		b, _ := os.ReadFile(l.LogFile(i))
		k += strings.Count(string(b), "holding the protocol")
	}
	return k
}

func pidsOf(l *netlab.Lab) []int {
	var pids []int
	for i := 1; i <= l.N(); i++ {
		if pid, err := l.PID(i); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// diagnose keeps what limits the lab at N in labscale-N-WHAT.txt: the
// daemons' CPU over 10 s, UDP receive errors, the daemons' warnings and
// groupd's dropped packets, and the views.
func (b *bench) diagnose(l *netlab.Lab, file, what string) {
	if s, err := window(l, fmt.Sprintf("N=%d %s", l.N(), what), 10*time.Second, map[string][]int{"all groupd daemons": pidsOf(l)}, true); err == nil {
		_ = b.emit(file, s)
	}
	var w strings.Builder
	fmt.Fprintf(&w, "== load: %s\n", loadString())
	for _, i := range []int{1, l.N()} {
		if cmd, err := l.Command(i, "grep", "^Udp:", "/proc/net/snmp"); err == nil {
			out, _ := cmd.Output()
			fmt.Fprintf(&w, "== UDP counters in %s (/proc/net/snmp)\n%s", l.NS(i), out)
		}
	}
	warn, msg, digits := regexp.MustCompile(`"level":"(warn|error)"`), regexp.MustCompile(`"message":"[^"]*"`), regexp.MustCompile(`[0-9]+`)
	counts := map[string]int{}
	for i := 1; i <= l.N(); i++ {
		log, _ := os.ReadFile(l.LogFile(i))
		for _, line := range strings.Split(string(log), "\n") {
			if warn.MatchString(line) {
				counts[digits.ReplaceAllString(msg.FindString(line), "N")]++
			}
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	fmt.Fprintln(&w, "== memberlist and groupd warnings, all nodes (count message)")
	for _, k := range keys[:min(15, len(keys))] {
		fmt.Fprintf(&w, "%7d %s\n", counts[k], k)
	}
	fmt.Fprintln(&w, "== groupd_dropped_packets_total by reason, summed over nodes")
	fams, _ := metricsOf(l, netlab.Span(1, l.N()))
	dropped := sumByLabel(fams, "groupd_dropped_packets_total", "reason")
	for _, k := range slices.Sorted(maps.Keys(dropped)) {
		fmt.Fprintf(&w, "%s %.0f\n", k, dropped[k])
	}
	sts, errs := l.Views(netlab.Span(1, l.N()))
	fmt.Fprintf(&w, "== views\n%s", netlab.FormatViews(netlab.Span(1, l.N()), sts, errs))
	_ = os.WriteFile(b.path(fmt.Sprintf("labscale-%d-%s.txt", l.N(), what)), []byte(w.String()), 0o644)
}

// cmdLoss: groupd under sustained packet loss (issue 14: "30 % loss for
// 60 s: at most 3 new numbers a minute, and convergence after"). Each
// trial brings up a fresh lab, puts the loss on every sender for the
// given time, removes it and times convergence; from the recorded
// history it counts the group numbers first seen during the loss.
func cmdLoss(args []string) error {
	fs := flag.NewFlagSet("loss", flag.ContinueOnError)
	n := fs.Int("nodes", 5, "lab size")
	pct := fs.Float64("loss", 30, "loss on every sender's packets, percent")
	seconds := fs.Int("seconds", 60, "how long the loss lasts")
	trials := fs.Int("trials", 1, "repetitions")
	out := fs.String("out", "", "results directory (default /tmp/groupd-loss-TIME)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := newBench("loss", *out, "lb", "10.92.0", true)
	if err != nil {
		return err
	}
	defer b.finish()
	for t := 1; t <= *trials; t++ {
		r, err := b.lossTrial(*n, *pct, time.Duration(*seconds)*time.Second)
		if err != nil {
			return err
		}
		r.Trial = t
		if err := b.emit("loss.ndjson", r); err != nil {
			return err
		}
		say("loss: trial %d: %d new numbers (%.2f a minute) under %v%% loss (%s); converged %d ms after the heal",
			t, r.NewNumbers, r.PerMinute, r.LossPct, r.Mechanism, r.ConvergeMS)
	}
	return nil
}

// LossResult is one trial of benchtool loss.
type LossResult struct {
	Kind       string  `json:"kind"` // "loss"
	N          int     `json:"n"`
	LossPct    float64 `json:"loss_pct"`
	Seconds    float64 `json:"seconds"`
	Trial      int     `json:"trial"`
	Mechanism  string  `json:"mechanism"`
	NewNumbers int     `json:"new_numbers"`
	PerMinute  float64 `json:"per_minute"`
	ConvergeMS int64   `json:"converge_ms_after_heal"` // -1: never converged
}

func (b *bench) lossTrial(n int, pct float64, d time.Duration) (LossResult, error) {
	l, err := b.labUp(n, "lan")
	if err != nil {
		return LossResult{}, err
	}
	all := netlab.Span(1, n)
	if _, err := l.Start(all...); err != nil {
		return LossResult{}, err
	}
	if _, _, err := l.WaitFor("converge", all, 60*time.Second, netlab.Converged(all)); err != nil {
		return LossResult{}, err
	}
	time.Sleep(2 * time.Second)
	t0 := time.Now()
	if _, _, err := l.Degrade(netlab.Degradation{LossPct: pct}); err != nil {
		return LossResult{}, err
	}
	mech, _ := l.Mechanism()
	time.Sleep(d)
	t1 := time.Now()
	hw, err := l.Heal(false)
	if err != nil {
		return LossResult{}, err
	}
	// Convergence after the heal, from the recorded history; -1 if the
	// lab never converged.
	conv := int64(-1)
	if _, _, err := l.WaitFor("converge after the loss", all, 120*time.Second, netlab.Converged(all)); err == nil {
		if at, err := l.Measure(hw.Start, all, invariant.IsConverged, recorderWait); err == nil {
			conv = at.Sub(hw.Start).Milliseconds()
		}
	}
	h, err := l.History()
	if err != nil {
		return LossResult{}, err
	}
	// The group numbers first seen during the loss: created because of it.
	before, fresh := map[string]bool{}, map[string]bool{}
	for _, ev := range h.Events(time.Time{}, t1) {
		switch g := ev.New.Group; {
		case g.IsZero():
		case ev.Time.Before(t0):
			before[g.String()] = true
		case !before[g.String()]:
			fresh[g.String()] = true
		}
	}
	mechanism, _, _ := strings.Cut(mech, " ")
	return LossResult{Kind: "loss", N: n, LossPct: pct, Seconds: d.Seconds(), Mechanism: mechanism, NewNumbers: len(fresh),
		PerMinute: float64(len(fresh)) * 60 / d.Seconds(), ConvergeMS: conv}, nil
}
