package simbench

import (
	"os"
	"strings"
	"testing"

	"github.com/groupd/groupd/invitation"
)

// TestCompareElections checks both algorithms fail over within their
// bounds and that the ring's own traffic stays linear; with
// GROUPD_SIM_REPORT=1 it prints the table for BENCHMARKS.md.
func TestCompareElections(t *testing.T) {
	ns, seeds := []int{5, 16}, 5
	if os.Getenv("GROUPD_SIM_REPORT") != "" {
		ns, seeds = []int{5, 16, 32}, 50
	}
	rows, err := CompareElections(ns, seeds)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.P99 > r.Bound {
			t.Errorf("%s N=%d: p99 %v over T_failover %v", r.Alg, r.N, r.P99, r.Bound)
		}
		// Survivors n = N-1; with acks the ring sends at most two datagrams
		// per hop of 2n-1 hops (the winner invites instead of announcing),
		// plus one extra hop per skipped (crashed) node.
		if n := r.N - 1; r.Alg == invitation.ElectionRing && r.ElectionMsgs > 2*(3*n) {
			t.Errorf("ring N=%d: %d election datagrams, more than linear", r.N, r.ElectionMsgs)
		}
	}
	var b strings.Builder
	PrintElections(&b, rows)
	t.Logf("\n%s", b.String())
}
