package invitation

import (
	"sort"
	"time"

	"github.com/groupd/groupd/wire"
)

// This file holds the coordinator's side: Check (looking for other
// coordinators), Merge (inviting them), the accept window, Ready rounds and
// member liveness.

// checkRound is one AreYouCoordinator round.
type checkRound struct {
	deadline time.Time
	asked    map[wire.NodeID]bool
	lower    []wire.NodeID
	higher   map[wire.NodeID]bool
}

// mergeRound is a coordinator's accept window for a new group.
type mergeRound struct {
	invited  map[wire.NodeID]bool // true once accepted
	targets  []wire.NodeID        // the coordinators among invited
	fresh    map[wire.NodeID]uint64
	deadline time.Time
	resendAt time.Time
	// expect is how many members (besides the coordinator) the new group
	// should have once everyone accepted: the window closes at once when
	// that many have, and runs to its end when it is 0 (unknown).
	expect int
	// declined are invitees that held a higher number (Decline): the
	// window's end renumbers the group and invites them again.
	declined map[wire.NodeID]bool
}

// readyRound is a coordinator's delivery of one member-list version.
type readyRound struct {
	version  uint64
	pending  map[wire.NodeID]bool
	deadline time.Time
	resendAt time.Time
}

// resendInvitations repeats the accept window's invitations to whoever
// has not accepted yet: they are UDP.
func (n *Node) resendInvitations(now time.Time) {
	n.sendInvitations(n.coord.merge)
	n.coord.merge.resendAt = now.Add(n.t.AnswerTimeout)
}

// endReadyRound ends a Ready round at its deadline: members that never
// acknowledged are dropped, in a new member list (finishReady reports the
// group's confirmation itself, if this round formed it).
func (n *Node) endReadyRound(now time.Time) (Reason, bool) {
	n.finishReady(now)
	return ReasonMembers, false
}

// publishHeld publishes the member list publish held back: the list
// moved on, so the new one is delivered (to the members an open round
// still waits for, too).
func (n *Node) publishHeld(now time.Time) (Reason, bool) {
	n.newVersion(now)
	return ReasonMembers, false
}

// resendReady repeats the Ready round's Ready to the members that have
// not acknowledged it.
func (n *Node) resendReady(now time.Time) {
	r := n.coord.ready
	for _, id := range sortedIDs(r.pending) {
		n.sendReady(id)
	}
	r.resendAt = now.Add(n.t.AnswerTimeout)
}

// endCheck closes a Check's wait for answers: a merge now, or after the
// merge delay.
func (n *Node) endCheck(now time.Time) (Reason, bool) {
	if n.finishCheck(now) {
		return ReasonMerge, true
	}
	return "", false
}

// endMergeDelay ends the merge delay a Check started: it invites only
// those still coordinating, as a higher coordinator may have absorbed
// them meanwhile.
func (n *Node) endMergeDelay(now time.Time) Reason {
	var targets []wire.NodeID
	for _, id := range n.coord.mergeWith {
		if p := n.disc.coords[id]; p != nil && p.isCoordinator(id) && p.group != n.group {
			targets = append(targets, id)
		}
	}
	n.coord.mergeAt, n.coord.mergeWith = time.Time{}, nil
	if len(targets) > 0 && !n.degraded() {
		n.startMerge(now, targets)
		return ReasonMerge
	}
	return ""
}

// startCheck sends AreYouCoordinator to every peer that last said it
// coordinates another group. Beacons keep that knowledge at most an
// AliveInterval old; asking only coordinators, not every node as in the
// paper, keeps a check of a large LAN to a few messages. A coordinator whose
// last invitations went unanswered is left out until its backoff ends. A
// degraded node does not check: it could not create the number a merge
// needs, and the others, which now outrank it, will invite it.
func (n *Node) startCheck(now time.Time) {
	n.coord.nextCheck = now.Add(n.jitter(n.t.CheckInterval))
	if n.coord.check != nil || n.coord.merge != nil || !n.coord.mergeAt.IsZero() || n.degraded() {
		return
	}
	if n.coord.lastCheck.After(now.Add(-checkDefer*n.t.CheckInterval)) && n.outranked(now) {
		return
	}
	var targets []wire.NodeID
	for _, id := range sortedIDs(n.disc.coords) {
		p := n.disc.coords[id]
		if !p.isCoordinator(id) || p.group == n.group {
			continue
		}
		if n.coord.members.backedOff(now, id) {
			continue
		}
		targets = append(targets, id)
	}
	if len(targets) == 0 {
		return
	}
	n.coord.lastCheck = now
	n.coord.check = &checkRound{deadline: now.Add(n.t.AnswerTimeout), asked: map[wire.NodeID]bool{}, higher: map[wire.NodeID]bool{}}
	for _, id := range targets {
		n.ask(id)
	}
}

// checkDefer is how many CheckIntervals a coordinator that hears a
// higher-ranked one leaves between its own Checks (outranked).
const checkDefer = 8

// outranked reports whether a higher-ranked Normal coordinator of another
// group was heard lately (and is not backed off): its Check will find this
// group and invite it, with the ones below it that it hears, so this one
// need not look. In the paper every coordinator checks, and the lower ones
// then wait for the higher one's invitation (finishCheck's merge delay);
// with G groups that is G·(G−1) AreYouCoordinators per CheckInterval. At a
// cold start of 256 nodes on one loaded host, with about a hundred groups
// at a time, they and their answers were half the traffic, delayed the
// invitations, and the host never caught up (the simulator's Host model at
// 300 µs a delivery: 0 of 8 runs converged in 2 minutes; with this rule
// alone, 8 of 8). A coordinator still checks every checkDefer
// CheckIntervals, in case the higher one cannot hear it (a one-way cut),
// and the paper's merge delay applies then as before.
func (n *Node) outranked(now time.Time) bool {
	for id, p := range n.disc.coords {
		if p.isCoordinator(id) && p.state == wire.StateNormal && p.group != n.group && n.rank().Less(p.rank(id)) {
			if !n.coord.members.backedOff(now, id) {
				return true
			}
		}
	}
	return false
}

func (n *Node) ask(id wire.NodeID) {
	n.coord.check.asked[id] = true
	n.send(id, wire.AreYouCoordinator{})
}

// earlyCheck runs a Check now unless one ran recently: prompted by a beacon
// or an AreYouCoordinator from a lower-ranked coordinator.
func (n *Node) earlyCheck(now time.Time) {
	if !n.isCoordinator() || n.state != wire.StateNormal || n.store.pending != nil {
		return
	}
	if !n.coord.lastCheck.IsZero() && now.Sub(n.coord.lastCheck) < n.t.CheckInterval/4 {
		return
	}
	n.startCheck(now)
}

// finishCheck acts on a Check's replies; it reports whether a merge started.
func (n *Node) finishCheck(now time.Time) bool {
	c := n.coord.check
	n.coord.check = nil
	if len(c.lower) == 0 {
		return false
	}
	// Count every higher-ranked coordinator seen, by reply or by beacon: a
	// reply can lose a race with the beacon that announced it.
	for id, p := range n.disc.coords {
		if p.isCoordinator(id) && p.state == wire.StateNormal && p.group != n.group &&
			n.rank().Less(p.rank(id)) && !c.higher[id] {
			c.higher[id] = true
		}
	}
	if len(c.higher) == 0 {
		n.startMerge(now, c.lower)
		return true
	}
	// A higher-ranked coordinator exists and will invite us (and those
	// below us) unless it is busy; give it the paper's
	// priority-dependent head start.
	n.coord.mergeAt = now.Add(time.Duration(len(c.higher)) * n.t.MergeDelay)
	n.coord.mergeWith = c.lower
	return false
}

// onBeacon handles a beacon: a node without a group (answered, and invited
// if this node coordinates and outranks it), a coordinator of another group
// (a Check includes it, or a lower one prompts an early Check), or this
// node's coordinator (its heartbeat).
func (n *Node) onBeacon(now time.Time, m wire.Message, b wire.Beacon) {
	if m.Booting() {
		n.replyFresh(now, m.From)
		n.inviteFresh(now, m)
		return
	}
	if !n.isCoordinator() && m.From == n.group.ID {
		n.onHeartbeat(now, m, b)
		return
	}
	if !m.IsCoordinator() || m.State != wire.StateNormal || m.Group == n.group {
		return
	}
	if c := n.coord.check; c != nil && !c.asked[m.From] && n.isCoordinator() && n.state == wire.StateNormal {
		// A coordinator announced itself while a Check runs: include it.
		n.ask(m.From)
		return
	}
	if m.Rank().Less(n.rank()) {
		n.earlyCheck(now)
	}
}

func (n *Node) onAreYouCoordinator(now time.Time, m wire.Message) {
	if n.state != wire.StateNormal || !n.isCoordinator() || n.store.pending != nil {
		return
	}
	n.send(m.From, wire.Yes{Query: wire.TypeAreYouCoordinator, Version: n.version})
	if m.IsCoordinator() && m.Rank().Less(n.rank()) {
		n.earlyCheck(now)
	}
}

func (n *Node) onYes(now time.Time, m wire.Message, b wire.Yes) Reason {
	switch b.Query {
	case wire.TypeAreYouCoordinator:
		c := n.coord.check
		if c == nil || !m.IsCoordinator() || m.State != wire.StateNormal || m.Group == n.group {
			return ""
		}
		if m.Rank().Less(n.rank()) {
			for _, id := range c.lower {
				if id == m.From {
					return ""
				}
			}
			c.lower = append(c.lower, m.From)
		} else {
			c.higher[m.From] = true
		}
	case wire.TypeAreYouThere:
		return n.onAliveYes(now, m, b)
	}
	return ""
}

// startMerge is the paper's Merge: a new group number, then invitations to
// the lower coordinators found and to my own members.
func (n *Node) startMerge(now time.Time, targets []wire.NodeID) {
	n.coord.check = nil
	n.newGroup(now, &pendingGroup{purpose: forMerge, targets: targets, members: n.coord.members.others(n.id)})
}

func (n *Node) onAccept(now time.Time, m wire.Message, b wire.Accept) {
	if b.Group != n.group || !n.isCoordinator() {
		return
	}
	if mb := n.coord.members.get(m.From); mb != nil && mb.boot != m.Boot && m.Flags&wire.FlagFresh != 0 &&
		now.Sub(mb.heard) < n.t.AckLate(n.quorumMode()) {
		// A process of a member's ID that started without a saved state,
		// while the member itself is heard: a second process given the
		// ID, which gives way to it (§3.6). It does not take the
		// member's place; if it is the member restarted after all (its
		// data dir lost), it repeats its Accept and is taken once the old
		// process has fallen silent.
		return
	}
	n.memberTerm(now, b.Term, false)
	if mb := n.coord.members.get(m.From); mb != nil {
		mb.heard = now
		n.lease.lastMemberHeard = now
		if mb.boot != m.Boot {
			// The member restarted: what the old process granted is
			// not this one's to renew.
			mb.boot, mb.granted, mb.acked = m.Boot, time.Time{}, 0
		}
		mb.claim, mb.claimed = b.Quorum, true
	}
	if mg := n.coord.merge; mg != nil {
		if !n.coord.members.has(m.From) {
			n.coord.members.admit(m.From, &member{m: wire.Member{ID: m.From, Priority: m.Priority}, boot: m.Boot, heard: now,
				claim: b.Quorum, claimed: true})
		}
		if _, ok := mg.invited[m.From]; ok {
			mg.invited[m.From] = true
		}
		n.coord.members.forgive(m.From)
		if mg.expect > 0 && n.coord.members.size()-1 >= mg.expect && allTrue(mg.invited) && len(mg.declined) == 0 {
			n.closeAcceptWindow(now)
		}
		return
	}
	if n.coord.members.has(m.From) {
		// A repeated Accept: the member has not seen Ready yet. (While
		// the version is stale, the next one will list it.)
		if !n.coord.staleVersion && (n.coord.ready == nil || !n.coord.ready.pending[m.From]) {
			n.sendReady(m.From)
		}
		return
	}
	// A late Accept, after the window closed, or from a node without a
	// group this coordinator invited into its running group: take the
	// node in with a new member-list version.
	if !n.coord.members.admit(m.From, &member{m: wire.Member{ID: m.From, Priority: m.Priority}, boot: m.Boot, heard: now,
		claim: b.Quorum, claimed: true}) {
		return
	}
	n.publish(now)
}

func allTrue(m map[wire.NodeID]bool) bool {
	for _, v := range m {
		if !v {
			return false
		}
	}
	return true
}

// closeAcceptWindow ends the accept window: the group is whoever accepted.
// An invited coordinator that did not accept is left alone for a while
// (backoff): under loss, merges that fail spend a number each. Invitees
// that declined (they held a higher number) are invited again once the
// group is Normal, into a new number above theirs (finishReady): a node's
// group numbers only grow (design §4), and the group forms first, so that
// a failed save of the new number leaves it whole.
func (n *Node) closeAcceptWindow(now time.Time) Reason {
	mg := n.coord.merge
	n.coord.merge = nil
	n.coord.declined = sortedIDs(mg.declined)
	for _, id := range mg.targets {
		if mg.invited[id] {
			continue
		}
		n.coord.members.backOff(now, id, n.t.CheckInterval, 8*n.t.CheckInterval)
	}
	n.state = wire.StateReorganization
	n.version = 0
	n.newVersion(now)
	n.report(now, ReasonReady)
	return ReasonReady
}

// publish makes a change of the Up set known: with a new member-list
// version at once, or, within AnswerTimeout of the last version, when that
// much time has passed (the "member-list" timer of timers.go). Joins and
// drops that come in a burst (a cold start, a heal: every lower node's
// Accept arrives on its own) so share a version instead of costing each a
// Ready to every member, which made a merge of N nodes cost O(N²)
// datagrams. A joiner waits at most
// AnswerTimeout longer, well inside its ReadyTimeout; it repeats its Accept
// meanwhile, as under loss.
func (n *Node) publish(now time.Time) {
	if now.Before(n.coord.nextVersionAt) {
		n.coord.staleVersion = true
		return
	}
	n.newVersion(now)
}

// newVersion publishes the current Up set as the next member-list version
// and starts delivering it.
func (n *Node) newVersion(now time.Time) {
	n.coord.staleVersion = false
	n.coord.nextVersionAt = now.Add(n.t.AnswerTimeout)
	n.version++
	n.setMembers(n.coord.members.list())
	r := n.newReadyRound(now)
	n.coord.ready = r
	for _, id := range sortedIDs(r.pending) {
		n.sendReady(id)
	}
	if len(r.pending) == 0 {
		n.finishReady(now)
	}
}

// newReadyRound starts the delivery of the current member-list version to
// every member but this node.
func (n *Node) newReadyRound(now time.Time) *readyRound {
	r := &readyRound{
		version:  n.version,
		pending:  make(map[wire.NodeID]bool),
		deadline: now.Add(n.t.ReadyTimeout),
		resendAt: now.Add(n.t.AnswerTimeout),
	}
	for _, m := range n.members {
		if m.ID != n.id {
			r.pending[m.ID] = true
		}
	}
	return r
}

// sendReady sends the current member list to one member (wire.Broadcast:
// to all), split across datagrams as needed.
func (n *Node) sendReady(to wire.NodeID) {
	full := wire.Ready{Group: n.group, Version: n.version, Timing: n.gt.announce(n.galg),
		Total: uint32(len(n.members)), Members: n.members, Homes: n.memberHomes()}
	for _, part := range wire.SplitReady(full) {
		n.send(to, part)
	}
}

func (n *Node) onReadyAck(now time.Time, m wire.Message, b wire.ReadyAck) {
	r := n.coord.ready
	if b.Group != n.group || !n.isCoordinator() || r == nil || b.Version != r.version {
		return
	}
	if mb := n.coord.members.get(m.From); mb != nil {
		mb.heard = now
		n.lease.lastMemberHeard = now
	}
	delete(r.pending, m.From)
	if len(r.pending) == 0 {
		n.finishReady(now)
	}
}

// finishReady ends a Ready round: everyone acknowledged, or the timeout
// passed and the silent ones are dropped with a new version.
func (n *Node) finishReady(now time.Time) {
	r := n.coord.ready
	n.coord.ready = nil
	wasReorg := n.state == wire.StateReorganization
	n.state = wire.StateNormal
	if wasReorg {
		n.coord.nextCheck = now.Add(n.jitter(n.t.CheckInterval))
		n.disc.nextBeacon = now
		n.lease.lastAckReq = time.Time{} // the first heartbeat asks for acknowledgements
		n.report(now, ReasonConfirmed)
		if d := n.coord.declined; len(d) > 0 && !n.degraded() && n.store.pending == nil {
			n.coord.declined = nil
			n.renumber(now, d)
			return
		}
	}
	if n.coord.nextLate.IsZero() {
		n.coord.nextLate = now.Add(n.t.AckLate(n.quorumMode()))
	}
	if r != nil && len(r.pending) > 0 {
		n.dropMembers(now, sortedIDs(r.pending))
	}
}

// dropMembers removes members the coordinator believes failed.
func (n *Node) dropMembers(now time.Time, ids []wire.NodeID) {
	changed := false
	for _, id := range ids {
		if id == n.id {
			continue
		}
		if n.coord.members.remove(id) {
			changed = true
		}
	}
	if changed {
		n.publish(now)
	}
}

// onAreYouThere answers a participant's liveness probe.
func (n *Node) onAreYouThere(now time.Time, m wire.Message, b wire.AreYouThere) {
	if !n.isCoordinator() {
		if b.Group.ID == n.id {
			// It thinks I coordinate a group I have left.
			n.send(m.From, wire.No{Query: wire.TypeAreYouThere})
		}
		return
	}
	if b.Group == n.group {
		if mb := n.coord.members.get(m.From); mb != nil {
			mb.heard = now
			n.send(m.From, wire.Yes{Query: wire.TypeAreYouThere, Version: n.version})
			return
		}
		n.send(m.From, wire.No{Query: wire.TypeAreYouThere})
		return
	}
	if b.Group.ID == n.id && b.Group.Less(n.group) {
		// A member of an older group of mine: my previous one, whose
		// invitation it missed, or one I ran before I restarted. Its
		// coordinator is here: invite it into my current group (no new
		// number) rather than tell it No, on which it would elect and
		// spend one.
		n.reinvite(now, m.From)
		return
	}
	if b.Group.ID == n.id {
		n.send(m.From, wire.No{Query: wire.TypeAreYouThere})
	}
}

// reinvite invites a straggler of my previous group into my current one.
func (n *Node) reinvite(now time.Time, id wire.NodeID) {
	if n.coord.members.has(id) {
		return
	}
	if n.store.pending != nil {
		return // nothing may carry the new number yet
	}
	if mg := n.coord.merge; mg != nil {
		if _, ok := mg.invited[id]; !ok {
			mg.invited[id] = false
		}
	}
	n.send(id, wire.Invitation{Group: n.group, Timing: n.t.announce(n.alg)})
}

// memberHomes returns, in quorum mode, the home each member announced
// (in the member list's order), so that the members know where each other
// keeps its state (package quorum); nil otherwise.
func (n *Node) memberHomes() []uint32 {
	if !n.q.Enabled() || len(n.members) == 0 {
		return nil
	}
	homes := make([]uint32, len(n.members))
	for i, m := range n.members {
		switch mb := n.coord.members.get(m.ID); {
		case m.ID == n.id:
			homes[i] = n.start.home
		case mb != nil:
			homes[i] = mb.claim.Home
		}
	}
	return homes
}

func sortMembers(ms []wire.Member) {
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
}
