//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/internal/lab"
)

// Primary-partition mode (--expect): split five nodes 2+3; only the side of
// three is primary, and `groupd status` exits 3 on the other side; after
// the heal every node is primary again.
func TestPrimaryPartition(t *testing.T) {
	t.Parallel()
	requireFaults(t)
	l := newLab(t, 5, "lan", "--expect", "5")
	l.converge()
	l.expectPrimary(l.all(), true)

	a, b := []int{1, 2}, []int{3, 4, 5}
	l.partition(a, b)
	l.waitFor("side 1,2 converges", a, 30*time.Second, lab.Converged(a))
	l.waitFor("side 3,4,5 converges", b, 30*time.Second, lab.Converged(b))
	l.expectPrimary(a, false)
	l.expectPrimary(b, true)

	l.heal()
	l.waitFor("healed nodes converge", l.all(), 30*time.Second, lab.Converged(l.all()))
	l.expectPrimary(l.all(), true)
}

// expectPrimary checks, for each node, the status's primary flag and the
// exit code of `groupd status` (0 when primary, 3 when not).
func (l *tlab) expectPrimary(ids []int, want bool) {
	l.t.Helper()
	sts, _ := l.waitFor(fmt.Sprintf("nodes %v primary=%v", ids, want), ids, 10*time.Second,
		func(sts map[int]group.Status) string {
			for _, i := range ids {
				if s := sts[i]; s.Primary != want || s.Expect != 5 {
					return fmt.Sprintf("node %d: primary=%v expect=%d (%s)", i, s.Primary, s.Expect, s)
				}
			}
			return ""
		})
	for _, i := range ids {
		code := 0
		out, err := exec.Command(groupdBin, "status", "--api", "unix:"+l.Sock(i)).CombinedOutput()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			l.t.Fatalf("node %d: groupd status: %v", i, err)
		}
		wantCode := map[bool]int{true: 0, false: 3}[want]
		if code != wantCode {
			l.t.Errorf("node %d (%s): groupd status exited %d, want %d:\n%s", i, sts[i], code, wantCode, out)
		}
	}
}
