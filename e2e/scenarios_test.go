//go:build linux

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// Profiles: every scenario runs the lan profile (docs/design.md §5 defaults), the
// one whose T_failover (2 s) and T_heal (8.05 s) the issue asks about. Each
// scenario has a lab of its own and runs beside the others (t.Parallel):
// most of their time is spent waiting for the check points at fault +
// convergence, and idle daemons barely load the machine. The fast
// profile is not needed to save time, and its 150 ms timeouts would be at
// the mercy of a loaded 2-core box.

// lossBound is the documented bound for 20 % loss (every packet a node
// receives is dropped with p = 0.2, so a round trip is lost with p = 0.36):
// starting from five singletons under that loss, the nodes must be seen
// converged (one group, coordinator 5, all Normal) within this time. The
// protocol gives no bound under loss; 45 s is about five T_heal, generous
// on purpose (measured: a few seconds, see the log).
const lossBound = 45 * time.Second

// converge starts every node of the lab and waits until they form one
// group, logging how long it took. It returns their views.
func (l *tlab) converge() map[int]group.Status {
	l.t.Helper()
	up := l.start(l.all()...)
	sts, polled := l.waitFor(fmt.Sprintf("%d nodes converge", l.N()), l.all(), 60*time.Second, lab.Converged(l.all()))
	d := l.measure("start-up convergence", up, l.all(), invariant.IsConverged, polled)
	l.t.Logf("start-up: %d nodes converged in group %s (coordinator %d) %.3fs after all daemons were up",
		l.N(), sts[1].Group, sts[1].Coordinator, d.Seconds())
	return sts
}

// (1) The nodes converge: one group, coordinator = the highest ID, all
// Normal (L1 at start + T_heal).
func TestConverge(t *testing.T) {
	t.Parallel()
	l := newLab(t, 5, "lan")
	up := l.start(l.all()...)
	sts, polled := l.waitFor("5 nodes converge", l.all(), 60*time.Second, lab.Converged(l.all()))
	d := l.measure("start-up convergence", up, l.all(), invariant.IsConverged, polled)
	g := expectSide(t, sts, l.all(), 5)
	l.timing(fmt.Sprintf("start-up: nodes 1-5 Normal in group %s, coordinator 5, after all daemons were up", g), d, l.Timing().HealBound(), 0)
	l.checkpoint("L1", polled, "L1 once seen converged after the start")
}

// (2) kill -9 of the coordinator: the survivors are Normal in one new group
// within T_failover (L2), then coordinated by the highest survivor.
func TestCoordinatorCrash(t *testing.T) {
	t.Parallel()
	l := newLab(t, 5, "lan")
	surv, kill := l.failover("failover", l.Timing().FailoverBound())

	sts, polled := l.waitFor("survivors converge on node 4", surv, 30*time.Second, lab.Converged(surv))
	d := l.measure("survivors' convergence", kill.Start, surv, invariant.IsConverged, polled)
	expectSide(t, sts, surv, 4)
	t.Logf("after the crash: survivors 1-4 in group %s coordinated by 4 (the highest survivor) %.3fs after the kill", sts[1].Group, d.Seconds())
	l.checkpoint("L1", polled, "L1 once the survivors were seen converged after the kill")
}

// failover converges a lab, kills its coordinator (node N) with -9, waits
// until the survivors are Normal in one new group, and checks that on the
// recorded history with an L2 check point at the instant polling saw it.
// How long it took is measured on the history and logged beside bound
// (T_failover of the lab's election), failing only past the outer limit.
// It returns the survivors and the kill.
func (l *tlab) failover(what string, bound time.Duration) ([]int, lab.Window) {
	t := l.t
	t.Helper()
	sts := l.converge()
	old := sts[1].Group
	surv := lab.Span(1, l.N()-1)
	kill := l.kill(l.N())
	sts, polled := l.waitFor(what+": survivors "+list(surv)+" fail over", surv, 30*time.Second, lab.FailedOver(surv))
	d := l.measure(what, kill.Start, surv, invariant.IsFailedOver, polled)
	g := sts[1].Group
	l.timing(fmt.Sprintf("%s: survivors %s Normal in group %s (coordinator %d) after kill -9 of coordinator %d", what, list(surv), g, sts[1].Coordinator, l.N()),
		d, bound, 0)
	if g == old || !old.Less(g) {
		t.Errorf("survivors' group %s is not a new number (the crashed coordinator's was %s)", g, old)
	}
	l.checkpoint("L2 "+list(surv), polled, "L2 once seen failed over after the kill ("+what+")")
	return surv, kill
}

// (3) A 2+3 partition gives two groups with different numbers, each
// coordinated by its side's highest node; after the heal, one group
// coordinated by node 5 forms within T_heal.
func TestPartitionHeal(t *testing.T) {
	t.Parallel()
	requireFaults(t)
	l := newLab(t, 5, "lan")
	l.converge()
	splitAndHeal(t, l, []int{1, 2}, []int{3, 4, 5}, 30*time.Second)
}

// (4) An asymmetric cut: everything coordinator 5 sends is dropped (5 still
// hears everyone). To nodes 1-4, 5 has crashed: they must form a group
// without it (T_failover is logged as a figure), and 5 must not stay coordinator
// of their group: it drops them from its member list. After the cut is
// removed, one group coordinated by 5 forms within T_heal. Safety
// (S1–S4) is checked over the whole run.
func TestAsymmetricCut(t *testing.T) {
	t.Parallel()
	requireFaults(t)
	l := newLab(t, 5, "lan")
	l.converge()
	others := lab.Span(1, 4)
	cut := l.cut(5, others...)
	sts, polled := l.waitFor("nodes 1-4 form a group without 5", others, 30*time.Second, lab.FailedOver(others))
	d := l.measure("failover under the one-way cut", cut.Start, others, invariant.IsFailedOver, polled)
	g := sts[1].Group
	l.timing(fmt.Sprintf("one-way cut 5->1-4: nodes 1-4 Normal in group %s (coordinator %d) after the cut", g, sts[1].Coordinator),
		d, l.Timing().FailoverBound(), applied(cut))
	if g.ID == 5 {
		t.Errorf("nodes 1-4 are still in coordinator 5's group %s", g)
	}
	l.checkpoint("L2 "+list(others), polled, "L2 for nodes 1-4 once seen failed over after the cut")

	// Node 5 stops counting them as members. It still hears them, but a
	// coordinator refreshes a member only on messages carrying its own
	// group (invitation/coordinator.go): once they are in their new group
	// (within T_failover), 5 drops them after MemberTimeout.
	only5 := func(sts []invitation.Status) bool {
		return len(sts) == 1 && len(sts[0].Members) == 1 && sts[0].Members[0].ID == 5
	}
	s5, polled5 := l.waitFor("node 5 drops nodes 1-4 from its group", []int{5}, outerLimit(l.Timing().FailoverBound()+l.Timing().MemberTimeout, applied(cut)), func(sts map[int]group.Status) string {
		if s := sts[5]; len(s.Members) != 1 || s.Members[0] != 5 {
			return fmt.Sprintf("node 5 still lists %v in %s (%s)", s.Members, s.Group, s.State)
		}
		return ""
	})
	d5 := l.measure("node 5 alone", cut.Start, []int{5}, only5, polled5)
	l.timing(fmt.Sprintf("one-way cut: node 5 lists only itself (group %s, %s, %s) after the cut (bound T_failover %v + MemberTimeout %v)",
		s5[5].Group, s5[5].State, s5[5].Role, l.Timing().FailoverBound(), l.Timing().MemberTimeout),
		d5, l.Timing().FailoverBound()+l.Timing().MemberTimeout, applied(cut))
	sts, errs := l.Views(others)
	for _, i := range others {
		if err := errs[i]; err != nil {
			t.Errorf("node %d: %v", i, err)
		} else if sts[i].Coordinator == 5 {
			t.Errorf("node %d's coordinator is 5 during the cut: %s", i, sts[i])
		}
	}

	heal := l.heal()
	sts, polled = l.waitFor("nodes converge after the cut", l.all(), 30*time.Second, lab.Converged(l.all()))
	d = l.measure("heal of the one-way cut", heal.Start, l.all(), invariant.IsConverged, polled)
	expectSide(t, sts, l.all(), 5)
	l.timing(fmt.Sprintf("heal of the one-way cut: nodes 1-5 in group %s coordinated by 5 after the heal", sts[1].Group),
		d, l.Timing().HealBound(), applied(heal))
	l.checkpoint("L1", polled, "L1 once seen converged after the heal")
}

// (5) 20 % loss still converges: five daemons started under 20 % loss on
// every link form one group coordinated by 5 within lossBound; once the
// loss is removed they are (still or again) converged within T_heal.
func TestLossConverges(t *testing.T) {
	t.Parallel()
	requireFaults(t)
	l := newLab(t, 5, "lan")
	l.loss(20)
	up := l.start(l.all()...)
	sts, polled := l.waitFor("5 nodes converge under 20% loss", l.all(), lossBound, lab.Converged(l.all()))
	d := l.measure("convergence under 20% loss", up, l.all(), invariant.IsConverged, polled)
	expectSide(t, sts, l.all(), 5)
	t.Logf("20%% loss: nodes 1-5 in group %s coordinated by 5 %.3fs after start (the outer limit, %v, is the waiting time)", sts[1].Group, d.Seconds(), lossBound)

	heal := l.heal()
	sts, polled = l.waitFor("nodes converge after the loss", l.all(), 30*time.Second, lab.Converged(l.all()))
	d = l.measure("convergence after removing the loss", heal.Start, l.all(), invariant.IsConverged, polled)
	expectSide(t, sts, l.all(), 5)
	l.timing(fmt.Sprintf("loss removed: nodes 1-5 in group %s coordinated by 5 after the removal", sts[1].Group),
		d, l.Timing().HealBound(), applied(heal))
	l.checkpoint("L1", polled, "L1 once seen converged after the loss was removed")
}

// (6) A node restarted with its data dir gets a new group number greater
// than every one it used before. Each restart happens while the node is cut
// off from the others (when iptables is there), so that the only source of
// its new number is its data dir: it hears no message whose sequence it
// could build on.
//   - The coordinator (5) is killed with -9: every number it ever used is
//     its own, so its first number after the restart must exceed them all.
//   - A participant is restarted, once stopped with SIGTERM (2), once
//     killed with -9 (3): its first number must exceed every number it
//     created, and every other node's number it was in: the daemon saves
//     the last group it moves to before reporting it, and starts its
//     counter above it.
func TestRestartNewGroupNumber(t *testing.T) {
	t.Parallel()
	l := newLab(t, 5, "lan")
	l.converge()
	isolate := noIptables == ""
	if !isolate {
		t.Logf("no iptables: restarting without isolation (a restarted node may also build on sequences it hears)")
	}
	h, err := l.History()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id    int
		crash bool
	}{{5, true}, {2, false}, {3, true}} {
		id := wire.NodeID(tc.id)
		how := map[bool]string{true: "kill -9", false: "SIGTERM"}[tc.crash]
		st0 := l.status(tc.id)
		var rest []int
		for i := 1; i <= l.N(); i++ {
			if i != tc.id {
				rest = append(rest, i)
			}
		}
		if isolate {
			l.partition(rest, []int{tc.id})
		}
		at := l.restart(tc.id, tc.crash)
		before := h.Groups(id, time.Time{}, at) // everything the old process reported
		sts, _ := l.waitFor(fmt.Sprintf("node %d forms a group of its own after the restart", tc.id), []int{tc.id}, 30*time.Second,
			func(sts map[int]group.Status) string {
				if s := sts[tc.id]; s.State != wire.StateNormal || s.Group.ID != id {
					return fmt.Sprintf("node %d is %s", tc.id, s)
				}
				return ""
			})
		if isolate {
			l.heal()
		}
		l.waitFor(fmt.Sprintf("nodes converge after restarting node %d", tc.id), l.all(), 30*time.Second, lab.Converged(l.all()))
		after := h.Groups(id, at, time.Now())

		var own []wire.GroupNumber
		for _, g := range before {
			if g.ID == id {
				own = append(own, g)
			}
		}
		var first wire.GroupNumber
		for _, g := range after {
			if g.ID == id {
				first = g
				break
			}
		}
		if first.IsZero() {
			// The recorder missed the first event; the view polled
			// above is a number of the new process.
			first = sts[tc.id].Group
			t.Logf("node %d: no own number recorded after the restart; using the polled %s", tc.id, first)
		}
		t.Logf("node %d restarted (%s): before it was in %v (its own: %v); after: %v; first new number %s (counter %d before, incarnation %d before)",
			tc.id, how, before, own, after, first, st0.Counter, st0.Incarnation)
		// The counter in the status before the restart covers every
		// number the node created, including any the recorder missed
		// (under load it can connect after a node left its boot group).
		if first.Seq <= st0.Counter {
			t.Errorf("node %d: new group number %s after the restart is not above its counter %d before it", tc.id, first, st0.Counter)
		}
		if len(own) == 0 {
			t.Logf("node %d: the recorder caught none of its own numbers before the restart (groups %v); its counter was %d", tc.id, before, st0.Counter)
		}
		for _, g := range own {
			if !g.Less(first) {
				t.Errorf("node %d: new group number %s after the restart is not greater than %s, which it created before", tc.id, first, g)
			}
		}
		if st1, err := l.Status(tc.id); err == nil && st1.Incarnation <= st0.Incarnation {
			t.Errorf("node %d: incarnation %d after the restart, %d before", tc.id, st1.Incarnation, st0.Incarnation)
		}
		var notBelow []wire.GroupNumber
		for _, g := range before {
			if !g.Less(first) {
				notBelow = append(notBelow, g)
			}
		}
		if len(notBelow) == 0 {
			t.Logf("node %d: new number %s is greater than every number it was in before", tc.id, first)
		} else {
			t.Errorf("node %d (%s): new number %s is not greater than %v, which it was in before", tc.id, how, first, notBelow)
		}
	}
}

// (7) Sixteen nodes: converge, split 8+8 (each side coordinated by its
// highest), heal, converge within T_heal.
func TestSplitHeal16(t *testing.T) {
	t.Parallel()
	requireFaults(t)
	l := newLab(t, 16, "lan")
	l.converge()
	splitAndHeal(t, l, lab.Span(1, 8), lab.Span(9, 16), 60*time.Second)
}

// splitAndHeal partitions a converged lab into sides a | b, checks that each
// side settles, under its highest node and in a group of its own, then
// heals and checks that all nodes settle under node N (waiting up to
// healWait). The times are figures beside T_heal, failing only past the
// outer limit. Check points go into the recorded history: per-side L1 once
// polling saw the side converged, L1 once it saw the heal converged.
func splitAndHeal(t *testing.T, l *tlab, a, b []int, healWait time.Duration) {
	t.Helper()
	na, nb := list(a), list(b)
	part := l.partition(a, b)
	stsA, polledA := l.waitFor("side "+na+" converges", a, 30*time.Second, lab.Converged(a))
	stsB, polledB := l.waitFor("side "+nb+" converges", b, 30*time.Second, lab.Converged(b))
	dA := l.measure("side "+na, part.Start, a, invariant.IsConverged, polledA)
	dB := l.measure("side "+nb, part.Start, b, invariant.IsConverged, polledB)
	topA, topB := a[len(a)-1], b[len(b)-1]
	gA := expectSide(t, stsA, a, topA)
	gB := expectSide(t, stsB, b, topB)
	if gA == gB {
		t.Errorf("both sides are in group %s", gA)
	}
	bound := l.Timing().HealBound()
	l.timing(fmt.Sprintf("partition %s|%s: side %s in group %s (coordinator %d)", na, nb, na, gA, topA), dA, bound, applied(part))
	l.timing(fmt.Sprintf("partition %s|%s: side %s in group %s (coordinator %d)", na, nb, nb, gB, topB), dB, bound, applied(part))
	l.checkpoint("L1 "+list(a), polledA, "L1 on side "+na+" once seen converged after the partition")
	l.checkpoint("L1 "+list(b), polledB, "L1 on side "+nb+" once seen converged after the partition")

	// lab.sh status's count, in every family of the lab: node a[0] drops
	// every node of b (in each family), and nothing once healed.
	if n, err := l.FaultRules(a[0]); err != nil || n < len(b) {
		t.Errorf("node %d has %d fault rules (%v) during the partition, want at least %d", a[0], n, err, len(b))
	}
	heal := l.heal()
	if n, err := l.FaultRules(a[0]); err != nil || n != 0 {
		t.Errorf("node %d keeps %d fault rules (%v) after the heal", a[0], n, err)
	}
	all := append(slices.Clone(a), b...) // the lab's nodes that run groupd
	slices.Sort(all)
	top := all[len(all)-1]
	sts, polled := l.waitFor(fmt.Sprintf("%d healed nodes converge", len(all)), all, healWait, lab.Converged(all))
	d := l.measure(fmt.Sprintf("heal of %d", len(all)), heal.Start, all, invariant.IsConverged, polled)
	g := expectSide(t, sts, all, top)
	l.timing(fmt.Sprintf("heal: nodes %s in group %s coordinated by %d after the heal", list(all), g, top), d, bound, applied(heal))
	l.checkpoint("L1", polled, "L1 once seen converged after the heal")
}
