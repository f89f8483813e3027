package sim

import (
	"fmt"
	"io"
	"math/rand"
	"slices"
	"time"

	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// Poll is how often (in virtual time) the measurements look at the nodes'
// views.
const Poll = 10 * time.Millisecond

// Converge runs s until every node has started and L1's condition holds,
// for at most max, and returns how long that took.
func (s *Sim) Converge(max time.Duration) (time.Duration, error) {
	d, ok, err := s.RunUntil(func(s *Sim) bool { return s.started() && s.Converged() }, Poll, max)
	if err != nil {
		return d, err
	}
	if !ok {
		return d, s.CheckConverged()
	}
	return d, nil
}

// started reports whether every node has booted at least once.
func (s *Sim) started() bool {
	for _, n := range s.nodes {
		if n.inc == 0 {
			return false
		}
	}
	return true
}

// phase is a random wait (uniform in [0, 2·CheckInterval), from the seed)
// before a measured fault, so that the fault does not always strike at
// the same point of the nodes' periodic timers (right after convergence,
// every participant has just heard its coordinator).
func (s *Sim) phase() time.Duration {
	r := rand.New(rand.NewSource(s.cfg.Seed ^ 0x9a5e))
	return time.Duration(r.Int63n(int64(2 * s.cfg.Timing.CheckInterval)))
}

// Halves splits the nodes into two random halves (deterministic in the
// simulation's seed).
func (s *Sim) Halves() ([]wire.NodeID, []wire.NodeID) {
	r := rand.New(rand.NewSource(s.cfg.Seed ^ 0x5eed))
	var a, b []wire.NodeID
	for i, p := range r.Perm(len(s.nodes)) {
		if i < len(s.nodes)/2 {
			a = append(a, wire.NodeID(p+1))
		} else {
			b = append(b, wire.NodeID(p+1))
		}
	}
	slices.Sort(a)
	slices.Sort(b)
	return a, b
}

// MeasureHeal measures one heal: n nodes converge, run a random while,
// split into two random halves for T_heal (each half forms its own group), then the network heals
// and the result is how long until L1 holds, polled every Poll. The run is
// checked for S1–S4 throughout; it fails if L1 does not hold by 3·T_heal.
func MeasureHeal(cfg Config) (time.Duration, *Sim, error) {
	s, err := New(cfg)
	if err != nil {
		return 0, nil, err
	}
	if _, err := s.Converge(3 * s.HealBound()); err != nil {
		return 0, s, err
	}
	if err := s.RunFor(s.phase()); err != nil {
		return 0, s, err
	}
	a, b := s.Halves()
	s.Partition(a, b)
	if err := s.RunFor(s.HealBound()); err != nil {
		return 0, s, err
	}
	s.Heal()
	d, err := s.Converge(3 * s.HealBound())
	return d, s, err
}

// MeasureFailover measures one failover: n nodes converge, run a random
// while, their coordinator crashes, and the result is how long until the survivors are
// Normal in one group (L2's condition), polled every Poll. It fails if that
// does not hold by 3·T_failover.
func MeasureFailover(cfg Config) (time.Duration, *Sim, error) {
	d, _, s, err := MeasureFailoverCounts(cfg)
	return d, s, err
}

// MeasureFailoverCounts is MeasureFailover that also returns what the
// network carried from the crash until the survivors were one group.
func MeasureFailoverCounts(cfg Config) (time.Duration, Counts, *Sim, error) {
	d, before, s, err := measureFailover(cfg)
	if s == nil {
		return d, Counts{}, s, err
	}
	return d, s.Counts().Sub(before), s, err
}

func measureFailover(cfg Config) (time.Duration, Counts, *Sim, error) {
	var before Counts
	s, err := New(cfg)
	if err != nil {
		return 0, before, nil, err
	}
	if _, err := s.Converge(3 * s.HealBound()); err != nil {
		return 0, before, s, err
	}
	if err := s.RunFor(s.phase()); err != nil {
		return 0, before, s, err
	}
	c := s.Highest()
	var survivors []wire.NodeID
	for _, id := range s.LiveIDs() {
		if id != c {
			survivors = append(survivors, id)
		}
	}
	before = s.Counts()
	s.Crash(c)
	view := make([]invitation.Status, 0, len(survivors))
	d, ok, err := s.RunUntil(func(s *Sim) bool {
		view = view[:0]
		for _, id := range survivors {
			view = append(view, s.nodes[id-1].last)
		}
		return len(invariant.FailedOver(time.Time{}, view)) == 0
	}, Poll, 3*s.FailoverBound())
	if err != nil {
		return d, before, s, err
	}
	if !ok {
		return d, before, s, s.CheckFailover(survivors)
	}
	return d, before, s, nil
}

// Dist is a sample of durations.
type Dist []time.Duration

// Quantile returns the q-quantile (nearest rank), or 0 for no samples.
func (d Dist) Quantile(q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// ReportOptions says what Report measures.
type ReportOptions struct {
	Sizes  []int             // cluster sizes; default 5, 32, 200
	Seeds  func(n int) int   // samples per size; default 200, 100, 20 by size
	Timing invitation.Timing // default invitation.DefaultTiming()
	// Detect is the failure detector model; the default detects crashes
	// after 1.5 s and partitions too.
	Detect *Detect
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

// Measure runs the heal and failover measurements of opt.
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
	det := Detect{Partitions: true}
	if opt.Detect != nil {
		det = *opt.Detect
	}
	var rows []Row
	for _, n := range opt.Sizes {
		k := opt.Seeds(n)
		for _, what := range []string{"heal", "failover"} {
			row := Row{Measure: what, N: n, Seeds: k, Bound: opt.Timing.HealBound()}
			f := MeasureHeal
			if what == "failover" {
				f, row.Bound = MeasureFailover, opt.Timing.FailoverBound()
			}
			var msgs uint64
			for seed := int64(1); seed <= int64(k); seed++ {
				cfg := Config{N: n, Seed: seed, Timing: opt.Timing, Detect: det, StartSpread: time.Second}
				d, s, err := f(cfg)
				if err != nil {
					return rows, fmt.Errorf("%s N=%d seed %d: %w", what, n, seed, err)
				}
				row.Dist = append(row.Dist, d)
				msgs += s.Counts().TotalSent()
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
	fmt.Fprintf(w, "virtual time from the heal (or crash) until L1 (or L2's condition) holds, polled every %v\n", Poll)
	fmt.Fprintf(w, "%-9s %5s %6s %9s %9s %9s %9s %14s\n", "measure", "N", "seeds", "p50", "p99", "max", "bound", "msgs/node/run")
	for _, r := range rows {
		fmt.Fprintf(w, "%-9s %5d %6d %9v %9v %9v %9v %14.0f\n", r.Measure, r.N, r.Seeds,
			r.Dist.Quantile(0.5).Round(time.Millisecond), r.Dist.Quantile(0.99).Round(time.Millisecond),
			r.Dist.Quantile(1).Round(time.Millisecond), r.Bound, r.MsgsPerNode)
	}
}
