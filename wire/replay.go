package wire

import (
	"slices"
	"sync"
)

// ReplayWindowSize (960) is how far behind a sender's highest accepted counter a
// packet may arrive and still be accepted (once). Counters are per sender,
// not per receiver: between two packets to one receiver a coordinator may
// send one to every other member, so the window is sized for a few hundred
// members' worth of reordering (for example under netem jitter), at 128
// bytes per sender.
const ReplayWindowSize = (replayBlocks - 1) * 64

const replayBlocks = 16 // a power of two; the ring holds replayBlocks*64 bits

// oldBoots is how many earlier verified boots of a sender are remembered, so
// that their replayed packets are told apart from a boot not yet verified.
const oldBoots = 4

// ReplayWindow rejects replayed packets. It relies on the header's Boot (a
// random nonce the sender draws at every start) and Counter (bumped by the
// sender for every packet of one boot).
//
// # Why boots are verified, not ordered
//
// An earlier design ordered a sender's lives by an incarnation number that
// had to grow across restarts. It did not survive state loss: a node whose
// data dir was wiped, or whose clock was behind, came back with a smaller
// incarnation and every peer dropped its packets as replays for as long as
// it lived. Random boots cannot be ordered, so instead a receiver accepts a
// boot only once the sender proved it is the live one: a packet from a boot
// the window has not verified is refused with ErrUnverified, and the
// runtime sends the sender a Challenge with a fresh random nonce, sealed
// for the sender's ID. The sender answers from its live boot with a
// Response echoing the nonce; Verify then records that boot, and packets of
// any other boot stay refused. A recorded packet cannot pass: it carries a
// boot that is either no longer live (so no Response will name it) or live
// but with counters the window has seen. A boot that was verified and then
// replaced is asked again, seldom (Superseded): if its process still runs
// (two processes with one ID, until one gives way), it answers, and its
// boot is the live one again. A recorded Response cannot pass
// either, as it echoes a nonce no challenge is waiting for.
//
// What remains: the packet that prompted a challenge, if held by the
// runtime, is accepted once its boot is verified even though it may be a
// recording of that live boot's last few packets; its effect is that of a
// delayed packet, which the protocol tolerates. The floor given to Verify
// bounds how old it may be.
//
// Replay protection only means something for sealed packets: without a key
// anyone can forge a fresh header. Call Accept only after Open and Decode
// (or DecodeHeader) succeeded, or a forged packet could advance the window.
//
// Memory is bounded: at most maxSenders senders are remembered, the least
// recently accepted is forgotten first. A forgotten sender is simply
// verified again.
//
// A ReplayWindow is safe for concurrent use (one mutex guards it).
type ReplayWindow struct {
	mu         sync.Mutex
	maxSenders int
	senders    map[NodeID]*replayEntry
	// LRU list: head is the most recently accepted sender.
	head, tail *replayEntry
}

type replayEntry struct {
	id         NodeID
	boot       uint64               // the verified live boot
	old        [oldBoots]uint64     // earlier verified boots, newest first
	last       uint64               // highest counter seen in boot
	ring       [replayBlocks]uint64 // bit c%len: counter c was seen
	prev, next *replayEntry
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
// recording it. It returns nil, or an error wrapping ErrReplay (a seen
// counter, one older than the window, or a boot that is no longer live) or
// ErrUnverified (a boot not yet verified: challenge the sender).
func (w *ReplayWindow) Check(h Header) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.check(w.senders[h.From], h)
}

// Accept checks h like Check and, if the packet is fresh, records it.
func (w *ReplayWindow) Accept(h Header) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.senders[h.From]
	if err := w.check(e, h); err != nil {
		return err
	}
	w.unlink(e)
	e.record(h.Counter)
	w.pushFront(e)
	return nil
}

func (w *ReplayWindow) check(e *replayEntry, h Header) error {
	if e == nil {
		return errorf(ErrUnverified, "wire: node %d: boot %016x not verified yet", h.From, h.Boot)
	}
	if h.Boot != e.boot {
		for _, b := range e.old {
			if b == h.Boot && b != 0 {
				return errorf(ErrReplay, "wire: replay from node %d: boot %016x is no longer live (live: %016x)", h.From, h.Boot, e.boot)
			}
		}
		return errorf(ErrUnverified, "wire: node %d: boot %016x not verified yet (verified: %016x)", h.From, h.Boot, e.boot)
	}
	switch {
	case h.Counter > e.last:
		return nil
	case e.last-h.Counter > ReplayWindowSize:
		return errorf(ErrReplay, "wire: replay from node %d: counter %d is older than the window (highest %d, window %d)", h.From, h.Counter, e.last, ReplayWindowSize)
	case e.ring[(h.Counter/64)%replayBlocks]&(1<<(h.Counter%64)) != 0:
		return errorf(ErrReplay, "wire: replay from node %d: counter %d already seen (boot %016x)", h.From, h.Counter, h.Boot)
	}
	return nil
}

// Verify records that boot is sender from's live boot, proven by a
// Response whose header is resp. Counters of that boot below floor are
// refused from now on, as if seen (pass the counter of the packet that
// prompted the challenge, or resp.Counter to accept nothing older than the
// Response); the Response's own counter is recorded. A boot verified
// earlier is forgotten as live and its packets become replays.
func (w *ReplayWindow) Verify(resp Header, floor uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.senders[resp.From]
	switch {
	case e == nil:
		if len(w.senders) >= w.maxSenders {
			w.remove(w.tail)
		}
		e = &replayEntry{id: resp.From}
		w.senders[resp.From] = e
	case e.boot == resp.Boot:
		// Already verified (a second Response): just record it.
		w.unlink(e)
		e.record(resp.Counter)
		w.pushFront(e)
		return
	default:
		w.unlink(e)
		copy(e.old[1:], e.old[:])
		e.old[0] = e.boot
	}
	e.boot = resp.Boot
	e.floor(min(floor, resp.Counter))
	e.record(resp.Counter)
	w.pushFront(e)
}

// Superseded reports whether h comes from a boot of its sender that was
// verified once and then replaced by another: a recording, or a process
// that still runs beside the one verified after it (a second process given
// its ID, which gives way). The runtime may challenge such a boot again,
// seldom: only a live process with the key answers, and its answer makes
// that boot the live one again.
func (w *ReplayWindow) Superseded(h Header) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.senders[h.From]
	if e == nil || h.Boot == e.boot || h.Boot == 0 {
		return false
	}
	return slices.Contains(e.old[:], h.Boot)
}

// Verified returns the boot of from that the window accepts, if any.
func (w *ReplayWindow) Verified(from NodeID) (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.senders[from]; e != nil {
		return e.boot, true
	}
	return 0, false
}

// Forget drops everything known about sender id: its next packets must
// be verified again.
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

// floor starts a boot whose counters below c count as seen. Older blocks
// are full; in c's block, the bits below c. Later blocks are cleared as the
// counter reaches them.
func (e *replayEntry) floor(c uint64) {
	e.last = c
	for i := range e.ring {
		e.ring[i] = ^uint64(0)
	}
	e.ring[(c/64)%replayBlocks] = 1<<(c%64) - 1
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
