package quorum

import (
	"slices"
	"time"

	"github.com/groupd/groupd/wire"
)

// A voter is a process: an ID and a boot. Every process announces how long
// it has run and where it keeps its state (wire.Quorum: Age, Home; a
// member list carries its members' homes). A new boot of a known ID is the
// same voter restarted when it lives at the same home, or carries the
// node's state (it did not start fresh: wire.FlagFresh), or, for a node
// known only from a member list, started before that list named it.
// Otherwise it is one more process: a second process given an ID in use,
// typically, on another machine or data dir; so is a process a successor
// replaced if it is heard again. Such an ID is disputed: a leader counts
// the grants of its oldest process only, and only when a later one
// started fresh (none when two carry the node's state: a copied data
// dir), and a member grants no other of its processes; so a second
// process started on the other side of a partition cannot make a quorum
// there while the first counts here. The roll forgets a voter that left
// gracefully (memberlist), or that has not been heard for a timeout.

// MaxBootsPerID bounds the processes a Roll keeps for one ID: each one
// beyond the first counts as one more voter, and a flood of made-up boots
// must not grow the roll without bound.
const MaxBootsPerID = 4

// voter is one process of the roll.
type voter struct {
	boot uint64 // 0: known only from a member list
	home uint32 // where it keeps its state (0: unknown)
	// prev is the boot this one replaced (a restart), which started at
	// prevStarted: heard again, saying it ran after this one started, it
	// is one more process.
	prev        uint64
	prevStarted time.Time
	fresh       bool // it started without a saved state (wire.FlagFresh)
	// started is when it started, as its announced age says (zero for a
	// node known only from a member list: it ran before).
	started time.Time
	// q is the settings it last announced; heardQ whether it announced
	// any (a node known only from a member list has not).
	q      wire.Quorum
	heardQ bool
	// heard is when it was last heard: a packet of its boot, or, for the
	// newest process of its ID, a member list that names the ID. listed
	// is when a member list that named its ID last arrived, while its
	// boot was unknown: the process that list named started before it.
	heard, listed time.Time
}

// Roll is the voters a node knows of, other than itself, by ID. Its zero
// value is not usable: make one with NewRoll.
type Roll struct {
	self    wire.NodeID
	maxIDs  int           // the IDs it holds at most
	settle  time.Duration // how late a restart's packet may be (see Heard)
	byID    map[wire.NodeID][]*voter
	size    int  // processes in all
	changed bool // since the last Rule
}

// NewRoll returns an empty roll for node self, holding at most maxIDs IDs.
// A packet of a process that a successor replaced proves that it still
// runs only when sent more than settle after the successor started (a
// node's AnswerTimeout: delayed, duplicated or held packets arrive
// within it).
func NewRoll(self wire.NodeID, maxIDs int, settle time.Duration) *Roll {
	return &Roll{self: self, maxIDs: maxIDs, settle: settle, byID: make(map[wire.NodeID][]*voter), changed: true}
}

// Size is the number of processes the roll holds.
func (r *Roll) Size() int { return r.size }

// Changed reports whether the roll changed since the last Rule.
func (r *Roll) Changed() bool { return r.changed }

// Rule is the rule the roll gives a node with settings (expect, tie): a
// majority of the largest of expect, every Expect a voter announced, and
// the processes it holds plus the node itself; the tie-breaker only when
// every voter announced the same settings and they count no more voters
// than expect.
func (r *Roll) Rule(expect int, tie wire.NodeID) Rule {
	r.changed = false
	// Every process counts: a second process of an ID is one more voter
	// (its grants count for nothing, see Counts).
	voters := max(expect, r.size+1)
	agree := true
	for _, ps := range r.byID {
		for _, v := range ps {
			if !v.heardQ {
				continue
			}
			voters = max(voters, int(v.q.Expect))
			if int(v.q.Expect) != expect || v.q.TieBreaker != tie {
				agree = false
			}
		}
	}
	if !agree || voters != expect {
		tie = 0
	}
	return Rule{Voters: voters, Tie: tie}
}

// Disputed reports whether the roll holds more than one process of id.
func (r *Roll) Disputed(id wire.NodeID) bool { return len(r.byID[id]) > 1 }

// Counts reports whether a leader counts the grants of process (id,
// boot): of a disputed ID only its oldest process, when a later one
// started fresh (a second process given the ID, or the node after its data
// dir was lost); none when every later one carried the node's state (a
// copied data dir, say).
func (r *Roll) Counts(id wire.NodeID, boot uint64) bool {
	ps := r.byID[id]
	if len(ps) <= 1 {
		return true
	}
	oldest := ps[0]
	for _, p := range ps[1:] {
		if p.started.Before(oldest.started) {
			oldest = p
		}
	}
	if oldest.boot != boot {
		return false
	}
	for _, p := range ps {
		if p != oldest && !p.fresh {
			return false
		}
	}
	return true
}

// Extra lists the IDs the roll holds more than one process of, sorted.
func (r *Roll) Extra() []wire.NodeID {
	var ids []wire.NodeID
	for id, ps := range r.byID {
		if len(ps) > 1 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Heard records a packet of process (id, boot) at now: fresh says it
// started without a saved state, q is the settings, age and home it
// announced (hasQ).
func (r *Roll) Heard(now time.Time, id wire.NodeID, boot uint64, fresh bool, q wire.Quorum, hasQ bool) {
	if id == r.self || id == 0 {
		return
	}
	var v *voter
	for _, p := range r.byID[id] {
		if p.boot == boot {
			v = p
			break
		}
	}
	if v == nil {
		v = r.newBoot(now, id, process{boot: boot, fresh: fresh, q: q, hasQ: hasQ})
		if v == nil {
			return
		}
	}
	v.heard = now
	if hasQ && q.Home != 0 {
		v.home = q.Home
	}
	if hasQ && (!v.heardQ || v.q.Expect != q.Expect || v.q.TieBreaker != q.TieBreaker) {
		r.changed = true
		v.q, v.heardQ = q, true
	}
}

// process is what a packet tells of the process that sent it.
type process struct {
	boot  uint64
	fresh bool
	q     wire.Quorum // its Age and Home, when hasQ
	hasQ  bool
}

// newBoot judges a boot of id the roll does not hold: the process a member
// list named, a process of the ID restarted (it takes its place), or one
// more process. It returns the process, or nil when the roll is full or
// the packet proves nothing (a late packet of a process since replaced, or
// one that does not say when and where its sender started).
func (r *Roll) newBoot(now time.Time, id wire.NodeID, p process) *voter {
	started := now // not announced: as if it started now
	if p.hasQ {
		started = now.Add(-time.Duration(p.q.Age) * time.Millisecond)
	}
	home := p.q.Home
	ps := r.byID[id]
	if len(ps) > 0 && !p.hasQ {
		// A packet that says nothing of its sender's age and home
		// (a Ready, a Yes): not judged until one that does.
		return nil
	}
	for i := len(ps) - 1; i >= 0; i-- {
		v := ps[i]
		if v.prev == p.boot && p.boot != 0 {
			// The process a successor replaced: a packet it sent
			// before its successor started (delayed, duplicated,
			// held by a paused process) proves nothing; one sent
			// since, that it still runs.
			sent := v.prevStarted.Add(time.Duration(p.q.Age) * time.Millisecond)
			if !p.hasQ || !sent.After(v.started.Add(r.settle)) {
				return nil
			}
			return r.addProcess(id, p.boot, p.fresh, started)
		}
		sameHome := home != 0 && v.home == home
		listed := v.boot == 0 && v.home == 0 && started.Before(v.listed.Add(r.settle))
		if sameHome || listed {
			v.replace(p.boot, p.fresh, started)
			return v
		}
	}
	if len(ps) > 0 && !p.fresh {
		// It carries the node's state from elsewhere (its data dir
		// moved): the newest process restarted.
		ps[len(ps)-1].replace(p.boot, false, started)
		return ps[len(ps)-1]
	}
	v := r.addProcess(id, p.boot, p.fresh, started)
	if v != nil {
		v.home = home
	}
	return v
}

// replace makes v the process (boot, fresh, started): the one it was
// restarted.
func (v *voter) replace(boot uint64, fresh bool, started time.Time) {
	if v.boot != 0 {
		v.prev, v.prevStarted = v.boot, v.started
	}
	v.boot, v.fresh, v.started = boot, fresh, started
}

// addProcess adds a process of id to the roll: a first one, or one more
// (id is then disputed). It returns nil when the roll is full.
func (r *Roll) addProcess(id wire.NodeID, boot uint64, fresh bool, started time.Time) *voter {
	ps := r.byID[id]
	if len(ps) == 0 && len(r.byID) >= r.maxIDs {
		return nil
	}
	v := &voter{boot: boot, fresh: fresh, started: started}
	if len(ps) >= MaxBootsPerID {
		ps = slices.Delete(ps, 0, 1)
		r.size--
	}
	r.byID[id] = append(ps, v)
	r.size++
	r.changed = true
	return v
}

// Listed records the members of a member list the node holds, with their
// homes where the list carries them: known by ID, their newest process is
// heard now.
func (r *Roll) Listed(now time.Time, ms []wire.Member, homes []uint32) {
	for i, m := range ms {
		if m.ID == r.self {
			continue
		}
		home := uint32(0)
		if i < len(homes) {
			home = homes[i]
		}
		ps := r.byID[m.ID]
		if len(ps) == 0 {
			if len(r.byID) >= r.maxIDs {
				continue
			}
			r.byID[m.ID] = []*voter{{heard: now, listed: now, home: home}}
			r.size++
			r.changed = true
			continue
		}
		v := ps[len(ps)-1]
		v.heard = now
		if v.boot == 0 {
			v.listed = now
		}
		if v.home == 0 {
			v.home = home
		}
	}
}

// Left forgets a node that left gracefully: it no longer runs, and
// counting it would only take primary away from the rest.
func (r *Roll) Left(id wire.NodeID) {
	if ps, ok := r.byID[id]; ok {
		r.size -= len(ps)
		delete(r.byID, id)
		r.changed = true
	}
}

// Sweep forgets the processes not heard for timeout. The newest process
// of an ID that member reports in the node's member list is heard: its
// group vouches for it.
func (r *Roll) Sweep(now time.Time, timeout time.Duration, member func(wire.NodeID) bool) {
	for id, ps := range r.byID {
		if member(id) {
			ps[len(ps)-1].heard = now
		}
		kept := ps[:0]
		for _, v := range ps {
			if now.Sub(v.heard) < timeout {
				kept = append(kept, v)
			}
		}
		if len(kept) == len(ps) {
			continue
		}
		r.size -= len(ps) - len(kept)
		r.changed = true
		if len(kept) == 0 {
			delete(r.byID, id)
		} else {
			r.byID[id] = kept
		}
	}
}
