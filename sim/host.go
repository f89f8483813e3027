package sim

import (
	"fmt"
	"time"

	"github.com/groupd/groupd/wire"
)

// Host models the CPU of the one machine every node runs on, as in a lab
// of network namespaces: each delivery costs the host PerDelivery of CPU
// (the sender's kernel copying a datagram to one more socket, the
// receiver's wake-up, decryption and step), and the host has Cores CPUs.
// Deliveries queue for the CPU in the order they are sent, so a busy host
// delays every packet by its backlog. A delivery that would wait more than
// Backlog/2 is shed if it is a beacon, and any that would wait more than
// Backlog is dropped: the daemon queues beacons apart, in a queue half the
// size of the other packets', and drops what finds its queue full
// (package group).
//
// It is the fault a cold start of 256 lab nodes on two cores ran into: the
// nodes' own traffic delayed and dropped their packets, they formed more
// groups, whose traffic added to the load. The zero value (Cores 0) is a
// host with CPU to spare.
type Host struct {
	Cores       int
	PerDelivery time.Duration
	Backlog     time.Duration
}

// On reports whether the host model applies.
func (h Host) On() bool { return h.Cores > 0 && h.PerDelivery > 0 }

func (h Host) String() string {
	if !h.On() {
		return "host unlimited"
	}
	return fmt.Sprintf("host cores=%d per-delivery=%v backlog=%v", h.Cores, h.PerDelivery, h.Backlog)
}

// DefaultBacklog is Host.Backlog when zero: the daemon's inbox of 1,024
// packets at the cost of a delivery on a loaded lab host.
const DefaultBacklog = 500 * time.Millisecond

// SetHost replaces the host model. Packets already queued keep their
// arrival times.
func (s *Sim) SetHost(h Host) {
	if h.On() && h.Backlog <= 0 {
		h.Backlog = DefaultBacklog
	}
	s.host = h
	s.Note("%s", h)
}

// Host returns the current host model.
func (s *Sim) Host() Host { return s.host }

// queueCPU returns when a delivery that reaches its receiver's socket at
// at is handled, after the host's backlog, or false if the receiver's
// inbox has no room for it.
func (s *Sim) queueCPU(at int64, m wire.Message) (int64, bool) {
	if !s.host.On() {
		return at, true
	}
	start := max(at, s.cpuFree)
	wait := start - at
	limit := int64(s.host.Backlog)
	if _, beacon := m.Body.(wire.Beacon); beacon {
		limit /= 2
	}
	if wait > limit {
		s.counts.Dropped[DropOverload]++
		return 0, false
	}
	s.cpuFree = start + int64(s.host.PerDelivery)/int64(s.host.Cores)
	return s.cpuFree, true
}
