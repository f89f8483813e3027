package invitation

import (
	"slices"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

func beaconFrom(id wire.NodeID, g wire.GroupNumber) wire.Message {
	return wire.Message{Header: wire.Header{From: id, Priority: 100, Group: g, State: wire.StateNormal}, Body: wire.Beacon{}}
}

// TestKnownCoordinators checks which senders a node remembers: those that
// say they coordinate a group, until they say otherwise, fall silent for
// PeerTimeout or are reported down.
func TestKnownCoordinators(t *testing.T) {
	g := func(seq uint64, id wire.NodeID) wire.GroupNumber { return wire.GroupNumber{Seq: seq, ID: id} }
	timeout := DefaultTiming().PeerTimeout
	tests := []struct {
		name string
		run  func(n *Node)
		want []wire.NodeID
	}{
		{"a coordinator is remembered", func(n *Node) {
			n.Step(at(10), beaconFrom(3, g(1, 3)))
		}, []wire.NodeID{3}},
		{"a member is not", func(n *Node) {
			n.Step(at(10), beaconFrom(4, g(1, 3)))
		}, nil},
		{"a coordinator that joined another group is forgotten", func(n *Node) {
			n.Step(at(10), beaconFrom(3, g(1, 3)))
			n.Step(at(20), beaconFrom(3, g(2, 7)))
		}, nil},
		{"a silent coordinator expires", func(n *Node) {
			n.Step(at(10), beaconFrom(3, g(1, 3)))
			n.Step(at(10), beaconFrom(5, g(1, 5)))
			later := at(10).Add(timeout + time.Second)
			n.Step(later, beaconFrom(5, g(1, 5)))
			n.Tick(later)
		}, []wire.NodeID{5}},
		{"a coordinator reported down is forgotten", func(n *Node) {
			n.Step(at(10), beaconFrom(3, g(1, 3)))
			n.PeerDown(at(20), 3)
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := participant(t, 1, g(4, 9), 1, 9)
			tc.run(n)
			if got := sortedIDs(n.coords); !slices.Equal(got, tc.want) {
				t.Fatalf("known coordinators %v, want %v", got, tc.want)
			}
		})
	}
}

// TestKnownCoordinatorsShrink: after a cold start of a large LAN, in which
// every node heard every other coordinate its singleton group, the table is
// rebuilt once its deletions outnumber its entries, so a Go map's deleted
// slots do not make each later lookup cost as much as at the peak.
func TestKnownCoordinatorsShrink(t *testing.T) {
	n := participant(t, 1, wire.GroupNumber{Seq: 4, ID: 9000}, 1, 9000)
	const lan = 5000
	for id := wire.NodeID(2); id < lan; id++ {
		n.Step(at(10), beaconFrom(id, wire.GroupNumber{Seq: 1, ID: id}))
	}
	if len(n.coords) != lan-2 {
		t.Fatalf("%d known coordinators after the cold start, want %d", len(n.coords), lan-2)
	}
	for id := wire.NodeID(2); id < lan; id++ {
		n.Step(at(20), beaconFrom(id, wire.GroupNumber{Seq: 4, ID: 9000}))
	}
	if len(n.coords) != 0 {
		t.Fatalf("%d known coordinators once all joined one group, want 0", len(n.coords))
	}
	if n.coordsDel > 64 {
		t.Fatalf("%d deletions since the table was last rebuilt, want at most 64 (2×0+64)", n.coordsDel)
	}
}
