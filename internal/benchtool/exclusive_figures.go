//go:build linux

package main

// The figures of one round of `benchtool exclusive`, computed from the
// polls' answers alone (see exclCompute). They are pinned by
// exclusive_figures_test.go and described in scripts/bench/README.md,
// "Exclusive leadership".

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// exclTerm orders leaderships: groupd's term (the group number seq.id at
// which the leadership began) or corosync's ring id (its sequence, then
// its representative), both ordered and printed as a group number. The
// zero term means "none given" (keepalived), and prints as "".
type exclTerm wire.GroupNumber

func (t exclTerm) IsZero() bool { return wire.GroupNumber(t).IsZero() }

func (t exclTerm) Less(o exclTerm) bool { return wire.GroupNumber(t).Less(wire.GroupNumber(o)) }

func (t exclTerm) String() string {
	if t.IsZero() {
		return ""
	}
	return wire.GroupNumber(t).String()
}

// exclSample is one poll of one node.
type exclSample struct {
	Node int
	// At is when the answer came, or when the poll gave up (OK false).
	At time.Time
	// OK: the node answered. An unanswered poll (a dead, frozen or
	// unreachable process, a timeout) claims nothing.
	OK bool
	// PL: the node answered that it is a primary leader, the signal a
	// user acts on.
	PL bool
	// Leader and Primary are PL's two halves where the source gives them
	// apart (groupd's /v1/status, corosync); otherwise both equal PL.
	Leader, Primary bool
	// Term is the node's term when it is a leader (zero: none given).
	Term exclTerm
	// Full: the node sees all N nodes (used to wait for a steady lab).
	Full bool
}

// state names a sample for the recorded runs.
func (s exclSample) state() string {
	switch {
	case !s.OK:
		return "no-answer"
	case s.PL:
		return "primary-leader"
	case s.Leader:
		return "leader"
	case s.Primary:
		return "primary"
	}
	return "follower"
}

// exclSpan is a stretch of time during which two or more nodes answered
// primary leader, in seconds from the fault, and which nodes did.
type exclSpan struct {
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
	Nodes []int   `json:"nodes"`
}

// exclFigures are one round's figures.
type exclFigures struct {
	// OverlapMS is the total time, in ms, during which two or more nodes
	// held a primary-leader answer (each answer holds for one poll
	// interval from its arrival, or until that node's next poll ended if
	// sooner), over the whole observed window.
	OverlapMS float64 `json:"overlap_ms"`
	// Spans are the overlapping stretches (the first exclMaxSpans;
	// NumSpans counts them all); stretches less than exclRunGap polls
	// apart are one span.
	Spans    []exclSpan `json:"overlap_spans,omitempty"`
	NumSpans int        `json:"overlap_span_count"`
	// StepDownS: from the fault to the old leader's last primary-leader
	// answer before it first answered anything else (or before it went
	// silent for good); 0 if it gave no such answer after the fault.
	// Nil with Kept: it still answered primary leader at the window's end
	// and never answered otherwise after the fault.
	StepDownS *float64 `json:"stepdown_s"`
	Kept      bool     `json:"kept,omitempty"`
	// TakeoverS: from the fault to the first primary-leader answer of
	// another node; nil if none came in the window. NewLeader is it.
	TakeoverS *float64 `json:"takeover_s"`
	NewLeader int      `json:"new_leader,omitempty"`
	// GapMS is the time between primary leaders, in ms: from the old
	// leader's last primary-leader answer (the answer's arrival, before
	// the fault when it gave none after it: a freeze, a kill) to the
	// first primary-leader answer of another node (TakeoverS). Nil when
	// the old leader kept leading or nobody took over. The design holds
	// successive primary leaders LeaseMargin apart (docs/design.md §8):
	// this is the figure that checks it, each end known to a poll
	// interval. Negative would be an overlap. OldLastPLS is the old
	// leader's answer it counts from, in seconds from the fault.
	GapMS      *float64 `json:"gap_ms,omitempty"`
	OldLastPLS *float64 `json:"old_last_pl_s,omitempty"`
	// Terms are the distinct terms of primary-leader answers, in the
	// order they were first seen ("TERM@NODE"); TermViolations counts the
	// primary-leader answers whose term is lower than one already seen
	// (by arrival time) in the window; FirstViolation describes the first.
	Terms          []string `json:"terms,omitempty"`
	TermViolations int      `json:"term_violations"`
	FirstViolation string   `json:"first_violation,omitempty"`
	// FirstViolationS and LastViolationS: when the first and the last
	// violating answers came, from the fault.
	FirstViolationS *float64 `json:"first_violation_s,omitempty"`
	LastViolationS  *float64 `json:"last_violation_s,omitempty"`
}

// exclMaxSpans bounds the spans kept in a round's record.
const exclMaxSpans = 20

// exclCompute computes the figures of one round from its samples: the
// polls of every node, fault the instant just before the fault was
// applied, leader the node that was the only primary leader before it,
// poll the poll interval, and [from, to) the observed window (samples
// outside it are ignored).
func exclCompute(samples []exclSample, fault time.Time, leader int, poll time.Duration, from, to time.Time) exclFigures {
	var f exclFigures
	byNode := map[int][]exclSample{}
	var in []exclSample
	for _, s := range samples {
		if s.At.Before(from) || !s.At.Before(to) {
			continue
		}
		byNode[s.Node] = append(byNode[s.Node], s)
		in = append(in, s)
	}
	for _, ss := range byNode {
		sort.SliceStable(ss, func(a, b int) bool { return ss[a].At.Before(ss[b].At) })
	}
	rel := func(t time.Time) float64 { return secs(t.Sub(fault)) }
	f.overlap(byNode, poll, to, rel)
	oldLast := f.stepDown(byNode[leader], fault, rel)
	in = sortedSamples(in)
	// Takeover: the first primary-leader answer of another node.
	var takeover time.Time
	for _, s := range in {
		if s.OK && s.PL && s.Node != leader && !s.At.Before(fault) {
			d := rel(s.At)
			f.TakeoverS, f.NewLeader, takeover = &d, s.Node, s.At
			break
		}
	}
	// The gap between primary leaders, when the old one stepped down (or
	// went silent for good) and another one followed.
	if !f.Kept && f.StepDownS != nil && f.TakeoverS != nil && !oldLast.IsZero() {
		g, l := float64(takeover.Sub(oldLast).Microseconds())/1000, rel(oldLast)
		f.GapMS, f.OldLastPLS = &g, &l
	}
	f.terms(in, rel)
	return f
}

// overlap sweeps each node's primary-leader answers as intervals (an
// answer holds for one poll, or until that node's next poll) and keeps
// the total time two or more hold, and the stretches.
func (f *exclFigures) overlap(byNode map[int][]exclSample, poll time.Duration, to time.Time, rel func(time.Time) float64) {
	var stretches []lab.Stretch
	for node, ss := range byNode {
		for k, s := range ss {
			if !s.OK || !s.PL {
				continue
			}
			end := s.At.Add(poll)
			if k+1 < len(ss) && ss[k+1].At.Before(end) {
				end = ss[k+1].At
			}
			if end.After(to) {
				end = to
			}
			stretches = append(stretches, lab.Stretch{Node: node, From: s.At, To: end})
		}
	}
	var overlap time.Duration
	var spans []exclSpan
	for _, o := range lab.Overlaps(stretches) {
		overlap += o.To.Sub(o.From)
		cur := exclSpan{FromS: rel(o.From), ToS: rel(o.To), Nodes: o.Nodes}
		// A span that begins within exclRunGap polls of the last one's
		// end continues it in the record (a late poll leaves a gap of a
		// few ms between two answers' intervals); the figure counts
		// only the overlap itself.
		if k := len(spans) - 1; k >= 0 && cur.FromS-spans[k].ToS <= exclRunGap*poll.Seconds() {
			spans[k].ToS = cur.ToS
			spans[k].Nodes = sortedInts(append(spans[k].Nodes, cur.Nodes...))
		} else {
			spans = append(spans, cur)
		}
	}
	f.OverlapMS = float64(overlap.Microseconds()) / 1000
	f.NumSpans = len(spans)
	if len(spans) > exclMaxSpans {
		spans = spans[:exclMaxSpans]
	}
	f.Spans = spans
}

// stepDown reads the old leader's answers from the fault on. It returns
// the arrival of the old leader's last primary-leader answer before it
// stepped down, including answers before the fault (zero if it gave
// none in the window): where the gap to the next primary leader begins.
func (f *exclFigures) stepDown(own []exclSample, fault time.Time, rel func(time.Time) float64) (lastPLAt time.Time) {
	var after []exclSample
	for _, s := range own {
		if !s.At.Before(fault) {
			after = append(after, s)
		} else if s.OK {
			// Before the fault: a primary-leader answer is the last one
			// so far; any other answer ends what came before it.
			lastPLAt = time.Time{}
			if s.PL {
				lastPLAt = s.At
			}
		}
	}
	var lastPL *exclSample
	steppedDown := false
	for k := range after {
		s := &after[k]
		if !s.OK {
			continue
		}
		if !s.PL {
			steppedDown = true
			break
		}
		lastPL = s
	}
	if lastPL != nil {
		lastPLAt = lastPL.At
	}
	switch {
	case steppedDown || lastPL == nil:
		d := 0.0
		if lastPL != nil {
			d = rel(lastPL.At)
		}
		f.StepDownS = &d
	case !after[len(after)-1].OK:
		// It answered primary leader, then went silent for good (killed,
		// or unreachable to the end): its last such answer.
		d := rel(lastPL.At)
		f.StepDownS = &d
	default:
		f.Kept = true
	}
	return lastPLAt
}

// terms checks the primary-leader answers' terms, by arrival: never lower
// than one seen before.
func (f *exclFigures) terms(in []exclSample, rel func(time.Time) float64) {
	var maxT exclTerm
	var maxNode int
	var maxAt time.Time
	seen := map[exclTerm]bool{}
	for _, s := range in {
		if !s.OK || !s.PL || s.Term.IsZero() {
			continue
		}
		if !seen[s.Term] {
			seen[s.Term] = true
			f.Terms = append(f.Terms, fmt.Sprintf("%s@%d", s.Term, s.Node))
		}
		if s.Term.Less(maxT) {
			f.TermViolations++
			v := rel(s.At)
			f.LastViolationS = &v
			if f.FirstViolation == "" {
				f.FirstViolationS = &v
				f.FirstViolation = fmt.Sprintf("%+.3fs: node %d answered primary leader with term %s after node %d's %s (%+.3fs)",
					rel(s.At), s.Node, s.Term, maxNode, maxT, rel(maxAt))
			}
			continue
		}
		if maxT.Less(s.Term) || maxT.IsZero() {
			maxT, maxNode, maxAt = s.Term, s.Node, s.At
		}
	}
}

// sortedSamples returns samples by arrival time (ties by node).
func sortedSamples(in []exclSample) []exclSample {
	out := slices.Clone(in)
	sort.SliceStable(out, func(a, b int) bool {
		if !out[a].At.Equal(out[b].At) {
			return out[a].At.Before(out[b].At)
		}
		return out[a].Node < out[b].Node
	})
	return out
}

// exclRun is a stretch of one node's polls with the same answer: the
// round's raw record, compact. A run ends where the answer (state or term)
// changes, or where two answers are more than exclRunGap poll intervals
// apart.
type exclRun struct {
	Node  int     `json:"node"`
	FromS float64 `json:"from_s"` // first answer, seconds from the fault
	ToS   float64 `json:"to_s"`   // last answer
	N     int     `json:"n"`      // polls in the run
	State string  `json:"state"`  // primary-leader, leader, primary, follower, no-answer
	Term  string  `json:"term,omitempty"`
}

const exclRunGap = 3

// exclRuns compresses the samples of [from, to) into runs, by node.
func exclRuns(samples []exclSample, fault time.Time, poll time.Duration, from, to time.Time) []exclRun {
	var out []exclRun
	byNode := map[int][]exclSample{}
	for _, s := range samples {
		if !s.At.Before(from) && s.At.Before(to) {
			byNode[s.Node] = append(byNode[s.Node], s)
		}
	}
	nodes := make([]int, 0, len(byNode))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		ss := sortedSamples(byNode[n])
		var cur *exclRun
		var prev time.Time
		for _, s := range ss {
			st, term := s.state(), s.Term.String()
			if cur != nil && (cur.State != st || cur.Term != term || s.At.Sub(prev) > exclRunGap*poll) {
				out = append(out, *cur)
				cur = nil
			}
			if cur == nil {
				cur = &exclRun{Node: n, FromS: secs(s.At.Sub(fault)), State: st, Term: term}
			}
			cur.ToS = secs(s.At.Sub(fault))
			cur.N++
			prev = s.At
		}
		if cur != nil {
			out = append(out, *cur)
		}
	}
	return out
}

// exclPollStat says how regularly a node was polled in a window: answered
// and unanswered polls, the median interval between two answers, and the
// longest time without one (a freeze, a dead process, a stalled host).
type exclPollStat struct {
	Answered   int     `json:"answered"`
	Unanswered int     `json:"unanswered"`
	MedianMS   float64 `json:"median_interval_ms"`
	MaxGapMS   float64 `json:"max_gap_ms"`
}

func exclPollStats(samples []exclSample, from, to time.Time) map[string]exclPollStat {
	byNode := map[int][]exclSample{}
	for _, s := range samples {
		if !s.At.Before(from) && s.At.Before(to) {
			byNode[s.Node] = append(byNode[s.Node], s)
		}
	}
	out := map[string]exclPollStat{}
	for n, ss := range byNode {
		var st exclPollStat
		var gaps []float64
		var prev time.Time
		for _, s := range sortedSamples(ss) {
			if !s.OK {
				st.Unanswered++
				continue
			}
			st.Answered++
			if !prev.IsZero() {
				gaps = append(gaps, float64(s.At.Sub(prev).Microseconds())/1000)
			}
			prev = s.At
		}
		if len(gaps) > 0 {
			st.MedianMS = medianOf(gaps)
			st.MaxGapMS = slices.Max(gaps)
		}
		out[strconv.Itoa(n)] = st
	}
	return out
}

// describeSpans writes spans for a one-line summary.
func describeSpans(f exclFigures) string {
	if f.NumSpans == 0 {
		return "no overlap"
	}
	var parts []string
	for _, s := range f.Spans {
		parts = append(parts, fmt.Sprintf("%+.2f..%+.2fs nodes %s", s.FromS, s.ToS, joinInts(s.Nodes)))
	}
	if f.NumSpans > len(f.Spans) {
		parts = append(parts, fmt.Sprintf("and %d more", f.NumSpans-len(f.Spans)))
	}
	return strings.Join(parts, "; ")
}

// exclLapse is a lapse of leadership: a stretch in which no node answered
// primary leader, begun by a primary leader's answer that it no longer
// is one (an unanswered poll claims nothing, so it begins none), in
// seconds from the fault. ToS is the next primary-leader answer of any
// node; nil when none came in the samples.
type exclLapse struct {
	Node  int      `json:"node"`
	FromS float64  `json:"from_s"`
	ToS   *float64 `json:"to_s,omitempty"`
}

// exclLapses finds the lapses that began in [from, to) (the loss), from
// every node's polls in the round's window: samples before from give
// each node's state when it began, samples after to end a lapse begun
// before it. A primary leader that hands over to another without a
// moment with none (an overlap) makes no lapse: the overlap says so.
func exclLapses(samples []exclSample, fault, from, to time.Time) []exclLapse {
	rel := func(t time.Time) float64 { return secs(t.Sub(fault)) }
	pl := map[int]bool{} // each node's last answer was primary leader
	anyPL := func() bool {
		for _, v := range pl {
			if v {
				return true
			}
		}
		return false
	}
	var out []exclLapse
	var open *exclLapse
	for _, s := range sortedSamples(samples) {
		if !s.OK {
			continue
		}
		if s.PL {
			if open != nil {
				end := rel(s.At)
				open.ToS = &end
				out = append(out, *open)
				open = nil
			}
			pl[s.Node] = true
			continue
		}
		was := pl[s.Node]
		pl[s.Node] = false
		if !was || open != nil || s.At.Before(from) || !s.At.Before(to) || anyPL() {
			continue
		}
		open = &exclLapse{Node: s.Node, FromS: rel(s.At)}
	}
	if open != nil {
		out = append(out, *open)
	}
	return out
}

// exclLossFigures are what a loss round measures besides the figures of
// every round: how often the primary leader lost its lease while a bare
// quorum lost packets. The target is at most one lapse a minute
// at 10 % loss, three nodes with one stopped (issue 33: eleven before
// the acknowledgements were asked for again).
type exclLossFigures struct {
	LossPct float64 `json:"loss_pct"`
	// Live are the nodes left running, a bare quorum; Stopped were
	// killed before the loss and restarted after the round.
	Live    []int `json:"live"`
	Stopped []int `json:"stopped"`
	// LossS is how long the loss lasted, from its start (the fault) to
	// the start of the heal.
	LossS float64 `json:"loss_s"`
	// Lapses counts the lapses (exclLapses) that began during the loss,
	// LapsesPerMin per minute of loss; LongestLapseMS is the longest
	// that ended in the window (each end known to a poll interval).
	Lapses         int         `json:"lapses"`
	LapsesPerMin   float64     `json:"lapses_per_min"`
	LongestLapseMS float64     `json:"longest_lapse_ms"`
	List           []exclLapse `json:"lapse_list,omitempty"` // the first exclMaxSpans
	// LeaderStops (groupd) counts the leader-stop events of every node
	// with a time in the loss, from the lab's recorded history: a lapse
	// shorter than a poll interval escapes the polls, not the history.
	LeaderStops       *int     `json:"leader_stops,omitempty"`
	LeaderStopsPerMin *float64 `json:"leader_stops_per_min,omitempty"`
}

// exclLossCompute counts the lapses of a loss that lasted [from, to),
// from the round's samples.
func exclLossCompute(samples []exclSample, fault, from, to time.Time) exclLossFigures {
	lapses := exclLapses(samples, fault, from, to)
	f := exclLossFigures{LossS: secs(to.Sub(from)), Lapses: len(lapses)}
	if f.LossS > 0 {
		f.LapsesPerMin = float64(f.Lapses) * 60 / f.LossS
	}
	for _, l := range lapses {
		if l.ToS != nil {
			f.LongestLapseMS = max(f.LongestLapseMS, math.Round((*l.ToS-l.FromS)*1e6)/1e3)
		}
	}
	f.List = lapses[:min(len(lapses), exclMaxSpans)]
	return f
}

// exclLeaderStops counts the leader-stop events whose view was taken in
// [from, to) (New.Time; the event's Time when that is missing). Not the
// event's Time: a stop because a lease ran out is stamped with the end
// of the lease in the node's last published view, and a lease renewed
// without a change of view leaves that end behind (group/publish.go,
// leadership): a lapse 23 s into a loss was stamped a second before the
// loss began. The cost: a lease that ran out just before the loss ended
// but that the node's loop saw only after it is not counted here (the
// polls, which read the lease when they ask, count it).
func exclLeaderStops(events []schema.Event, from, to time.Time) int {
	n := 0
	for _, ev := range events {
		at := ev.New.Time
		if at.IsZero() {
			at = ev.Time
		}
		if ev.Reason == schema.ReasonLeaderStop && !at.Before(from) && at.Before(to) {
			n++
		}
	}
	return n
}

// exclGapFromRuns is gap_ms read back from a round's recorded runs, for
// results written before gap_ms was (2026-11-26, the lease before its
// margin): a run's from_s and to_s are its first and last answers, so
// the old leader's last primary-leader answer before its first other
// answer after the fault, and the takeover, are where exclCompute finds
// them. Nil where exclCompute gives none.
func exclGapFromRuns(r ExclRound) *float64 {
	if r.Kept || r.StepDownS == nil || r.TakeoverS == nil {
		return nil
	}
	var own []exclRun
	for _, x := range r.Runs {
		if x.Node == r.LeaderBefore {
			own = append(own, x)
		}
	}
	sort.SliceStable(own, func(a, b int) bool { return own[a].FromS < own[b].FromS })
	down := math.Inf(1)
	for _, x := range own {
		if x.FromS >= 0 && x.State != "primary-leader" && x.State != "no-answer" {
			down = x.FromS
			break
		}
	}
	last, ok := math.Inf(-1), false
	for _, x := range own {
		if x.State == "primary-leader" && x.ToS < down {
			last, ok = max(last, x.ToS), true
		}
	}
	if !ok {
		return nil
	}
	g := math.Round((*r.TakeoverS-last)*1e6) / 1e3
	return &g
}
