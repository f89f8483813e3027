//go:build linux

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
	surv, _ := l.failover("ring failover", l.Timing().FailoverBoundRing(4))
	sts, _ := l.waitFor("survivors converge on node 4", surv, 30*time.Second, lab.Converged(surv))
	expectSide(t, sts, surv, 4)
}
