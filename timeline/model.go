package timeline

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// Model is what a timeline shows, before any drawing: for every node, the
// stretches of time it spent in one state of one group (or down), and the
// lab's marks as windows or instants. Build makes it from recorded events
// and marks; the SVG drawing (Render) only lays it out.
type Model struct {
	// Start and End are the time axis: from the first event or mark to a
	// little after the last (or as Options fixed them).
	Start, End time.Time
	// Nodes are the rows, in ID order: every node with an event or named
	// by a mark that takes it down.
	Nodes []wire.NodeID
	// Rows holds each node's segments, in time order, without gaps from
	// its first event to End.
	Rows map[wire.NodeID][]Segment
	// Groups are the group numbers seen, in the order they were created
	// as far as numbers tell (groupLess); the zero number is left out.
	Groups []wire.GroupNumber
	// Windows are the marks: a fault window (partition, one-way cut, loss,
	// delay) from its mark until the mark that ends it, or an instant.
	Windows []Window
	// Events and Marks count the records the model was built from.
	Events, Marks int
}

// Segment is a stretch of one node's row: one state, role and group, or
// the node down.
type Segment struct {
	From, To time.Time
	// Down is set from a mark that takes the node's process away (kill,
	// stop, restart) until its next event; the other fields are then
	// zero.
	Down  bool
	State wire.State
	Role  wire.Role
	Group wire.GroupNumber
	// Members is the member list at the segment's end, and Changes the
	// times inside the segment at which it changed.
	Members []wire.NodeID
	Changes []time.Time
}

// Coordinating reports whether the segment shows its node coordinating its
// group: a node merging as coordinator (Election) is electing instead.
func (s Segment) Coordinating() bool {
	return !s.Down && s.State != wire.StateElection && s.Role == wire.RoleCoordinator
}

// At returns node id's segment at t, and false before its first event or
// from End on.
func (m Model) At(id wire.NodeID, t time.Time) (Segment, bool) {
	for _, s := range m.Rows[id] {
		if !t.Before(s.From) && t.Before(s.To) {
			return s, true
		}
	}
	return Segment{}, false
}

// Window is a mark on the time axis.
type Window struct {
	Mark     schema.Mark
	From, To time.Time
	// Instant is set for a mark at one instant (kill, restart, heal, ...);
	// To is then From.
	Instant bool
	// Node is the row an instant that takes one node down belongs to;
	// zero for a mark about every row.
	Node wire.NodeID
}

// Label is the window's text: its kind and spec.
func (w Window) Label() string {
	if w.Mark.Spec == "" {
		return w.Mark.Kind
	}
	return w.Mark.Kind + " " + w.Mark.Spec
}

// Build makes the model of events (a node's own views, as `groupd watch
// --json` prints them) and marks (the lab's faults.ndjson), in any order.
// A non-zero start or end fixes that end of the time axis.
func Build(events []schema.Event, marks []schema.Mark, start, end time.Time) Model {
	evs := slices.Clone(events)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time.Before(evs[j].Time) })
	ms := slices.Clone(marks)
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Time.Before(ms[j].Time) })
	m := Model{Rows: map[wire.NodeID][]Segment{}, Events: len(evs), Marks: len(ms)}
	m.Start, m.End = axis(evs, ms, start, end)

	byNode := map[wire.NodeID][]schema.Event{}
	for _, e := range evs {
		if n := eventNode(e); n != 0 {
			byNode[n] = append(byNode[n], e)
		}
	}
	downAt := map[wire.NodeID][]time.Time{}
	for _, mk := range ms {
		if !mk.Down() {
			continue
		}
		nodes, _ := mk.Nodes() // a spec that names no node takes none down
		for _, n := range nodes {
			downAt[n] = append(downAt[n], mk.Time)
			if _, ok := byNode[n]; !ok {
				byNode[n] = nil
			}
		}
	}
	for n := range byNode {
		m.Nodes = append(m.Nodes, n)
	}
	slices.Sort(m.Nodes)

	seen := map[wire.GroupNumber]bool{}
	for _, n := range m.Nodes {
		es := byNode[n]
		segs := make([]Segment, 0, len(es))
		for i, e := range es {
			to := m.End
			if i+1 < len(es) {
				to = es[i+1].Time
			}
			st := e.New
			segs = append(segs, Segment{From: e.Time, To: to, State: st.State, Role: st.Role, Group: st.Group, Members: st.Members})
			if g := st.Group; !g.IsZero() && !seen[g] {
				seen[g] = true
				m.Groups = append(m.Groups, g)
			}
		}
		m.Rows[n] = cutDown(mergeSame(segs), downs(es, downAt[n], m.End))
	}
	sort.Slice(m.Groups, func(i, j int) bool { return groupLess(m.Groups[i], m.Groups[j]) })
	m.Windows = windows(ms, m.End)
	return m
}

// eventNode is the node an event is about: its node, else its view's.
func eventNode(e schema.Event) wire.NodeID {
	if e.Node != 0 {
		return e.Node
	}
	return e.New.ID
}

// axis returns the time axis of sorted events and marks: from the first
// to the last, plus a twenty-fifth (at least a second in all), unless
// start or end fix it.
func axis(evs []schema.Event, ms []schema.Mark, start, end time.Time) (time.Time, time.Time) {
	var first, last time.Time
	widen := func(t time.Time) {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if last.IsZero() || t.After(last) {
			last = t
		}
	}
	if len(evs) > 0 {
		widen(evs[0].Time)
		widen(evs[len(evs)-1].Time)
	}
	if len(ms) > 0 {
		widen(ms[0].Time)
		widen(ms[len(ms)-1].Time)
	}
	span := max(last.Sub(first), time.Second)
	t0, t1 := first, first.Add(span+span/25)
	if !start.IsZero() {
		t0 = start
	}
	if !end.IsZero() {
		t1 = end
	}
	if !t1.After(t0) {
		t1 = t0.Add(time.Second)
	}
	return t0, t1
}

// downs returns a node's down segments: from each time it was taken down
// until its next event (es, sorted), or end.
func downs(es []schema.Event, at []time.Time, end time.Time) []Segment {
	var out []Segment
	for _, t := range at {
		to := end
		for _, e := range es {
			if e.Time.After(t) {
				to = e.Time
				break
			}
		}
		out = append(out, Segment{From: t, To: to, Down: true})
	}
	return out
}

// mergeSame joins neighbouring segments that look the same (state, role
// and group), remembering where the member list changed inside them.
func mergeSame(segs []Segment) []Segment {
	var out []Segment
	for _, s := range segs {
		if k := len(out) - 1; k >= 0 {
			last := &out[k]
			if last.State == s.State && last.Role == s.Role && last.Group == s.Group && last.To.Equal(s.From) {
				if !slices.Equal(last.Members, s.Members) {
					last.Changes = append(last.Changes, s.From)
				}
				last.To = s.To
				last.Members = s.Members
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// cutDown removes the down windows from the state segments and returns
// both, sorted by start.
func cutDown(segs, downs []Segment) []Segment {
	out := make([]Segment, 0, len(segs)+len(downs))
	for _, s := range segs {
		parts := []Segment{s}
		for _, d := range downs {
			var next []Segment
			for _, p := range parts {
				if !d.From.Before(p.To) || !p.From.Before(d.To) {
					next = append(next, p)
					continue
				}
				if p.From.Before(d.From) {
					q := p
					q.To = d.From
					next = append(next, q)
				}
				if d.To.Before(p.To) {
					q := p
					q.From = d.To
					next = append(next, q)
				}
			}
			parts = next
		}
		out = append(out, parts...)
	}
	out = append(out, downs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].From.Before(out[j].From) })
	return out
}

// groupLess orders group numbers by seq, then id: the order they were
// created in, as far as numbers tell.
func groupLess(a, b wire.GroupNumber) bool {
	if a.Seq != b.Seq {
		return a.Seq < b.Seq
	}
	return a.ID < b.ID
}

// windows turns sorted marks into windows: a fault lasts until a heal
// that ends its kind, or until the next fault of its kind where a new one
// replaces the old, or until end.
func windows(ms []schema.Mark, end time.Time) []Window {
	out := make([]Window, 0, len(ms))
	for i, mk := range ms {
		w := Window{Mark: mk, From: mk.Time, To: mk.Time, Instant: !isWindow(mk.Kind)}
		if w.Instant {
			if nodes, err := mk.Nodes(); err == nil && mk.Down() && len(nodes) == 1 {
				w.Node = nodes[0]
			}
			out = append(out, w)
			continue
		}
		w.To = end
		for _, later := range ms[i+1:] {
			if heals(later, mk.Kind) || (later.Kind == mk.Kind && replacedBySameKind(mk.Kind)) {
				w.To = later.Time
				break
			}
		}
		out = append(out, w)
	}
	return out
}

// isWindow reports whether a mark kind lasts until the next heal.
func isWindow(kind string) bool {
	switch kind {
	case schema.KindPartition, schema.KindOneway, schema.KindLoss, schema.KindDelay, "degrade":
		return true
	}
	return false
}

// heals reports whether mark h ends a window of the given kind: a heal
// with spec "partitions" (heal.sh --partitions) removes only partitions and
// one-way cuts; any other heal removes every fault.
func heals(h schema.Mark, kind string) bool {
	if h.Kind != schema.KindHeal {
		return false
	}
	if strings.TrimSpace(h.Spec) == "partitions" {
		return kind == schema.KindPartition || kind == schema.KindOneway
	}
	return true
}

// replacedBySameKind reports whether a new fault of the same kind ends the
// previous window (a new partition replaces the old one; one-way cuts add
// up).
func replacedBySameKind(kind string) bool {
	return kind == schema.KindPartition || kind == schema.KindLoss || kind == schema.KindDelay || kind == "degrade"
}
