package group

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// The publisher hands the machine's decisions out: the current Status,
// events to subscribers (the API's event stream, embedders) and to
// Config.OnEvent (groupd's --on-change hook), memberlist's meta, the log,
// the metrics, and the leadership API (callbacks, WatchLeader). The loop calls report; every
// other method is safe from any goroutine.

// maxMismatches bounds the timing mismatches a status lists.
const maxMismatches = 16

type publisher struct {
	a *Agent

	// emit serialises change, expire and goodbye, so that their events
	// reach subscribers, OnEvent and callbacks in order.
	emit sync.Mutex

	mu sync.Mutex
	st Status // the current view (Time: when it became current)
	// acting is whether the node is the leader an application may act
	// on (Status.IsLeader), in which term and since when: the leadership
	// that leader-start and leader-stop report.
	acting   bool
	actTerm  GroupNumber
	actSince time.Time
	// leaseTimer ends an acting quorum-mode leadership when its lease
	// runs out, whether or not the loop runs (expire); created by init.
	leaseTimer *leaseTimer
	subs       map[*subscription]struct{}
	watchers   map[*leaderWatch]struct{}
	closed     bool
	dup        *DuplicateID
	mismatches []TimingMismatch
	// rule is the quorum rule in force (quorum mode; nil otherwise) and
	// qmismatches the peers whose quorum settings differ (quorum.go).
	rule        *QuorumRule
	qmismatches []QuorumMismatch
	persistLog  string // the last save error logged

	leaders leaderRunner // the callbacks' goroutine (leader.go)
}

// subscription is one Subscribe call.
type subscription struct {
	ch     chan Event
	missed uint64 // events dropped since the last one delivered
}

func (p *publisher) init(a *Agent) {
	p.a = a
	p.subs = make(map[*subscription]struct{})
	p.watchers = make(map[*leaderWatch]struct{})
	if q := a.cfg.Quorum; q.Enabled() {
		p.rule = &QuorumRule{Voters: q.Expect, TieBreaker: q.TieBreaker}
	}
	p.st = Status{
		ID: a.id, Name: a.name, Priority: a.cfg.Priority, State: StateElection, Role: Participant,
		Members: []NodeID{}, Counter: a.durable.Counter, Incarnation: a.incarnation, Boot: a.boot,
		Since: time.Now(), Expect: a.cfg.Quorum.Expect, Tags: maps.Clone(a.cfg.Tags),
		TieBreaker: a.cfg.Quorum.TieBreaker, Rule: p.rule,
	}
	p.leaders.init(a.cfg.Leader, a.cfg.Logger.With().Str("component", "leader").Uint64("node", uint64(a.id)).Logger())
	p.leaders.nameOf = a.nameOf
	p.leaseTimer = newLeaseTimer(p.expire)
}

// start starts the leader callbacks' goroutine.
func (p *publisher) start() { p.leaders.start() }

// stopLeaders runs the leader callbacks still queued, ends a leadership
// still current and waits for the callbacks' goroutine.
func (p *publisher) stopLeaders() { p.leaders.close() }

// status returns the current view, its lease checked now (live).
func (p *publisher) status() Status {
	p.mu.Lock()
	st := p.st
	p.mu.Unlock()
	return p.live(st, time.Now())
}

// live checks a quorum-mode leader's lease at now: the view says primary
// as of its last change, and the lease may have run out since, or been
// renewed (LeaseUntil).
func (p *publisher) live(st Status, now time.Time) Status {
	if st.Expect == 0 || st.Role != Coordinator || !st.Primary {
		return st
	}
	if r := p.a.lease.remaining(now); r > 0 {
		st.LeaseUntil, _ = p.a.lease.get()
	} else {
		st.Primary, st.LeaseUntil = false, time.Time{}
	}
	return st
}

// view converts the machine's status into the agent's.
func (p *publisher) view(s invitation.Status, now time.Time) Status {
	a := p.a
	st := Status{
		ID: s.ID, Name: a.name, Priority: s.Priority, State: s.State, Role: s.Role(), Group: s.Group,
		Coordinator: s.Coordinator(), Members: s.MemberIDs(), Version: s.Version, Since: s.Since,
		Counter: s.Counter, Incarnation: a.incarnation, Boot: a.boot, PersistError: s.PersistError,
		Degraded: s.Degraded(), Time: now, Expect: a.cfg.Quorum.Expect,
		Leader: s.Leader, LeaderSince: s.LeaderSince, Term: s.Term, Tags: p.st.Tags,
		DuplicateID: p.dup, TimingMismatches: p.mismatches,
		Primary: s.Primary, LeaseUntil: s.LeaseUntil,
		TieBreaker: a.cfg.Quorum.TieBreaker, Rule: p.rule, QuorumMismatches: p.qmismatches,
	}
	st.MemberPriorities = make([]uint8, len(s.Members))
	for i, m := range s.Members {
		st.MemberPriorities[i] = m.Priority
	}
	switch {
	case st.Coordinator == a.id:
		st.CoordinatorName = a.name
	case st.Coordinator != 0:
		st.CoordinatorName = a.peers.name(st.Coordinator)
	}
	return st
}

// report hands over what one machine Output decided: view changes,
// created numbers and notices. It runs on the loop.
func (p *publisher) report(now time.Time, out invitation.Output) {
	a := p.a
	for _, n := range out.Notices {
		p.notice(n)
	}
	for range out.Created {
		a.metrics.created.Inc()
	}
	for _, ie := range out.Events {
		// The change happens now, after any save that preceded it (the
		// driver reports after the save an Output asked for): stamped
		// earlier, it could precede a snapshot a new subscriber took
		// meanwhile, and a recorded history would go back and forth.
		t := time.Now()
		if ie.Time.After(t) {
			t = ie.Time
		}
		p.change(t, ie)
		if ie.Reason == invitation.ReasonReady || ie.Reason == invitation.ReasonMembers {
			a.scheduleSync(now)
		}
	}
}

// change publishes one event of the machine, and the leadership
// transition it may carry.
func (p *publisher) change(t time.Time, ie invitation.Event) {
	a := p.a
	p.emit.Lock()
	defer p.emit.Unlock()
	p.mu.Lock()
	old := p.st
	cur := p.view(ie.New, t)
	p.st = cur
	was := p.acting
	p.mu.Unlock()
	e := Event{Time: t, Node: a.id, Name: a.name, Reason: string(ie.Reason), Old: &old, New: cur}
	p.logChange(e)
	a.metrics.observe(e)
	p.persistence(e)
	p.publish(e)
	if old.Group != cur.Group || old.State != cur.State || old.Leader != cur.Leader || old.Degraded != cur.Degraded {
		a.publishMeta(cur)
	}
	p.leadership(t, old, cur, was)
	if cur.State == StateNormal && cur.Coordinator != old.Coordinator || old.State != StateNormal && cur.State == StateNormal {
		p.leaders.newLeader(cur.Coordinator, cur.CoordinatorName)
	}
	p.notifyWatchers()
}

// leadership publishes the leadership transitions that the change old →
// cur makes, exactly once each, to subscribers, OnEvent and the
// callbacks: the node stops acting as leader (IsLeader goes false),
// starts (it goes true), or goes on under a new term (leader-term: one
// event, neither a stop nor a start, for a leader whose term grew while
// it led, design §8). was is whether it acted as leader before. A stop
// because a lease ran out is stamped with the lease's end.
func (p *publisher) leadership(t time.Time, old, cur Status, was bool) {
	now := cur.IsLeader()
	p.mu.Lock()
	term := p.actTerm
	if was == now && (!now || term == cur.Term) {
		p.mu.Unlock()
		return
	}
	p.acting, p.actTerm = now, cur.Term
	if now {
		p.actSince = t
	} else {
		p.actSince, p.actTerm = time.Time{}, GroupNumber{}
	}
	p.mu.Unlock()
	o := old
	o.Term = term
	if was && now {
		// exec stops a command started under the old term (its
		// GROUPD_TERM is stale), and its guard sees to it if exec
		// cannot.
		p.a.guards.leadershipEnded(term, t)
		p.transition(t, ReasonLeaderTerm, &o, cur, cur.Term)
		return
	}
	if was {
		stop := t
		// The lease's end as last armed, not old.LeaseUntil: the view
		// keeps the end of its last change, and renewals do not change
		// the view, so that one may be long past (a leader-stop stamped
		// before the loss that caused it, and an LP1 replay that ends
		// the leadership too early).
		if end, _ := p.a.lease.get(); cur.Expect > 0 && cur.Leader && !end.IsZero() && end.Before(stop) {
			stop = end // the lease ran out then: the loop saw it late
		}
		p.a.guards.leadershipEnded(term, stop)
		p.transition(stop, ReasonLeaderStop, &o, cur, term)
	}
	if now {
		p.transition(t, ReasonLeaderStart, &old, cur, cur.Term)
	}
}

// transition publishes one leader-start, leader-stop or leader-term.
func (p *publisher) transition(t time.Time, reason string, old *Status, cur Status, term GroupNumber) {
	a := p.a
	e := Event{Time: t, Node: a.id, Name: a.name, Reason: reason, Old: old, New: cur}
	l := a.log.Info().Str("reason", reason).Str("group", cur.Group.String()).Str("term", term.String())
	if reason == ReasonLeaderTerm {
		l = l.Str("old_term", old.Term.String())
	}
	l.Msg(reason)
	a.metrics.leaderChanges.WithLabelValues(reason).Inc()
	p.publish(e)
	switch reason {
	case ReasonLeaderStart:
		p.leaders.started(term)
	case ReasonLeaderStop:
		p.leaders.stopped()
	case ReasonLeaderTerm:
		p.leaders.newTerm(old.Term, term)
	}
}

// armLease publishes the lease the loop just computed (zero until: none)
// for readers and the lease timer, which ends an acting leadership at the
// lease's end whatever the loop does (expire). Its boot-clock deadline is
// fixed when its end changes, from the instant its grants count from
// (lease.set). Called by the loop after every input: a lease is renewed
// without a change of view.
//
// The lease timer may have fired while the loop was renewing the lease: a
// grant counted just before the published end, published just after it.
// The machine then still says primary and no event will say it again, so
// armLease puts the leadership back (a lease event, and leader-start).
func (p *publisher) armLease(now, until time.Time) {
	a := p.a
	a.lease.set(a.clocks, until, until.Add(-a.cfg.Timing.LeaderLease()))
	end, boot := a.lease.get()
	p.leaseTimer.arm(now, end, boot)
	if until.IsZero() {
		return
	}
	p.emit.Lock()
	defer p.emit.Unlock()
	p.mu.Lock()
	old := p.st
	if p.acting || old.Expect == 0 || !old.Leader || old.Primary || old.Role != Coordinator || !leaseValid(now, end, boot) {
		p.mu.Unlock()
		return
	}
	cur := old
	cur.Primary, cur.LeaseUntil, cur.Time = true, end, now
	p.st = cur
	p.mu.Unlock()
	a.log.Info().Str("group", cur.Group.String()).Str("term", cur.Term.String()).
		Msg("the lease was renewed as it ran out: primary again")
	e := Event{Time: now, Node: a.id, Name: a.name, Reason: string(invitation.ReasonLease), Old: &old, New: cur}
	a.metrics.observe(e)
	p.publish(e)
	p.leadership(now, old, cur, false)
	p.notifyWatchers()
}

// expire ends an acting quorum-mode leadership whose lease ran out, on the
// lease timer: the loop may be blocked or behind (a stalled host, a long
// pause, a suspended host just resumed), and an application must stop
// acting as leader when the lease ends, even if no packet and no tick
// arrives. The machine reports the same when its loop runs again, which
// then changes nothing here.
func (p *publisher) expire() {
	p.emit.Lock()
	defer p.emit.Unlock()
	now := time.Now()
	p.mu.Lock()
	if !p.acting || p.st.Expect == 0 {
		p.mu.Unlock()
		return
	}
	if r := p.a.lease.remaining(now); r > 0 {
		until, boot := p.a.lease.get()
		p.leaseTimer.arm(now, until, boot) // renewed meanwhile
		p.mu.Unlock()
		return
	}
	old := p.st
	end, _ := p.a.lease.get()
	if end.IsZero() || end.After(now) {
		end = now // the boot clock ran out first: a suspended host
	}
	cur := old
	cur.Primary, cur.LeaseUntil, cur.Time = false, time.Time{}, end
	p.st = cur
	p.mu.Unlock()
	a := p.a
	a.log.Warn().Str("group", cur.Group.String()).Str("term", old.Term.String()).Time("lease_end", end).
		Msg("the lease ran out (no quorum acknowledged this leader): no longer primary")
	e := Event{Time: end, Node: a.id, Name: a.name, Reason: string(invitation.ReasonLease), Old: &old, New: cur}
	a.metrics.observe(e)
	p.publish(e)
	p.leadership(end, old, cur, true)
	p.notifyWatchers()
}

// goodbye ends a leadership when the agent stops: the node leaves, so it
// no longer leads.
func (p *publisher) goodbye(t time.Time) {
	p.emit.Lock()
	defer p.emit.Unlock()
	p.mu.Lock()
	old := p.st
	if !old.Leader {
		p.mu.Unlock()
		return
	}
	cur := old
	cur.Leader, cur.LeaderSince, cur.Term, cur.Time = false, time.Time{}, GroupNumber{}, t
	cur.Primary, cur.LeaseUntil = false, time.Time{}
	p.st = cur
	was := p.acting
	p.mu.Unlock()
	p.leaseTimer.stop()
	p.leadership(t, old, cur, was)
	p.notifyWatchers()
}

// logChange logs one line per change of the view, with the old and new
// group numbers.
func (p *publisher) logChange(e Event) {
	o, n := e.Old, e.New
	msg := "state change " + o.Group.String() + " -> " + n.Group.String()
	if o.Group == n.Group {
		msg = e.Reason + " in " + n.Group.String()
	}
	p.a.log.Info().Str("reason", e.Reason).
		Str("old_group", o.Group.String()).Str("group", n.Group.String()).
		Str("old_state", o.State.String()).Str("state", n.State.String()).
		Str("role", n.Role.String()).Uint64("coordinator", uint64(n.Coordinator)).Str("coordinator_name", n.CoordinatorName).
		Str("members", idList(n.Members)).Uint64("version", n.Version).Bool("leader", n.Leader).
		Msg(msg)
}

// persistence logs a save failure once per distinct error, and the
// recovery once.
func (p *publisher) persistence(e Event) {
	a := p.a
	switch {
	case e.New.PersistError != "" && e.New.PersistError != p.persistLog:
		p.persistLog = e.New.PersistError
		a.log.Error().Str("error", e.New.PersistError).
			Msg("cannot save the node's state: it creates no group number and steps aside (joins any group that invites it) until a save succeeds; retrying")
	case e.New.PersistError == "" && p.persistLog != "":
		p.persistLog = ""
		a.log.Info().Uint64("counter", e.New.Counter).Msg("the node's state is saved again")
	}
}

// notice tells the operator what a Notice says.
func (p *publisher) notice(n invitation.Notice) {
	a := p.a
	switch n.Kind {
	case invitation.NoticeDuplicateID:
		p.mu.Lock()
		other := ""
		if p.dup != nil && p.dup.Boot == n.Boot {
			other = p.dup.Addr
		}
		p.mu.Unlock()
		a.metrics.duplicateIDs.Inc()
		ev := a.log.Error().Uint64("id", uint64(a.id)).Str("this_addr", a.Addrs().Wire).
			Str("this_boot", fmt.Sprintf("%016x", a.boot)).Str("other_addr", other).
			Str("other_boot", fmt.Sprintf("%016x", n.Boot))
		if n.Yield {
			ev.Msg(fmt.Sprintf("node ID %d is in use by another live process at %s, which started first: this one gives way and exits; give every node its own --id",
				a.id, orUnknown(other)))
		} else {
			ev.Msg(fmt.Sprintf("node ID %d is also used by a process at %s: it should give way; give every node its own --id",
				a.id, orUnknown(other)))
		}
	case invitation.NoticeStateBehind:
		a.log.Warn().Uint64("peer", uint64(n.Peer)).Str("peer_name", a.peers.name(n.Peer)).
			Str("group", n.Group.String()).Uint64("counter", n.Counter).Uint64("gap", n.Group.Seq-n.Counter).
			Msg(fmt.Sprintf("node %d knows group %s of this node, %d above its saved counter %d: the data dir was lost or restored from an older copy; new numbers go above it",
				n.Peer, n.Group, n.Group.Seq-n.Counter, n.Counter))
	case invitation.NoticeTimingMismatch:
		m := TimingMismatch{Peer: n.Peer, Theirs: n.Theirs, Ours: n.Ours,
			Detail: "theirs: " + n.Theirs.String() + "; ours: " + n.Ours.String()}
		p.mu.Lock()
		replaced := false
		for i := range p.mismatches {
			if p.mismatches[i].Peer == n.Peer {
				p.mismatches = append(p.mismatches[:i:i], p.mismatches[i+1:]...)
				replaced = true
				break
			}
		}
		if len(p.mismatches) < maxMismatches {
			p.mismatches = append(p.mismatches[:len(p.mismatches):len(p.mismatches)], m)
		}
		p.st.TimingMismatches = p.mismatches
		p.mu.Unlock()
		if !replaced {
			a.metrics.timingMismatches.Inc()
		}
		a.log.Warn().Uint64("peer", uint64(n.Peer)).Str("peer_name", a.peers.name(n.Peer)).
			Str("theirs", n.Theirs.String()).Str("ours", n.Ours.String()).
			Msg("a node announces other intervals than this one (--profile or interval flags differ): inside a group its coordinator's apply, but check the configuration")
	case invitation.NoticeQuorumMismatch:
		p.quorumMismatch(n)
	case invitation.NoticeQuorumRule:
		p.quorumRule(n)
	}
}

// quorumMismatch records, logs and counts a peer whose --expect or
// --tie-breaker differ from this node's, or forgets one that agrees again.
func (p *publisher) quorumMismatch(n invitation.Notice) {
	a := p.a
	agree := n.TheirQuorum == n.OurQuorum
	detail := quorumDetail(n.TheirQuorum, n.OurQuorum)
	p.mu.Lock()
	kept := p.qmismatches[:0:0]
	replaced := false
	for _, m := range p.qmismatches {
		if m.Peer == n.Peer {
			replaced = true
			continue
		}
		kept = append(kept, m)
	}
	if !agree && len(kept) < maxMismatches {
		kept = append(kept, QuorumMismatch{Peer: n.Peer, Expect: int(n.TheirQuorum.Expect),
			TieBreaker: n.TheirQuorum.TieBreaker, Detail: detail})
	}
	if len(kept) == 0 {
		kept = nil
	}
	p.qmismatches = kept
	p.st.QuorumMismatches = kept
	p.mu.Unlock()
	if agree {
		if replaced {
			a.log.Info().Uint64("peer", uint64(n.Peer)).Str("peer_name", a.peers.name(n.Peer)).
				Msg("a node's quorum settings (--expect, --tie-breaker) agree with this node's again")
		}
		return
	}
	a.metrics.quorumMismatches.Inc()
	a.log.Warn().Uint64("peer", uint64(n.Peer)).Str("peer_name", a.peers.name(n.Peer)).
		Int("their_expect", int(n.TheirQuorum.Expect)).Uint64("their_tie_breaker", uint64(n.TheirQuorum.TieBreaker)).
		Int("expect", int(n.OurQuorum.Expect)).Uint64("tie_breaker", uint64(n.OurQuorum.TieBreaker)).
		Msg(fmt.Sprintf("node %d runs with other quorum settings: %s. Both count a quorum by the stricter rule, so that no two leaders are primary at once; make the settings agree",
			n.Peer, detail))
}

// quorumDetail names the settings theirs sets differently from ours.
func quorumDetail(theirs, ours wire.Quorum) string {
	var parts []string
	if theirs.Expect != ours.Expect {
		parts = append(parts, fmt.Sprintf("--expect %d (this node %d)", theirs.Expect, ours.Expect))
	}
	if theirs.TieBreaker != ours.TieBreaker {
		parts = append(parts, fmt.Sprintf("--tie-breaker %d (this node %d)", theirs.TieBreaker, ours.TieBreaker))
	}
	return strings.Join(parts, ", ")
}

// quorumRule records and logs the rule a quorum is now counted by.
func (p *publisher) quorumRule(n invitation.Notice) {
	a := p.a
	q := a.cfg.Quorum
	r := &QuorumRule{Voters: n.Voters, TieBreaker: n.Tie, Extra: slices.Clone(n.Extra)}
	p.mu.Lock()
	p.rule = r
	p.st.Rule = r
	p.mu.Unlock()
	a.metrics.quorumVoters.Set(float64(n.Voters))
	if n.Voters == q.Expect && n.Tie == q.TieBreaker {
		a.log.Info().Int("voters", n.Voters).Uint64("tie_breaker", uint64(n.Tie)).
			Msg("the quorum is counted by this node's settings again (--expect, --tie-breaker)")
		return
	}
	var why []string
	if n.Voters > q.Expect {
		why = append(why, fmt.Sprintf("a majority of %d, not of --expect %d: more nodes are known, or a node announces a larger --expect", n.Voters, q.Expect))
	}
	if q.TieBreaker != 0 && n.Tie == 0 {
		why = append(why, fmt.Sprintf("the tie-breaker %d does not decide an exact half: nodes disagree on it, or more nodes are known than --expect", q.TieBreaker))
	}
	if len(n.Extra) > 0 {
		why = append(why, fmt.Sprintf("nodes %s run more than one process (a second process given the ID, or a node whose data dir was lost): the later one's grants do not count", idList(n.Extra)))
	}
	a.log.Warn().Int("voters", n.Voters).Int("expect", q.Expect).Uint64("tie_breaker", uint64(n.Tie)).
		Str("extra", idList(n.Extra)).Msg("quorum rule: " + strings.Join(why, "; "))
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown address"
	}
	return s
}

// duplicateSeen records where a packet with this node's ID and another
// boot came from (the loop, before the machine handles it).
func (p *publisher) duplicateSeen(boot uint64, src *net.UDPAddr, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dup != nil && p.dup.Boot == boot {
		return
	}
	addr := ""
	if src != nil {
		addr = src.String()
	}
	p.dup = &DuplicateID{Boot: boot, Addr: addr, Since: now}
	p.st.DuplicateID = p.dup
}

// publish hands e to the subscribers and then to Config.OnEvent. Its
// callers hold emit, so that OnEvent sees every event once, in order.
func (p *publisher) publish(e Event) {
	p.deliver(e)
	if f := p.a.cfg.OnEvent; f != nil {
		f(e.Clone())
	}
}

// deliver sends e to every subscriber. A subscriber that fell behind
// loses its oldest event, never the newest: the next one it gets says how
// many it missed (Event.Missed).
func (p *publisher) deliver(e Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.subs {
		// Each subscriber gets views of its own: the agent's current view
		// and every other subscriber's stay as they are whatever it does
		// with them.
		se := e.Clone()
		se.Missed = s.missed
		select {
		case s.ch <- se:
			s.missed = 0
			continue
		default:
		}
		select {
		case <-s.ch:
			s.missed++
			p.a.metrics.subDropped.Inc()
		default:
		}
		se.Missed = s.missed
		select {
		case s.ch <- se:
			s.missed = 0
		default:
		}
	}
}

// close ends every subscription and watcher (the agent stops).
func (p *publisher) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for s := range p.subs {
		close(s.ch)
		delete(p.subs, s)
	}
	for w := range p.watchers {
		close(w.ch)
		delete(p.watchers, w)
	}
}

// Status returns the node's current view of its group, its lease checked
// at the moment of the call: a copy of its own (Status.Clone), which the
// caller may change.
func (a *Agent) Status() Status {
	s := a.pub.status().Clone()
	s.Time = time.Now()
	return s
}

// Subscribe returns a channel of the node's view changes, starting with a
// ReasonSnapshot event of the current status (so nothing is missed between
// reading the status and subscribing), and a function that ends the
// subscription. The channel is buffered; a subscriber that falls behind
// loses its oldest events, never the newest (the next event it gets counts
// them in Missed, and groupd_subscriber_dropped_events_total too), rather
// than slow the agent: so it always ends up with the current view. The
// channel is closed when the subscription ends or the agent stops (see
// WatchLeader for how to read it then).
// Every event's views are the subscriber's own copies, as Status's are.
func (a *Agent) Subscribe() (<-chan Event, func()) {
	p := &a.pub
	s := &subscription{ch: make(chan Event, subBufSize)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		close(s.ch)
		return s.ch, func() {}
	}
	st := p.live(p.st, time.Now()).Clone()
	// The snapshot is stamped with when its view became current, not
	// with now: the loop may already be past a change it has not yet
	// published, and a snapshot stamped later than that change would put
	// the old view after it in a recorded history.
	at := st.Time
	st.Time = time.Now()
	if at.IsZero() {
		at = st.Time
	}
	s.ch <- Event{Time: at, Node: a.id, Name: a.name, Reason: ReasonSnapshot, New: st}
	p.subs[s] = struct{}{}
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if _, ok := p.subs[s]; ok {
				delete(p.subs, s)
				close(s.ch)
			}
		})
	}
}

// sinceLastChange is the seconds_since_last_change gauge.
func (a *Agent) sinceLastChange() float64 { return sinceSeconds(a.pub.status().Since) }

// gossipAlive is the gossip_alive_members gauge.
func (a *Agent) gossipAlive() float64 {
	if ml := a.ml.Load(); ml != nil {
		return float64(ml.NumMembers())
	}
	return 0
}

func idList(ids []NodeID) string {
	b := make([]byte, 0, 8*len(ids))
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(id), 10)
	}
	return string(b)
}

// sortedTags returns the tags as "k=v" strings in key order.
func sortedTags(tags map[string]string) []string {
	out := make([]string, 0, len(tags))
	for k, v := range tags {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
