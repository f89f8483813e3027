// Command checkhistory replays a recorded lab run (scripts/netem's
// events.ndjson and faults.ndjson) through the invariant checker and says
// whether S1–S4 held over the whole history and whether every node was
// converged at every quiet check point (see package internal/history).
//
//	go run ./internal/cmd/checkhistory -events RUN/events.ndjson -faults RUN/faults.ndjson [-json]
//
// Exit status: 0 clean, 1 a violation or a failed check point, 2 bad usage
// or unreadable input. `scripts/netem/experiment.sh chaos` runs it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/groupd/groupd/internal/history"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// Report is the -json output.
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

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("checkhistory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	events := fs.String("events", "", "events `FILE` (NDJSON of group.Event; required)")
	faults := fs.String("faults", "", "faults `FILE` (scripts/netem faults.ndjson; optional)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *events == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "checkhistory: usage: checkhistory -events FILE [-faults FILE] [-json]")
		return 2
	}
	h := history.New()
	if err := readFile(*events, func(r io.Reader) error { _, err := h.ReadEvents(r); return err }); err != nil {
		fmt.Fprintf(stderr, "checkhistory: %v\n", err)
		return 2
	}
	if *faults != "" {
		if err := readFile(*faults, func(r io.Reader) error { _, err := h.ReadFaults(r); return err }); err != nil {
			fmt.Fprintf(stderr, "checkhistory: %v\n", err)
			return 2
		}
	}
	res := h.Replay()
	rep := report(res, h.Bad())
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		printText(stdout, rep)
	}
	if !rep.OK {
		return 1
	}
	return 0
}

func readFile(path string, f func(io.Reader) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	if err := f(file); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func report(res history.Result, bad []string) Report {
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

func printText(w io.Writer, r Report) {
	fmt.Fprintf(w, "history: %d events from %d nodes (%d stale), %d group numbers created, %d restarts, %d kills\n",
		r.Events, r.Nodes, r.StaleEvents, r.GroupsCreated, r.Restarts, r.Crashes)
	fmt.Fprintf(w, "safety (S1-S4): %d violations\n", len(r.SafetyViolations))
	for _, v := range r.SafetyViolations {
		fmt.Fprintf(w, "  %s\n", v)
	}
	fmt.Fprintf(w, "convergence (L1) at quiet check points: %d of %d converged\n", r.ChecksConverged, r.Checks)
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
