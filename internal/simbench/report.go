package simbench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/sim"
)

// Dist is a sample of durations.
type Dist []time.Duration

// Quantile returns the q-quantile (nearest rank), or 0 for no samples.
func (d Dist) Quantile(q float64) time.Duration { return Quantile(d, q) }

// Quantile returns the q-quantile of xs by nearest rank (the smallest x
// with at least q of the samples at or below it), or the zero value for no
// samples: the one definition every figure of the simulator and the
// benchmarks uses.
func Quantile[T cmp.Ordered](xs []T, q float64) T {
	if len(xs) == 0 {
		var zero T
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// ReportOptions says what Report measures.
type ReportOptions struct {
	Sizes  []int             // cluster sizes; default 5, 32, 200
	Seeds  func(n int) int   // samples per size; default 200, 100, 20 by size
	Timing invitation.Timing // default invitation.DefaultTiming()
	// Detect is the failure detector model; nil: crashes and partitions
	// are detected.
	Detect *sim.Detect
}

// Row is one line of a Report: the distribution of one measure for one size.
type Row struct {
	Measure string // "heal" or "failover"
	N       int
	Seeds   int
	Dist    Dist
	Bound   time.Duration // T_heal or T_failover
	// MsgsPerNode is the datagrams sent per node over a whole run
	// (convergence, then the split and heal, or the crash and failover).
	MsgsPerNode float64
}

// Measure runs the heal and failover trials of opt.
func Measure(opt ReportOptions) ([]Row, error) {
	if len(opt.Sizes) == 0 {
		opt.Sizes = []int{5, 32, 200}
	}
	if opt.Seeds == nil {
		opt.Seeds = func(n int) int {
			switch {
			case n <= 8:
				return 200
			case n <= 64:
				return 100
			}
			return 20
		}
	}
	if opt.Timing == (invitation.Timing{}) {
		opt.Timing = invitation.DefaultTiming()
	}
	var rows []Row
	for _, n := range opt.Sizes {
		k := opt.Seeds(n)
		for _, what := range []string{"heal", "failover"} {
			row := Row{Measure: what, N: n, Seeds: k, Bound: opt.Timing.HealBound()}
			f := Heal
			if what == "failover" {
				f, row.Bound = Failover, opt.Timing.FailoverBound()
			}
			var msgs uint64
			for seed := int64(1); seed <= int64(k); seed++ {
				tr, err := f(Options{N: n, Seed: seed, Timing: opt.Timing, Detect: opt.Detect})
				if err != nil {
					return rows, fmt.Errorf("%s N=%d seed %d: %w", what, n, seed, err)
				}
				row.Dist = append(row.Dist, tr.Took)
				msgs += tr.Sim.Counts().TotalSent()
			}
			row.MsgsPerNode = float64(msgs) / float64(k) / float64(n)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// Report measures heal and failover times over many seeds for each size
// (see Measure) and prints their distributions (p50, p99, max) to w, next to
// T_heal and T_failover. It returns the first failed run's error.
func Report(w io.Writer, opt ReportOptions) error {
	rows, err := Measure(opt)
	if len(rows) > 0 {
		PrintRows(w, rows)
	}
	return err
}

// PrintRows prints rows as a table.
func PrintRows(w io.Writer, rows []Row) {
	fmt.Fprintf(w, "virtual time from the heal (or crash) until L1 (or L2's condition) holds, polled every %v\n", sim.Poll)
	fmt.Fprintf(w, "%-9s %5s %6s %9s %9s %9s %9s %14s\n", "measure", "N", "seeds", "p50", "p99", "max", "bound", "msgs/node/run")
	for _, r := range rows {
		fmt.Fprintf(w, "%-9s %5d %6d %9v %9v %9v %9v %14.0f\n", r.Measure, r.N, r.Seeds,
			r.Dist.Quantile(0.5).Round(time.Millisecond), r.Dist.Quantile(0.99).Round(time.Millisecond),
			r.Dist.Quantile(1).Round(time.Millisecond), r.Bound, r.MsgsPerNode)
	}
}
