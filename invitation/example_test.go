package invitation_test

import (
	"fmt"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// Three nodes on a perfect network with 1 ms latency form one group
// coordinated by the highest-ranked node. The loop plays the runtime:
// it delivers messages, confirms saves, and ticks every millisecond.
func Example() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := map[wire.NodeID]*invitation.Node{}
	for id := wire.NodeID(1); id <= 3; id++ {
		n, err := invitation.New(invitation.Config{ID: id, Priority: wire.DefaultPriority, Timing: invitation.DefaultTiming()}, start)
		if err != nil {
			panic(err)
		}
		nodes[id] = n
	}
	type delivery struct {
		to  wire.NodeID
		msg wire.Message
	}
	var inflight []delivery
	for now := start; now.Before(start.Add(2 * time.Second)); now = now.Add(time.Millisecond) {
		arriving := inflight
		inflight = nil
		for _, d := range arriving {
			nodes[d.to].Step(now, d.msg)
		}
		for id := wire.NodeID(1); id <= 3; id++ {
			n := nodes[id]
			n.Tick(now)
			out := n.Output()
			if out.Persist != nil {
				// A real runtime fsyncs the counter here.
				n.Persisted(now, out.Persist.Counter)
				out.Messages = append(out.Messages, n.Output().Messages...)
			}
			for _, e := range out.Messages {
				for to := wire.NodeID(1); to <= 3; to++ {
					if to != id && (e.To == to || e.To == wire.Broadcast) {
						inflight = append(inflight, delivery{to, e.Msg})
					}
				}
			}
		}
	}
	for id := wire.NodeID(1); id <= 3; id++ {
		s := nodes[id].Status()
		fmt.Printf("node %d: %s %s in group %s with members %v\n", id, s.State, s.Role(), s.Group, s.MemberIDs())
	}
	// Output:
	// node 1: normal participant in group 2.3 with members [1 2 3]
	// node 2: normal participant in group 2.3 with members [1 2 3]
	// node 3: normal coordinator in group 2.3 with members [1 2 3]
}
