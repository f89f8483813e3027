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
	for _, fault := range exclAllFaults {
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
			if fault == "loss" {
				rows = append(rows, exclLossRow(peer, rs))
			} else {
				rows = append(rows, exclRow(peer, rs))
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "**%s** (%s)\n\n", fault, exclFaultSay(fault, rounds))
		if fault == "loss" {
			b.WriteString(exclLossHeader)
			for _, r := range rows {
				b.WriteString(r + "\n")
			}
			b.WriteString("\nA lapse: a primary leader answers that it no longer is one and, until the next primary-leader answer, " +
				"nobody is (each end known to a poll interval; a lapse shorter than a poll can escape the polls, not groupd's " +
				"leader-stop events, counted from the lab's history).\n\n")
			continue
		}
		b.WriteString("| implementation | rounds | overlap ms, p50 (min–max) | rounds with overlap > 1 poll | step-down s, p50 (min–max) | takeover s, p50 (min–max) | gap between primary leaders ms, p50 (min–max) | term order broken | load (1 min) |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range rows {
			b.WriteString(r + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString(exclGapTable(rounds))
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
	var overlap, stepdown, takeover, gaps []float64
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
		if g, _ := exclGap(r); g != nil {
			gaps = append(gaps, *g)
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
	gap := exclCell(gaps, fms)
	if len(gaps) > 0 && len(gaps) < len(rs) {
		gap += fmt.Sprintf("; in %d of %d", len(gaps), len(rs))
	}
	return fmt.Sprintf("| %s | %s | %s | %d of %d | %s | %s | %s | %s | %.2f–%.2f |",
		peer, rounds, exclCell(overlap, fms), withOverlap, len(rs), sd, to, gap, terms, lo, hi)
}

// exclGapTable is the gap between primary leaders (gap_ms) of every
// round that has one, per implementation and fault and over all its
// faults: the least, the median and the most. The least is the figure
// that matters: the design holds successive primary leaders at least
// LeaseMargin apart (docs/design.md §8). "" when no round has a gap.
func exclGapTable(rounds []ExclRound) string {
	var b strings.Builder
	poll, fromRuns := 0.0, 0
	for _, peer := range exclPeers {
		var all []float64
		var rows []string
		for _, fault := range exclAllFaults {
			var gaps []float64
			n := 0
			for _, r := range rounds {
				if r.Peer != peer || r.Fault != fault {
					continue
				}
				n++
				if g, runs := exclGap(r); g != nil {
					gaps = append(gaps, *g)
					poll = max(poll, r.PollMS)
					if runs {
						fromRuns++
					}
				}
			}
			if len(gaps) == 0 {
				continue
			}
			all = append(all, gaps...)
			rows = append(rows, fmt.Sprintf("| %s | %s | %d of %d | **%.0f** | %.0f | %.0f |", peer, fault, len(gaps), n,
				slices.Min(gaps), medianOf(gaps), slices.Max(gaps)))
		}
		if len(all) == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("**The least time between one primary leader's last answer and the next one's first** (gap_ms: from the old " +
				"leader's last primary-leader answer to another node's first, in rounds where the old leader stepped down or went " +
				"silent and another took over)\n\n")
			b.WriteString("| implementation | fault | rounds with a gap | least gap ms | p50 ms | most ms |\n")
			b.WriteString("|---|---|---|---|---|---|\n")
		}
		for _, r := range rows {
			b.WriteString(r + "\n")
		}
		fmt.Fprintf(&b, "| %s | **all faults** | %d | **%.0f** | %.0f | %.0f |\n", peer, len(all), slices.Min(all), medianOf(all), slices.Max(all))
	}
	if b.Len() == 0 {
		return ""
	}
	fmt.Fprintf(&b, "\nResolution ±%.0f ms at each end: both ends are the arrival of a poll's answer, and polls come every %.0f ms, "+
		"so a node's change lies up to one poll interval from the answer that shows it (the figure can exceed the real gap by up "+
		"to two intervals, and fall short of it by the answers' latency). A negative gap would be an overlap.", poll, poll)
	if fromRuns > 0 {
		fmt.Fprintf(&b, " %d of these rounds were recorded without gap_ms: their gap is read back from their recorded runs.", fromRuns)
	}
	b.WriteString("\n\n")
	return b.String()
}

// exclGap is a round's gap_ms, or for a round recorded before gap_ms
// was, the one its runs give (fromRuns).
func exclGap(r ExclRound) (gap *float64, fromRuns bool) {
	if r.GapMS != nil {
		return r.GapMS, false
	}
	if g := exclGapFromRuns(r); g != nil {
		return g, true
	}
	return nil, false
}

// exclLossHeader heads the loss fault's table.
const exclLossHeader = "| implementation | rounds | loss, live nodes | lasted s | lapses per round | **lapses a minute**, all rounds | " +
	"longest lapse ms | leader-stop events a minute (history) | overlap ms, p50 (min–max) | term order broken | load (1 min) |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|\n"

// exclLossRow is a row of the loss fault's table: the lapses of every
// round, and their rate over all the rounds' loss (the sum of the lapses
// over the sum of the minutes).
func exclLossRow(peer string, rs []ExclRound) string {
	var overlap, lasted []float64
	var per []string
	lapses, stops, minutes, stopMinutes, longest := 0, 0, 0.0, 0.0, 0.0
	unsettled, broken, withOverlap := 0, 0, 0
	what := ""
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		overlap = append(overlap, r.OverlapMS)
		if r.OverlapMS > r.PollMS {
			withOverlap++
		}
		if !r.Settled {
			unsettled++
		}
		if r.TermViolations > 0 {
			broken++
		}
		lo, hi = min(lo, r.Load[0]), max(hi, r.Load[0])
		f := r.Loss
		if f == nil {
			per = append(per, "?")
			continue
		}
		what = fmt.Sprintf("%g %%, %s", f.LossPct, joinInts(f.Live))
		lasted = append(lasted, f.LossS)
		per = append(per, strconv.Itoa(f.Lapses))
		lapses += f.Lapses
		minutes += f.LossS / 60
		longest = max(longest, f.LongestLapseMS)
		if f.LeaderStops != nil {
			stops += *f.LeaderStops
			stopMinutes += f.LossS / 60
		}
	}
	rate, stopRate := "—", "—"
	if minutes > 0 {
		rate = fmt.Sprintf("**%.2f** (%d in %.1f min)", float64(lapses)/minutes, lapses, minutes)
	}
	if stopMinutes > 0 {
		stopRate = fmt.Sprintf("%.2f (%d)", float64(stops)/stopMinutes, stops)
	}
	rounds := fmt.Sprint(len(rs))
	if unsettled > 0 {
		rounds += fmt.Sprintf(" (%d not settled)", unsettled)
	}
	ov := exclCell(overlap, fms)
	if withOverlap > 0 {
		ov += fmt.Sprintf("; more than a poll in %d", withOverlap)
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %.0f | %s | %s | %d of %d | %.2f–%.2f |",
		peer, rounds, what, exclCell(lasted, func(v float64) string { return fmt.Sprintf("%.1f", v) }), strings.Join(per, ", "),
		rate, longest, stopRate, ov, broken, len(rs), lo, hi)
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
