// Package history replays a recorded run of real groupd daemons through the
// invariant checker (internal/invariant): every node's events as `groupd
// watch --json` printed them (events.ndjson, one group.Event per line) and
// what the lab did (faults.ndjson, scripts/netem's format). It is the
// adapter between the JSON the daemons emit and the checker's types, shared
// by `internal/cmd/checkhistory` (used by `scripts/netem/experiment.sh
// chaos`) and the Go lab tests.
//
// Adapter rules (the checker takes invitation.Status, the JSON is
// group.Status):
//
//   - Member lists carry IDs only; priorities are taken from each node's
//     own reports (its "priority"), wire.DefaultPriority until seen.
//   - A "snapshot" event (the first line of every `groupd watch` stream)
//     restates the view: only the first of an incarnation is used. A later
//     one (the recorder reconnected) may be older than an event stamped
//     just before it, so it could only bring a stale view back.
//   - Restarts are inferred from the "incarnation" of the events: a node's
//     first event with a new incarnation is a Crash (if the checker still
//     had it alive) and a Restart just before it. Events of an older
//     incarnation arriving late are stale and skipped. A "kill" fault is a
//     Crash at its time (the lab records it after kill -9 returned).
//   - The checker wants Created records (S1); the JSON has none. A node is
//     taken to have created a number when its view moves to a number ending
//     in its own ID that differs from the last one it reported (after a
//     restart, any such number).
//   - Every event's "counter" (the persisted sequence) is fed to
//     Checker.Persisted, so S1 also checks that a node never reports a
//     number of its own above its durable counter.
//   - A "heal" fault starts a quiet period; a "quiet" fault (written by the
//     chaos scenario once `lab.sh wait` saw every node converged) is an L1
//     check point: Checker.CheckConverged at its time. For each check point
//     the replay also measures how long after the heal the recorded views
//     first converged.
package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

type kind int

const (
	kEvent kind = iota
	kCrash
	kRestart
	kHeal
	kCheck
)

type record struct {
	t     time.Time
	seq   int // arrival order, breaks ties
	kind  kind
	node  wire.NodeID
	ev    group.Event
	label string
}

// History is a recorded run. Add records in any order; Replay sorts them by
// time. Not safe for concurrent use.
type History struct {
	recs []record
	prio map[wire.NodeID]uint8
	bad  []string
}

// New returns an empty history.
func New() *History { return &History{prio: map[wire.NodeID]uint8{}} }

func (h *History) add(r record) {
	r.seq = len(h.recs)
	h.recs = append(h.recs, r)
}

// AddEvent records one event of node ev.Node.
func (h *History) AddEvent(ev group.Event) {
	if _, ok := h.prio[ev.New.ID]; !ok || ev.New.ID == ev.Node {
		h.prio[ev.New.ID] = ev.New.Priority
	}
	h.add(record{t: ev.Time, kind: kEvent, node: ev.Node, ev: ev})
}

// AddCrash records that node died at t (kill -9).
func (h *History) AddCrash(t time.Time, node wire.NodeID) {
	h.add(record{t: t, kind: kCrash, node: node})
}

// AddRestart records that node was started again at t. Not needed when the
// events carry incarnations (they always do); for histories that know
// better.
func (h *History) AddRestart(t time.Time, node wire.NodeID) {
	h.add(record{t: t, kind: kRestart, node: node})
}

// AddHeal records that the network was healed at t: a quiet period starts.
func (h *History) AddHeal(t time.Time) { h.add(record{t: t, kind: kHeal}) }

// AddCheck places an L1 check point at t (every live node converged).
func (h *History) AddCheck(t time.Time, label string) {
	h.add(record{t: t, kind: kCheck, label: label})
}

// Bad lists the lines ReadEvents or ReadFaults could not use.
func (h *History) Bad() []string { return slices.Clone(h.bad) }

// ReadEvents adds every event of r, one JSON group.Event per line (the
// output of `groupd watch --json`, or scripts/netem's events.ndjson). Blank
// lines are skipped; unparsable ones are kept in Bad. It returns how many
// events it added.
func (h *History) ReadEvents(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n, line := 0, 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var ev group.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			h.bad = append(h.bad, fmt.Sprintf("events line %d: %v", line, err))
			continue
		}
		if ev.Time.IsZero() || ev.Node == 0 || ev.New.ID != ev.Node {
			h.bad = append(h.bad, fmt.Sprintf("events line %d: no time, or not the node's own view", line))
			continue
		}
		h.AddEvent(ev)
		n++
	}
	return n, sc.Err()
}

// Fault is one line of faults.ndjson.
type Fault struct {
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	Spec string    `json:"spec"`
}

// ReadFaults adds the faults of r (scripts/netem's faults.ndjson) that
// matter to the checker: "kill" (a crash of node Spec), "heal" (a quiet
// period starts) and "quiet" (an L1 check point). It returns every fault
// read, in file order.
func (h *History) ReadFaults(r io.Reader) ([]Fault, error) {
	sc := bufio.NewScanner(r)
	var out []Fault
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var f Fault
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil || f.Time.IsZero() {
			h.bad = append(h.bad, fmt.Sprintf("faults line %d: unparsable: %q", line, sc.Text()))
			continue
		}
		out = append(out, f)
		switch f.Kind {
		case "kill":
			id, err := strconv.ParseUint(f.Spec, 10, 64)
			if err != nil || id == 0 {
				h.bad = append(h.bad, fmt.Sprintf("faults line %d: kill of %q", line, f.Spec))
				continue
			}
			h.AddCrash(f.Time, wire.NodeID(id))
		case "heal":
			h.AddHeal(f.Time)
		case "quiet":
			h.AddCheck(f.Time, f.Spec)
		}
	}
	return out, sc.Err()
}

// Check is the outcome of one L1 check point.
type Check struct {
	Label string
	Time  time.Time
	// Violations is empty when every live node was converged there.
	Violations []invariant.Violation
	// Heal is when the quiet period started (the last "heal" before the
	// check point; zero if none).
	Heal time.Time
	// ConvergedAfter is how long after Heal the recorded views showed
	// every live node converged for good: the start of the converged
	// stretch that lasts until the check point (0 if it started before
	// the heal; -1 if the views are not converged at the check point).
	ConvergedAfter time.Duration
}

// Result is what a replay found.
type Result struct {
	Events   int // events replayed
	Stale    int // events of a dead incarnation, skipped
	Restated int // snapshots of an incarnation already seen, skipped
	Nodes    int
	Created  int // group numbers created (as inferred)
	Restarts int // restarts inferred from incarnations
	Crashes  int
	// Safety lists every S1–S4 violation over the whole history.
	Safety []invariant.Violation
	Checks []Check
}

// OK reports whether the history is clean: no safety violation and every
// check point held.
func (r Result) OK() bool {
	if len(r.Safety) > 0 {
		return false
	}
	for _, c := range r.Checks {
		if len(c.Violations) > 0 {
			return false
		}
	}
	return true
}

// toInv converts a recorded view to the checker's type.
func (h *History) toInv(s group.Status) invitation.Status { return ToStatus(s, h.prio) }

// ToStatus converts a recorded view (group.Status, member IDs only) to the
// checker's type, taking each member's priority from prio
// (wire.DefaultPriority when unknown).
func ToStatus(s group.Status, prio map[wire.NodeID]uint8) invitation.Status {
	ms := make([]wire.Member, len(s.Members))
	for i, id := range s.Members {
		p, ok := prio[id]
		if !ok {
			p = wire.DefaultPriority
		}
		ms[i] = wire.Member{ID: id, Priority: p}
	}
	return invitation.Status{
		ID: s.ID, Priority: s.Priority, State: s.State, Group: s.Group, Members: ms,
		Version: s.Version, Since: s.Since, Counter: s.Counter, PersistError: s.PersistError,
	}
}

// sorted returns the records in time order (ties in arrival order).
func (h *History) sorted() []record {
	rs := slices.Clone(h.recs)
	slices.SortStableFunc(rs, func(a, b record) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	return rs
}

// Replay feeds the whole history, in time order, through a fresh
// invariant.Checker and evaluates the check points on the way.
func (h *History) Replay() Result {
	var res Result
	c := invariant.New()
	last := map[wire.NodeID]wire.GroupNumber{}
	inc := map[wire.NodeID]uint64{}
	dead := map[wire.NodeID]bool{}
	nodes := map[wire.NodeID]bool{}
	var heal time.Time
	var converged time.Time // start of the current converged stretch; zero if not converged
	for _, r := range h.sorted() {
		switch r.kind {
		case kEvent:
			n := r.node
			st := r.ev.New
			nodes[n] = true
			switch prev, seen := inc[n]; {
			case seen && st.Incarnation < prev, seen && st.Incarnation == prev && dead[n]:
				res.Stale++
				continue
			case seen && st.Incarnation == prev && r.ev.Reason == group.ReasonSnapshot:
				res.Restated++
				continue
			case seen && st.Incarnation > prev:
				if !dead[n] {
					c.Crash(r.t, n)
				}
				c.Restart(r.t, n)
				res.Restarts++
				last[n] = wire.GroupNumber{}
			}
			inc[n], dead[n] = st.Incarnation, false
			res.Events++
			v := h.toInv(st)
			c.Persisted(r.t, n, v.Counter)
			if g := v.Group; !g.IsZero() && g.ID == n && g != last[n] {
				res.Created++
				res.Safety = append(res.Safety, c.Created(invariant.Creation{Time: r.t, Node: n, Group: g})...)
			}
			last[n] = v.Group
			res.Safety = append(res.Safety, c.Observe(invariant.Observation{Time: r.t, Node: n, Status: v, Alive: true})...)
		case kCrash:
			c.Crash(r.t, r.node)
			dead[r.node] = true
			res.Crashes++
		case kRestart:
			c.Restart(r.t, r.node)
			dead[r.node] = false
		case kHeal:
			heal = r.t
			continue
		case kCheck:
			ck := Check{Label: r.label, Time: r.t, Violations: c.CheckConverged(r.t), Heal: heal, ConvergedAfter: -1}
			if !converged.IsZero() && len(ck.Violations) == 0 {
				ck.ConvergedAfter = max(converged.Sub(heal), 0)
			}
			res.Checks = append(res.Checks, ck)
			continue
		}
		switch ok := allConverged(c); {
		case !ok:
			converged = time.Time{}
		case converged.IsZero():
			converged = r.t
		}
	}
	res.Nodes = len(nodes)
	return res
}

// allConverged is CheckConverged without the report: every live node has
// a view and the views are converged.
func allConverged(c *invariant.Checker) bool {
	live := c.Live()
	return len(live) == len(c.LiveIDs()) && len(live) > 0 && invariant.IsConverged(live)
}
