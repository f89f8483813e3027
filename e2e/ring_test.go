package e2e

import (
	"testing"
	"time"

	"github.com/groupd/groupd/internal/lab"
)

// --election ring: kill -9 of the coordinator; the survivors run the ring
// election and are Normal in one new group within the ring's T_failover,
// coordinated by the highest survivor.
func TestRingElectionFailover(t *testing.T) {
	t.Parallel()
	l := newLab(t, 5, "lan", "--election", "ring")
	sts := l.converge()
	old := sts[1].Group
	surv := lab.Span(1, 4)
	kill := l.kill(5)
	sts, polled := l.waitFor("survivors 1-4 fail over (ring)", surv, 30*time.Second, lab.FailedOver(surv))
	d := l.measure("ring failover", kill.Start, surv, isFailedOver, polled)
	bound := l.Timing().FailoverBoundRing(len(surv)) + slack
	t.Logf("ring failover: survivors 1-4 Normal in group %s %.3fs after kill -9 of coordinator 5 (ring T_failover %v + slack %v = %v)",
		sts[1].Group, d.Seconds(), l.Timing().FailoverBoundRing(len(surv)), slack, bound)
	if d > bound {
		t.Errorf("ring failover took %v, more than its T_failover + slack = %v", d, bound)
	}
	if !old.Less(sts[1].Group) {
		t.Errorf("survivors' group %s is not newer than the crashed coordinator's %s", sts[1].Group, old)
	}
	l.checkpoint("L2 "+list(surv), kill.End.Add(bound), "L2 at kill + ring T_failover + slack")
	sts, _ = l.waitFor("survivors converge on node 4", surv, 30*time.Second, lab.Converged(surv))
	expectSide(t, sts, surv, 4)
}
