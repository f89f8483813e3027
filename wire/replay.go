package wire

import "sync"

// ReplayWindowSize (960) is how far behind a sender's highest accepted counter a
// packet may arrive and still be accepted (once). Counters are per sender,
// not per receiver: between two packets to one receiver a coordinator may
// send one to every other member, so the window is sized for a few hundred
// members' worth of reordering (for example under netem jitter), at 128
// bytes per sender.
const ReplayWindowSize = (replayBlocks - 1) * 64

const replayBlocks = 16 // a power of two; the ring holds replayBlocks*64 bits

// ReplayWindow rejects replayed packets, using the header's Incarnation
// (bumped and persisted by the sender at every start) and Counter (bumped by
// the sender for every packet it sends in one incarnation). For each sender
// it remembers the highest incarnation seen and, within it, which counters
// in a sliding window of ReplayWindowSize below the highest one were seen.
//
// A packet is a replay when its incarnation is lower than the sender's
// highest, or when it has the same incarnation and a counter already seen or
// too old for the window. A higher incarnation (the sender restarted) resets
// the window.
//
// Replay protection only means something for sealed packets: without a key
// anyone can forge a fresh header. Call Accept only after Open and Decode
// (or DecodeHeader) succeeded, or a forged packet could advance the window.
//
// Memory is bounded: at most maxSenders senders are remembered, the least
// recently accepted is forgotten first. A forgotten sender's old packets
// would be accepted again, so size maxSenders above the number of nodes on
// the LAN.
//
// A ReplayWindow is safe for concurrent use (one mutex guards it).
type ReplayWindow struct {
	// Strict makes the first packet accepted from a sender, and the first
	// of each new incarnation, a floor: older counters of that
	// incarnation are then rejected, as if already seen. Without it they
	// are accepted once while within the window, so a receiver that
	// restarted (and so remembers no sender) would accept, once each, a
	// sender's recorded packets of the last ReplayWindowSize counters.
	// The price is that packets overtaken by the first one (reordering at
	// the very start) are dropped; the protocol retransmits. Set it
	// before the first Accept.
	Strict bool

	mu         sync.Mutex
	maxSenders int
	senders    map[NodeID]*replayEntry
	// LRU list: head is the most recently accepted sender.
	head, tail *replayEntry
}

type replayEntry struct {
	id          NodeID
	incarnation uint64
	last        uint64               // highest counter seen in incarnation
	ring        [replayBlocks]uint64 // bit c%len: counter c was seen
	prev, next  *replayEntry
}

// NewReplayWindow returns a window remembering at most maxSenders senders
// (at least one).
func NewReplayWindow(maxSenders int) *ReplayWindow {
	maxSenders = max(maxSenders, 1)
	return &ReplayWindow{
		maxSenders: maxSenders,
		senders:    make(map[NodeID]*replayEntry, min(maxSenders, 1024)),
	}
}

// Check reports whether a packet with header h would be accepted, without
// recording it. It returns nil or an error wrapping ErrReplay.
func (w *ReplayWindow) Check(h Header) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.senders[h.From]; e != nil {
		return e.check(h)
	}
	return nil
}

// Accept checks h like Check and, if the packet is fresh, records it. It
// returns nil or an error wrapping ErrReplay.
func (w *ReplayWindow) Accept(h Header) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.senders[h.From]
	switch {
	case e == nil:
		if len(w.senders) >= w.maxSenders {
			w.remove(w.tail)
		}
		e = &replayEntry{id: h.From}
		w.senders[h.From] = e
		e.reset(h, w.Strict)
	case h.Incarnation > e.incarnation:
		w.unlink(e)
		e.reset(h, w.Strict)
	default:
		if err := e.check(h); err != nil {
			return err
		}
		w.unlink(e)
		e.record(h.Counter)
	}
	w.pushFront(e)
	return nil
}

// Forget drops everything known about sender id, for example when an
// operator knows the node was rebuilt with a fresh state file (and so a
// lower incarnation). Its old packets become acceptable again.
func (w *ReplayWindow) Forget(id NodeID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.senders[id]; e != nil {
		w.remove(e)
	}
}

// Len returns the number of senders remembered.
func (w *ReplayWindow) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.senders)
}

func (e *replayEntry) check(h Header) error {
	switch {
	case h.Incarnation < e.incarnation:
		return errorf(ErrReplay, "wire: replay from node %d: incarnation %d is older than %d", h.From, h.Incarnation, e.incarnation)
	case h.Incarnation > e.incarnation, h.Counter > e.last:
		return nil
	case e.last-h.Counter > ReplayWindowSize:
		return errorf(ErrReplay, "wire: replay from node %d: counter %d is older than the window (highest %d, window %d)", h.From, h.Counter, e.last, ReplayWindowSize)
	case e.ring[(h.Counter/64)%replayBlocks]&(1<<(h.Counter%64)) != 0:
		return errorf(ErrReplay, "wire: replay from node %d: counter %d already seen (incarnation %d)", h.From, h.Counter, h.Incarnation)
	}
	return nil
}

// reset starts a new incarnation whose first packet is h. With floor, every
// counter below h's is marked as seen.
func (e *replayEntry) reset(h Header, floor bool) {
	e.incarnation = h.Incarnation
	e.last = h.Counter
	e.ring = [replayBlocks]uint64{}
	if floor {
		// Older blocks are full; in h's block, bits up to h's counter.
		// Later blocks are cleared as the counter reaches them.
		for i := range e.ring {
			e.ring[i] = ^uint64(0)
		}
		c := h.Counter
		e.ring[(c/64)%replayBlocks] = 1<<(c%64+1) - 1 // all ones for c%64 == 63
		return
	}
	e.record(h.Counter)
}

// record marks counter c as seen. When c moves the window forward, the ring
// blocks between the old and the new highest counter are cleared: they held
// counters now older than the window.
func (e *replayEntry) record(c uint64) {
	if c > e.last {
		cur, next := e.last/64, c/64
		for i := cur + 1; i <= next && i <= cur+replayBlocks; i++ {
			e.ring[i%replayBlocks] = 0
		}
		e.last = c
	}
	e.ring[(c/64)%replayBlocks] |= 1 << (c % 64)
}

func (w *ReplayWindow) pushFront(e *replayEntry) {
	e.prev, e.next = nil, w.head
	if w.head != nil {
		w.head.prev = e
	}
	w.head = e
	if w.tail == nil {
		w.tail = e
	}
}

func (w *ReplayWindow) unlink(e *replayEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		w.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		w.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (w *ReplayWindow) remove(e *replayEntry) {
	w.unlink(e)
	delete(w.senders, e.id)
}
