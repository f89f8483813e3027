// Package history replays a recorded run of real groupd daemons through the
// invariant checker (internal/invariant). It is the one place that turns a
// recorded history into checks, shared by the network lab (internal/lab),
// the end-to-end tests (e2e), `internal/cmd/checkhistory` and the
// experiments of scripts/netem.
//
// A history is two kinds of record, read from NDJSON where both kinds may
// share one file (the lab's RUN/history.ndjson) or come from two
// (scripts/netem's events.ndjson and faults.ndjson):
//
//   - events: what `groupd watch --json` (GET /v1/events) printed, one
//     schema.Event per line, each a node's own view;
//   - marks: what the lab did and where it wants a check, one schema.Mark per line
//     ({"time","kind","spec"}, the faults.ndjson format that `groupd
//     timeline --faults` draws).
//
// Adapter rules (the checker takes invitation.Status, the JSON is
// schema.Status):
//
//   - A view's members carry the priorities the node knew them by
//     (schema.Status.MemberPriorities, member_priorities in the JSON); a
//     view recorded without them (an older daemon) takes each member's
//     priority from what that member last reported about itself
//     (MemberPriority). Rank is (priority, id) as everywhere else.
//   - A "snapshot" event (the first line of every event stream) restates the
//     view: only the first of an incarnation is used. A later one (the
//     recorder reconnected) may be older than an event stamped just before
//     it, so it could only bring a stale view back.
//   - Incarnations: a node's first event with a new incarnation is a Crash
//     (if the checker still had it alive) and a Restart just before it.
//     Events of an older incarnation, or of a node marked down, are stale
//     and skipped.
//   - Marks: "kill", "stop" and "restart" are a Crash at their time (the
//     process is going away; what it says after that is not checked);
//     "start" is a Restart at its time and forgets the node's incarnation
//     (a wiped data dir starts again at 1); "heal" starts a quiet period;
//     "quiet" (chaos) and "check" are check points; "end" ends the replay.
//     Other kinds (partition, oneway, loss, delay, wipe, restore) are kept for the
//     record.
//   - The checker wants Created records (S1); the JSON has none. A node is
//     taken to have created a number when its view moves to a number ending
//     in its own ID that differs from the last one it reported (after a
//     restart, any such number).
//   - Every event's "counter" (the persisted sequence) is fed to
//     Checker.Persisted, so S1 also checks that a node never reports a
//     number of its own above its durable counter.
//
// Check points ("check" marks; spec "L1", "L1 1,2" or "L2 1-4"):
//
//   - "L1": Checker.CheckConverged, every live node converged (L1) — placed
//     at heal + T_heal (+ slack). For each, the replay also measures how
//     long after the last "heal" the views first converged for good.
//   - "L1 LIST": the listed nodes converged among themselves
//     (invariant.Converged on their views): one side of a partition.
//   - "L2 LIST": Checker.CheckFailover for the listed survivors — placed at
//     crash + T_failover (+ slack).
package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

type kind int

const (
	kEvent kind = iota
	kCrash
	kLost // a node's state file was wiped or restored from an older copy
	kStart
	kHeal
	kCheck
	kEnd
	kNote // a mark with no effect on the replay
)

type record struct {
	t     time.Time
	seq   int // arrival order: breaks ties, and is a check point's ID
	kind  kind
	node  wire.NodeID
	nodes []wire.NodeID // crash, start: the nodes; check: nil for every live node
	ev    schema.Event
	mark  schema.Mark
	check string // "L1" or "L2"
	// backdated: an event stamped before an event its node sent earlier
	// (sorted: set by History.sorted). The daemon stamps a leader-stop
	// after a lapse with the lease's end, a moment in the past, while the
	// view it carries is the one it has when it sends it.
	backdated bool
}

// History is a recorded run. Records may be added in any order and from
// several goroutines; every query sorts them by time.
type History struct {
	mu      sync.Mutex
	recs    []record
	prio    map[wire.NodeID]uint8
	arrival map[wire.NodeID]time.Time
	bad     []string
}

// New returns an empty history.
func New() *History {
	return &History{prio: map[wire.NodeID]uint8{}, arrival: map[wire.NodeID]time.Time{}}
}

func (h *History) add(r record) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.seq = len(h.recs) + 1
	h.recs = append(h.recs, r)
	return r.seq
}

// AddEvent records one event: a node's own view. An event without a time,
// or carrying another node's view, is refused.
func (h *History) AddEvent(ev schema.Event) error {
	if ev.Time.IsZero() || ev.Node == 0 || ev.New.ID != ev.Node {
		return fmt.Errorf("history: event without a time, or not the node's own view: %s", ev)
	}
	h.mu.Lock()
	h.prio[ev.Node] = ev.New.Priority
	h.arrival[ev.Node] = time.Now()
	h.mu.Unlock()
	h.add(record{t: ev.Time, kind: kEvent, node: ev.Node, ev: ev})
	return nil
}

// AddLine records one line of node's event stream (`groupd watch --json`).
// Blank lines are ignored; a line that is not one of node's events is
// refused and kept in Bad.
func (h *History) AddLine(node wire.NodeID, line []byte) error {
	if blank(line) {
		return nil
	}
	var ev schema.Event
	err := json.Unmarshal(line, &ev)
	if err == nil && ev.Node != node {
		err = fmt.Errorf("the stream of node %d carries an event of node %d", node, ev.Node)
	}
	if err == nil {
		err = h.AddEvent(ev)
	}
	if err != nil {
		err = fmt.Errorf("history: node %d: %q: %w", node, line, err)
		h.mu.Lock()
		h.bad = append(h.bad, err.Error())
		h.mu.Unlock()
	}
	return err
}

// blank reports whether a line holds nothing but white space.
func blank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

// AddMark records a mark and returns its ID (a check point's ID in
// Result.Checks). A mark whose spec does not fit its kind is refused.
func (h *History) AddMark(m schema.Mark) (int, error) {
	r, err := markRecord(m)
	if err != nil {
		return 0, err
	}
	return h.add(r), nil
}

func markRecord(m schema.Mark) (record, error) {
	r := record{t: m.Time, mark: m, kind: kNote}
	if m.Time.IsZero() || m.Kind == "" {
		return r, fmt.Errorf("history: mark without a time or a kind: %+v", m)
	}
	var err error
	switch m.Kind {
	case schema.KindKill, schema.KindStop, schema.KindRestart: // schema.Mark.Down
		r.kind = kCrash
		r.nodes, err = schema.ParseIDs(m.Spec)
	case schema.KindStart:
		r.kind = kStart
		r.nodes, err = schema.ParseIDs(m.Spec)
	case schema.KindWipe, schema.KindRestore:
		r.kind = kLost
		r.nodes, err = schema.ParseIDs(m.Spec)
	case schema.KindHeal:
		r.kind = kHeal
	case schema.KindQuiet:
		r.kind, r.check = kCheck, "L1"
	case schema.KindCheck:
		r.kind = kCheck
		what, list, _ := strings.Cut(strings.TrimSpace(m.Spec), " ")
		switch {
		case what != "L1" && what != "L2":
			err = errors.New("want L1 or L2")
		case list != "":
			r.nodes, err = schema.ParseIDs(list)
		case what == "L2":
			err = errors.New("L2 needs the survivors")
		}
		r.check = what
	case schema.KindEnd:
		r.kind = kEnd
	}
	if err != nil {
		return r, fmt.Errorf("history: mark %s %q: %w", m.Kind, m.Spec, err)
	}
	return r, nil
}

// Bad lists the lines Read and AddLine could not use.
func (h *History) Bad() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.bad)
}

// LastArrival is when an event of node was last added (zero if never): the
// lab waits on it to know that its recorder follows a new process.
func (h *History) LastArrival(node wire.NodeID) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.arrival[node]
}

// sorted returns the records in time order (ties in arrival order) and the
// priorities known now.
func (h *History) sorted() ([]record, map[wire.NodeID]uint8) {
	h.mu.Lock()
	rs := slices.Clone(h.recs)
	prio := make(map[wire.NodeID]uint8, len(h.prio))
	for k, v := range h.prio {
		prio[k] = v
	}
	h.mu.Unlock()
	// A node's events arrive in the order it sent them (one stream per
	// node); one stamped before an earlier one of its node is backdated.
	latest := map[wire.NodeID]time.Time{}
	for i := range rs {
		if r := &rs[i]; r.kind == kEvent {
			if r.t.Before(latest[r.node]) {
				r.backdated = true
			} else {
				latest[r.node] = r.t
			}
		}
	}
	slices.SortStableFunc(rs, func(a, b record) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	return rs, prio
}

// MemberPriority is the priority given to member id of a recorded view
// that does not carry its members' priorities (a daemon older than
// member_priorities): the priority id last reported about itself
// (wire.DefaultPriority before that).
func MemberPriority(prio map[wire.NodeID]uint8, id wire.NodeID) uint8 {
	if p, ok := prio[id]; ok {
		return p
	}
	return wire.DefaultPriority
}

// ToStatus converts a recorded view (schema.Status) to the checker's type:
// the one such conversion, used by the replay, the lab's conditions and
// the agent's tests. Each member gets the priority the view gives it, or
// (for a view without member priorities) the one from MemberPriority;
// invariant ranks nodes by (priority, id) on the result. Leadership
// (leader, term, lease) is not carried over: the replay reads it from
// leader-start and leader-stop events (LP1).
func ToStatus(s schema.Status, prio map[wire.NodeID]uint8) invitation.Status {
	own := len(s.MemberPriorities) == len(s.Members)
	ms := make([]wire.Member, len(s.Members))
	for i, id := range s.Members {
		p := MemberPriority(prio, id)
		if own {
			p = s.MemberPriorities[i]
		}
		ms[i] = wire.Member{ID: id, Priority: p}
	}
	return invitation.Status{
		ID: s.ID, Priority: s.Priority, State: s.State, Group: s.Group, Members: ms,
		Version: s.Version, Since: s.Since, Counter: s.Counter, PersistError: s.PersistError,
	}
}

// Views converts polled statuses for invariant's predicates (see ToStatus;
// for views without member priorities, each member's own status gives its
// priority).
func Views(sts []schema.Status) []invitation.Status {
	prio := make(map[wire.NodeID]uint8, len(sts))
	for _, s := range sts {
		prio[s.ID] = s.Priority
	}
	out := make([]invitation.Status, len(sts))
	for i, s := range sts {
		out[i] = ToStatus(s, prio)
	}
	return out
}

// Events returns the recorded events with time in [from, to), in time
// order (zero to: no end).
func (h *History) Events(from, to time.Time) []schema.Event {
	recs, _ := h.sorted()
	var out []schema.Event
	for _, r := range recs {
		if r.kind == kEvent && !r.t.Before(from) && (to.IsZero() || r.t.Before(to)) {
			out = append(out, r.ev)
		}
	}
	return out
}

// FirstEvent returns the first event at or after from, of a node of ids
// (of any node when ids is nil), that is not a snapshot: the first
// reaction to a fault.
func (h *History) FirstEvent(from time.Time, ids []wire.NodeID) (schema.Event, bool) {
	for _, ev := range h.Events(from, time.Time{}) {
		if ev.Reason != schema.ReasonSnapshot && (ids == nil || slices.Contains(ids, ev.Node)) {
			return ev, true
		}
	}
	return schema.Event{}, false
}

// Groups returns the group numbers in node's recorded views with time in
// [from, to), in order of first appearance.
func (h *History) Groups(node wire.NodeID, from, to time.Time) []wire.GroupNumber {
	var out []wire.GroupNumber
	for _, ev := range h.Events(from, to) {
		if g := ev.New.Group; ev.Node == node && !g.IsZero() && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// Marks returns the marks, in time order.
func (h *History) Marks() []schema.Mark {
	recs, _ := h.sorted()
	var out []schema.Mark
	for _, r := range recs {
		if r.kind != kEvent {
			out = append(out, r.mark)
		}
	}
	return out
}
