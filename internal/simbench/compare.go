package simbench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/sim"
	"github.com/groupd/groupd/wire"
)

// ElectionRow summarises failovers of one algorithm at one group size.
type ElectionRow struct {
	Alg      invitation.Election
	N        int // nodes before the crash; N-1 survivors elect
	Seeds    int
	P50, P99 time.Duration
	// ElectionMsgs counts the election's own datagrams per failover
	// (median): Election+Answer for bully, RingElection+RingAck for ring.
	ElectionMsgs int
	// TotalMsgs counts every datagram per failover (median), beacons and
	// liveness probes included, from the crash until one group formed.
	TotalMsgs int
	Bound     time.Duration // T_failover for this algorithm and size
}

// electionTypes are the datagram types an algorithm's election sends.
func electionTypes(alg invitation.Election) []wire.Type {
	if alg == invitation.ElectionRing {
		return []wire.Type{wire.TypeRingElection, wire.TypeRingElected, wire.TypeRingAck}
	}
	return []wire.Type{wire.TypeElection, wire.TypeAnswer, wire.TypeCoordinator}
}

// CompareElections crashes the coordinator of a converged group of each
// size in ns, seeds times per algorithm, on a perfect network with default
// timing, and reports failover time and messages. It is the simulator's
// side of the bully/ring comparison in BENCHMARKS.md.
func CompareElections(ns []int, seeds int) ([]ElectionRow, error) {
	var rows []ElectionRow
	for _, n := range ns {
		for _, alg := range []invitation.Election{invitation.ElectionBully, invitation.ElectionRing} {
			row := ElectionRow{Alg: alg, N: n, Seeds: seeds}
			var times Dist
			var elec, total []int
			for seed := int64(1); seed <= int64(seeds); seed++ {
				tr, err := Failover(Options{N: n, Seed: seed, Election: alg, Detect: &sim.Detect{}})
				if err != nil {
					return rows, fmt.Errorf("simbench: %s failover, N=%d, seed %d: %w", alg, n, seed, err)
				}
				c := tr.Counts
				row.Bound = tr.Sim.FailoverBound()
				times = append(times, tr.Took)
				e, t := 0, 0
				for _, ty := range electionTypes(alg) {
					e += int(c.Sent[ty])
				}
				for _, v := range c.Sent {
					t += int(v)
				}
				elec, total = append(elec, e), append(total, t)
			}
			row.P50, row.P99 = times.Quantile(0.5), times.Quantile(0.99)
			row.ElectionMsgs, row.TotalMsgs = Quantile(elec, 0.5), Quantile(total, 0.5)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// PrintElections prints rows as a table, with the textbook counts for the
// n-1 survivors: bully n(n-1) worst and n-1 best (seed 001), ring 3n-1
// worst and 2n best (seed 004). Inside groupd the winner invites instead
// of announcing, and members that still hear the coordinator stop an
// election early, so the measured counts are not the textbook's scenario;
// the formulas are shown for scale.
func PrintElections(w io.Writer, rows []ElectionRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "election\tN\tseeds\tp50\tp99\tbound\telection msgs\tall msgs\ttextbook best\ttextbook worst\t")
	for _, r := range rows {
		n := r.N - 1
		best, worst := n-1, n*(n-1)
		if r.Alg == invitation.ElectionRing {
			best, worst = 2*n, 3*n-1
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%v\t%v\t%d\t%d\t%d\t%d\t\n", r.Alg, r.N, r.Seeds,
			r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.Bound, r.ElectionMsgs, r.TotalMsgs, best, worst)
	}
	tw.Flush()
}
