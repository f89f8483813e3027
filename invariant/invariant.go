package invariant

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// Observation is one node's view at one instant. Alive false means the node
// is down (the same as a Crash record). The Checker keeps Status.Members as
// given: callers must not modify the slice afterwards (invitation.Status and
// the Old/New views of invitation.Event share the machine's list, which it
// replaces and never edits).
type Observation struct {
	Time   time.Time
	Node   wire.NodeID
	Status invitation.Status
	Alive  bool
}

// Creation records that Node adopted Group, a number it created itself (in
// the simulator: its Status().Group changed to a number ending in its ID).
type Creation struct {
	Time  time.Time
	Node  wire.NodeID
	Group wire.GroupNumber
}

// Violation is one broken invariant.
type Violation struct {
	Invariant string // "S1" … "S4", "L1", "L2"
	Time      time.Time
	Group     wire.GroupNumber // the group concerned, if any
	Nodes     []wire.NodeID    // the nodes concerned
	Detail    string
}

// String is one readable line: invariant, time, group, nodes, detail.
func (v Violation) String() string {
	var b strings.Builder
	b.WriteString(v.Invariant)
	b.WriteString(" violated at ")
	b.WriteString(FormatTime(v.Time))
	if !v.Group.IsZero() {
		b.WriteString(" group ")
		b.WriteString(v.Group.String())
	}
	if len(v.Nodes) > 0 {
		b.WriteString(" nodes ")
		b.WriteString(formatIDs(v.Nodes))
	}
	b.WriteString(": ")
	b.WriteString(v.Detail)
	return b.String()
}

// Error makes a Violation usable as an error.
func (v Violation) Error() string { return v.String() }

// FormatTime prints t as a clock time with microseconds, which reads well
// for both the simulator's virtual clock (which starts at midnight) and a
// real run.
func FormatTime(t time.Time) string { return t.UTC().Format("15:04:05.000000") }

func formatIDs(ids []wire.NodeID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(uint64(id), 10)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// view is the checker's knowledge of one node.
type view struct {
	alive bool
	has   bool // st is a real observation (not a fresh restart)
	st    invitation.Status
}

type groupVersion struct {
	g wire.GroupNumber
	v uint64
}

// list is the member list that the live Normal holders of one
// (group, version) agree on.
type list struct {
	members []wire.Member
	holders []wire.NodeID
}

// Checker checks S1–S4 on a stream of records and L1, L2 on demand. It is
// not safe for concurrent use. The zero value is not usable; call New.
type Checker struct {
	views    map[wire.NodeID]*view
	created  map[wire.GroupNumber]Creation
	newest   map[wire.NodeID]wire.GroupNumber // each node's newest number
	durable  map[wire.NodeID]uint64
	coords   map[wire.GroupNumber][]wire.NodeID // live Normal coordinators
	lists    map[groupVersion]*list
	terms    map[wire.GroupNumber]wire.NodeID // leadership terms held, by holder
	lastTerm map[wire.NodeID]wire.GroupNumber
	// held is each node's highest group number held (Reorganization or
	// Normal), for S5.
	held map[wire.NodeID]wire.GroupNumber
	// leads are the primary leaderships (quorum mode) told by Lead, by
	// node: until when each may act; maxTerm the highest term a primary
	// leader held, and whose (LP1).
	leads     map[process]*leadership
	maxTerm   wire.GroupNumber
	maxTermOf wire.NodeID
	// MinGap is the least time between the end of one primary leader's
	// lease and the start of another's (design §8's LeaseMargin, less
	// what drifting clocks take of it); zero checks only that they do
	// not overlap.
	MinGap time.Duration
}

// leadership is one node's primary leadership as the checker knows it.
type leadership struct {
	term wire.GroupNumber
	end  time.Time // when its lease ends; the zero Time while it runs without one
	open bool      // it runs without a lease (until Unlead)
}

// New returns a checker with an empty history.
func New() *Checker {
	return &Checker{
		views:    make(map[wire.NodeID]*view),
		created:  make(map[wire.GroupNumber]Creation),
		newest:   make(map[wire.NodeID]wire.GroupNumber),
		terms:    make(map[wire.GroupNumber]wire.NodeID),
		lastTerm: make(map[wire.NodeID]wire.GroupNumber),
		durable:  make(map[wire.NodeID]uint64),
		coords:   make(map[wire.GroupNumber][]wire.NodeID),
		lists:    make(map[groupVersion]*list),
		held:     make(map[wire.NodeID]wire.GroupNumber),
		leads:    make(map[process]*leadership),
	}
}

// HeldFloor sets the group number node's next held number must not be
// below (S5), as a restart from its state file leaves it: the last group
// that file holds. Without it the floor is the highest number the node
// was seen holding, across restarts.
func (c *Checker) HeldFloor(node wire.NodeID, g wire.GroupNumber) { c.held[node] = g }

// process is one process of a node: the node's own (0), or a second
// process started with its ID (the simulator's slot of it), whose primary
// leaderships LP1 holds apart from the first's.
type process struct {
	node wire.NodeID
	proc int32
}

func (p process) String() string {
	if p.proc == 0 {
		return fmt.Sprintf("node %d", p.node)
	}
	return fmt.Sprintf("node %d (a second process with its ID, slot %d)", p.node, p.proc)
}

// Lead records that node is a primary leader in term at t (quorum mode),
// its lease running until end; a zero end means a leadership without a
// lease, which lasts until Unlead. It checks LP1: no other node's primary
// leadership (a lease counts until its end, even past its holder's crash
// or stop) runs at t, and a new primary leadership's term is not below the
// term of any earlier one (above, if another node held it).
func (c *Checker) Lead(t time.Time, node wire.NodeID, term wire.GroupNumber, end time.Time) []Violation {
	return c.LeadProcess(t, node, 0, term, end)
}

// LeadProcess is Lead for process proc of node: 0 for the node's own, any
// other value for a second process started with its ID (an operator's
// mistake: one on each side of a partition, say), whose primary
// leaderships must not overlap the first's either. Terms are not checked
// for a second process: its numbers are its own to make.
func (c *Checker) LeadProcess(t time.Time, node wire.NodeID, proc int32, term wire.GroupNumber, end time.Time) []Violation {
	var out []Violation
	me := process{node, proc}
	l := c.leads[me]
	fresh := l == nil || l.term != term || (!l.open && !l.end.After(t))
	for o, l := range c.leads {
		if o == me || !(l.open || l.end.After(t) || fresh && l.end.Add(c.MinGap).After(t)) {
			continue
		}
		if !l.open && !l.end.After(t) {
			out = append(out, Violation{Invariant: "LP1", Time: t, Group: term, Nodes: []wire.NodeID{o.node, node},
				Detail: fmt.Sprintf("%s became a primary leader (term %s) %v after %s's lease ended (term %s, until %s): less than the margin %v",
					me, term, t.Sub(l.end), o, l.term, FormatTime(l.end), c.MinGap)})
			continue
		}
		until := "until it stops"
		if !l.open {
			until = "until " + FormatTime(l.end)
		}
		out = append(out, Violation{Invariant: "LP1", Time: t, Group: term, Nodes: []wire.NodeID{o.node, node},
			Detail: fmt.Sprintf("two primary leaders at once: %s (term %s, %s) and %s (term %s)", o, l.term, until, me, term)})
	}
	if fresh && proc == 0 {
		if term.Less(c.maxTerm) || term == c.maxTerm && c.maxTermOf != node && !c.maxTerm.IsZero() {
			out = append(out, Violation{Invariant: "LP1", Time: t, Group: term, Nodes: []wire.NodeID{c.maxTermOf, node},
				Detail: fmt.Sprintf("node %d became a primary leader with term %s after node %d was one with term %s: terms of primary leaders went backwards", node, term, c.maxTermOf, c.maxTerm)})
		}
		if c.maxTerm.Less(term) {
			c.maxTerm, c.maxTermOf = term, node
		}
	}
	if l == nil {
		l = &leadership{}
		c.leads[me] = l
	}
	if fresh || end.After(l.end) || end.IsZero() {
		l.term, l.open = term, end.IsZero()
		if !end.IsZero() {
			l.end = end
		}
	}
	return out
}

// StateLost records that node's state file was lost or restored from an
// older copy: the term floor it kept is gone, and a leader whose term is
// below an earlier primary leader's may be granted once. LP1's check that
// terms grow starts again from here (docs/design.md §8 states the
// assumption); that no two primary leaders overlap does not depend on the
// state file and is still checked.
func (c *Checker) StateLost(node wire.NodeID) {
	c.maxTerm, c.maxTermOf = wire.GroupNumber{}, 0
}

// Unlead records that node stopped being a primary leader at t. A lease
// still counts until its end; a leadership without one ends here.
func (c *Checker) Unlead(t time.Time, node wire.NodeID) { c.UnleadProcess(t, node, 0) }

// UnleadProcess is Unlead for process proc of node (see LeadProcess).
func (c *Checker) UnleadProcess(t time.Time, node wire.NodeID, proc int32) {
	if l := c.leads[process{node, proc}]; l != nil && l.open {
		l.open, l.end = false, t
	}
}

// Observe records a node's new view and checks S2, S3 and S4 against the
// views of the other live nodes.
func (c *Checker) Observe(o Observation) []Violation {
	v := c.views[o.Node]
	if v == nil {
		v = &view{}
		c.views[o.Node] = v
	}
	var prev *invitation.Status
	if v.alive && v.has {
		c.withdraw(o.Node, &v.st)
		p := v.st
		prev = &p
	}
	if !o.Alive {
		v.alive, v.has = false, false
		return nil
	}
	v.alive, v.has, v.st = true, true, o.Status
	out := append(c.leadership(o.Time, o.Node, prev, &v.st), c.contribute(o.Time, o.Node, &v.st)...)
	return append(out, c.heldGrows(o.Time, o.Node, &v.st)...)
}

// heldGrows checks S5: the group numbers a node holds (Reorganization or
// Normal) only grow, across invitations, merges, failovers and restarts.
func (c *Checker) heldGrows(t time.Time, node wire.NodeID, st *invitation.Status) []Violation {
	if (st.State != wire.StateNormal && st.State != wire.StateReorganization) || st.Group.IsZero() {
		return nil
	}
	last := c.held[node]
	if st.Group.Less(last) {
		return []Violation{{Invariant: "S5", Time: t, Group: st.Group, Nodes: []wire.NodeID{node},
			Detail: fmt.Sprintf("node %d holds group %s after %s: its group numbers went down", node, st.Group, last)}}
	}
	c.held[node] = st.Group
	return nil
}

// Created records that a node adopted a number it created, and checks S1:
// the number is new, ends in the node's ID, and (if the node's persisted
// counter is tracked) its sequence was persisted first.
func (c *Checker) Created(r Creation) []Violation {
	var out []Violation
	if r.Group.ID != r.Node {
		out = append(out, Violation{Invariant: "S1", Time: r.Time, Group: r.Group, Nodes: []wire.NodeID{r.Node},
			Detail: fmt.Sprintf("node %d created a number ending in another node's ID", r.Node)})
	}
	if prev, ok := c.created[r.Group]; ok {
		out = append(out, Violation{Invariant: "S1", Time: r.Time, Group: r.Group, Nodes: []wire.NodeID{prev.Node, r.Node},
			Detail: fmt.Sprintf("group number created twice: first by node %d at %s, again by node %d", prev.Node, FormatTime(prev.Time), r.Node)})
	} else {
		c.created[r.Group] = r
	}
	if last, ok := c.newest[r.Node]; ok && !last.Less(r.Group) {
		out = append(out, Violation{Invariant: "S1", Time: r.Time, Group: r.Group, Nodes: []wire.NodeID{r.Node},
			Detail: fmt.Sprintf("node %d created %s after %s: its numbers went backwards (state lost on a clock set back?)", r.Node, r.Group, last)})
	}
	if last := c.newest[r.Node]; last.Less(r.Group) {
		c.newest[r.Node] = r.Group
	}
	if d, ok := c.durable[r.Node]; ok && r.Group.Seq > d {
		out = append(out, Violation{Invariant: "S1", Time: r.Time, Group: r.Group, Nodes: []wire.NodeID{r.Node},
			Detail: fmt.Sprintf("node %d adopted sequence %d but its durable counter is only %d", r.Node, r.Group.Seq, d)})
	}
	return out
}

// Persisted records that a node's counter is durably saved as counter. From
// the first such record for a node on, Created and Sent check that the node
// uses only sequences it has persisted. Call it once at the start of a
// history with the counter each node starts from.
func (c *Checker) Persisted(t time.Time, node wire.NodeID, counter uint64) {
	c.durable[node] = counter
}

// Sent checks a message about to leave (or having left) its sender: every
// group number it carries that ends in the sender's ID must have a durable
// sequence (part of S1: the counter is persisted before any message carries
// the number). It checks nothing for a sender whose counter is not tracked.
func (c *Checker) Sent(t time.Time, m wire.Message) []Violation {
	d, ok := c.durable[m.From]
	if !ok {
		return nil
	}
	var out []Violation
	check := func(g wire.GroupNumber, where string) {
		if g.ID == m.From && g.Seq > d {
			out = append(out, Violation{Invariant: "S1", Time: t, Group: g, Nodes: []wire.NodeID{m.From},
				Detail: fmt.Sprintf("node %d sent %s carrying its number in the %s before persisting it (durable counter %d)", m.From, m, where, d)})
		}
	}
	check(m.Group, "header")
	if g, ok := BodyGroup(m.Body); ok {
		check(g, "body")
	}
	return out
}

// BodyGroup returns the group number a message body carries, if any.
func BodyGroup(b wire.Body) (wire.GroupNumber, bool) {
	switch b := b.(type) {
	case wire.AreYouThere:
		return b.Group, true
	case wire.Invitation:
		return b.Group, true
	case wire.Accept:
		return b.Group, true
	case wire.Ready:
		return b.Group, true
	case wire.ReadyAck:
		return b.Group, true
	case wire.Election:
		return b.Group, true
	case wire.Answer:
		return b.Group, true
	case wire.Coordinator:
		return b.Group, true
	}
	return wire.GroupNumber{}, false
}

// Crash records that a node stopped and lost its memory.
func (c *Checker) Crash(t time.Time, node wire.NodeID) {
	v := c.views[node]
	if v == nil {
		c.views[node] = &view{}
		return
	}
	if v.alive && v.has {
		c.withdraw(node, &v.st)
	}
	v.alive, v.has = false, false
}

// Restart records that a crashed node started again. Its view is unknown
// until the next Observe.
func (c *Checker) Restart(t time.Time, node wire.NodeID) {
	v := c.views[node]
	if v == nil {
		v = &view{}
		c.views[node] = v
	}
	if v.alive && v.has {
		c.withdraw(node, &v.st)
	}
	v.alive, v.has = true, false
}

// Alive reports whether the checker believes node is up.
func (c *Checker) Alive(node wire.NodeID) bool {
	v := c.views[node]
	return v != nil && v.alive
}

// Live returns the latest view of every live node that has one, by ID.
func (c *Checker) Live() []invitation.Status {
	var out []invitation.Status
	for _, v := range c.views {
		if v.alive && v.has {
			out = append(out, v.st)
		}
	}
	slices.SortFunc(out, func(a, b invitation.Status) int { return cmpID(a.ID, b.ID) })
	return out
}

// LiveIDs returns the IDs of every node the checker believes is up, sorted.
func (c *Checker) LiveIDs() []wire.NodeID {
	var out []wire.NodeID
	for id, v := range c.views {
		if v.alive {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// CheckConverged checks L1 on the latest views: every live node is Normal in
// one group coordinated by the highest-ranked live node, and so on (see
// Converged). A live node with no view yet counts as not converged.
func (c *Checker) CheckConverged(now time.Time) []Violation {
	var out []Violation
	for _, id := range c.LiveIDs() {
		if !c.views[id].has {
			out = append(out, Violation{Invariant: "L1", Time: now, Nodes: []wire.NodeID{id}, Detail: "live node has reported no view"})
		}
	}
	return append(out, Converged(now, c.Live())...)
}

// CheckFailover checks L2 for the given survivors on the latest views (see
// FailedOver).
func (c *Checker) CheckFailover(now time.Time, survivors []wire.NodeID) []Violation {
	var sts []invitation.Status
	var out []Violation
	for _, id := range survivors {
		v := c.views[id]
		if v == nil || !v.alive || !v.has {
			out = append(out, Violation{Invariant: "L2", Time: now, Nodes: []wire.NodeID{id}, Detail: "survivor is down or has reported no view"})
			continue
		}
		sts = append(sts, v.st)
	}
	return append(out, FailedOver(now, sts)...)
}

// withdraw removes a live view's contribution to the S2 and S4 indexes.
func (c *Checker) withdraw(node wire.NodeID, st *invitation.Status) {
	if st.State != wire.StateNormal {
		return
	}
	if st.Role() == invitation.Coordinator {
		hs := removeID(c.coords[st.Group], node)
		if len(hs) == 0 {
			delete(c.coords, st.Group)
		} else {
			c.coords[st.Group] = hs
		}
	}
	k := groupVersion{st.Group, st.Version}
	if l := c.lists[k]; l != nil {
		l.holders = removeID(l.holders, node)
		if len(l.holders) == 0 {
			delete(c.lists, k)
		}
	}
}

// leadership checks the leader invariants on a node's new view prev →
// st: LT1, no two nodes ever hold one term, and a node's terms grow; LT2,
// a leader stays leader while it still coordinates (merges it leads,
// members coming and going and renumbering its group leave it leader).
func (c *Checker) leadership(t time.Time, node wire.NodeID, prev *invitation.Status, st *invitation.Status) []Violation {
	var out []Violation
	if prev != nil && prev.Leader && !st.Leader && st.Role() == invitation.Coordinator && st.Group.ID == node {
		out = append(out, Violation{Invariant: "LT2", Time: t, Group: st.Group, Nodes: []wire.NodeID{node},
			Detail: fmt.Sprintf("node %d stopped leading (term %s) while it still coordinates %s", node, prev.Term, st.Group)})
	}
	if !st.Leader {
		return out
	}
	if st.Term.IsZero() || st.Term.ID != node {
		out = append(out, Violation{Invariant: "LT1", Time: t, Group: st.Term, Nodes: []wire.NodeID{node},
			Detail: fmt.Sprintf("node %d leads with term %s, not a number of its own", node, st.Term)})
	}
	if h, ok := c.terms[st.Term]; ok && h != node {
		out = append(out, Violation{Invariant: "LT1", Time: t, Group: st.Term, Nodes: []wire.NodeID{h, node},
			Detail: fmt.Sprintf("term %s held by node %d and by node %d", st.Term, h, node)})
	}
	if last, ok := c.lastTerm[node]; ok && last != st.Term && !last.Less(st.Term) {
		out = append(out, Violation{Invariant: "LT1", Time: t, Group: st.Term, Nodes: []wire.NodeID{node},
			Detail: fmt.Sprintf("node %d leads with term %s after term %s: terms went backwards", node, st.Term, last)})
	}
	c.terms[st.Term] = node
	c.lastTerm[node] = st.Term
	return out
}

// contribute adds a live view to the indexes, checking S2–S4.
func (c *Checker) contribute(t time.Time, node wire.NodeID, st *invitation.Status) []Violation {
	var out []Violation
	if st.ID != 0 && st.ID != node {
		out = append(out, Violation{Invariant: "S3", Time: t, Nodes: []wire.NodeID{node},
			Detail: fmt.Sprintf("observation of node %d carries the view of node %d", node, st.ID)})
	}
	if st.State != wire.StateNormal && st.State != wire.StateReorganization {
		return out
	}
	if st.Group.IsZero() {
		return append(out, Violation{Invariant: "S3", Time: t, Nodes: []wire.NodeID{node},
			Detail: fmt.Sprintf("node %d is %s without a group number", node, st.State)})
	}
	if st.State != wire.StateNormal {
		return out
	}
	// S3: a Normal view lists the node itself and its coordinator.
	if !hasMember(st.Members, node) || !hasMember(st.Members, st.Group.ID) {
		out = append(out, Violation{Invariant: "S3", Time: t, Group: st.Group, Nodes: []wire.NodeID{node},
			Detail: fmt.Sprintf("normal member list v%d %s lacks the node itself or its coordinator %d", st.Version, memberIDs(st.Members), st.Group.ID)})
	}
	// S2: one Normal coordinator per group number.
	if st.Role() == invitation.Coordinator {
		hs := c.coords[st.Group]
		if len(hs) > 0 {
			out = append(out, Violation{Invariant: "S2", Time: t, Group: st.Group, Nodes: append(slices.Clone(hs), node),
				Detail: "more than one live node is Normal and coordinator of the group"})
		}
		c.coords[st.Group] = append(hs, node)
	}
	// S4: one member list per (group, version) among live Normal nodes.
	k := groupVersion{st.Group, st.Version}
	l := c.lists[k]
	if l == nil {
		c.lists[k] = &list{members: st.Members, holders: []wire.NodeID{node}}
		return out
	}
	if !SameMembers(l.members, st.Members) {
		out = append(out, Violation{Invariant: "S4", Time: t, Group: st.Group, Nodes: []wire.NodeID{l.holders[0], node},
			Detail: fmt.Sprintf("version %d has two member lists: node %d has %s, node %d has %s",
				st.Version, l.holders[0], memberIDs(l.members), node, memberIDs(st.Members))})
	}
	l.holders = append(l.holders, node)
	return out
}

// Converged checks L1 on the views of the live nodes: all Normal, in one
// group coordinated by the highest-ranked of them, at one version, each
// member list exactly the set of live nodes (with their priorities). It
// returns nil when they are, and for no nodes.
func Converged(now time.Time, live []invitation.Status) []Violation {
	if len(live) == 0 {
		return nil
	}
	best := live[0]
	for _, s := range live[1:] {
		if rankOf(best).Less(rankOf(s)) {
			best = s
		}
	}
	want := make([]wire.Member, len(live))
	for i, s := range live {
		want[i] = wire.Member{ID: s.ID, Priority: s.Priority}
	}
	slices.SortFunc(want, func(a, b wire.Member) int { return cmpID(a.ID, b.ID) })
	ref := best // the highest node's view is the reference
	var out []Violation
	add := func(s invitation.Status, format string, args ...any) {
		out = append(out, Violation{Invariant: "L1", Time: now, Group: s.Group, Nodes: []wire.NodeID{s.ID}, Detail: fmt.Sprintf(format, args...)})
	}
	for _, s := range live {
		switch {
		case s.State != wire.StateNormal:
			add(s, "node %d is %s, not normal (view %s)", s.ID, s.State, s)
		case s.Group.ID != best.ID:
			add(s, "node %d's coordinator is %d, not the highest-ranked live node %d (view %s)", s.ID, s.Group.ID, best.ID, s)
		case s.Group != ref.Group:
			add(s, "node %d is in group %s, the highest-ranked node %d in %s", s.ID, s.Group, best.ID, ref.Group)
		case s.Version != ref.Version:
			add(s, "node %d has version %d of group %s, the coordinator %d", s.ID, s.Version, s.Group, ref.Version)
		case !SameMembers(s.Members, want):
			add(s, "node %d's member list %s is not the live set %s", s.ID, memberIDs(s.Members), memberIDs(want))
		}
	}
	return out
}

// IsFailedOver is FailedOver(…) == nil: the survivors live are Normal in
// one group coordinated by one of them, each listing them all (L2).
func IsFailedOver(live []invitation.Status) bool {
	return len(FailedOver(time.Time{}, live)) == 0
}

// IsConverged is Converged(…) == nil without building the report: it
// allocates nothing and stops at the first node that is not converged.
func IsConverged(live []invitation.Status) bool {
	if len(live) == 0 {
		return true
	}
	best := live[0]
	for _, s := range live[1:] {
		if rankOf(best).Less(rankOf(s)) {
			best = s
		}
	}
	for _, s := range live {
		if s.State != wire.StateNormal || s.Group.ID != best.ID || s.Group != best.Group ||
			s.Version != best.Version || len(s.Members) != len(live) {
			return false
		}
	}
	// Every list has len(live) entries; each must be exactly the live
	// set, in ID order, with the right priorities.
	for i, s := range live {
		if i > 0 && live[i-1].ID >= s.ID {
			return len(Converged(time.Time{}, live)) == 0 // not sorted by ID: take the slow path
		}
	}
	for _, s := range live {
		for i, m := range s.Members {
			if m.ID != live[i].ID || m.Priority != live[i].Priority {
				return false
			}
		}
	}
	return true
}

// FailedOver checks L2 on the survivors' views: all Normal, in one group
// coordinated by one of them (not the crashed coordinator's old group),
// whose member list (in each view) contains every survivor. It does not ask
// which survivor coordinates.
func FailedOver(now time.Time, survivors []invitation.Status) []Violation {
	if len(survivors) == 0 {
		return nil
	}
	var out []Violation
	add := func(s invitation.Status, format string, args ...any) {
		out = append(out, Violation{Invariant: "L2", Time: now, Group: s.Group, Nodes: []wire.NodeID{s.ID}, Detail: fmt.Sprintf(format, args...)})
	}
	g := survivors[0].Group
	isSurvivor := func(id wire.NodeID) bool {
		for _, s := range survivors {
			if s.ID == id {
				return true
			}
		}
		return false
	}
	for _, s := range survivors {
		switch {
		case s.State != wire.StateNormal:
			add(s, "survivor %d is %s, not normal (view %s)", s.ID, s.State, s)
		case !isSurvivor(s.Group.ID):
			add(s, "survivor %d is still in group %s, whose coordinator is not a survivor", s.ID, s.Group)
		case s.Group != g:
			add(s, "survivor %d is in group %s, survivor %d in %s", s.ID, s.Group, survivors[0].ID, g)
		default:
			for _, o := range survivors {
				if !hasMember(s.Members, o.ID) {
					add(s, "survivor %d's member list %s lacks survivor %d", s.ID, memberIDs(s.Members), o.ID)
					break
				}
			}
		}
	}
	return out
}

// Highest returns the highest-ranked of the given views' nodes, or 0.
func Highest(live []invitation.Status) wire.NodeID {
	var best wire.Rank
	for _, s := range live {
		if r := rankOf(s); best.ID == 0 || best.Less(r) {
			best = r
		}
	}
	return best.ID
}

// rankOf is a node's rank as L1 orders it: a node that cannot persist
// (PersistError set) below every node that can, then (priority, ID).
func rankOf(s invitation.Status) wire.Rank { return s.Rank() }

func cmpID(a, b wire.NodeID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func removeID(ids []wire.NodeID, id wire.NodeID) []wire.NodeID {
	for i, x := range ids {
		if x == id {
			return append(ids[:i], ids[i+1:]...)
		}
	}
	return ids
}

func hasMember(ms []wire.Member, id wire.NodeID) bool {
	for _, m := range ms {
		if m.ID == id {
			return true
		}
	}
	return false
}

// SameMembers compares two member lists, at once when they are the same
// slice: invitation shares one list among its reports, and comparing
// element by element on every view would cost O(N) per report at large N.
func SameMembers(a, b []wire.Member) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return slices.Equal(a, b)
}

func memberIDs(ms []wire.Member) string {
	ids := make([]wire.NodeID, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return formatIDs(ids)
}
