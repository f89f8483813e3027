package sim

import (
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// TestNetworkNews checks the failure detector's model of a network change:
// every live node is told, once, about each peer it can no longer reach
// both ways, and news that a later change overtook is never delivered.
func TestNetworkNews(t *testing.T) {
	const delay, jitter = 1500 * time.Millisecond, 200 * time.Millisecond
	ids := func(xs ...wire.NodeID) []wire.NodeID { return xs }
	tests := []struct {
		name  string
		setup func(s *Sim) // before counting
		apply func(s *Sim)
		want  uint64
		some  bool // want some of want reports, not all
	}{
		{name: "halves", apply: func(s *Sim) { s.Partition(ids(1, 2, 3), ids(4, 5, 6)) }, want: 18},
		{name: "three sides", apply: func(s *Sim) { s.Partition(ids(1, 2), ids(3, 4), ids(5, 6)) }, want: 24},
		{name: "one node alone", apply: func(s *Sim) { s.Partition(ids(1), ids(2, 3, 4, 5, 6)) }, want: 10},
		{name: "one-way cut counts for both ends", apply: func(s *Sim) { s.Cut(1, 2) }, want: 2},
		{name: "healed before detection", apply: func(s *Sim) {
			s.Partition(ids(1, 2, 3), ids(4, 5, 6))
			must(t, s.RunFor(delay/2))
			s.Heal()
		}, want: 0},
		{name: "changed before detection: only the last counts", apply: func(s *Sim) {
			s.Partition(ids(1, 2, 3), ids(4, 5, 6))
			must(t, s.RunFor(delay/2))
			s.Partition(ids(1), ids(2, 3, 4, 5, 6))
		}, want: 10},
		{name: "healed during detection: the rest is dropped", apply: func(s *Sim) {
			s.Partition(ids(1, 2, 3), ids(4, 5, 6))
			must(t, s.RunFor(delay+jitter/2))
			s.Heal()
		}, want: 18, some: true},
		{name: "a node down is told nothing", setup: func(s *Sim) {
			s.Crash(6)
			must(t, s.RunFor(3*time.Second))
		}, apply: func(s *Sim) { s.Partition(ids(1, 2, 3), ids(4, 5, 6)) }, want: 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, Config{N: 6, Detect: Detect{Partitions: true, Delay: delay, Jitter: jitter}})
			settle(t, s, 6)
			if tc.setup != nil {
				tc.setup(s)
			}
			before := s.Counts().PeerDowns
			tc.apply(s)
			must(t, s.RunFor(delay+jitter+time.Millisecond))
			got := s.Counts().PeerDowns - before
			switch {
			case tc.some && (got == 0 || got >= tc.want):
				t.Fatalf("PeerDowns = %d, want some but not all of %d", got, tc.want)
			case !tc.some && got != tc.want:
				t.Fatalf("PeerDowns = %d, want %d", got, tc.want)
			}
		})
	}
}
