package timeline

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// The tests' clock: records at t0 + seconds.
var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// ev is node's view at s seconds: state st in group ("seq.id"; "" for
// none) with members; it coordinates a group whose number ends in its ID.
func ev(s float64, node wire.NodeID, st wire.State, group string, members ...wire.NodeID) schema.Event {
	var g wire.GroupNumber
	if group != "" {
		var err error
		if g, err = wire.ParseGroupNumber(group); err != nil {
			panic(err) // a typo in a test table
		}
	}
	role := wire.RoleParticipant
	if g.ID == node {
		role = wire.RoleCoordinator
	}
	return schema.Event{Time: at(s), Node: node, Reason: "x",
		New: schema.Status{ID: node, State: st, Role: role, Group: g, Coordinator: g.ID, Members: members}}
}

func mark(s float64, kind, spec string) schema.Mark {
	return schema.Mark{Time: at(s), Kind: kind, Spec: spec}
}

const N, E, R = wire.StateNormal, wire.StateElection, wire.StateReorganization

// secs writes t as the tables want it: seconds from t0, or "end" for the
// model's end.
func secs(m Model, t time.Time) string {
	if t.Equal(m.End) {
		return "end"
	}
	return strconv.FormatFloat(t.Sub(t0).Seconds(), 'f', -1, 64)
}

// describe writes a segment as the tables want it: "FROM-TO", then "down"
// or the state, role, group and members, then the member list changes.
func describe(m Model, s Segment) string {
	out := secs(m, s.From) + "-" + secs(m, s.To)
	if s.Down {
		return out + " down"
	}
	out += fmt.Sprintf(" %s %s %s %v", s.State, s.Role, s.Group, s.Members)
	for _, c := range s.Changes {
		out += " changed@" + secs(m, c)
	}
	return out
}

func TestModelSegments(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []schema.Event
		marks  []schema.Mark
		want   map[wire.NodeID][]string
	}{
		{
			name: "same group, state and role make one segment; member changes are ticks",
			events: []schema.Event{
				ev(0, 2, N, "1.2", 2), ev(1, 2, N, "1.2", 2), ev(3, 2, N, "1.2", 2, 3),
				ev(5, 2, E, "1.2", 2, 3), ev(6, 2, N, "2.2", 2, 3),
			},
			want: map[wire.NodeID][]string{2: {
				"0-5 normal coordinator 1.2 [2 3] changed@3",
				"5-6 election coordinator 1.2 [2 3]",
				"6-end normal coordinator 2.2 [2 3]",
			}},
		},
		{
			name: "a merge: election, reorganization, then the new group",
			events: []schema.Event{
				ev(0, 1, N, "1.1", 1), ev(0, 3, N, "1.3", 3),
				ev(1, 3, E, "1.3", 3), ev(1.1, 1, R, "2.3"), ev(1.3, 3, N, "2.3", 1, 3), ev(1.4, 1, N, "2.3", 1, 3),
			},
			want: map[wire.NodeID][]string{
				1: {"0-1.1 normal coordinator 1.1 [1]", "1.1-1.4 reorganization participant 2.3 []", "1.4-end normal participant 2.3 [1 3]"},
				3: {"0-1 normal coordinator 1.3 [3]", "1-1.3 election coordinator 1.3 [3]", "1.3-end normal coordinator 2.3 [1 3]"},
			},
		},
		{
			name:   "a restarted node is down until its next event",
			events: []schema.Event{ev(0, 2, N, "1.2", 2), ev(6, 2, N, "2.2", 2)},
			marks:  []schema.Mark{mark(2, schema.KindRestart, "2")},
			want: map[wire.NodeID][]string{2: {
				"0-2 normal coordinator 1.2 [2]", "2-6 down", "6-end normal coordinator 2.2 [2]",
			}},
		},
		{
			name:   "a kill of two nodes takes both down; one never comes back",
			events: []schema.Event{ev(0, 1, N, "1.2", 1, 2), ev(0, 2, N, "1.2", 1, 2), ev(5, 1, N, "5.1", 1)},
			marks:  []schema.Mark{mark(3, schema.KindKill, "1,2")},
			want: map[wire.NodeID][]string{
				1: {"0-3 normal participant 1.2 [1 2]", "3-5 down", "5-end normal coordinator 5.1 [1]"},
				2: {"0-3 normal coordinator 1.2 [1 2]", "3-end down"},
			},
		},
		{
			name:   "a node that is only killed still gets a row",
			events: []schema.Event{ev(0, 1, N, "1.1", 1)},
			marks:  []schema.Mark{mark(1, schema.KindKill, "4")},
			want: map[wire.NodeID][]string{
				1: {"0-end normal coordinator 1.1 [1]"},
				4: {"1-end down"},
			},
		},
		{
			name:   "a stop takes a node down; a pause, a start and a bad spec do not",
			events: []schema.Event{ev(0, 1, N, "1.1", 1), ev(0, 2, N, "1.2", 2)},
			marks: []schema.Mark{
				mark(1, schema.KindPause, "1"), mark(2, schema.KindStop, "1"),
				mark(3, schema.KindStart, "2"), mark(4, schema.KindKill, "two"),
			},
			want: map[wire.NodeID][]string{
				1: {"0-2 normal coordinator 1.1 [1]", "2-end down"},
				2: {"0-end normal coordinator 1.2 [2]"},
			},
		},
		{
			name:   "a node with no group yet",
			events: []schema.Event{ev(0, 1, E, ""), ev(2, 1, N, "3.1", 1)},
			want: map[wire.NodeID][]string{1: {
				"0-2 election participant 0.0 []", "2-end normal coordinator 3.1 [1]",
			}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Records come in any order.
			evs := slices.Clone(tc.events)
			slices.Reverse(evs)
			m := Build(evs, tc.marks, time.Time{}, time.Time{})
			var nodes []wire.NodeID
			for n, want := range tc.want {
				nodes = append(nodes, n)
				var got []string
				for _, s := range m.Rows[n] {
					got = append(got, describe(m, s))
				}
				if !slices.Equal(got, want) {
					t.Errorf("node %d:\ngot  %s\nwant %s", n, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
				}
			}
			slices.Sort(nodes)
			if !slices.Equal(m.Nodes, nodes) {
				t.Errorf("rows %v, want %v", m.Nodes, nodes)
			}
		})
	}
}

// TestModelAt looks a node's segment up by time: the one whose [From, To)
// holds it, nothing before its first event, from End on, or for a node
// without a row.
func TestModelAt(t *testing.T) {
	m := Build([]schema.Event{ev(1, 2, N, "1.2", 2), ev(6, 2, N, "2.2", 2)},
		[]schema.Mark{mark(2, schema.KindRestart, "2")}, time.Time{}, at(10))
	for _, tc := range []struct {
		node wire.NodeID
		s    float64
		want string // describe's, or "" for none
	}{
		{2, 0.5, ""},
		{2, 1, "1-2 normal coordinator 1.2 [2]"},
		{2, 1.999, "1-2 normal coordinator 1.2 [2]"},
		{2, 2, "2-6 down"},
		{2, 7, "6-end normal coordinator 2.2 [2]"},
		{2, 10, ""},
		{3, 7, ""},
	} {
		got := ""
		if seg, ok := m.At(tc.node, at(tc.s)); ok {
			got = describe(m, seg)
		}
		if got != tc.want {
			t.Errorf("At(%d, %v s) = %q, want %q", tc.node, tc.s, got, tc.want)
		}
	}
}

func TestModelWindows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		marks []schema.Mark
		want  []string // "LABEL FROM-TO" ("end": the axis's), "LABEL @AT" for an instant, "... row N" on one row
	}{
		{
			name: "a heal of partitions keeps loss; a new partition replaces the old",
			marks: []schema.Mark{
				mark(1, schema.KindLoss, "20%"), mark(2, schema.KindPartition, "1|2"), mark(3, schema.KindPartition, "1,2|3"),
				mark(4, schema.KindHeal, "partitions"), mark(6, schema.KindHeal, "all"),
			},
			want: []string{"loss 20% 1-6", "partition 1|2 2-3", "partition 1,2|3 3-4", "heal partitions @4", "heal all @6"},
		},
		{
			name:  "one-way cuts add up until a heal; a fault never healed lasts to the end",
			marks: []schema.Mark{mark(1, schema.KindOneway, "1->3"), mark(2, schema.KindOneway, "2->3"), mark(3, schema.KindHeal, ""), mark(4, schema.KindDelay, "50ms")},
			want:  []string{"oneway 1->3 1-3", "oneway 2->3 2-3", "heal @3", "delay 50ms 4-end"},
		},
		{
			name:  "an instant that takes one node down is on its row",
			marks: []schema.Mark{mark(1, schema.KindKill, "3"), mark(2, schema.KindKill, "1,2"), mark(3, schema.KindStart, "3"), mark(4, schema.KindRestart, "2")},
			want:  []string{"kill 3 @1 row 3", "kill 1,2 @2", "start 3 @3", "restart 2 @4 row 2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Build([]schema.Event{ev(0, 1, N, "1.1", 1)}, tc.marks, time.Time{}, time.Time{})
			var got []string
			for _, w := range m.Windows {
				d := w.Label() + " " + secs(m, w.From) + "-" + secs(m, w.To)
				if w.Instant {
					d = w.Label() + " @" + secs(m, w.From)
				}
				if w.Node != 0 {
					d += fmt.Sprintf(" row %d", w.Node)
				}
				got = append(got, d)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("\ngot  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestModelAxis(t *testing.T) {
	evs := []schema.Event{ev(0, 1, N, "1.1", 1), ev(10, 1, N, "2.1", 1)}
	for _, tc := range []struct {
		name       string
		marks      []schema.Mark
		start, end time.Time
		from, to   time.Time
	}{
		{"events only: a twenty-fifth after the last", nil, time.Time{}, time.Time{}, at(0), at(10.4)},
		{"a mark before the first event", []schema.Mark{mark(-5, schema.KindPartition, "1|2")}, time.Time{}, time.Time{}, at(-5), at(10.6)},
		{"fixed by the options", nil, at(2), at(8), at(2), at(8)},
		{"an end before the start gives one second", nil, at(5), at(1), at(5), at(6)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Build(evs, tc.marks, tc.start, tc.end)
			if !m.Start.Equal(tc.from) || !m.End.Equal(tc.to) {
				t.Errorf("axis %v..%v, want %v..%v", m.Start.Sub(t0), m.End.Sub(t0), tc.from.Sub(t0), tc.to.Sub(t0))
			}
		})
	}
	// Nothing at all is a model without rows, not a panic.
	if m := Build(nil, nil, time.Time{}, time.Time{}); len(m.Nodes) != 0 || !m.End.After(m.Start) {
		t.Errorf("empty model: %+v", m)
	}
}
