package sim

import "github.com/groupd/groupd/wire"

// kind is what an event does.
type kind uint8

const (
	evStart         kind = iota + 1 // a node boots for the first time
	evDeliver                       // a message arrives at node
	evTick                          // node's NextDeadline came
	evSaved                         // node's pending save completes
	evDetectCrash                   // the failure detector notices about's crash
	evDetectNetwork                 // the failure detector notices a partition
	evPeerDown                      // node is told about (crashed) is down
	evNetworkNews                   // node's next item of downNews is due
	evVerify                        // keyed: node's challenge of slot about is answered
	evResume                        // node's pause ends (Pause)
	evConflict                      // memberlist reports to node another process with its ID, in slot about
	evProbe                         // node's next probe to slot about, another process with its ID, is due
)

// event is one entry of the queue. Events are ordered by time, then by the
// order in which they were scheduled, so a run is a function of its seed.
type event struct {
	at    int64 // ns since Epoch
	seq   uint64
	kind  kind
	node  int32  // slot of the node concerned
	inc   uint32 // its incarnation when scheduled (ticks, saves)
	about int32  // the other slot: the sender (deliveries), the crashed node, the challenged sender
	epoch uint64 // network epoch (evDetectNetwork, evNetworkNews)
	msg   wire.Message
}

// queue is a binary min-heap of events, typed so that pushing does not
// box (container/heap's interface would allocate per event).
type queue []event

func (q queue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *queue) push(e event) {
	*q = append(*q, e)
	h := *q
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *queue) pop() event {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = event{} // drop references
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}
