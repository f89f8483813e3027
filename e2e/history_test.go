package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/groupd/groupd/group"
	recorded "github.com/groupd/groupd/internal/history"
	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// The history of a lab run: every node's events as `groupd watch --json`
// printed them, plus what the lab did (kills, restarts) and the check
// points a scenario placed. It is replayed in time order through
// invariant.Checker.
//
// Adapter notes (internal/invariant takes invitation.Status, the recorded
// JSON is group.Status):
//   - group.Status lists member IDs only; invitation.Status wants
//     wire.Member{ID, Priority}. Priorities are taken from each node's own
//     reports (its "priority" field), wire.DefaultPriority until seen.
//   - The checker wants Created records (S1); the JSON has none. A node is
//     taken to have created a number when its view moves to a number ending
//     in its own ID that differs from the last one it reported (and, after a
//     restart, any such number: a restarted node that comes back in a
//     number it used before would be reported as a duplicate creation).
//   - Every event's "counter" (the persisted sequence) is fed to
//     Checker.Persisted, so Created also checks that a node never reports a
//     number of its own beyond its durable counter.
//   - Crash and Restart records come from the lab, which knows when it
//     killed or started a process (a crash is recorded once the process has
//     exited, a restart just before the new process starts).

type recKind int

const (
	recEvent recKind = iota
	recCrash
	recRestart
	recCheckL1   // Checker.CheckConverged: every live node
	recCheckL2   // Checker.CheckFailover(nodes)
	recCheckSide // invariant.Converged on nodes' views (one side of a partition)
	recEnd
)

type record struct {
	t     time.Time
	seq   int // arrival order, breaks ties
	kind  recKind
	node  wire.NodeID
	ev    group.Event
	raw   []byte
	nodes []wire.NodeID
	id    int // check point id
}

type history struct {
	mu      sync.Mutex
	recs    []record
	seq     int
	checks  int
	bad     []string
	prio    map[wire.NodeID]uint8
	arrival map[wire.NodeID]time.Time
}

func newHistory() *history {
	return &history{prio: map[wire.NodeID]uint8{}, arrival: map[wire.NodeID]time.Time{}}
}

func (h *history) add(r record) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	r.seq = h.seq
	h.recs = append(h.recs, r)
	return r.seq
}

// addLine records one line of node's `groupd watch --json` output.
func (h *history) addLine(node wire.NodeID, line []byte) {
	if len(strings.TrimSpace(string(line))) == 0 {
		return
	}
	var ev group.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		h.addBad(fmt.Sprintf("node %d: unparsable event %q: %v", node, line, err))
		return
	}
	if ev.Node != node || ev.New.ID != node {
		h.addBad(fmt.Sprintf("node %d's stream carries an event of node %d (view of %d): %s", node, ev.Node, ev.New.ID, line))
		return
	}
	if ev.Time.IsZero() {
		h.addBad(fmt.Sprintf("node %d: event without a time: %s", node, line))
		return
	}
	h.mu.Lock()
	h.prio[node] = ev.New.Priority
	h.arrival[node] = time.Now()
	h.mu.Unlock()
	h.add(record{t: ev.Time, kind: recEvent, node: node, ev: ev, raw: slices.Clone(line)})
}

func (h *history) addBad(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bad = append(h.bad, s)
}

func (h *history) badLines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.bad)
}

// lastArrival is when the recorder last delivered an event of node.
func (h *history) lastArrival(node wire.NodeID) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.arrival[node]
}

func (h *history) crash(t time.Time, node wire.NodeID) {
	h.add(record{t: t, kind: recCrash, node: node})
}

func (h *history) restart(t time.Time, node wire.NodeID) {
	h.add(record{t: t, kind: recRestart, node: node})
}

func (h *history) end(t time.Time) { h.add(record{t: t, kind: recEnd}) }

// mark places a check point at t and returns its id.
func (h *history) mark(kind recKind, t time.Time, nodes []int) int {
	ids := make([]wire.NodeID, len(nodes))
	for i, n := range nodes {
		ids[i] = wire.NodeID(n)
	}
	h.mu.Lock()
	h.checks++
	id := h.checks
	h.mu.Unlock()
	h.add(record{t: t, kind: kind, nodes: ids, id: id})
	return id
}

// sorted returns a copy of the records in time order.
func (h *history) sorted() []record {
	h.mu.Lock()
	rs := slices.Clone(h.recs)
	h.mu.Unlock()
	slices.SortStableFunc(rs, func(a, b record) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	return rs
}

// toInv converts a recorded view to the checker's type (see the adapter
// notes above).
func (h *history) toInv(s group.Status) invitation.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	return recorded.ToStatus(s, h.prio)
}

// replayResult is what a replay of the history found.
type replayResult struct {
	safety  []invariant.Violation         // S1–S4, over the whole history
	checks  map[int][]invariant.Violation // check point id -> L1/L2 violations (nil: it held)
	events  int
	created int
}

// replay feeds the history, up to until, through a fresh
// invariant.Checker, evaluating the check points on the way.
func (h *history) replay(until time.Time) replayResult {
	res := replayResult{checks: map[int][]invariant.Violation{}}
	c := invariant.New()
	last := map[wire.NodeID]wire.GroupNumber{}
	durable := map[wire.NodeID]uint64{}
	for _, r := range h.sorted() {
		if r.t.After(until) || r.kind == recEnd {
			break
		}
		switch r.kind {
		case recEvent:
			res.events++
			st := h.toInv(r.ev.New)
			if st.Counter > durable[r.node] {
				durable[r.node] = st.Counter
				c.Persisted(r.t, r.node, st.Counter)
			}
			if g := st.Group; !g.IsZero() && g.ID == r.node && g != last[r.node] {
				res.created++
				res.safety = append(res.safety, c.Created(invariant.Creation{Time: r.t, Node: r.node, Group: g})...)
			}
			last[r.node] = st.Group
			res.safety = append(res.safety, c.Observe(invariant.Observation{Time: r.t, Node: r.node, Status: st, Alive: true})...)
		case recCrash:
			c.Crash(r.t, r.node)
		case recRestart:
			c.Restart(r.t, r.node)
			last[r.node] = wire.GroupNumber{}
		case recCheckL1:
			res.checks[r.id] = c.CheckConverged(r.t)
		case recCheckL2:
			res.checks[r.id] = c.CheckFailover(r.t, r.nodes)
		case recCheckSide:
			live := c.Live()
			var side []invitation.Status
			var out []invariant.Violation
			for _, id := range r.nodes {
				i := slices.IndexFunc(live, func(s invitation.Status) bool { return s.ID == id })
				if i < 0 {
					out = append(out, invariant.Violation{Invariant: "L1", Time: r.t, Nodes: []wire.NodeID{id}, Detail: "node is down or has reported no view"})
					continue
				}
				side = append(side, live[i])
			}
			res.checks[r.id] = append(out, invariant.Converged(r.t, side)...)
		}
	}
	return res
}

// firstTime replays the views of the nodes and returns the first instant,
// at or after from, at which ok holds on their views (in the order of
// ids; a node without a live view makes it false).
func (h *history) firstTime(from time.Time, ids []int, ok func([]invitation.Status) bool) (time.Time, bool) {
	views := map[wire.NodeID]invitation.Status{}
	holds := func() bool {
		sts := make([]invitation.Status, 0, len(ids))
		for _, i := range ids {
			s, ok := views[wire.NodeID(i)]
			if !ok {
				return false
			}
			sts = append(sts, s)
		}
		return ok(sts)
	}
	checked := false
	for _, r := range h.sorted() {
		if !checked && r.t.After(from) {
			checked = true
			if holds() {
				return from, true
			}
		}
		switch r.kind {
		case recEvent:
			views[r.node] = h.toInv(r.ev.New)
		case recCrash:
			delete(views, r.node)
		default:
			continue
		}
		if checked && holds() {
			return r.t, true
		}
	}
	if !checked && holds() {
		return from, true
	}
	return time.Time{}, false
}

// groups returns the group numbers in node's recorded views with time in
// [from, to), in order of first appearance.
func (h *history) groups(node wire.NodeID, from, to time.Time) []wire.GroupNumber {
	var out []wire.GroupNumber
	for _, r := range h.sorted() {
		if r.kind != recEvent || r.node != node || r.t.Before(from) || !r.t.Before(to) {
			continue
		}
		if g := r.ev.New.Group; !g.IsZero() && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// writeEvents writes every recorded event, in time order, as NDJSON (the
// format `groupd timeline` reads).
func (h *history) writeEvents(path string) error {
	var b strings.Builder
	for _, r := range h.sorted() {
		if r.kind == recEvent {
			b.Write(r.raw)
			b.WriteByte('\n')
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func invariantConverged(sts []invitation.Status) []invariant.Violation {
	return invariant.Converged(time.Now(), sts)
}

func invariantFailedOver(sts []invitation.Status) []invariant.Violation {
	return invariant.FailedOver(time.Now(), sts)
}
