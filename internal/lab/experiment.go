package lab

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/groupd/groupd/internal/history"
	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/wire"
)

// Scenarios are the experiments of scripts/netem/experiment.sh.
var Scenarios = []string{"split-heal", "coordinator-crash", "flapping", "lossy", "rolling-restart", "chaos"}

// ExperimentOptions configure an experiment.
type ExperimentOptions struct {
	Scenario string
	// Timeout bounds every wait for convergence; a wait that times out
	// is noted and the run goes on, so that its results are kept.
	Timeout time.Duration
	// Hold is how long a fault stays once the sides settled.
	Hold time.Duration
	// Flaps and Period: flapping's partition/heal cycles, Period apart.
	Flaps  int
	Period time.Duration
	// Chaos configures chaos (its Timeout and Logf are these).
	Chaos ChaosOptions
	// Say gets one line per step, with the name of the script that
	// would have done it ("partition", "heal", "lab", "experiment").
	Say func(prog, format string, args ...any)
}

// Experiment is what a scenario did: the instants its figures are
// measured from, on the recorded history (Summarize).
type Experiment struct {
	Scenario string
	N        int
	// Fault is the first fault; Recover the start of the recovery (the
	// last heal, the kill of coordinator-crash, the last restart).
	Fault, Recover time.Time
	// Converged is false when a wait for convergence timed out.
	Converged bool
	Notes     []string
	Rounds    int // chaos
	// on are the nodes whose convergence after Recover is the figure
	// (coordinator-crash: the survivors).
	on []int
}

// experiment runs one scenario on a lab.
type experiment struct {
	*Experiment
	l *Lab
	o ExperimentOptions
}

// RunExperiment runs scenario o.Scenario on a converged lab l.
func RunExperiment(ctx context.Context, l *Lab, o ExperimentOptions) (*Experiment, error) {
	if !slices.Contains(Scenarios, o.Scenario) {
		return nil, fmt.Errorf("lab: unknown scenario %q", o.Scenario)
	}
	x := &experiment{Experiment: &Experiment{Scenario: o.Scenario, N: l.N(), Converged: true, on: l.all()}, l: l, o: o}
	return x.Experiment, x.run(ctx)
}

func (x *experiment) say(prog, format string, args ...any) {
	if x.o.Say != nil {
		x.o.Say(prog, format, args...)
	}
}

func (x *experiment) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	x.Notes = append(x.Notes, s)
	x.say("experiment", "note: %s", s)
}

// await waits for the nodes of ids to converge; on timeout it notes it
// and carries on.
func (x *experiment) await(ids []int, what string) {
	start := time.Now()
	sts, seen, err := x.l.WaitFor(what, ids, x.o.Timeout, Converged(ids))
	if err != nil {
		x.Converged = false
		x.note("nodes %s did not converge within %v %s", joinInts(ids), x.o.Timeout, what)
		return
	}
	s := sts[ids[0]]
	x.say("lab", "converged: nodes %s in group %s coordinator %d after %.1fs", joinInts(ids), s.Group, s.Coordinator, seen.Sub(start).Seconds())
}

func (x *experiment) sides() ([]int, []int) { return Span(1, x.N/2), Span(x.N/2+1, x.N) }

func (x *experiment) partition() error {
	a, b := x.sides()
	w, err := x.l.Partition(a, b)
	if err != nil {
		return err
	}
	if x.Fault.IsZero() {
		x.Fault = w.Start
	}
	x.say("partition", "partition: %s | %s (nodes on different sides exchange no packets)", joinInts(a), joinInts(b))
	return nil
}

func (x *experiment) heal(partitionsOnly bool) error {
	w, err := x.l.Heal(partitionsOnly)
	if err != nil {
		return err
	}
	x.Recover = w.Start
	if partitionsOnly {
		x.say("heal", "healed partitions and one-way cuts on %d node(s) (loss/delay kept)", x.N)
	} else {
		x.say("heal", "healed: no partitions, cuts, loss or delay on %d node(s)", x.N)
	}
	return nil
}

// splitHeal partitions the lab into halves, waits for each to converge,
// holds, heals (only the partition with partitionsOnly) and waits for all.
func (x *experiment) splitHeal(partitionsOnly bool, during, after string) error {
	if err := x.partition(); err != nil {
		return err
	}
	a, b := x.sides()
	x.await(a, "(side A, "+during+")")
	x.await(b, "(side B, "+during+")")
	time.Sleep(x.o.Hold)
	if err := x.heal(partitionsOnly); err != nil {
		return err
	}
	x.await(x.on, after)
	return nil
}

func (x *experiment) run(ctx context.Context) error {
	switch x.Scenario {
	case "split-heal":
		return x.splitHeal(false, "during the partition", "after the heal")
	case "coordinator-crash":
		return x.coordinatorCrash()
	case "flapping":
		for k := 1; k <= x.o.Flaps; k++ {
			if err := x.partition(); err != nil {
				return err
			}
			time.Sleep(x.o.Period)
			if err := x.heal(false); err != nil {
				return err
			}
			if k < x.o.Flaps {
				time.Sleep(x.o.Period)
			}
		}
		x.await(x.on, "after the last heal")
	case "lossy":
		return x.lossy()
	case "rolling-restart":
		for i := 1; i <= x.N; i++ {
			if x.Fault.IsZero() {
				x.Fault = time.Now()
			}
			t, err := x.l.Restart(i, false)
			if err != nil {
				return err
			}
			x.say("lab", "restarted node %d", i)
			x.Recover = t
			x.await(x.on, fmt.Sprintf("after restarting node %d", i))
		}
		x.note("time_to_converge_s is measured from the start of the last restarted daemon (node %d, the coordinator)", x.N)
	case "chaos":
		o := x.o.Chaos
		o.Timeout, o.Logf = x.o.Timeout, func(format string, args ...any) { x.say("experiment", format, args...) }
		r, err := Chaos(ctx, x.l, o)
		x.Rounds, x.Converged = r.Rounds, x.Converged && r.Converged
		x.Notes = append(x.Notes, r.Notes...)
		x.Fault, x.Recover = r.FirstFault, r.LastHeal
		return err
	}
	return nil
}

func (x *experiment) coordinatorCrash() error {
	w, err := x.l.Kill(x.N)
	if err != nil {
		return err
	}
	x.say("lab", "killed node %d (SIGKILL)", x.N)
	x.Fault, x.Recover, x.on = w.Start, w.Start, Span(1, x.N-1)
	x.await(x.on, "after the coordinator's crash")
	x.note("time_to_converge_s is the failover: from the kill until nodes 1..%d agree on coordinator %d", x.N-1, x.N-1)
	time.Sleep(x.o.Hold)
	if _, err := x.l.Restart(x.N, false); err != nil {
		return err
	}
	x.say("lab", "restarted node %d", x.N)
	x.await(x.l.all(), fmt.Sprintf("after node %d came back", x.N))
	return nil
}

func (x *experiment) lossy() error {
	if _, _, err := x.l.Degrade(Degradation{LossPct: 20}); err != nil {
		return err
	}
	x.say("degrade", "loss: 20%% on packets sent by node(s) %s", joinInts(x.on))
	time.Sleep(x.o.Hold)
	if err := x.splitHeal(true, "partition under 20% loss", "after the partition healed, under 20% loss"); err != nil {
		return err
	}
	x.note("20%% loss on every link for the whole run; detection and convergence are measured for the partition and its heal under that loss")
	_, err := x.l.Heal(false)
	return err
}

// MessagesSent sums groupd_messages_sent_total over the nodes that answer
// /metrics, and says how many did.
func (l *Lab) MessagesSent() (sum float64, answered int) {
	for i := 1; i <= l.N(); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		fams, err := l.Client(i).Metrics(ctx)
		cancel()
		if f := fams["groupd_messages_sent_total"]; err == nil && f != nil {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			answered++
		}
	}
	return sum, answered
}

// Summary is an experiment's summary.json (scripts/netem/README.md).
type Summary struct {
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

// Summarize measures x on the history h, up to stop (the final stop of
// the daemons): time_to_detect_s is from the fault to the first event
// that is not a snapshot (history.FirstEvent); time_to_converge_s from
// the recovery to the first instant the nodes were converged (L1,
// history.FirstTime, as Measure).
func (x *Experiment) Summarize(h *history.History, stop time.Time) Summary {
	secs := func(d time.Duration) *float64 {
		v := float64(d.Round(time.Millisecond)) / 1e9
		return &v
	}
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	s := Summary{Scenario: x.Scenario, Nodes: x.N, Converged: x.Converged, Notes: slices.Clone(x.Notes),
		FaultTime: ts(x.Fault), RecoverTime: ts(x.Recover)}
	if !x.Fault.IsZero() {
		if ev, ok := h.FirstEvent(x.Fault, nil); ok && ev.Time.Before(stop) {
			s.Detect = secs(ev.Time.Sub(x.Fault))
		} else {
			s.Notes = append(s.Notes, "no event after the fault: nothing detected")
		}
	}
	if !x.Recover.IsZero() {
		if at, ok := h.FirstTime(x.Recover, IDs(x.on), invariant.IsConverged); ok && at.Before(stop) {
			s.Converge, s.ConvergedTime = secs(at.Sub(x.Recover)), ts(at)
		}
	}
	seen := map[wire.GroupNumber]bool{}
	for _, ev := range h.Events(time.Time{}, stop) {
		seen[ev.New.Group] = true
		if ev.Old != nil {
			seen[ev.Old.Group] = true
		}
	}
	delete(seen, wire.GroupNumber{})
	gs := slices.SortedFunc(maps.Keys(seen), func(a, b wire.GroupNumber) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID))
	})
	for _, g := range gs {
		s.Groups = append(s.Groups, g.String())
	}
	s.GroupsSeen = len(s.Groups)
	if s.Notes == nil {
		s.Notes = []string{}
	}
	return s
}
