package group

import (
	"sync"
	"time"

	"github.com/groupd/groupd/wire"
)

// Hello stops needless unicast copies of broadcasts.
//
// The runtime copies each broadcast by unicast to the gossip members whose
// current process it never heard over multicast (unicastBroadcastTargets):
// that is how a --join peer across a router gets heartbeats. Every process
// multicasts while it boots, but a node that booted, joined a group and
// fell quiet (idle participants send nothing) before this node started
// listening was never heard, so it would get every heartbeat twice, for
// ever: at N = 16 that tripled an idle coordinator's packets. The node
// that receives one packet both ways (same sender, boot and counter: a
// copy keeps its original's counter) multicasts a Hello, which tells
// every runtime that hears it that this boot is reached by multicast.
// Hellos are paced (helloPacer) so that a node whose multicast is heard
// one way only does not multicast one per copy.

// helloMin and helloMax bound the pause between two Hellos of one node.
// The first Hello of an episode goes at once; each one that does not stop
// the copies doubles the pause, up to helloMax. A copy that comes more
// than helloMax after the pause ended starts a new episode.
const (
	helloMin = time.Second
	helloMax = time.Minute
)

// helloPacer decides when a node that receives copies multicasts a Hello.
// Safe for concurrent use: the transports' readers call it.
type helloPacer struct {
	mu    sync.Mutex
	last  time.Time     // last Hello sent; zero before the first
	pause time.Duration // since last, before the next may go
}

// due reports whether a copy received at now should prompt a Hello, and
// records that one is sent.
func (h *helloPacer) due(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	since := now.Sub(h.last)
	switch {
	case h.last.IsZero() || since >= h.pause+helloMax:
		h.pause = helloMin // a new episode
	case since < h.pause:
		return false
	default:
		h.pause = min(2*h.pause, helloMax)
	}
	h.last = now
	return true
}

// sendHello multicasts a Hello, sealed (with a key) for every node.
func (a *Agent) sendHello() {
	if a.tr.MulticastGroup() == "" {
		return
	}
	msg := a.runtimeMessage(wire.Hello{})
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	if pkt, ok := a.seal(msg, wire.Broadcast); ok {
		a.multicast(pkt, wire.TypeHello.String())
	}
}
