//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/timeline"
	"github.com/groupd/groupd/ui"
	"github.com/groupd/groupd/wire"
)

// TestUIReplay16 records a run of 16 nodes (fast profile: converge, the
// partition 1-8 | 9-16 until both sides converge, the heal until all
// converge; then kill -9 of the coordinator, 16, until the others
// converge, and its start until all converge: five quiet stretches, with
// a node down in one), replays its history.ndjson in the page
// (window.groupdUI.loadHistory, as "open a recording" does) and compares,
// at five instants spread over the run, every node's group on the page
// (view() and the topology's data-group) with package timeline's model of
// the same file. Each instant is the middle of a stretch in which no
// node's segment begins or ends within 50 ms, so that the comparison is
// not about which side of a change a millisecond falls on.
func TestUIReplay16(t *testing.T) {
	t.Parallel()
	requireFaults(t)
	browser, driver := findBrowser(t)
	l := newLab(t, 16, "fast")
	l.converge()
	time.Sleep(time.Second) // a quiet stretch to compare in
	a, b := lab.Span(1, 8), lab.Span(9, 16)
	l.partition(a, b)
	l.waitFor("side 1-8 converges", a, 30*time.Second, lab.Converged(a))
	l.waitFor("side 9-16 converges", b, 30*time.Second, lab.Converged(b))
	time.Sleep(time.Second)
	l.heal()
	l.waitFor("16 nodes converge after the heal", l.all(), 30*time.Second, lab.Converged(l.all()))
	time.Sleep(time.Second)
	l.kill(16)
	l.waitFor("nodes 1-15 converge without 16", lab.Span(1, 15), 30*time.Second, lab.Converged(lab.Span(1, 15)))
	time.Sleep(time.Second)
	l.start(16)
	l.waitFor("16 nodes converge after 16's start", l.all(), 30*time.Second, lab.Converged(l.all()))
	time.Sleep(time.Second)
	// A check mark ends the recording after the last quiet stretch (the
	// page's replay ends at the last record).
	l.checkpoint("L1", time.Now(), "16 nodes converged after 16's start")

	raw, err := os.ReadFile(filepath.Join(l.Dir(), lab.HistoryFile))
	if err != nil {
		t.Fatalf("ui: %v", err)
	}
	text := raw[:bytes.LastIndexByte(raw, '\n')+1] // whole lines only: the recorder may be writing
	events, skipped, err := timeline.ReadEvents(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("ui: %v", err)
	}
	marks, skippedMarks, err := timeline.ReadFaults(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("ui: %v", err)
	}
	t.Logf("ui: %s: %d events (%d other lines), %d marks (%d other lines)", lab.HistoryFile, len(events), skipped, len(marks), skippedMarks)
	m := timeline.Build(events, marks, time.Time{}, time.Time{})
	instants := replayInstants(t, m, events, marks)

	wd := startWebDriver(t, driver, browser)
	url := serveLoopback(t, func(...string) http.Handler { return ui.Handler() })
	wd.load("the replay page", url+ui.Prefix, "")
	var loaded struct {
		Events, Marks, Bad int
		Start, End         int64
	}
	wd.evalArgs("return window.groupdUI.loadHistory(arguments[0], arguments[1]);", []any{string(text), "run16"}, &loaded)
	t.Logf("ui: the page loaded %d events and %d marks (%d lines not understood), %s to %s",
		loaded.Events, loaded.Marks, loaded.Bad, clockMs(loaded.Start), clockMs(loaded.End))
	if loaded.Events != len(events) || loaded.Marks != len(marks) || loaded.Bad != 0 {
		t.Errorf("ui: the page read %d events, %d marks, %d bad lines; package timeline %d events, %d marks",
			loaded.Events, loaded.Marks, loaded.Bad, len(events), len(marks))
	}

	var table []string
	for k, at := range instants {
		var got struct {
			View struct {
				Replay bool `json:"replay"`
				Nodes  []struct {
					ID    int    `json:"id"`
					Group string `json:"group"`
				} `json:"nodes"`
			} `json:"view"`
			DOM map[string]string `json:"dom"`
		}
		wd.evalArgs(`window.groupdUI.seek(arguments[0]);
const dom = {};
for (const g of document.querySelectorAll('#topo g.tnode')) dom[g.dataset.id] = g.dataset.group || '';
return {view: window.groupdUI.view(), dom};`, []any{at.UnixMilli()}, &got)
		page := map[int]string{}
		for _, n := range got.View.Nodes {
			page[n.ID] = noGroup(n.Group)
		}
		var bad []string
		groups := map[string][]int{}
		for _, id := range m.Nodes {
			want := modelGroup(m, id, at)
			if want != "" {
				groups[want] = append(groups[want], int(id))
			}
			g, ok := page[int(id)]
			dom := noGroup(got.DOM[fmt.Sprint(id)])
			if !ok || g != want || dom != want {
				bad = append(bad, fmt.Sprintf("node %d: view() %q (listed: %v), topology %q, model %q", id, g, ok, dom, want))
			}
		}
		if len(got.View.Nodes) != len(m.Nodes) || !got.View.Replay {
			bad = append(bad, fmt.Sprintf("view() has %d nodes (replay: %v), the model %d", len(got.View.Nodes), got.View.Replay, len(m.Nodes)))
		}
		var desc []string
		for g, ids := range groups {
			desc = append(desc, fmt.Sprintf("%s: %s", g, list(ids)))
		}
		slices.Sort(desc)
		verdict := "16/16 match"
		if len(bad) > 0 {
			verdict = fmt.Sprintf("%d MISMATCHES", len(bad))
			t.Errorf("ui: replay at %s: the page and the model differ:\n  %s", at.Format("15:04:05.000"), strings.Join(bad, "\n  "))
		}
		table = append(table, fmt.Sprintf("  %d  %s  +%6.3fs  %-60s  %s", k+1, at.Format("15:04:05.000"), at.Sub(m.Start).Seconds(),
			strings.Join(desc, "; "), verdict))
		if len(groups) == 2 {
			saveScreenshot(t, "ui-replay16.png", wd.screenshot())
		}
	}
	t.Logf("ui: replay of 16 nodes, page vs package timeline, at %d instants:\n%s", len(instants), strings.Join(table, "\n"))
}

// replayInstants picks five instants, one in each phase of the run:
// before the partition, the split, healed, 16 killed, 16 started again;
// in each, the middle of the longest stretch without a segment boundary
// of any node (at least 100 ms, so that every boundary is 50 ms away or
// more).
func replayInstants(t *testing.T, m timeline.Model, events []schema.Event, marks []schema.Mark) []time.Time {
	t.Helper()
	var bounds []time.Time
	for _, id := range m.Nodes {
		for _, s := range m.Rows[id] {
			bounds = append(bounds, s.From, s.To)
		}
	}
	slices.SortFunc(bounds, func(a, b time.Time) int { return a.Compare(b) })
	first := events[0].Time
	end := events[len(events)-1].Time // the page's replay ends at its last record
	phases := []time.Time{first}
	for _, mk := range marks {
		first = minTime(first, mk.Time)
		end = maxTime(end, mk.Time)
		switch mk.Kind {
		case schema.KindPartition, schema.KindHeal, schema.KindKill:
			phases = append(phases, mk.Time)
		case schema.KindStart:
			if len(phases) == 4 { // the start of 16 after the kill
				phases = append(phases, mk.Time)
			}
		}
	}
	if len(phases) != 5 {
		t.Fatalf("ui: the history's marks %v do not make the five phases", marks)
	}
	phases[0] = first
	var ranges [][2]time.Time
	for k, p := range phases {
		to := end
		if k+1 < len(phases) {
			to = phases[k+1]
		}
		ranges = append(ranges, [2]time.Time{p, to})
	}
	var out []time.Time
	for _, r := range ranges {
		var best time.Time
		var longest time.Duration
		for k := 0; k+1 < len(bounds); k++ {
			from, to := maxTime(bounds[k], first), minTime(bounds[k+1], end)
			c := mid(from, to)
			if d := to.Sub(from); d > longest && !c.Before(r[0]) && c.Before(r[1]) {
				best, longest = c, d
			}
		}
		if longest < 100*time.Millisecond {
			t.Fatalf("ui: no stretch of 100 ms without a change between %s and %s (the longest: %v)",
				r[0].Format("15:04:05.000"), r[1].Format("15:04:05.000"), longest)
		}
		out = append(out, best)
	}
	return out
}

// modelGroup is node id's group in the model at t: "" when down, without
// a group or before its first event.
func modelGroup(m timeline.Model, id wire.NodeID, t time.Time) string {
	if s, ok := m.At(id, t); ok && !s.Down && !s.Group.IsZero() {
		return s.Group.String()
	}
	return ""
}

// noGroup reads the page's "no group" ("" or the zero number) as "".
func noGroup(g string) string {
	if g == "0.0" {
		return ""
	}
	return g
}

func mid(a, b time.Time) time.Time { return a.Add(b.Sub(a) / 2) }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func clockMs(ms int64) string { return time.UnixMilli(ms).Format("15:04:05.000") }
