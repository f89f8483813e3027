package group

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/groupd/groupd/wire"
)

// TestMetricsCountOnce: the machine reports a number it creates twice with
// the reason it was created for (when it starts on it, and when it adopts
// it), and a recovery both when a node loses its group and when it forms
// one; the counters count each election, merge and group formed once.
func TestMetricsCountOnce(t *testing.T) {
	g := func(seq uint64, id wire.NodeID) GroupNumber { return GroupNumber{Seq: seq, ID: id} }
	st := func(state State, grp GroupNumber) *Status {
		s := &Status{ID: 3, State: state, Group: grp, Role: Participant}
		if grp.ID == 3 {
			s.Role = Coordinator
		}
		return s
	}
	ev := func(reason string, old, new *Status) Event { return Event{Reason: reason, Old: old, New: *new} }
	tests := []struct {
		name                          string
		events                        []Event
		elections, merges, recoveries float64
	}{
		{"a failover won", []Event{
			ev("election", st(StateNormal, g(90, 9)), st(StateElection, g(90, 9))),
			ev("election", st(StateElection, g(90, 9)), st(StateElection, g(201, 3))),
		}, 1, 0, 0},
		{"a merge", []Event{
			ev("merge", st(StateNormal, g(201, 3)), st(StateElection, g(201, 3))),
			ev("merge", st(StateElection, g(201, 3)), st(StateElection, g(301, 3))),
		}, 0, 1, 0},
		{"a takeover", []Event{
			ev("merge", st(StateNormal, g(90, 7)), st(StateElection, g(301, 3))),
		}, 0, 1, 0},
		{"a group lost, then a singleton", []Event{
			ev("recovery", st(StateNormal, g(90, 7)), st(StateElection, GroupNumber{})),
			ev("recovery", st(StateElection, GroupNumber{}), st(StateNormal, g(201, 3))),
		}, 0, 0, 1},
		{"a group formed inviting the nodes heard", []Event{
			ev("recovery", st(StateElection, GroupNumber{}), st(StateElection, g(201, 3))),
		}, 0, 0, 1},
		{"a group lost, then invited", []Event{
			ev("recovery", st(StateNormal, g(90, 7)), st(StateElection, GroupNumber{})),
			ev("invited", st(StateElection, GroupNumber{}), st(StateReorganization, g(95, 7))),
		}, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMetrics(liveGauges{})
			for _, e := range tc.events {
				m.observe(e)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"elections", value(t, m.elections), tc.elections},
				{"merges", value(t, m.merges), tc.merges},
				{"recoveries", value(t, m.recoveries), tc.recoveries},
			} {
				if c.got != c.want {
					t.Errorf("%s %v, want %v", c.name, c.got, c.want)
				}
			}
		})
	}
}

// value reads a counter.
func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
