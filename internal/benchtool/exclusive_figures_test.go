//go:build linux

package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/schema"
)

// seg is a stretch of one node's polls in a synthetic timeline: one
// answer every 20 ms in [from, to) seconds from the fault.
type seg struct {
	node     int
	from, to float64
	state    string // "PL", "follower", "leader" (not primary), "none" (no answer)
	term     exclTerm
}

var exclT0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

const exclPoll = 20 * time.Millisecond

func at(s float64) time.Time { return exclT0.Add(time.Duration(math.Round(s * 1e9))) }

// timeline turns segments into samples, as the pollers record them.
func timeline(segs ...seg) []exclSample {
	var out []exclSample
	for _, g := range segs {
		n := int(math.Round((g.to - g.from) / exclPoll.Seconds()))
		for k := 0; k < n; k++ {
			s := exclSample{Node: g.node, At: at(g.from).Add(time.Duration(k) * exclPoll), OK: g.state != "none"}
			switch g.state {
			case "PL":
				s.PL, s.Leader, s.Primary, s.Term = true, true, true, g.term
			case "leader":
				s.Leader, s.Term = true, g.term
			case "follower":
				s.Primary = true
			}
			out = append(out, s)
		}
	}
	return out
}

func fptr(v float64) *float64 { return &v }

func TestExclCompute(t *testing.T) {
	t5 := exclTerm{Seq: 5, ID: 5}
	t7 := exclTerm{Seq: 7, ID: 4}
	t9 := exclTerm{Seq: 9, ID: 5}
	cases := []struct {
		name string
		segs []seg
		// want: overlap in ms, step-down (nil: kept), takeover (nil: none)
		overlapMS  float64
		stepDown   *float64
		kept       bool
		takeover   *float64
		newLeader  int
		violations int
		firstViol  *float64 // checked when set
		lastViol   *float64
		spans      int
		terms      []string
		// gapMS: the gap between primary leaders (nil: none).
		gapMS *float64
	}{
		{
			name: "no fault effect: the leader stays, nobody else",
			segs: []seg{{5, -1, 3, "PL", t5}, {4, -1, 3, "follower", exclTerm{}}},
			kept: true, terms: []string{"5.5@5"},
		},
		{
			name: "clean handover: the leader steps down at +1.0, node 4 takes over at +1.5",
			segs: []seg{
				{5, -1, 1.02, "PL", t5}, {5, 1.02, 3, "follower", exclTerm{}},
				{4, -1, 1.5, "follower", exclTerm{}}, {4, 1.5, 3, "PL", t7},
			},
			stepDown: fptr(1.0), takeover: fptr(1.5), newLeader: 4, terms: []string{"5.5@5", "7.4@4"},
			// From the old leader's last answer at +1.00 to node 4's first at +1.50.
			gapMS: fptr(500),
		},
		{
			name: "overlap: node 4 leads from +1.0, the old leader steps down at +3.0",
			segs: []seg{
				{5, -1, 3.02, "PL", t5}, {5, 3.02, 4, "follower", exclTerm{}},
				{4, -1, 1, "follower", exclTerm{}}, {4, 1, 4, "PL", t7},
			},
			// [1.00, 3.02): the old leader's last answer at 3.00 holds one poll interval.
			overlapMS: 2020, stepDown: fptr(3.0), takeover: fptr(1.0), newLeader: 4, spans: 1,
			// Node 5's answers from +1.0 on carry 5.5 after 7.4 was seen: 101 of them.
			violations: 101, firstViol: fptr(1.0), lastViol: fptr(3.0), terms: []string{"5.5@5", "7.4@4"},
			// Node 4 first at +1.00, node 5 last at +3.00: an overlap is a negative gap.
			gapMS: fptr(-2000),
		},
		{
			name: "kill: the leader never answers again; node 4 at +0.7",
			segs: []seg{
				{5, -1, 0, "PL", t5}, {5, 0, 3, "none", exclTerm{}},
				{4, -1, 0.7, "follower", exclTerm{}}, {4, 0.7, 3, "PL", t7},
			},
			stepDown: fptr(0), takeover: fptr(0.7), newLeader: 4, terms: []string{"5.5@5", "7.4@4"},
			// From its last answer before the kill (-0.02), not from the fault.
			gapMS: fptr(720),
		},
		{
			name: "kill with a poll in flight: its answer at +0.02 is the step-down",
			segs: []seg{
				{5, -1, 0.04, "PL", t5}, {5, 0.04, 3, "none", exclTerm{}},
				{4, -1, 0.7, "follower", exclTerm{}}, {4, 0.7, 3, "PL", t7},
			},
			stepDown: fptr(0.02), takeover: fptr(0.7), newLeader: 4, terms: []string{"5.5@5", "7.4@4"},
			gapMS: fptr(680),
		},
		{
			name: "freeze: silent for 3 s, then primary leader for 1 s after SIGCONT, then steps down",
			segs: []seg{
				{5, -1, 0, "PL", t5}, {5, 0, 3, "none", exclTerm{}}, {5, 3, 4, "PL", t5}, {5, 4, 6, "follower", exclTerm{}},
				{4, -1, 1, "follower", exclTerm{}}, {4, 1, 6, "PL", t7},
			},
			// Both from 3.00 to 4.00 (node 5's last answer 3.98 + 20 ms).
			overlapMS: 1000, stepDown: fptr(3.98), takeover: fptr(1.0), newLeader: 4, spans: 1,
			violations: 50, terms: []string{"5.5@5", "7.4@4"}, gapMS: fptr(-2980),
		},
		{
			name: "freeze, then the old leader merges the others and stays (new term): kept",
			segs: []seg{
				{5, -1, 0, "PL", t5}, {5, 0, 3, "none", exclTerm{}}, {5, 3, 6, "PL", t9},
				{4, -1, 1, "follower", exclTerm{}}, {4, 1, 3.5, "PL", t7}, {4, 3.5, 6, "follower", exclTerm{}},
			},
			overlapMS: 500, kept: true, takeover: fptr(1.0), newLeader: 4, spans: 1,
			// Node 4's answers from +3.02 to +3.48 carry 7.4 after 9.5 was seen.
			violations: 24, firstViol: fptr(3.02), lastViol: fptr(3.48), terms: []string{"5.5@5", "7.4@4", "9.5@5"},
		},
		{
			name: "a leader that is not primary is no primary leader",
			segs: []seg{
				{5, -1, 0.5, "PL", t5}, {5, 0.5, 3, "leader", t5},
				{3, -1, 1.2, "follower", exclTerm{}}, {3, 1.2, 3, "PL", t7},
			},
			stepDown: fptr(0.48), takeover: fptr(1.2), newLeader: 3, terms: []string{"5.5@5", "7.4@3"},
			gapMS: fptr(720),
		},
		{
			name: "an answer followed by silence holds one poll interval, not until the next answer",
			segs: []seg{
				{5, -1, 1, "PL", t5}, {5, 1, 2, "none", exclTerm{}}, {5, 2, 3, "follower", exclTerm{}},
				{4, 0.5, 3, "PL", t7},
			},
			// Both from 0.50 to 1.00 only.
			overlapMS: 500, stepDown: fptr(0.98), takeover: fptr(0.5), newLeader: 4, spans: 1,
			violations: 25, terms: []string{"5.5@5", "7.4@4"}, gapMS: fptr(-480),
		},
		{
			name: "three at once count once",
			segs: []seg{
				{5, -1, 2, "PL", t5}, {5, 2, 3, "follower", exclTerm{}},
				{4, 1, 3, "PL", t7}, {3, 1.5, 3, "PL", exclTerm{Seq: 8, ID: 3}},
			},
			// 5 and 4 from +1.0 to +2.0, 4 and 3 from +1.5 to +3.0: one span.
			overlapMS: 2000, stepDown: fptr(1.98), takeover: fptr(1.0), newLeader: 4, spans: 1,
			// 5.5 after 7.4 (from 1.0) and 7.4 after 8.3 (from 1.5).
			violations: 50 + 75, terms: []string{"5.5@5", "7.4@4", "8.3@3"}, gapMS: fptr(-980),
		},
		{
			name: "keepalived: no terms, two masters for the whole split",
			segs: []seg{
				{5, -1, 5, "PL", exclTerm{}},
				{3, -1, 3.6, "follower", exclTerm{}}, {3, 3.6, 5, "PL", exclTerm{}},
			},
			overlapMS: 1400, kept: true, takeover: fptr(3.6), newLeader: 3, spans: 1,
		},
		{
			name: "gap: frozen at the fault, node 4 primary at +1.10; counted from the last answer before the freeze",
			segs: []seg{
				{5, -1, 0, "PL", t5}, {5, 0, 3, "none", exclTerm{}}, {5, 3, 5, "follower", exclTerm{}},
				{4, -1, 1.1, "follower", exclTerm{}}, {4, 1.1, 5, "PL", t7},
			},
			stepDown: fptr(0), takeover: fptr(1.1), newLeader: 4, terms: []string{"5.5@5", "7.4@4"}, gapMS: fptr(1120),
		},
		{
			name: "gap at the margin: the old leader's last answer at +0.98, node 4's first at +1.10",
			segs: []seg{
				{5, -1, 1, "PL", t5}, {5, 1, 3, "follower", exclTerm{}},
				{4, -1, 1.1, "follower", exclTerm{}}, {4, 1.1, 3, "PL", t7},
			},
			stepDown: fptr(0.98), takeover: fptr(1.1), newLeader: 4, terms: []string{"5.5@5", "7.4@4"}, gapMS: fptr(120),
		},
		{
			name: "gap: unanswered polls between the last primary-leader answer and the step-down do not move its start",
			segs: []seg{
				{5, -1, 0.5, "PL", t5}, {5, 0.5, 0.6, "none", exclTerm{}}, {5, 0.6, 3, "follower", exclTerm{}},
				{4, -1, 0.8, "follower", exclTerm{}}, {4, 0.8, 3, "PL", t7},
			},
			stepDown: fptr(0.48), takeover: fptr(0.8), newLeader: 4, terms: []string{"5.5@5", "7.4@4"}, gapMS: fptr(320),
		},
		{
			name: "no gap when nobody takes over",
			segs: []seg{
				{5, -1, 0.5, "PL", t5}, {5, 0.5, 3, "follower", exclTerm{}},
				{4, -1, 3, "follower", exclTerm{}},
			},
			stepDown: fptr(0.48), terms: []string{"5.5@5"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			samples := timeline(tc.segs...)
			f := exclCompute(samples, at(0), 5, exclPoll, at(-1), at(10))
			if math.Abs(f.OverlapMS-tc.overlapMS) > 0.001 {
				t.Errorf("overlap %.3f ms, want %.3f", f.OverlapMS, tc.overlapMS)
			}
			if f.NumSpans != tc.spans {
				t.Errorf("%d overlap spans, want %d: %+v", f.NumSpans, tc.spans, f.Spans)
			}
			if f.Kept != tc.kept || !sameSecs(f.StepDownS, tc.stepDown) {
				t.Errorf("step-down %v (kept %v), want %v (kept %v)", show(f.StepDownS), f.Kept, show(tc.stepDown), tc.kept)
			}
			if !sameSecs(f.TakeoverS, tc.takeover) || f.NewLeader != tc.newLeader {
				t.Errorf("takeover %v by %d, want %v by %d", show(f.TakeoverS), f.NewLeader, show(tc.takeover), tc.newLeader)
			}
			if f.TermViolations != tc.violations {
				t.Errorf("%d term violations, want %d (first: %s)", f.TermViolations, tc.violations, f.FirstViolation)
			}
			if tc.firstViol != nil && (!sameSecs(f.FirstViolationS, tc.firstViol) || !sameSecs(f.LastViolationS, tc.lastViol)) {
				t.Errorf("violations from %v to %v, want %v to %v", show(f.FirstViolationS), show(f.LastViolationS), show(tc.firstViol), show(tc.lastViol))
			}
			if (f.TermViolations > 0) != (f.FirstViolationS != nil && f.LastViolationS != nil) {
				t.Errorf("%d violations, first at %v, last at %v", f.TermViolations, show(f.FirstViolationS), show(f.LastViolationS))
			}
			if !slices.Equal(f.Terms, tc.terms) {
				t.Errorf("terms %v, want %v", f.Terms, tc.terms)
			}
			if !sameMS(f.GapMS, tc.gapMS) {
				t.Errorf("gap %v ms, want %v", show(f.GapMS), show(tc.gapMS))
			}
			if (f.GapMS == nil) != (f.OldLastPLS == nil) {
				t.Errorf("gap %v ms counted from %v", show(f.GapMS), show(f.OldLastPLS))
			}
			// The same gap, read back from the recorded runs (older results).
			r := ExclRound{LeaderBefore: 5, exclFigures: f, Runs: exclRuns(samples, at(0), exclPoll, at(-1), at(10))}
			r.GapMS = nil
			if g := exclGapFromRuns(r); !sameMS(g, tc.gapMS) {
				t.Errorf("gap from the runs %v ms, want %v", show(g), show(tc.gapMS))
			}
		})
	}
}

// TestExclComputeWindow: samples outside [from, to) do not count, and an
// answer's interval is cut at the window's end.
func TestExclComputeWindow(t *testing.T) {
	samples := timeline(seg{5, -5, 5, "PL", exclTerm{Seq: 5, ID: 5}}, seg{4, -5, 5, "PL", exclTerm{Seq: 7, ID: 4}})
	f := exclCompute(samples, at(0), 5, exclPoll, at(-1), at(2.01))
	// From -1.00 to 2.01: the answers at 2.00 hold only 10 ms.
	if math.Abs(f.OverlapMS-3010) > 0.001 {
		t.Errorf("overlap %.3f ms, want 3010", f.OverlapMS)
	}
	if f.Spans[0].FromS != -1 || f.Spans[0].ToS != 2.01 || !slices.Equal(f.Spans[0].Nodes, []int{4, 5}) {
		t.Errorf("span %+v", f.Spans[0])
	}
}

// TestExclComputeLatePolls: answers 25 ms apart (a host that polls late)
// leave 5 ms of every 25 ms uncounted, by the definition (an answer holds
// one poll interval), but the stretch is one span.
func TestExclComputeLatePolls(t *testing.T) {
	var samples []exclSample
	for k := 0; k < 40; k++ { // 0 .. 0.975 s
		ts := at(float64(k) * 0.025)
		samples = append(samples,
			exclSample{Node: 5, At: ts, OK: true, PL: true, Leader: true, Primary: true},
			exclSample{Node: 4, At: ts.Add(time.Millisecond), OK: true, PL: true, Leader: true, Primary: true})
	}
	f := exclCompute(samples, at(0), 5, exclPoll, at(-1), at(10))
	// Each 25 ms: both hold from +1 ms to +20 ms: 19 ms, 40 times.
	if math.Abs(f.OverlapMS-760) > 0.001 || f.NumSpans != 1 || f.Spans[0].FromS != 0.001 || f.Spans[0].ToS != 0.995 {
		t.Errorf("overlap %.3f ms in %d spans %+v; want 760 ms in one span +0.001..+0.995", f.OverlapMS, f.NumSpans, f.Spans)
	}
}

func TestExclRunsAndStats(t *testing.T) {
	samples := timeline(
		seg{5, -1, 0, "PL", exclTerm{Seq: 5, ID: 5}}, seg{5, 0, 1, "none", exclTerm{}},
		seg{5, 3, 4, "follower", exclTerm{}}, // a gap of 2 s without polls: a new run
		seg{4, -1, 4, "follower", exclTerm{}},
	)
	runs := exclRuns(samples, at(0), exclPoll, at(-1), at(10))
	want := []exclRun{
		{Node: 4, FromS: -1, ToS: 3.98, N: 250, State: "primary"},
		{Node: 5, FromS: -1, ToS: -0.02, N: 50, State: "primary-leader", Term: "5.5"},
		{Node: 5, FromS: 0, ToS: 0.98, N: 50, State: "no-answer"},
		{Node: 5, FromS: 3, ToS: 3.98, N: 50, State: "primary"},
	}
	if !slices.Equal(runs, want) {
		t.Errorf("runs\n got %+v\nwant %+v", runs, want)
	}
	st := exclPollStats(samples, at(-1), at(10))
	if s := st["5"]; s.Answered != 100 || s.Unanswered != 50 || s.MedianMS != 20 || math.Abs(s.MaxGapMS-3020) > 0.001 {
		t.Errorf("node 5: %+v", s)
	}
}

func sameSecs(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return math.Abs(*a-*b) < 1e-6
}

// sameMS compares figures in ms, to a microsecond (the figures' own
// resolution).
func sameMS(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return math.Abs(*a-*b) < 1e-3
}

func show(p *float64) any {
	if p == nil {
		return "none"
	}
	return *p
}

// TestExclRow: a report row from three rounds.
func TestExclRow(t *testing.T) {
	rs := []ExclRound{
		{Fault: "partition", FaultEndS: 20, Settled: true, Load: [3]float64{1, 0, 0}, PollMS: 20,
			exclFigures: exclFigures{OverlapMS: 9000, StepDownS: fptr(10), TakeoverS: fptr(1), GapMS: fptr(-9000), Terms: []string{"5.5@5", "7.3@3"},
				TermViolations: 3, FirstViolation: "+1.000s: node 5 answered primary leader with term 5.5 after node 3's 7.3 (+1.000s)"}},
		{Fault: "partition", FaultEndS: 20, Settled: true, Load: [3]float64{2, 0, 0}, PollMS: 20,
			exclFigures: exclFigures{OverlapMS: 8000, StepDownS: fptr(21), TakeoverS: fptr(1.2), GapMS: fptr(-19800), Terms: []string{"5.5@5"},
				TermViolations: 1, FirstViolationS: fptr(20.5)}},
		{Fault: "partition", FaultEndS: 20, Load: [3]float64{1.5, 0, 0}, PollMS: 20,
			exclFigures: exclFigures{OverlapMS: 12, Kept: true, Terms: []string{"5.5@5"}}},
	}
	// 12 ms of overlap is less than a poll: not counted as a round with overlap.
	want := "| groupd | 3 (1 not settled) | 8000 (12–9000) | 2 of 3 | 10.00 (10.00–21.00); only after the heal in 1; kept leading in 1 of 3 | " +
		"1.00 (1.00–1.20); none in 1 of 3 | -19800 (-19800–-9000); in 2 of 3 | 2 of 3 (1 only after the fault ended) | 1.00–2.00 |"
	if got := exclRow("groupd", rs); got != want {
		t.Errorf("row\n got %s\nwant %s", got, want)
	}
}

// TestExclGapTable: the least, median and most gap between primary
// leaders per fault and over all faults; rounds without a gap (kept,
// nobody took over) are counted, not measured; a fault without any gap
// has no row, and rounds without any gap give no table.
func TestExclGapTable(t *testing.T) {
	round := func(fault string, gap *float64) ExclRound {
		return ExclRound{Peer: "groupd", Fault: fault, PollMS: 20, exclFigures: exclFigures{GapMS: gap}}
	}
	rs := []ExclRound{
		round("partition", fptr(340)), round("partition", fptr(180)), round("partition", nil),
		round("kill", fptr(450)), round("kill", fptr(900)),
		round("freeze", nil),
	}
	got := exclGapTable(rs)
	for _, want := range []string{
		"| groupd | partition | 2 of 3 | **180** | 180 | 340 |\n",
		"| groupd | kill | 2 of 2 | **450** | 450 | 900 |\n",
		"| groupd | **all faults** | 4 | **180** | 340 | 900 |\n",
		"Resolution ±20 ms at each end",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "freeze") {
		t.Errorf("a row for a fault without gaps:\n%s", got)
	}
	if s := exclGapTable([]ExclRound{round("freeze", nil)}); s != "" {
		t.Errorf("a table without gaps:\n%s", s)
	}
}

// TestExclLapses: the lapses of a loss that lasts [0, 60) s, on synthetic
// timelines of a bare quorum (nodes 2 and 3, node 3 leading).
func TestExclLapses(t *testing.T) {
	t3 := exclTerm{Seq: 5, ID: 3}
	type lapse struct {
		node     int
		from, to float64 // to < 0: not ended
	}
	cases := []struct {
		name    string
		segs    []seg
		want    []lapse
		longest float64 // ms
	}{
		{
			name: "no lapse",
			segs: []seg{{3, -1, 62, "PL", t3}, {2, -1, 62, "follower", exclTerm{}}},
		},
		{
			name: "two lapses: the leader is not primary for 300 ms, then for 100 ms",
			segs: []seg{
				{3, -1, 10, "PL", t3}, {3, 10, 10.3, "leader", t3}, {3, 10.3, 20, "PL", t3}, {3, 20, 20.1, "leader", t3}, {3, 20.1, 62, "PL", t3},
				{2, -1, 62, "follower", exclTerm{}},
			},
			want: []lapse{{3, 10, 10.3}, {3, 20, 20.1}}, longest: 300,
		},
		{
			name: "lapses before the loss and after it are not counted; one that begins during it is, to its end",
			segs: []seg{
				{3, -1, -0.5, "PL", t3}, {3, -0.5, -0.4, "leader", t3}, {3, -0.4, 59.9, "PL", t3}, {3, 59.9, 60.5, "leader", t3},
				{3, 60.5, 61, "PL", t3}, {3, 61, 61.2, "leader", t3}, {3, 61.2, 62, "PL", t3},
			},
			want: []lapse{{3, 59.9, 60.5}}, longest: 600,
		},
		{
			name: "unanswered polls are no lapse",
			segs: []seg{{3, -1, 5, "PL", t3}, {3, 5, 5.5, "none", exclTerm{}}, {3, 5.5, 62, "PL", t3}},
		},
		{
			name: "leadership moves to node 2 after 500 ms without a primary leader: one lapse",
			segs: []seg{
				{3, -1, 10, "PL", t3}, {3, 10, 62, "follower", exclTerm{}},
				{2, -1, 10.5, "follower", exclTerm{}}, {2, 10.5, 62, "PL", exclTerm{Seq: 7, ID: 2}},
			},
			want: []lapse{{3, 10, 10.5}}, longest: 500,
		},
		{
			name: "a handover with an overlap is no lapse",
			segs: []seg{
				{3, -1, 10.2, "PL", t3}, {3, 10.2, 62, "follower", exclTerm{}},
				{2, -1, 10, "follower", exclTerm{}}, {2, 10, 62, "PL", exclTerm{Seq: 7, ID: 2}},
			},
		},
		{
			name: "a lapse that has not ended by the window's end",
			segs: []seg{{3, -1, 50, "PL", t3}, {3, 50, 62, "leader", t3}},
			want: []lapse{{3, 50, -1}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := exclLossCompute(timeline(tc.segs...), at(0), at(0), at(60))
			var got []lapse
			for _, l := range f.List {
				to := -1.0
				if l.ToS != nil {
					to = *l.ToS
				}
				got = append(got, lapse{l.Node, l.FromS, to})
			}
			if !slices.EqualFunc(got, tc.want, func(a, b lapse) bool {
				return a.node == b.node && math.Abs(a.from-b.from) < 1e-6 && math.Abs(a.to-b.to) < 1e-6
			}) {
				t.Errorf("lapses %+v, want %+v", got, tc.want)
			}
			if f.Lapses != len(tc.want) || math.Abs(f.LapsesPerMin-float64(len(tc.want))) > 1e-9 || f.LossS != 60 {
				t.Errorf("%d lapses (%.3f a minute) in %.1f s, want %d (a minute)", f.Lapses, f.LapsesPerMin, f.LossS, len(tc.want))
			}
			if math.Abs(f.LongestLapseMS-tc.longest) > 0.001 {
				t.Errorf("longest lapse %.3f ms, want %.0f", f.LongestLapseMS, tc.longest)
			}
		})
	}
}

// TestExclLossRow: the loss table's row sums the lapses over the minutes
// of loss of every round.
func TestExclLossRow(t *testing.T) {
	round := func(lapses, stops int, lossS, longest float64, load float64) ExclRound {
		return ExclRound{Fault: "loss", Settled: true, PollMS: 20, Load: [3]float64{load, 0, 0},
			Loss: &exclLossFigures{LossPct: 10, Live: []int{2, 3}, Stopped: []int{1}, LossS: lossS, Lapses: lapses,
				LongestLapseMS: longest, LeaderStops: &stops}}
	}
	rs := []ExclRound{round(1, 1, 60, 240, 0.5), round(0, 0, 60, 0, 0.7), round(2, 3, 60, 180, 1.1)}
	want := "| groupd | 3 | 10 %, 2,3 | 60.0 (60.0–60.0) | 1, 0, 2 | **1.00** (3 in 3.0 min) | 240 | 1.33 (4) | 0 (0–0) | 0 of 3 | 0.50–1.10 |"
	if got := exclLossRow("groupd", rs); got != want {
		t.Errorf("row\n got %s\nwant %s", got, want)
	}
}

// TestExclLeaderStops: leader-stop events count by when the node saw its
// leadership end (the view's time), whatever lease end they are stamped
// with.
func TestExclLeaderStops(t *testing.T) {
	ev := func(reason string, stamp, seen float64) schema.Event {
		e := schema.Event{Time: at(stamp), Reason: reason}
		e.New.Time = at(seen)
		return e
	}
	noView := schema.Event{Time: at(30), Reason: schema.ReasonLeaderStop}
	cases := []struct {
		name   string
		events []schema.Event
		want   int
	}{
		{"none", []schema.Event{ev(schema.ReasonLeaderStart, 5, 5), ev("lease", 23, 23)}, 0},
		{"stamped with the lease's end, seen at once", []schema.Event{ev(schema.ReasonLeaderStop, 10, 10)}, 1},
		{"stamped with a stale lease end before the loss, seen during it", []schema.Event{ev(schema.ReasonLeaderStop, -1.07, 23.01)}, 1},
		// The loop saw late a lease that ran out during the loss: the
		// polls count that one, this count does not.
		{"seen only after the loss", []schema.Event{ev(schema.ReasonLeaderStop, 59.5, 60.2)}, 0},
		{"seen before the loss", []schema.Event{ev(schema.ReasonLeaderStop, -3, -2)}, 0},
		{"no view time: the event's own", []schema.Event{noView}, 1},
	}
	for _, tc := range cases {
		if got := exclLeaderStops(tc.events, at(0), at(60)); got != tc.want {
			t.Errorf("%s: %d leader-stops, want %d", tc.name, got, tc.want)
		}
	}
}
