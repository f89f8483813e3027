//go:build linux

package main

// The lab trials of groupd: a failover, a heal and a cold start, each
// timed on the lab's recorded history (lab.Measure: the daemons' own
// event times, the definition the end-to-end tests use), after polling
// (lab.WaitFor) saw the condition hold.

import (
	"slices"
	"time"

	netlab "github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
)

// Result is one trial, lab or simulator. Times are seconds.
type Result struct {
	Kind   string `json:"kind"`   // failover | heal | converge
	Impl   string `json:"impl"`   // groupd-lan, groupd-fast, groupd-ring, keepalived, sim-lan, ...
	Source string `json:"source"` // lab | sim
	N      int    `json:"n"`
	Trial  int    `json:"trial"`

	Seconds float64 `json:"seconds"` // the figure: failover, heal or convergence time
	// Failover: the first reaction of any survivor (its first event after
	// the kill). Heal: the time the two sides took to form their own groups
	// after the partition.
	DetectS  float64 `json:"detect_s,omitempty"`
	SplitS   float64 `json:"split_s,omitempty"`
	FromCmdS float64 `json:"from_cmd_start_s,omitempty"` // heal: from the start of heal.sh
	CmdS     float64 `json:"cmd_s,omitempty"`            // heal: how long heal.sh ran
	PartCmdS float64 `json:"partition_cmd_s,omitempty"`  // heal: how long partition.sh ran
	PhaseS   float64 `json:"phase_s"`                    // random wait before the fault

	Victim      int    `json:"victim,omitempty"`
	Coordinator int    `json:"coordinator,omitempty"` // the new (or final) coordinator
	Highest     bool   `json:"highest"`               // it is the highest-ranked survivor
	Group       string `json:"group,omitempty"`

	// Messages and bytes sent by type, summed over the nodes, between just
	// before the fault (the heal) and the moment the condition held.
	Msgs    map[string]float64 `json:"msgs,omitempty"`
	Bytes   map[string]float64 `json:"bytes,omitempty"`
	WindowS float64            `json:"window_s,omitempty"` // the span those counts cover

	FaultTime time.Time  `json:"fault_time,omitzero"`
	Load      [3]float64 `json:"load"`
	WallS     float64    `json:"wall_s,omitempty"` // simulator: wall-clock time of the run
	Events    uint64     `json:"events,omitempty"` // simulator: events processed
	Note      string     `json:"note,omitempty"`
}

// recorderWait is how long a measurement waits for the recorders to
// deliver the events that show what polling saw.
const recorderWait = 10 * time.Second

// measured completes a trial once polling saw ok hold on ids: the
// messages and bytes ids sent since before (their /metrics), and the
// figure, from t0 to the first instant the recorded history shows ok
// (looked for from from), with the first reaction after t0.
func (r *Result) measured(l *netlab.Lab, before sent, ids []int, from, t0 time.Time, ok netlab.Pred) (time.Time, error) {
	after, err := sentByType(l, ids)
	if err != nil {
		return time.Time{}, err
	}
	r.WindowS, r.Load = secs(time.Since(from)), load()
	r.Msgs, r.Bytes = perSecond(before.msgs, after.msgs, 1), perSecond(before.bytes, after.bytes, 1) // the counts sent in the window
	at, err := l.Measure(from, ids, ok, recorderWait)
	if err != nil {
		return at, err
	}
	r.Seconds, r.FaultTime = secs(at.Sub(t0)), t0
	if first := l.FirstReaction(t0, ids); !first.IsZero() {
		r.DetectS = secs(first.Sub(t0))
	}
	return at, nil
}

// labFailover kills node victim of a converged lab (SIGKILL, after a
// random phase in [0, phase)) and times until the survivors have failed
// over (invariant L2: every survivor Normal in one group coordinated by a
// survivor, listing every survivor). The messages and bytes the
// survivors sent meanwhile come from their /metrics.
func labFailover(l *netlab.Lab, victim int, impl string, trial int, phase, timeout time.Duration) (Result, error) {
	all := netlab.Span(1, l.N())
	survivors := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == victim })
	r := Result{Kind: "failover", Impl: impl, Source: "lab", N: l.N(), Trial: trial, Victim: victim}
	if _, _, err := l.WaitFor("before the kill", all, timeout, netlab.Converged(all)); err != nil {
		return r, err
	}
	r.PhaseS = secs(phaseSleep(phase))
	before, err := sentByType(l, survivors)
	if err != nil {
		return r, err
	}
	w, err := l.Kill(victim)
	if err != nil {
		return r, err
	}
	sts, _, err := l.WaitFor("survivors fail over", survivors, timeout, netlab.FailedOver(survivors))
	if err != nil {
		return r, err
	}
	if _, err := r.measured(l, before, survivors, w.Start, w.Start, invariant.IsFailedOver); err != nil {
		return r, err
	}
	st := sts[survivors[0]]
	r.Coordinator, r.Group = int(st.Coordinator), st.Group.String()
	r.Highest = r.Coordinator == netlab.Highest(survivors, sts)
	say("failover %-12s N=%-3d trial %-3d %.3fs (first reaction %.3fs) new coordinator %d group %s, %d msgs",
		r.Impl, r.N, r.Trial, r.Seconds, r.DetectS, r.Coordinator, r.Group, int(sum(r.Msgs)))
	return r, nil
}

// labHeal partitions a converged lab into 1..N/2 | the rest, waits for
// both sides to converge (split_s), holds the partition until hold after
// it was in place, heals it and times from the end of the heal until one
// group of all N coordinated by the highest node (invariant L1).
func labHeal(l *netlab.Lab, impl string, trial int, hold, phase, timeout time.Duration) (Result, error) {
	n := l.N()
	all, k := netlab.Span(1, n), n/2
	a, b := netlab.Span(1, k), netlab.Span(k+1, n)
	r := Result{Kind: "heal", Impl: impl, Source: "lab", N: n, Trial: trial}
	if _, _, err := l.WaitFor("before the partition", all, timeout, netlab.Converged(all)); err != nil {
		return r, err
	}
	r.PhaseS = secs(phaseSleep(phase))
	pw, err := l.Partition(a, b)
	if err != nil {
		return r, err
	}
	bothSides := func(sts []invitation.Status) bool {
		return invariant.IsConverged(sts[:k]) && invariant.IsConverged(sts[k:])
	}
	if _, _, err := l.WaitFor("the sides form their groups", all, hold+timeout, netlab.All(netlab.Converged(a), netlab.Converged(b))); err != nil {
		_, _ = l.Heal(true)
		return r, err
	}
	split, err := l.Measure(pw.Start, all, bothSides, recorderWait)
	if err != nil {
		return r, err
	}
	r.SplitS, r.PartCmdS = secs(split.Sub(pw.End)), secs(pw.End.Sub(pw.Start))
	// The hold counts from the moment every cut is in place: at N = 64
	// the partition itself takes seconds.
	time.Sleep(time.Until(pw.End.Add(hold)))
	before, err := sentByType(l, all)
	if err != nil {
		return r, err
	}
	hw, err := l.Heal(true)
	if err != nil {
		return r, err
	}
	sts, _, err := l.WaitFor("one group after the heal", all, timeout, netlab.Converged(all))
	if err != nil {
		return r, err
	}
	at, err := r.measured(l, before, all, hw.Start, hw.End, invariant.IsConverged)
	if err != nil {
		return r, err
	}
	r.FromCmdS, r.CmdS = secs(at.Sub(hw.Start)), secs(hw.End.Sub(hw.Start))
	r.Coordinator, r.Group = int(sts[n].Coordinator), sts[n].Group.String()
	r.Highest = r.Coordinator == n
	say("heal     %-12s N=%-3d trial %-3d %.3fs after the heal (%.3fs from its start; it took %.3fs); split took %.3fs; %d msgs",
		r.Impl, r.N, r.Trial, r.Seconds, r.FromCmdS, r.CmdS, r.SplitS, int(sum(r.Msgs)))
	return r, nil
}

// labConverge times a cold start: from since until nodes 1..N are one
// group coordinated by the highest (invariant L1).
func labConverge(l *netlab.Lab, since time.Time, note string, timeout time.Duration) (Result, error) {
	all := netlab.Span(1, l.N())
	r := Result{Kind: "converge", Impl: "groupd-lan", Source: "lab", N: l.N(), Note: note}
	sts, _, err := l.WaitFor("converge", all, timeout, netlab.Converged(all))
	if err != nil {
		return r, err
	}
	at, err := l.Measure(since, all, invariant.IsConverged, recorderWait)
	if err != nil {
		return r, err
	}
	r.Seconds, r.FaultTime, r.Load = secs(at.Sub(since)), since, load()
	r.Coordinator, r.Group = int(sts[l.N()].Coordinator), sts[l.N()].Group.String()
	r.Highest = r.Coordinator == l.N()
	say("converge %-12s N=%-3d %.3fs to one group %s", r.Impl, r.N, r.Seconds, r.Group)
	return r, nil
}
