package invitation

import (
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/groupd/groupd/wire"
)

// tracker is what a coordinator knows of each member of its group (the
// paper's Up set: the coordinator itself included) and of each
// coordinator it failed to merge with, by ID. It bounds the set to
// MaxGroupSize; everything else it leaves to the roles that use it.
type tracker struct {
	up       map[wire.NodeID]*member
	backoffs map[wire.NodeID]*backoff
}

func newTracker() tracker {
	return tracker{up: make(map[wire.NodeID]*member), backoffs: make(map[wire.NodeID]*backoff)}
}

// member is one member of the Up set.
type member struct {
	m wire.Member
	// boot is the process the coordinator admitted (its Accept's):
	// only its acknowledgements grant the lease.
	boot uint64
	// heard is when the member last gave a sign of life (an Accept, a
	// ReadyAck, a BeatAck, an AreYouThere); granted is when the coordinator
	// sent the latest heartbeat whose acknowledgement granted its lease.
	heard, granted time.Time
	// acked is the latest heartbeat it acknowledged (retryAcks); claim the
	// quorum settings and rule it announced last (claimed: any).
	acked   uint64
	claim   wire.Quorum
	claimed bool
}

// backoff is how long a coordinator leaves another alone after an
// invitation it did not accept: under loss, merges that fail spend a
// number each.
type backoff struct {
	until time.Time
	wait  time.Duration
}

// get returns the member id, or nil.
func (t *tracker) get(id wire.NodeID) *member { return t.up[id] }

// has reports whether id is a member.
func (t *tracker) has(id wire.NodeID) bool { _, ok := t.up[id]; return ok }

// size is the number of members, the coordinator included.
func (t *tracker) size() int { return len(t.up) }

// all ranges over the members, in no order.
func (t *tracker) all() iter.Seq2[wire.NodeID, *member] { return maps.All(t.up) }

// admit makes mb the member id: it returns false, and admits nothing,
// when the set is full.
func (t *tracker) admit(id wire.NodeID, mb *member) bool {
	if _, ok := t.up[id]; !ok && len(t.up) >= MaxGroupSize {
		return false
	}
	t.up[id] = mb
	return true
}

// put makes mb the member id whatever the set's size: the coordinator
// itself always belongs.
func (t *tracker) put(id wire.NodeID, mb *member) { t.up[id] = mb }

// remove drops id from the set; it reports whether id was a member.
func (t *tracker) remove(id wire.NodeID) bool {
	_, ok := t.up[id]
	delete(t.up, id)
	return ok
}

// reset empties the set (a new group, or none).
func (t *tracker) reset() { clear(t.up) }

// ids lists the members, sorted.
func (t *tracker) ids() []wire.NodeID { return sortedIDs(t.up) }

// others lists the members but self, sorted.
func (t *tracker) others(self wire.NodeID) []wire.NodeID {
	return slices.DeleteFunc(t.ids(), func(id wire.NodeID) bool { return id == self })
}

// list is the member list the set gives, sorted by ID.
func (t *tracker) list() []wire.Member {
	ms := make([]wire.Member, 0, len(t.up))
	for _, mb := range t.up {
		ms = append(ms, mb.m)
	}
	sortMembers(ms)
	return ms
}

// backedOff reports whether the coordinator id is left alone at now.
func (t *tracker) backedOff(now time.Time, id wire.NodeID) bool {
	b := t.backoffs[id]
	return b != nil && now.Before(b.until)
}

// backOff leaves the coordinator id alone from now: for first at the
// first failure, twice as long at each next one, at most limit.
func (t *tracker) backOff(now time.Time, id wire.NodeID, first, limit time.Duration) {
	b := t.backoffs[id]
	if b == nil {
		b = &backoff{wait: first}
		t.backoffs[id] = b
	} else {
		b.wait = min(2*b.wait, limit)
	}
	b.until = now.Add(b.wait)
}

// forgive forgets id's back-off: it accepted.
func (t *tracker) forgive(id wire.NodeID) { delete(t.backoffs, id) }

// sweepBackoffs forgets the back-offs that ended more than keep ago.
func (t *tracker) sweepBackoffs(now time.Time, keep time.Duration) {
	for id, b := range t.backoffs {
		if now.After(b.until.Add(keep)) {
			delete(t.backoffs, id)
		}
	}
}
