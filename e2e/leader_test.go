//go:build linux

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/wire"
)

// Issue 13: a leader never flaps. Node 5, the highest, leads a lab of five
// while lower nodes join, restart, and are partitioned away and healed
// back: none of that may end its leadership, not even for one status poll,
// and its term (the group number at which it began, a fencing number) must
// not change. Only its own death ends it, and then the highest survivor
// (4) starts leading, once, in a higher term (a lower survivor whose
// election's answer comes late on a starved machine may lead a group of
// its own for a moment first: a figure).
//
// Leadership is watched three ways: node 5's status through its API every
// 20 ms (leader, term), every node's --on-change hook (a line per event in
// its node dir, leader-start, leader-stop and leader-term included), and
// the recorded history (every node's event stream). A heal that gives node
// 5 a new term is one leader-term, neither a stop nor a start (issue 33).

// leaderHook is the file in a node's dir to which its --on-change hook
// appends one line per event: "EVENT ID LEADER TERM".
const leaderHook = "hooks.log"

// startHooked starts nodes ids, each with an --on-change hook that appends
// to leaderHook in its own node dir (kept for its restarts). The nodes
// start one after the other: lab.Options are per start, and each node's
// hook names its own dir. It returns when the last was up.
func (l *tlab) startHooked(ids ...int) time.Time {
	l.t.Helper()
	var up time.Time
	for _, i := range ids {
		cmd := fmt.Sprintf(`echo "$GROUPD_EVENT $GROUPD_ID $GROUPD_LEADER $GROUPD_TERM" >> '%s'`, filepath.Join(l.NodeDir(i), leaderHook))
		up = l.startWith(lab.Options{Args: []string{"--on-change", cmd}}, i)
	}
	return up
}

// hookLines returns the lines node i's hook wrote so far, each split into
// its fields (event, id, leader, term; the term is missing when empty).
func (l *tlab) hookLines(i int) [][]string {
	l.t.Helper()
	f, err := os.Open(filepath.Join(l.NodeDir(i), leaderHook))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		l.t.Fatalf("e2e: node %d's hook file: %v", i, err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) > 0 {
			out = append(out, fs)
		}
	}
	return out
}

// hookEvents returns the lines of node i's hook file from line from on
// whose event is ev.
func (l *tlab) hookEvents(i, from int, ev string) []string {
	var out []string
	ls := l.hookLines(i)
	for _, fs := range ls[min(from, len(ls)):] {
		if fs[0] == ev {
			out = append(out, strings.Join(fs, " "))
		}
	}
	return out
}

// settleLeaderHooks waits, at most timeout, until the hook file of each
// node in ids has a line for every leader-start, leader-stop and
// leader-term the
// history records for it. Hooks run one at a time, after their events, so
// on a loaded host a leadership change shows in the history well before
// its hook line; counting hook lines before they settle would charge the
// last change's line to what follows.
func (l *tlab) settleLeaderHooks(ids []int, timeout time.Duration) {
	l.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var behind []string
		for _, i := range ids {
			hist := len(l.historyEvents(i, group.ReasonLeaderStart, time.Time{}, time.Time{})) +
				len(l.historyEvents(i, group.ReasonLeaderStop, time.Time{}, time.Time{})) +
				len(l.historyEvents(i, group.ReasonLeaderTerm, time.Time{}, time.Time{}))
			hook := len(l.hookEvents(i, 0, group.ReasonLeaderStart)) + len(l.hookEvents(i, 0, group.ReasonLeaderStop)) +
				len(l.hookEvents(i, 0, group.ReasonLeaderTerm))
			if hook < hist {
				behind = append(behind, fmt.Sprintf("node %d: %d of %d", i, hook, hist))
			}
		}
		if len(behind) == 0 {
			return
		}
		if time.Now().After(deadline) {
			// A killed instance's hook may never have run; go on and
			// let the checks that follow judge.
			l.t.Logf("e2e: leader hooks still behind the history after %v: %s", timeout, strings.Join(behind, ", "))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// historyEvents returns the recorded events of node id (0: any node) with
// reason ev ("": any) and time in [from, to) (zero to: no end).
func (l *tlab) historyEvents(id int, ev string, from, to time.Time) []group.Event {
	l.t.Helper()
	h, err := l.History()
	if err != nil {
		l.t.Fatalf("e2e: %v", err)
	}
	var out []group.Event
	for _, e := range h.Events(from, to) {
		if (ev == "" || e.Reason == ev) && (id == 0 || e.Node == wire.NodeID(id)) {
			out = append(out, e)
		}
	}
	return out
}

// leaderPoller polls a node's status through its API every 20 ms and
// records every status in which it does not lead, and the terms it led in,
// in order.
type leaderPoller struct {
	node int
	term group.GroupNumber // the first
	c    *client.Client
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	polls int
	errs  int
	flaps []string // statuses without leadership, with their times
	terms []group.GroupNumber
}

func (l *tlab) pollLeader(i int, term group.GroupNumber) *leaderPoller {
	p := &leaderPoller{node: i, term: term, c: l.Client(i), stop: make(chan struct{}), done: make(chan struct{}), terms: []group.GroupNumber{term}}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			p.poll()
		}
	}()
	return p
}

// poll asks the node once and records its answer.
func (p *leaderPoller) poll() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	s, err := p.c.Status(ctx)
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err != nil:
		p.errs++
	case !s.Leader:
		p.polls++
		p.flaps = append(p.flaps, fmt.Sprintf("%s: leader %v term %s (%s)", s.Time.Format("15:04:05.000"), s.Leader, s.Term, s))
	default:
		p.polls++
		if last := p.terms[len(p.terms)-1]; s.Term != last {
			p.terms = append(p.terms, s.Term)
		}
	}
}

// figures returns the polls answered, those that failed, and the flaps.
func (p *leaderPoller) figures() (polls, errs int, flaps []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.polls, p.errs, slices.Clone(p.flaps)
}

// seen returns the terms the node led in, in order.
func (p *leaderPoller) seen() []group.GroupNumber {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.terms)
}

// end stops the poller, asks the node once more (what a test checks after
// end includes the node's state as end was called, not as of up to one
// poll interval before), and fails t for every flap it saw.
func (p *leaderPoller) end(t *testing.T) {
	t.Helper()
	close(p.stop)
	<-p.done
	p.poll()
	polls, errs, flaps := p.figures()
	const most = 20
	for k, f := range flaps {
		if k == most {
			t.Errorf("… and %d more", len(flaps)-most)
			break
		}
		t.Errorf("node %d does not lead: %s", p.node, f)
	}
	if errs > 0 {
		t.Logf("leader poll: %d of %d polls of node %d got no answer (not counted as flaps)", errs, polls+errs, p.node)
	}
	terms := p.seen()
	for k := 1; k < len(terms); k++ {
		if !terms[k-1].Less(terms[k]) {
			t.Errorf("node %d's terms went from %s to %s: terms only grow", p.node, terms[k-1], terms[k])
		}
	}
}

// convergedUnder waits until nodes ids are converged under coord and
// returns their views and when polling saw it.
func (l *tlab) convergedUnder(what string, ids []int, coord int) (map[int]group.Status, time.Time) {
	l.t.Helper()
	sts, polled := l.waitFor(what, ids, 60*time.Second, lab.Converged(ids))
	expectSide(l.t, sts, ids, coord)
	return sts, polled
}

// leaderLab starts nodes ids of a new 5-node lab with hooks, waits until
// they converge under node 5 and returns node 5's view.
func leaderLab(t *testing.T, ids ...int) (*tlab, group.Status) {
	l := newLab(t, 5, "lan")
	l.startHooked(ids...)
	sts, _ := l.convergedUnder("nodes "+list(ids)+" converge", ids, 5)
	s5 := sts[5]
	if !s5.Leader || s5.Term.IsZero() {
		t.Fatalf("node 5 coordinates the converged group but does not lead: %s", s5)
	}
	t.Logf("nodes %s converged in group %s under node 5, leader in term %s since %s",
		list(ids), s5.Group, s5.Term, s5.LeaderSince.Format("15:04:05.000"))
	return l, s5
}

// rejoin restarts lower node i (SIGTERM, or kill -9 when crash) and waits
// until all nodes converge under 5 again. It returns how long that took on
// the recorded history, a figure beside T_heal (failing only past the
// outer limit).
func (l *tlab) rejoin(i int, crash bool) time.Duration {
	l.t.Helper()
	at := l.restart(i, crash)
	_, polled := l.convergedUnder(fmt.Sprintf("nodes converge after restarting node %d", i), l.all(), 5)
	d := l.measure(fmt.Sprintf("rejoin of node %d", i), at, l.all(), invariant.IsConverged, polled)
	l.timing(fmt.Sprintf("node %d rejoined after its restart", i), d, l.Timing().HealBound(), 0)
	return d
}

// splitLow partitions lower nodes low from the others, waits until each
// side has converged on its own (low under its highest, the others under
// 5), heals, and waits until all converge under 5 again. It returns how
// long the sides (the slower) and the heal took on the recorded history
// (figures beside T_heal, failing only past the outer limit), and the term
// the low side's leader took; it fails t if node 5 does
// not lead after the heal in a term above the low side's (issue 23: a
// leader that merges a group back goes above every term its members saw).
func (l *tlab) splitLow(low []int) (side, heal time.Duration, lowTerm group.GroupNumber) {
	l.t.Helper()
	var high []int
	for _, i := range l.all() {
		if !slices.Contains(low, i) {
			high = append(high, i)
		}
	}
	part := l.partition(low, high)
	sl, pl := l.convergedUnder("side "+list(low)+" converges on its own", low, slices.Max(low))
	lowTerm = sl[slices.Max(low)].Term
	_, ph := l.convergedUnder("side "+list(high)+" converges on its own", high, 5)
	side = max(l.measure("side "+list(low), part.Start, low, invariant.IsConverged, pl),
		l.measure("side "+list(high), part.Start, high, invariant.IsConverged, ph))
	bound := l.Timing().HealBound()
	l.timing(fmt.Sprintf("partition %s|%s: the slower side settled", list(low), list(high)), side, bound, applied(part))
	w := l.heal()
	sts, polled := l.convergedUnder("nodes converge after the heal of "+list(low)+"|"+list(high), l.all(), 5)
	heal = l.measure("heal of "+list(low)+"|"+list(high), w.Start, l.all(), invariant.IsConverged, polled)
	l.timing(fmt.Sprintf("heal of %s|%s: all converged under 5", list(low), list(high)), heal, bound, applied(w))
	if s5 := sts[5]; !s5.Leader || !lowTerm.Less(s5.Term) {
		l.t.Errorf("after the heal of %s|%s node 5 leads %v in term %s, want a term above the low side's %s", list(low), list(high), s5.Leader, s5.Term, lowTerm)
	}
	return side, heal, lowTerm
}

// leaderStops checks node 5's leadership transitions from its leadership
// in term first (as the lab converged) until until, in its hook file and
// in the history: exactly newTerms leader-terms (each a new term, which
// goes on leading: issue 33), no leader-stop and no leader-start after the
// event that began term first. What came before that leadership is not
// counted: on a loaded host node 5 may lead a smaller group first and take
// term first as the others join, by a leader-term rather than a
// leader-start (both begin term first here). It returns how term first
// began in the hook and in the history ("leader-start" or "leader-term").
func (l *tlab) leaderStops(first group.GroupNumber, until time.Time, newTerms int) (hookBegan, histBegan string) {
	l.t.Helper()
	begins := func(ev string) bool { return ev == group.ReasonLeaderStart || ev == group.ReasonLeaderTerm }
	// The hook line that began term first; counting starts after it.
	lines := l.hookLines(5)
	hookFrom := -1
	for k, fs := range lines {
		if begins(fs[0]) && fs[len(fs)-1] == first.String() {
			hookFrom, hookBegan = k+1, fs[0]
			break
		}
	}
	// The recorded event that began term first, likewise: node 5's
	// events after it are counted.
	evs := l.historyEvents(5, "", time.Time{}, until)
	var after []group.Event
	for k, e := range evs {
		if begins(e.Reason) && e.New.Term == first {
			histBegan, after = e.Reason, evs[k+1:]
			break
		}
	}
	if hookFrom < 0 || histBegan == "" {
		l.t.Errorf("node 5's term %s began with no leader-start or leader-term: in its hook %v, in the history %v", first, hookFrom >= 0, histBegan != "")
		return hookBegan, histBegan
	}
	// The history's stop of the term before first may come a moment
	// after first's start: a stop counts when the term it ends is first
	// or later.
	var histStops []group.Event
	histTerms, histStarts := 0, 0
	for _, e := range after {
		switch e.Reason {
		case group.ReasonLeaderStop:
			if !e.Old.Term.Less(first) {
				histStops = append(histStops, e)
			}
		case group.ReasonLeaderTerm:
			histTerms++
		case group.ReasonLeaderStart:
			histStarts++
		}
	}
	var hookStops []string
	for _, line := range l.hookEvents(5, hookFrom, group.ReasonLeaderStop) {
		fs := strings.Fields(line)
		if g, err := wire.ParseGroupNumber(fs[len(fs)-1]); err != nil || !g.Less(first) {
			hookStops = append(hookStops, line)
		}
	}
	hookTerms := len(l.hookEvents(5, hookFrom, group.ReasonLeaderTerm))
	hookStarts := len(l.hookEvents(5, hookFrom, group.ReasonLeaderStart))
	if len(hookStops) != 0 || len(histStops) != 0 || hookTerms != newTerms || histTerms != newTerms || hookStarts != 0 || histStarts != 0 {
		var at []string
		for _, e := range histStops {
			at = append(at, fmt.Sprintf("%s (term %s; now %s)", e.Time.Format("15:04:05.000"), e.Old.Term, e.New))
		}
		l.t.Errorf("node 5 since its term %s began (%s in its hook, %s in the history): %d leader-stops in its hook %v, %d in the history %v; %d and %d leader-terms; %d and %d more leader-starts; want no stop, %d leader-terms (one per new term) and no other start",
			first, hookBegan, histBegan, len(hookStops), hookStops, len(histStops), at, hookTerms, histTerms, hookStarts, histStarts, newTerms)
	}
	return hookBegan, histBegan
}

// TestLeaderKeepsLeading (issues 13, 23): node 5 leads nodes 2-5; node 1
// joins and node 3 restarts: node 5's status, polled every 20 ms, shows it
// leading in its first term throughout. {1,2} are then partitioned from
// {3,4,5} (each side converging on its own, node 2 leading the low one)
// and healed back: node 5 leads throughout and takes one new term, above
// node 2's (a stop and a start in its hook and the history). Then node 5
// is killed with -9: node 4 starts leading, once, in a higher term (the
// time is logged beside T_failover).
func TestLeaderKeepsLeading(t *testing.T) {
	t.Parallel()
	requireFaults(t)
	l, s5 := leaderLab(t, 2, 3, 4, 5)
	p := l.pollLeader(5, s5.Term)

	up := l.startHooked(1)
	_, polled := l.convergedUnder("nodes converge after node 1 joins", l.all(), 5)
	dJoin := l.measure("join of node 1", up, l.all(), invariant.IsConverged, polled)
	dRestart := l.rejoin(3, false)
	if terms := p.seen(); len(terms) != 1 {
		t.Errorf("node 5's term changed through a join and a restart: %v", terms)
	}
	dSide, dHeal, lowTerm := l.splitLow([]int{1, 2})

	p.end(t)
	polls, errs, flaps := p.figures()
	if terms := p.seen(); len(terms) != 2 || !lowTerm.Less(terms[1]) {
		t.Errorf("node 5's terms %v: want its first and one new term above node 2's %s", terms, lowTerm)
	}
	// The real failover; the survivors' hook lines from here on are its.
	// Hooks run one at a time after their events: let the heal's
	// leader-stop of node 2 reach its file before counting, and node 5's
	// stop of its old term before the kill (on a loaded machine the kill
	// came first and took the hook with it: 1 stop in the hook, 2 in the
	// history).
	surv := lab.Span(1, 4)
	l.settleLeaderHooks(lab.Span(1, 5), 5*time.Second)
	from := map[int]int{}
	for _, i := range surv {
		from[i] = len(l.hookLines(i))
	}
	kill := l.kill(5)
	hookBegan, histBegan := l.leaderStops(s5.Term, kill.Start, 1)
	t.Logf("leader: node 5 led in term %s through the join of node 1 (all converged %.3fs after it was up) and a restart of node 3 (%.3fs), and through the partition 1-2|3-5 (sides settled after %.3fs, healed %.3fs after the heal), after which it took term %s above node 2's %s: %d polls, %d flaps, %d unanswered; its first term began with a %s in its hook, a %s in the history",
		s5.Term, dJoin.Seconds(), dRestart.Seconds(), dSide.Seconds(), dHeal.Seconds(), p.seen()[len(p.seen())-1], lowTerm, polls, len(flaps), errs, hookBegan, histBegan)

	sts, polled := l.convergedUnder("survivors 1-4 converge under node 4", surv, 4)
	dFail := l.measure("failover", kill.Start, surv, invariant.IsFailedOver, polled)
	dConv := l.measure("survivors' convergence", kill.Start, surv, invariant.IsConverged, polled)
	l.timing("failover: survivors 1-4 Normal after kill -9 of node 5", dFail, l.Timing().FailoverBound(), 0)
	s4 := sts[4]
	if last := p.seen()[len(p.seen())-1]; !s4.Leader || !last.Less(s4.Term) {
		t.Errorf("node 4 after the failover: leader %v in term %s; want leader in a term above node 5's %s", s4.Leader, s4.Term, last)
	}
	// Hooks run after the event, in the daemon's own time, and the
	// recorders deliver a moment after it: wait until the history has
	// node 4's leader-start, then until every survivor's hook file has
	// caught up with its history (a second leader-start anywhere would
	// show in both).
	deadline := time.Now().Add(5 * time.Second)
	for len(l.historyEvents(4, group.ReasonLeaderStart, kill.Start, time.Time{})) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polling the recorded history
	}
	l.settleLeaderHooks(surv, 5*time.Second)
	// Node 4 starts leading once and keeps leading. Another survivor
	// leads only if node 4's answer to its election came later than
	// AnswerTimeout (a starved machine: under a load of 33 node 3 led a
	// group of its own for a moment, then joined node 4's): that is the
	// bully election under a broken timing assumption, not a flap, and
	// without a quorum it is allowed. It is logged as a figure; it must
	// have ended, and the hook and the history must agree on it.
	var transient []string
	for _, i := range surv {
		hs := l.hookEvents(i, from[i], group.ReasonLeaderStart)
		es := l.historyEvents(i, group.ReasonLeaderStart, kill.Start, time.Time{})
		stops := l.hookEvents(i, from[i], group.ReasonLeaderStop)
		var at []string
		for _, e := range es {
			at = append(at, fmt.Sprintf("%s term %s", e.Time.Format("15:04:05.000"), e.New.Term))
		}
		switch {
		case i == 4:
			if len(hs) != 1 || len(es) != 1 {
				t.Errorf("node 4 after the kill: %d leader-starts in its hook %v, %d in the history %v; want 1", len(hs), hs, len(es), at)
			}
			if len(stops) > 0 {
				t.Errorf("node 4 after the kill: leader-stop in its hook: %v", stops)
			}
		case len(hs) != len(es) || len(stops) != len(hs):
			t.Errorf("node %d after the kill: %d leader-starts in its hook %v, %d in the history %v, %d leader-stops in its hook %v: want them to agree, each start ended",
				i, len(hs), hs, len(es), at, len(stops), stops)
		case len(es) > 0:
			transient = append(transient, fmt.Sprintf("node %d %v", i, at))
		}
		if s := sts[i]; i != 4 && s.Leader {
			t.Errorf("node %d leads after the failover: %s", i, s)
		}
	}
	if len(transient) > 0 {
		t.Logf("failover: before node 4's invitation a lower survivor led a group of its own for a moment (its election's answer came after AnswerTimeout %v: a loaded machine, a figure): %s",
			l.Timing().AnswerTimeout, strings.Join(transient, "; "))
	}
	t.Logf("failover: kill -9 of node 5; survivors 1-4 Normal under node 4 %.3fs after the kill (T_failover %v), converged %.3fs after; node 4 leads in term %s (node 5's was %s), started once",
		dFail.Seconds(), l.Timing().FailoverBound(), dConv.Seconds(), s4.Term, s5.Term)
}

// TestLeaderKeepsLeadingSoak (issues 13, 23, GROUPD_E2E_LONG=1): node 5
// leads nodes 1-5 through 20 rounds, alternately a lower node restarting
// (SIGTERM or kill -9; it joins again) and a partition of lower nodes from
// the rest, each side converging on its own, then healed. Node 5's
// status, polled every 20 ms, must show it leading throughout; its term
// changes only at the heals (each above the low side's leader's), so its
// hook and the history have one leader-stop per heal.
func TestLeaderKeepsLeadingSoak(t *testing.T) {
	if !long() {
		t.Skip("e2e: 20 rounds of joins and heals; set GROUPD_E2E_LONG=1 to run them")
	}
	t.Parallel()
	requireFaults(t)
	l, s5 := leaderLab(t, lab.Span(1, 5)...)
	p := l.pollLeader(5, s5.Term)
	begin := time.Now()
	const rounds = 20
	lows := [][]int{{1, 2}, {3, 4}, {1, 2, 3, 4}, {2, 4}, {1, 3}}
	var joins, heals int
	var worstJoin, worstSide, worstHeal time.Duration
	for r := range rounds {
		if r%2 == 0 {
			i, crash := r/2%4+1, r/2%3 == 1
			d := l.rejoin(i, crash)
			worstJoin = max(worstJoin, d)
			joins++
			t.Logf("round %d: node %d restarted (%s); converged under 5 after %.3fs", r+1, i, map[bool]string{true: "kill -9", false: "SIGTERM"}[crash], d.Seconds())
		} else {
			low := lows[r/2%len(lows)]
			side, heal, _ := l.splitLow(low)
			worstSide, worstHeal = max(worstSide, side), max(worstHeal, heal)
			heals++
			t.Logf("round %d: partition %s|rest: sides settled after %.3fs; healed under 5 %.3fs after the heal", r+1, list(low), side.Seconds(), heal.Seconds())
		}
	}
	p.end(t)
	polls, errs, flaps := p.figures()
	l.settleLeaderHooks([]int{5}, 5*time.Second)
	hookBegan, histBegan := l.leaderStops(s5.Term, time.Time{}, heals)
	if terms := p.seen(); len(terms) != heals+1 {
		t.Errorf("node 5 led in %d terms across %d heals: %v; want one new term per heal", len(terms), heals, terms)
	}
	t.Logf("leader soak: node 5 led throughout %d joins and %d heals in %v, in %d terms (one new per heal): %d polls, %d flaps, %d unanswered; its first term began with a %s in its hook, a %s in the history; slowest rejoin %.3fs, side %.3fs, heal %.3fs",
		joins, heals, time.Since(begin).Round(time.Second), len(p.seen()), polls, len(flaps), errs, hookBegan, histBegan,
		worstJoin.Seconds(), worstSide.Seconds(), worstHeal.Seconds())
}
