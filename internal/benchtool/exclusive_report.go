//go:build linux

package main

// benchtool exclusive report: the tables of BENCHMARKS.md's "Exclusive
// leadership" from the rounds' NDJSON.

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

func cmdExclusiveReport(args []string) error {
	fs := flag.NewFlagSet("exclusive report", flag.ContinueOnError)
	in := fs.String("in", "", "results, comma-separated NDJSON files (benchtool exclusive run --out)")
	out := fs.String("o", "-", "write the Markdown here; - for stdout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *in == "" {
		return fmt.Errorf("--in is needed")
	}
	var rounds []ExclRound
	var notes []ExclNote
	var envs []ExclEnv
	for _, path := range strings.Split(*in, ",") {
		rs, err := readNDJSON[ExclRound](path, "exclusive")
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		ns, err := readNDJSON[ExclNote](path, "note")
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		es, err := readNDJSON[ExclEnv](path, "env")
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(rs)+len(ns)+len(es) == 0 {
			return fmt.Errorf("%s: no results", path)
		}
		rounds, notes, envs = append(rounds, rs...), append(notes, ns...), append(envs, es...)
	}
	md := exclMarkdown(rounds, notes, envs)
	if *out == "-" {
		_, err := fmt.Print(md)
		return err
	}
	return os.WriteFile(*out, []byte(md), 0o644)
}

// exclCell is "p50 (min–max)" of xs, with f formatting one value.
func exclCell(xs []float64, f func(float64) string) string {
	switch len(xs) {
	case 0:
		return "—"
	case 1:
		return f(xs[0])
	}
	return fmt.Sprintf("%s (%s–%s)", f(medianOf(xs)), f(slices.Min(xs)), f(slices.Max(xs)))
}

func fms(v float64) string { return fmt.Sprintf("%.0f", v) }
func fs3(v float64) string { return fmt.Sprintf("%.2f", v) }

// exclMarkdown writes one table per fault, a row per implementation.
func exclMarkdown(rounds []ExclRound, notes []ExclNote, envs []ExclEnv) string {
	var b strings.Builder
	for _, fault := range exclFaults {
		var rows []string
		for _, peer := range exclPeers {
			var rs []ExclRound
			for _, r := range rounds {
				if r.Peer == peer && r.Fault == fault {
					rs = append(rs, r)
				}
			}
			if len(rs) == 0 {
				continue
			}
			rows = append(rows, exclRow(peer, rs))
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "**%s** (%s)\n\n", fault, exclFaultSay(fault, rounds))
		b.WriteString("| implementation | rounds | overlap ms, p50 (min–max) | rounds with overlap > 1 poll | step-down s, p50 (min–max) | takeover s, p50 (min–max) | term order broken | load (1 min) |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|\n")
		for _, r := range rows {
			b.WriteString(r + "\n")
		}
		b.WriteString("\n")
	}
	if len(notes) > 0 {
		b.WriteString("Notes of the runs:\n\n")
		for _, n := range notes {
			where := n.Peer
			if n.Fault != "" {
				where += fmt.Sprintf(" %s round %d", n.Fault, n.Round)
			}
			fmt.Fprintf(&b, "- %s: %s\n", where, n.Note)
		}
		b.WriteString("\n")
	}
	for _, e := range envs {
		fmt.Fprintf(&b, "Run of %s: `%s`; %s; load %.2f at the start.\n", e.Started.Format("2006-01-02 15:04 MST"), e.Command, e.Lab, e.Load[0])
	}
	return b.String()
}

func exclFaultSay(fault string, rounds []ExclRound) string {
	for _, r := range rounds {
		if r.Fault == fault {
			return strings.TrimSpace(r.FaultSpec + "; " + r.Mechanism)
		}
	}
	return ""
}

func exclRow(peer string, rs []ExclRound) string {
	var overlap, stepdown, takeover []float64
	kept, none, withOverlap, unsettled, broken, brokenAfter, afterEnd := 0, 0, 0, 0, 0, 0, 0
	hasTerms := false
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		overlap = append(overlap, r.OverlapMS)
		// Less than one poll interval is within the resolution: the two
		// answers' intervals can overlap by up to a poll when one node
		// steps down and another takes over in the same interval.
		if r.OverlapMS > r.PollMS {
			withOverlap++
		}
		switch {
		case r.Kept:
			kept++
		case r.StepDownS != nil:
			stepdown = append(stepdown, *r.StepDownS)
			// A network fault that ended (healed) before the old leader
			// stepped down: the heal, not its own detection, ended it.
			if r.Fault != "freeze" && r.Fault != "kill" && *r.StepDownS >= r.FaultEndS {
				afterEnd++
			}
		}
		if r.TakeoverS != nil {
			takeover = append(takeover, *r.TakeoverS)
		} else {
			none++
		}
		if !r.Settled {
			unsettled++
		}
		if len(r.Terms) > 0 {
			hasTerms = true
		}
		if r.TermViolations > 0 {
			broken++
			if v, ok := exclFirstViolation(r); ok && v >= r.FaultEndS {
				brokenAfter++
			}
		}
		lo, hi = min(lo, r.Load[0]), max(hi, r.Load[0])
	}
	sd := exclCell(stepdown, fs3)
	if afterEnd > 0 {
		sd += fmt.Sprintf("; only after the heal in %d", afterEnd)
	}
	if kept > 0 {
		sd += fmt.Sprintf("; kept leading in %d of %d", kept, len(rs))
	}
	to := exclCell(takeover, fs3)
	if none > 0 {
		to += fmt.Sprintf("; none in %d of %d", none, len(rs))
	}
	terms := "— (no terms)"
	if hasTerms {
		terms = fmt.Sprintf("%d of %d", broken, len(rs))
		if brokenAfter > 0 {
			terms += fmt.Sprintf(" (%d only after the fault ended)", brokenAfter)
		}
	}
	rounds := fmt.Sprint(len(rs))
	if unsettled > 0 {
		rounds += fmt.Sprintf(" (%d not settled)", unsettled)
	}
	return fmt.Sprintf("| %s | %s | %s | %d of %d | %s | %s | %s | %.2f–%.2f |",
		peer, rounds, exclCell(overlap, fms), withOverlap, len(rs), sd, to, terms, lo, hi)
}

// exclFirstViolation is when a round's first term violation came, from
// the fault: first_violation_s, or, in results written before that field,
// the time that begins first_violation ("+3.003s: node 5 ...").
func exclFirstViolation(r ExclRound) (float64, bool) {
	if r.FirstViolationS != nil {
		return *r.FirstViolationS, true
	}
	head, _, ok := strings.Cut(r.FirstViolation, "s: ")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(head, 64)
	return v, err == nil
}
