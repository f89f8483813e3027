package sim

import (
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

func TestQueueCPU(t *testing.T) {
	beacon := wire.Message{Body: wire.Beacon{}}
	accept := wire.Message{Body: wire.Accept{}}
	ms := int64(time.Millisecond)
	tests := []struct {
		name string
		host Host
		// arrivals at the socket, in send order, and whether each is a beacon
		at     []int64
		beacon []bool
		want   []int64 // handled at; -1: dropped
	}{
		{"unlimited", Host{}, []int64{5, 5, 5}, []bool{false, true, false}, []int64{5, 5, 5}},
		{"idle host", Host{Cores: 1, PerDelivery: time.Millisecond, Backlog: 10 * time.Millisecond},
			[]int64{0, 10 * ms}, []bool{false, false}, []int64{1 * ms, 11 * ms}},
		{"queued behind each other", Host{Cores: 1, PerDelivery: time.Millisecond, Backlog: 10 * time.Millisecond},
			[]int64{0, 0, 0}, []bool{false, false, false}, []int64{1 * ms, 2 * ms, 3 * ms}},
		{"two cores drain twice as fast", Host{Cores: 2, PerDelivery: 2 * time.Millisecond, Backlog: 10 * time.Millisecond},
			[]int64{0, 0}, []bool{false, false}, []int64{1 * ms, 2 * ms}},
		{"beacons shed at half the backlog, the rest at all of it", Host{Cores: 1, PerDelivery: 4 * time.Millisecond, Backlog: 10 * time.Millisecond},
			// waits: 0, 4, 8 (beacon: > 5, shed), 8, 12 (> 10, dropped)
			[]int64{0, 0, 0, 0, 0}, []bool{false, false, true, false, false}, []int64{4 * ms, 8 * ms, -1, 12 * ms, -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := MustNew(Config{N: 1, Host: tc.host})
			for i, at := range tc.at {
				m := accept
				if tc.beacon[i] {
					m = beacon
				}
				got, ok := s.queueCPU(at, m)
				if !ok {
					got = -1
				}
				if got != tc.want[i] {
					t.Errorf("delivery %d (at %v): handled at %v, want %v", i, time.Duration(at), time.Duration(got), time.Duration(tc.want[i]))
				}
			}
		})
	}
}
