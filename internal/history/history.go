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
//     group.Event per line, each a node's own view;
//   - marks: what the lab did and where it wants a check, one Mark per line
//     ({"time","kind","spec"}, the faults.ndjson format that `groupd
//     timeline --faults` draws).
//
// Adapter rules (the checker takes invitation.Status, the JSON is
// group.Status):
//
//   - Member lists carry IDs only; a member's priority is the one that node
//     last reported about itself (MemberPriority: the one place to change
//     once group.Status carries its members' priorities), and rank is
//     (priority, id) as everywhere else.
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
//     Other kinds (partition, oneway, loss, delay, wipe) are kept for the
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
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/internal/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// Mark kinds: the lab's own records, in the order a run meets them.
const (
	KindStart     = "start"     // a daemon was launched (spec: nodes)
	KindPartition = "partition" // spec "1,2|3,4,5"
	KindOneway    = "oneway"    // spec "1->3"
	KindLoss      = "loss"      // spec "20%" or "20% from 1,2"
	KindDelay     = "delay"     // spec "50ms±10ms" (+ " from 1,2")
	KindHeal      = "heal"      // spec "all" or "partitions"
	KindKill      = "kill"      // kill -9 (spec: nodes)
	KindStop      = "stop"      // SIGTERM (spec: nodes)
	KindRestart   = "restart"   // stop then start (spec: node)
	KindWipe      = "wipe"      // data dir removed (spec: node)
	KindQuiet     = "quiet"     // chaos: an L1 check point (spec: a label)
	KindCheck     = "check"     // a check point (spec "L1", "L1 LIST", "L2 LIST")
	KindEnd       = "end"       // the run is over; later records are its shutdown
)

// Mark is one thing the lab did, or a check point: one line of
// faults.ndjson (or of the lab's history.ndjson).
type Mark struct {
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	Spec string    `json:"spec"`
	// Label says what a check point checks, for reports.
	Label string `json:"label,omitempty"`
}

type kind int

const (
	kEvent kind = iota
	kCrash
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
	ev    group.Event
	mark  Mark
	check string // "L1" or "L2"
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
func (h *History) AddEvent(ev group.Event) error {
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
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	var ev group.Event
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

// AddMark records a mark and returns its ID (a check point's ID in
// Result.Checks). A mark whose spec does not fit its kind is refused.
func (h *History) AddMark(m Mark) (int, error) {
	r, err := markRecord(m)
	if err != nil {
		return 0, err
	}
	return h.add(r), nil
}

func markRecord(m Mark) (record, error) {
	r := record{t: m.Time, mark: m, kind: kNote}
	if m.Time.IsZero() || m.Kind == "" {
		return r, fmt.Errorf("history: mark without a time or a kind: %+v", m)
	}
	var err error
	switch m.Kind {
	case KindKill, KindStop, KindRestart:
		r.kind = kCrash
		r.nodes, err = ParseIDs(m.Spec)
	case KindStart:
		r.kind = kStart
		r.nodes, err = ParseIDs(m.Spec)
	case KindHeal:
		r.kind = kHeal
	case KindQuiet:
		r.kind, r.check = kCheck, "L1"
	case KindCheck:
		r.kind = kCheck
		what, list, _ := strings.Cut(strings.TrimSpace(m.Spec), " ")
		switch {
		case what != "L1" && what != "L2":
			err = errors.New("want L1 or L2")
		case list != "":
			r.nodes, err = ParseIDs(list)
		case what == "L2":
			err = errors.New("L2 needs the survivors")
		}
		r.check = what
	case KindEnd:
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

// Read adds every record of r: NDJSON lines that are events (they have a
// "node") or marks (they have a "kind"), in any mix. Blank lines are
// skipped; unusable ones are kept in Bad. It returns how many records it
// added.
func (h *History) Read(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n, line := 0, 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var probe struct {
			Node *wire.NodeID `json:"node"`
			Kind *string      `json:"kind"`
		}
		err := json.Unmarshal(b, &probe)
		switch {
		case err != nil:
		case probe.Node != nil:
			var ev group.Event
			if err = json.Unmarshal(b, &ev); err == nil {
				err = h.AddEvent(ev)
			}
		case probe.Kind != nil:
			var m Mark
			if err = json.Unmarshal(b, &m); err == nil {
				_, err = h.AddMark(m)
			}
		default:
			err = errors.New("neither an event (no node) nor a mark (no kind)")
		}
		if err != nil {
			h.mu.Lock()
			h.bad = append(h.bad, fmt.Sprintf("line %d: %v", line, err))
			h.mu.Unlock()
			continue
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("history: reading line %d: %w", line+1, err)
	}
	return n, nil
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
	slices.SortStableFunc(rs, func(a, b record) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	return rs, prio
}

// MemberPriority is the priority given to member id of a recorded view.
// group.Status lists its members by ID only, so it is the priority id last
// reported about itself (wire.DefaultPriority before that). This is the one
// place to change once group.Status carries its members' priorities.
func MemberPriority(prio map[wire.NodeID]uint8, id wire.NodeID) uint8 {
	if p, ok := prio[id]; ok {
		return p
	}
	return wire.DefaultPriority
}

// ToStatus converts a recorded view (group.Status) to the checker's type,
// with each member's priority from MemberPriority. invariant ranks nodes
// by (priority, id) on the result.
func ToStatus(s group.Status, prio map[wire.NodeID]uint8) invitation.Status {
	ms := make([]wire.Member, len(s.Members))
	for i, id := range s.Members {
		ms[i] = wire.Member{ID: id, Priority: MemberPriority(prio, id)}
	}
	return invitation.Status{
		ID: s.ID, Priority: s.Priority, State: s.State, Group: s.Group, Members: ms,
		Version: s.Version, Since: s.Since, Counter: s.Counter, PersistError: s.PersistError,
	}
}

// Views converts polled statuses for invariant's predicates, each member's
// priority taken from the statuses themselves (see MemberPriority).
func Views(sts []group.Status) []invitation.Status {
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

// Check is the outcome of one check point.
type Check struct {
	ID    int       // the mark's ID (AddMark)
	Label string    // the mark's label, or its spec
	Time  time.Time // where it was placed
	Kind  string    // "L1" or "L2"
	// Nodes are the nodes checked; nil for every live node.
	Nodes []wire.NodeID
	// Violations is empty when the check held.
	Violations []invariant.Violation
	// Heal is when the quiet period started (the last "heal" before the
	// check point; zero if none).
	Heal time.Time
	// ConvergedAfter is, for an L1 check of every live node, how long
	// after Heal the recorded views showed every live node converged for
	// good: the start of the converged stretch that lasts until the check
	// point (0 if it started before the heal; -1 if the views are not
	// converged at the check point, and for other checks).
	ConvergedAfter time.Duration
}

// Result is what a replay found.
type Result struct {
	Events   int // events replayed
	Stale    int // events of a dead incarnation, skipped
	Restated int // snapshots of an incarnation already seen, skipped
	Nodes    int
	Created  int // group numbers created (as inferred)
	Restarts int // restarts (start marks after a node's first events, and inferred from incarnations)
	Crashes  int // kill, stop and restart marks
	// Safety lists every S1–S4 violation over the history.
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

// Check returns the outcome of check point id, if the replay reached it.
func (r Result) Check(id int) (Check, bool) {
	for _, c := range r.Checks {
		if c.ID == id {
			return c, true
		}
	}
	return Check{}, false
}

// replayer feeds records through a checker with the adapter rules of the
// package doc. Replay and FirstTime both step through one, so they cannot
// disagree on which views were live when.
type replayer struct {
	c         *invariant.Checker
	prio      map[wire.NodeID]uint8
	last      map[wire.NodeID]wire.GroupNumber
	inc       map[wire.NodeID]uint64
	dead      map[wire.NodeID]bool
	nodes     map[wire.NodeID]bool
	heal      time.Time
	converged time.Time // start of the current converged stretch; zero if not converged
	res       Result
}

func newReplayer(prio map[wire.NodeID]uint8) *replayer {
	return &replayer{c: invariant.New(), prio: prio, last: map[wire.NodeID]wire.GroupNumber{},
		inc: map[wire.NodeID]uint64{}, dead: map[wire.NodeID]bool{}, nodes: map[wire.NodeID]bool{}}
}

// step applies one record and reports whether the live views may have
// changed.
func (p *replayer) step(r record) bool {
	switch r.kind {
	case kEvent:
		if !p.event(r) {
			return false
		}
	case kCrash:
		for _, n := range r.nodes {
			p.c.Crash(r.t, n)
			p.dead[n] = true
			p.res.Crashes++
		}
	case kStart:
		for _, n := range r.nodes {
			if p.nodes[n] {
				p.res.Restarts++ // not the first start
			}
			p.c.Restart(r.t, n)
			p.dead[n] = false
			delete(p.inc, n) // whatever incarnation comes next is the new process's
			p.last[n] = wire.GroupNumber{}
		}
	case kHeal:
		p.heal = r.t
		return false
	case kCheck:
		p.check(r)
		return false
	default:
		return false
	}
	switch ok := p.allConverged(); {
	case !ok:
		p.converged = time.Time{}
	case p.converged.IsZero():
		p.converged = r.t
	}
	return true
}

// event applies one event; false when it was skipped.
func (p *replayer) event(r record) bool {
	n, st := r.node, r.ev.New
	p.nodes[n] = true
	switch prev, seen := p.inc[n]; {
	case p.dead[n] && seen && st.Incarnation <= prev:
		// The node is down (a mark said so) and this is not a newer
		// process: what a dying process says is not checked.
		p.res.Stale++
		return false
	case seen && st.Incarnation < prev:
		p.res.Stale++
		return false
	case seen && st.Incarnation == prev && r.ev.Reason == group.ReasonSnapshot:
		p.res.Restated++
		return false
	case seen && st.Incarnation > prev:
		if !p.dead[n] {
			p.c.Crash(r.t, n)
		}
		p.c.Restart(r.t, n)
		p.res.Restarts++
		p.last[n] = wire.GroupNumber{}
	}
	p.inc[n], p.dead[n] = st.Incarnation, false
	p.res.Events++
	v := ToStatus(st, p.prio)
	p.c.Persisted(r.t, n, v.Counter)
	if g := v.Group; !g.IsZero() && g.ID == n && g != p.last[n] {
		p.res.Created++
		p.res.Safety = append(p.res.Safety, p.c.Created(invariant.Creation{Time: r.t, Node: n, Group: g})...)
	}
	p.last[n] = v.Group
	p.res.Safety = append(p.res.Safety, p.c.Observe(invariant.Observation{Time: r.t, Node: n, Status: v, Alive: true})...)
	return true
}

func (p *replayer) check(r record) {
	ck := Check{ID: r.seq, Label: r.mark.Label, Time: r.t, Kind: r.check, Nodes: r.nodes, Heal: p.heal, ConvergedAfter: -1}
	if ck.Label == "" {
		ck.Label = r.mark.Spec
	}
	switch {
	case r.check == "L2":
		ck.Violations = p.c.CheckFailover(r.t, r.nodes)
	case r.nodes == nil:
		ck.Violations = p.c.CheckConverged(r.t)
		if !p.converged.IsZero() && len(ck.Violations) == 0 {
			ck.ConvergedAfter = max(p.converged.Sub(p.heal), 0)
		}
	default:
		side, missing := p.views(r.nodes)
		for _, id := range missing {
			ck.Violations = append(ck.Violations, invariant.Violation{Invariant: "L1", Time: r.t, Nodes: []wire.NodeID{id},
				Detail: "node is down or has reported no view"})
		}
		ck.Violations = append(ck.Violations, invariant.Converged(r.t, side)...)
	}
	p.res.Checks = append(p.res.Checks, ck)
}

// views returns the live views of ids, in the order of ids, and the ids
// without one.
func (p *replayer) views(ids []wire.NodeID) (sts []invitation.Status, missing []wire.NodeID) {
	live := p.c.Live()
	for _, id := range ids {
		i := slices.IndexFunc(live, func(s invitation.Status) bool { return s.ID == id })
		if i < 0 {
			missing = append(missing, id)
			continue
		}
		sts = append(sts, live[i])
	}
	return sts, missing
}

// allConverged is CheckConverged without the report: every live node has
// a view and the views are converged.
func (p *replayer) allConverged() bool {
	live := p.c.Live()
	return len(live) == len(p.c.LiveIDs()) && len(live) > 0 && invariant.IsConverged(live)
}

// Replay feeds the whole history, in time order, through a fresh
// invariant.Checker and evaluates the check points on the way, up to the
// first "end" mark.
func (h *History) Replay() Result { return h.ReplayUntil(time.Time{}) }

// ReplayUntil is Replay of the records up to until (zero: all).
func (h *History) ReplayUntil(until time.Time) Result {
	recs, prio := h.sorted()
	p := newReplayer(prio)
	for _, r := range recs {
		if (!until.IsZero() && r.t.After(until)) || r.kind == kEnd {
			break
		}
		p.step(r)
	}
	p.res.Nodes = len(p.nodes)
	return p.res
}

// FirstTime replays the history and returns the first instant, at or after
// from, at which ok holds on the live views of ids (in the order of ids; a
// node without a live view makes it false).
func (h *History) FirstTime(from time.Time, ids []wire.NodeID, ok func([]invitation.Status) bool) (time.Time, bool) {
	recs, prio := h.sorted()
	p := newReplayer(prio)
	holds := func() bool {
		sts, missing := p.views(ids)
		return len(missing) == 0 && ok(sts)
	}
	checked := false
	for _, r := range recs {
		if r.kind == kEnd {
			break
		}
		if !checked && r.t.After(from) {
			checked = true
			if holds() {
				return from, true
			}
		}
		if p.step(r) && checked && holds() {
			return r.t, true
		}
	}
	if !checked && holds() {
		return from, true
	}
	return time.Time{}, false
}

// Events returns the recorded events with time in [from, to), in time
// order (zero to: no end).
func (h *History) Events(from, to time.Time) []group.Event {
	recs, _ := h.sorted()
	var out []group.Event
	for _, r := range recs {
		if r.kind == kEvent && !r.t.Before(from) && (to.IsZero() || r.t.Before(to)) {
			out = append(out, r.ev)
		}
	}
	return out
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
func (h *History) Marks() []Mark {
	recs, _ := h.sorted()
	var out []Mark
	for _, r := range recs {
		if r.kind != kEvent {
			out = append(out, r.mark)
		}
	}
	return out
}

// WriteEvents writes the events with time before until (zero: all), in time
// order, one JSON line each: the events.ndjson that `groupd timeline`
// reads.
func (h *History) WriteEvents(w io.Writer, until time.Time) error {
	bw := bufio.NewWriter(w)
	for _, ev := range h.Events(time.Time{}, until) {
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("history: encoding an event of node %d: %w", ev.Node, err)
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("history: writing events: %w", err)
	}
	return nil
}

// ParseIDs reads a node list: "3", "1,2,5", "3-5", "1,4-6". IDs are
// positive; a list may not name a node twice.
func ParseIDs(spec string) ([]wire.NodeID, error) {
	var out []wire.NodeID
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
		}
		if err1 != nil || err2 != nil || a == 0 || b < a || b-a > 1<<16 {
			return nil, fmt.Errorf("bad node list %q (want e.g. 1,2,4-6)", spec)
		}
		for i := a; i <= b; i++ {
			if slices.Contains(out, wire.NodeID(i)) {
				return nil, fmt.Errorf("node list %q names node %d twice", spec, i)
			}
			out = append(out, wire.NodeID(i))
		}
	}
	return out, nil
}

// FormatIDs writes a node list as ParseIDs reads it, with runs of three or
// more as ranges: [1 2 3 5] is "1-3,5".
func FormatIDs(ids []wire.NodeID) string {
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		switch {
		case j-i >= 2:
			fmt.Fprintf(&b, "%d-%d", ids[i], ids[j])
		case j > i:
			fmt.Fprintf(&b, "%d,%d", ids[i], ids[j])
		default:
			fmt.Fprintf(&b, "%d", ids[i])
		}
		i = j + 1
	}
	return b.String()
}
