package history

import (
	"slices"
	"time"

	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// Check is the outcome of one check point.
type Check struct {
	ID    int       // the mark's ID (AddMark)
	Label string    // the mark's label, or its spec
	Time  time.Time // where it was placed
	Kind  string    // "L1" or "L2"
	// Nodes are the nodes checked; nil for every live node.
	Nodes []wire.NodeID
	// Violations is empty when the check held.
	Violations []invariant.Violation
	// Heal is when the quiet period started (the last "heal" before the
	// check point; zero if none).
	Heal time.Time
	// ConvergedAfter is, for an L1 check of every live node, how long
	// after Heal the recorded views showed every live node converged for
	// good: the start of the converged stretch that lasts until the check
	// point (0 if it started before the heal; -1 if the views are not
	// converged at the check point, and for other checks).
	ConvergedAfter time.Duration
}

// Result is what a replay found.
type Result struct {
	Events   int // events replayed
	Stale    int // events of a dead incarnation, skipped
	Restated int // snapshots of an incarnation already seen, skipped
	Nodes    int
	Created  int // group numbers created (as inferred)
	Restarts int // restarts (start marks after a node's first events, and inferred from incarnations)
	Crashes  int // kill, stop and restart marks
	// Safety lists every S1–S5, LT1–LT2 and LP1 violation over the history.
	Safety []invariant.Violation
	Checks []Check
}

// OK reports whether the history is clean: no safety violation and every
// check point held.
func (r Result) OK() bool {
	if len(r.Safety) > 0 {
		return false
	}
	for _, c := range r.Checks {
		if len(c.Violations) > 0 {
			return false
		}
	}
	return true
}

// Check returns the outcome of check point id, if the replay reached it.
func (r Result) Check(id int) (Check, bool) {
	for _, c := range r.Checks {
		if c.ID == id {
			return c, true
		}
	}
	return Check{}, false
}

// replayer feeds records through a checker with the adapter rules of the
// package doc. Replay and FirstTime both step through one, so they cannot
// disagree on which views were live when.
type replayer struct {
	c         *invariant.Checker
	prio      map[wire.NodeID]uint8
	last      map[wire.NodeID]wire.GroupNumber
	inc       map[wire.NodeID]uint64
	dead      map[wire.NodeID]bool
	nodes     map[wire.NodeID]bool
	heal      time.Time
	converged time.Time // start of the current converged stretch; zero if not converged
	res       Result
}

func newReplayer(prio map[wire.NodeID]uint8) *replayer {
	return &replayer{c: invariant.New(), prio: prio, last: map[wire.NodeID]wire.GroupNumber{},
		inc: map[wire.NodeID]uint64{}, dead: map[wire.NodeID]bool{}, nodes: map[wire.NodeID]bool{}}
}

// step applies one record and reports whether the live views may have
// changed.
func (p *replayer) step(r record) bool {
	switch r.kind {
	case kEvent:
		if !p.event(r) {
			return false
		}
	case kCrash:
		for _, n := range r.nodes {
			p.c.Crash(r.t, n)
			// A killed leader's lease ends with its process, as far as
			// a recorded history tells (its readers are gone; a
			// groupd exec child stops by the lease on its own clock).
			p.c.Unlead(r.t, n)
			p.dead[n] = true
			p.res.Crashes++
		}
	case kStart:
		for _, n := range r.nodes {
			if p.nodes[n] {
				p.res.Restarts++ // not the first start
			}
			p.c.Restart(r.t, n)
			p.dead[n] = false
			delete(p.inc, n) // whatever incarnation comes next is the new process's
			p.last[n] = wire.GroupNumber{}
		}
	case kLost:
		for _, n := range r.nodes {
			// The numbers and the term floor the state file kept are
			// gone: S5 and LP1's growing terms start again from here.
			p.c.HeldFloor(n, wire.GroupNumber{})
			p.c.StateLost(n)
		}
		return false
	case kHeal:
		p.heal = r.t
		return false
	case kCheck:
		p.check(r)
		return false
	default:
		return false
	}
	switch ok := p.allConverged(); {
	case !ok:
		p.converged = time.Time{}
	case p.converged.IsZero():
		p.converged = r.t
	}
	return true
}

// event applies one event; false when it was skipped.
func (p *replayer) event(r record) bool {
	n, st := r.node, r.ev.New
	p.nodes[n] = true
	switch prev, seen := p.inc[n]; {
	case p.dead[n] && seen && st.Incarnation <= prev:
		// The node is down (a mark said so) and this is not a newer
		// process: what a dying process says is not checked.
		p.res.Stale++
		return false
	case seen && st.Incarnation < prev:
		p.res.Stale++
		return false
	case seen && st.Incarnation == prev && r.ev.Reason == schema.ReasonSnapshot:
		p.res.Restated++
		return false
	case seen && st.Incarnation > prev:
		if !p.dead[n] {
			p.c.Crash(r.t, n)
		}
		p.c.Restart(r.t, n)
		p.res.Restarts++
		p.last[n] = wire.GroupNumber{}
	}
	if r.backdated {
		// Its time is not when its view took effect: the view came with
		// the node's events at their own times, later than this one's
		// (sorted at this time, it would show the node going back to an
		// older view, and creating a number twice). Only the leadership
		// it ends belongs to its time.
		if st.Expect > 0 && r.ev.Reason == schema.ReasonLeaderStop {
			p.c.Unlead(r.t, n)
		}
		p.res.Events++
		return false
	}
	p.inc[n], p.dead[n] = st.Incarnation, false
	p.res.Events++
	v := ToStatus(st, p.prio)
	p.c.Persisted(r.t, n, v.Counter)
	if g := v.Group; !g.IsZero() && g.ID == n && g != p.last[n] {
		p.res.Created++
		p.res.Safety = append(p.res.Safety, p.c.Created(invariant.Creation{Time: r.t, Node: n, Group: g})...)
	}
	p.last[n] = v.Group
	p.res.Safety = append(p.res.Safety, p.c.Observe(invariant.Observation{Time: r.t, Node: n, Status: v, Alive: true})...)
	// LP1 (quorum mode): a primary leadership runs from its leader-start
	// to its leader-stop, which the daemon stamps with the lease's end
	// when the lease ran out; a leader-term goes on under a new term.
	if st.Expect > 0 {
		switch r.ev.Reason {
		case schema.ReasonLeaderStart, schema.ReasonLeaderTerm:
			p.res.Safety = append(p.res.Safety, p.c.Lead(r.t, n, st.Term, time.Time{})...)
		case schema.ReasonLeaderStop:
			p.c.Unlead(r.t, n)
		}
	}
	return true
}

func (p *replayer) check(r record) {
	ck := Check{ID: r.seq, Label: r.mark.Label, Time: r.t, Kind: r.check, Nodes: r.nodes, Heal: p.heal, ConvergedAfter: -1}
	if ck.Label == "" {
		ck.Label = r.mark.Spec
	}
	switch {
	case r.check == "L2":
		ck.Violations = p.c.CheckFailover(r.t, r.nodes)
	case r.nodes == nil:
		ck.Violations = p.c.CheckConverged(r.t)
		if !p.converged.IsZero() && len(ck.Violations) == 0 {
			ck.ConvergedAfter = max(p.converged.Sub(p.heal), 0)
		}
	default:
		side, missing := p.views(r.nodes)
		for _, id := range missing {
			ck.Violations = append(ck.Violations, invariant.Violation{Invariant: "L1", Time: r.t, Nodes: []wire.NodeID{id},
				Detail: "node is down or has reported no view"})
		}
		ck.Violations = append(ck.Violations, invariant.Converged(r.t, side)...)
	}
	p.res.Checks = append(p.res.Checks, ck)
}

// views returns the live views of ids, in the order of ids, and the ids
// without one.
func (p *replayer) views(ids []wire.NodeID) (sts []invitation.Status, missing []wire.NodeID) {
	live := p.c.Live()
	for _, id := range ids {
		i := slices.IndexFunc(live, func(s invitation.Status) bool { return s.ID == id })
		if i < 0 {
			missing = append(missing, id)
			continue
		}
		sts = append(sts, live[i])
	}
	return sts, missing
}

// allConverged is CheckConverged without the report: every live node has
// a view and the views are converged.
func (p *replayer) allConverged() bool {
	live := p.c.Live()
	return len(live) == len(p.c.LiveIDs()) && len(live) > 0 && invariant.IsConverged(live)
}

// Replay feeds the whole history, in time order, through a fresh
// invariant.Checker and evaluates the check points on the way, up to the
// first "end" mark.
func (h *History) Replay() Result { return h.ReplayUntil(time.Time{}) }

// ReplayUntil is Replay of the records up to until (zero: all).
func (h *History) ReplayUntil(until time.Time) Result {
	recs, prio := h.sorted()
	p := newReplayer(prio)
	for _, r := range recs {
		if (!until.IsZero() && r.t.After(until)) || r.kind == kEnd {
			break
		}
		p.step(r)
	}
	p.res.Nodes = len(p.nodes)
	return p.res
}

// FirstTime replays the history and returns the first instant, at or after
// from, at which ok holds on the live views of ids (in the order of ids; a
// node without a live view makes it false).
func (h *History) FirstTime(from time.Time, ids []wire.NodeID, ok func([]invitation.Status) bool) (time.Time, bool) {
	recs, prio := h.sorted()
	p := newReplayer(prio)
	holds := func() bool {
		sts, missing := p.views(ids)
		return len(missing) == 0 && ok(sts)
	}
	checked := false
	for _, r := range recs {
		if r.kind == kEnd {
			break
		}
		if !checked && r.t.After(from) {
			checked = true
			if holds() {
				return from, true
			}
		}
		if p.step(r) && checked && holds() {
			return r.t, true
		}
	}
	if !checked && holds() {
		return from, true
	}
	return time.Time{}, false
}
