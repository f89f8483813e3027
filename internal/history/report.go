package history

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Report is a replay's outcome for people and programs: what
// internal/cmd/checkhistory prints (as text, or as JSON with -json) and the
// experiments keep (check.txt, check.json).
type Report struct {
	OK               bool          `json:"ok"`
	Events           int           `json:"events"`
	StaleEvents      int           `json:"stale_events"`
	Restated         int           `json:"restated_snapshots"`
	Nodes            int           `json:"nodes"`
	GroupsCreated    int           `json:"groups_created"`
	Restarts         int           `json:"restarts"`
	Crashes          int           `json:"crashes"`
	SafetyViolations []string      `json:"safety_violations"`
	Checks           int           `json:"checks"`
	ChecksConverged  int           `json:"checks_converged"`
	CheckFailures    []CheckReport `json:"check_failures"`
	ConvergedAfter   *Stats        `json:"converged_after_heal_s,omitempty"`
	BadLines         []string      `json:"bad_lines"`
}

// CheckReport is one failed check point.
type CheckReport struct {
	Label      string   `json:"label"`
	Time       string   `json:"time"`
	Violations []string `json:"violations"`
}

// Stats summarises durations in seconds.
type Stats struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	Max    float64 `json:"max"`
}

// NewReport summarises a replay and the lines that could not be used.
func NewReport(res Result, bad []string) Report {
	rep := Report{
		OK: res.OK(), Events: res.Events, StaleEvents: res.Stale, Restated: res.Restated, Nodes: res.Nodes, GroupsCreated: res.Created,
		Restarts: res.Restarts, Crashes: res.Crashes, Checks: len(res.Checks),
		SafetyViolations: []string{}, CheckFailures: []CheckReport{}, BadLines: bad,
	}
	if rep.BadLines == nil {
		rep.BadLines = []string{}
	}
	for _, v := range res.Safety {
		rep.SafetyViolations = append(rep.SafetyViolations, v.String())
	}
	var after []float64
	for _, c := range res.Checks {
		if len(c.Violations) == 0 {
			rep.ChecksConverged++
			if !c.Heal.IsZero() && c.ConvergedAfter >= 0 {
				after = append(after, c.ConvergedAfter.Seconds())
			}
			continue
		}
		cr := CheckReport{Label: c.Label, Time: c.Time.UTC().Format(time.RFC3339Nano)}
		for _, v := range c.Violations {
			cr.Violations = append(cr.Violations, v.String())
		}
		rep.CheckFailures = append(rep.CheckFailures, cr)
	}
	if len(after) > 0 {
		slices.Sort(after)
		st := &Stats{N: len(after), Min: after[0], Max: after[len(after)-1], Median: after[len(after)/2]}
		for _, a := range after {
			st.Mean += a / float64(len(after))
		}
		rep.ConvergedAfter = st
	}
	return rep
}

// WriteText writes the report for people, ending with OK or FAILED.
func (r Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "history: %d events from %d nodes (%d stale), %d group numbers created, %d restarts, %d crashes (kill, stop, restart)\n",
		r.Events, r.Nodes, r.StaleEvents, r.GroupsCreated, r.Restarts, r.Crashes)
	fmt.Fprintf(w, "safety (S1-S5, LT1-LT2, LP1): %d violations\n", len(r.SafetyViolations))
	for _, v := range r.SafetyViolations {
		fmt.Fprintf(w, "  %s\n", v)
	}
	fmt.Fprintf(w, "check points (L1, per-side L1, L2): %d of %d held\n", r.ChecksConverged, r.Checks)
	if s := r.ConvergedAfter; s != nil {
		fmt.Fprintf(w, "  converged after the heal: min %.2fs, median %.2fs, mean %.2fs, max %.2fs (n=%d)\n",
			s.Min, s.Median, s.Mean, s.Max, s.N)
	}
	for _, c := range r.CheckFailures {
		fmt.Fprintf(w, "  check point %q at %s failed:\n", c.Label, c.Time)
		for _, v := range c.Violations {
			fmt.Fprintf(w, "    %s\n", v)
		}
	}
	if len(r.BadLines) > 0 {
		fmt.Fprintf(w, "%d unusable lines, first: %s\n", len(r.BadLines), r.BadLines[0])
	}
	if r.OK {
		fmt.Fprintln(w, "OK")
	} else {
		fmt.Fprintln(w, "FAILED")
	}
}
