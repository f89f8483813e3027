//go:build linux

package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/groupd/groupd/internal/simbench"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/sim"
	"github.com/groupd/groupd/wire"
)

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func timing(profile string) (invitation.Timing, error) {
	switch profile {
	case "lan":
		return invitation.DefaultTiming(), nil
	case "fast":
		return invitation.FastTiming(), nil
	}
	return invitation.Timing{}, fmt.Errorf("unknown profile %q", profile)
}

func countsBy(c sim.Counts) (msgs, bytes map[string]float64) {
	msgs, bytes = map[string]float64{}, map[string]float64{}
	for _, t := range wire.Types() {
		if c.Sent[t] != 0 {
			msgs[t.String()] = float64(c.Sent[t])
			bytes[t.String()] = float64(c.Bytes[t])
		}
	}
	return msgs, bytes
}

// simRun is a simulation run under a wall-clock limit and a memory guard,
// checked between the steps of sim.RunUntil (guard).
type simRun struct {
	s        *sim.Sim
	wallStop time.Time
	memLimit float64 // KiB of VmRSS; 0: none
	checked  time.Time
	virt     atomic.Int64 // virtual time reached, for the memory watchdog
}

var (
	errWall = errors.New("wall-clock limit reached")
	errMem  = errors.New("memory guard reached")
)

// stop reports whether the run must end: past its wall-clock limit, or
// (checked once a second) its resident memory above the guard, so that a
// huge N ends cleanly instead of meeting the kernel's OOM killer on a
// shared machine.
func (r *simRun) stop() error {
	if r.wallStop.IsZero() && r.memLimit == 0 {
		return nil
	}
	now := time.Now()
	if !r.wallStop.IsZero() && now.After(r.wallStop) {
		return errWall
	}
	if r.memLimit > 0 && now.Sub(r.checked) > time.Second {
		r.checked = now
		if rss, _ := selfMemKiB(); rss > r.memLimit {
			return fmt.Errorf("%w: VmRSS %.1f GiB > %.1f GiB", errMem, rss/(1<<20), r.memLimit/(1<<20))
		}
	}
	return nil
}

// guard notes the virtual time reached, for the memory watchdog, and
// reports whether the run must stop.
func (r *simRun) guard() error {
	r.virt.Store(int64(r.s.Elapsed()))
	return r.stop()
}

// until runs until cond holds (checked every sim.Poll of virtual time),
// for at most max virtual time.
func (r *simRun) until(cond func() bool, max time.Duration) (time.Duration, error) {
	d, ok, err := r.s.RunUntil(cond, sim.Until{Max: max, Guard: r.guard})
	if err == nil && !ok {
		err = fmt.Errorf("condition not reached within %v of virtual time", max)
	}
	return d, err
}

// runFor runs for d of virtual time, checking the guard every 100 ms of it.
func (r *simRun) runFor(d time.Duration) error {
	never := func() bool { return false }
	_, _, err := r.s.RunUntil(never, sim.Until{Max: d, Poll: 100 * time.Millisecond, Guard: r.guard})
	return err
}

func (r *simRun) allUp() bool { return len(r.s.LiveIDs()) == r.s.N() }

// simFailover is the lab's failover trial in the simulator
// (simbench.Failover), as a Result.
func simFailover(n int, seed int64, t invitation.Timing, alg invitation.Election, impl string) (Result, error) {
	wall := time.Now()
	tr, err := simbench.Failover(simbench.Options{N: n, Seed: seed, Timing: t, Election: alg})
	if err != nil {
		return Result{}, err
	}
	s := tr.Sim
	live := s.LiveIDs()
	st, _ := s.Status(live[0])
	msgs, bytes := countsBy(tr.Counts)
	return Result{Kind: "failover", Impl: impl, Source: "sim", N: n, Trial: int(seed), Seconds: secs(tr.Took),
		PhaseS: secs(tr.Phase), Victim: int(tr.Victim), Coordinator: int(st.Group.ID), Highest: st.Group.ID == s.Highest(),
		Group: st.Group.String(), Msgs: msgs, Bytes: bytes, WindowS: secs(tr.Took), Load: load(),
		WallS: time.Since(wall).Seconds(), Events: s.Events()}, nil
}

// simHeal is the lab's heal trial in the simulator (simbench.Heal: halves
// 1..N/2 | N/2+1..N for hold, then heal), as a Result.
func simHeal(n int, seed int64, t invitation.Timing, alg invitation.Election, hold time.Duration, impl string) (Result, error) {
	wall := time.Now()
	tr, err := simbench.Heal(simbench.Options{N: n, Seed: seed, Timing: t, Election: alg, Hold: hold})
	if err != nil {
		return Result{}, err
	}
	s := tr.Sim
	msgs, bytes := countsBy(tr.Counts)
	st, _ := s.Status(wire.NodeID(n))
	return Result{Kind: "heal", Impl: impl, Source: "sim", N: n, Trial: int(seed), Seconds: secs(tr.Took),
		PhaseS: secs(tr.Phase), Coordinator: int(st.Group.ID), Highest: int(st.Group.ID) == n, Group: st.Group.String(),
		Msgs: msgs, Bytes: bytes, WindowS: secs(tr.Took), Load: load(), WallS: time.Since(wall).Seconds(), Events: s.Events()}, nil
}

func cmdSimMsgs(args []string) error {
	fs := flag.NewFlagSet("sim-msgs", flag.ExitOnError)
	sizes := fs.String("n", "3,5,16", "cluster sizes")
	trials := fs.Int("trials", 20, "seeds per size")
	profile := fs.String("profile", "lan", "lan or fast")
	hold := fs.Duration("hold", 10*time.Second, "partition length for the heal")
	what := fs.String("what", "failover,heal", "failover, heal or both")
	election := fs.String("election", "bully", "bully or ring")
	fs.Parse(args)
	alg, err := invitation.ParseElection(*election)
	if err != nil {
		return err
	}
	ns, err := parseInts(*sizes)
	if err != nil {
		return err
	}
	t, err := timing(*profile)
	if err != nil {
		return err
	}
	impl := "sim-" + *profile
	if alg == invitation.ElectionRing {
		impl = "sim-ring" // lan timing
		if *profile != "lan" {
			impl += "-" + *profile
		}
	}
	for _, n := range ns {
		for seed := int64(1); seed <= int64(*trials); seed++ {
			if strings.Contains(*what, "failover") {
				r, err := simFailover(n, seed, t, alg, impl)
				if err != nil {
					return fmt.Errorf("failover N=%d seed %d: %w", n, seed, err)
				}
				if err := emit(r); err != nil {
					return err
				}
			}
			if strings.Contains(*what, "heal") {
				r, err := simHeal(n, seed, t, alg, *hold, impl)
				if err != nil {
					return fmt.Errorf("heal N=%d seed %d: %w", n, seed, err)
				}
				if err := emit(r); err != nil {
					return err
				}
			}
		}
		say("sim      %-12s N=%-3d %d seeds done", impl, n, *trials)
	}
	return nil
}

// ScaleResult is one simulator run at a large N.
type ScaleResult struct {
	Kind        string  `json:"kind"` // "sim-scale"
	N           int     `json:"n"`
	Seed        int64   `json:"seed"`
	Status      string  `json:"status"` // ok | wall-limit | error
	Error       string  `json:"error,omitempty"`
	ConvergeS   float64 `json:"converge_s"` // virtual: from the first start until L1
	ConvWallS   float64 `json:"converge_wall_s"`
	HealS       float64 `json:"heal_s"` // virtual: from the heal until L1
	HealWallS   float64 `json:"heal_wall_s"`
	WallS       float64 `json:"wall_s"`
	SimulatedS  float64 `json:"simulated_s"`
	Events      uint64  `json:"events"`
	MsgsPerNode float64 `json:"msgs_per_node"`
	// Where the run stood when it ended: the number of distinct groups
	// among the live nodes and the size of the largest.
	Groups  int    `json:"groups_at_end"`
	Largest int    `json:"largest_group_at_end"`
	Phase   string `json:"phase_at_end"` // converge | hold | heal | done
	// Peak resident memory of the process so far (VmHWM), GiB.
	RSSGiB float64    `json:"peak_rss_gib"`
	Load   [3]float64 `json:"load"`
}

func cmdSimScale(args []string) error {
	fs := flag.NewFlagSet("sim-scale", flag.ExitOnError)
	sizes := fs.String("n", "100,1000,5000", "cluster sizes")
	limit := fs.Duration("limit", 10*time.Minute, "wall-clock limit per size")
	memGiB := fs.Float64("mem", 8, "stop a size when the process's resident memory exceeds this many GiB")
	seed := fs.Int64("seed", 1, "seed")
	hold := fs.Duration("hold", 10*time.Second, "partition length")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	byType := fs.Bool("types", false, "print the datagrams sent and delivered per type, per phase")
	fs.Parse(args)
	ns, err := parseInts(*sizes)
	if err != nil {
		return err
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	for _, n := range ns {
		res := ScaleResult{Kind: "sim-scale", N: n, Seed: *seed, Status: "ok"}
		wall := time.Now()
		s, err := sim.New(sim.Config{N: n, Seed: *seed, Detect: sim.Detect{Partitions: true}, StartSpread: time.Second})
		if err != nil {
			return err
		}
		r := &simRun{s: s, wallStop: wall.Add(*limit), memLimit: *memGiB * (1 << 20)}
		// The memory watchdog: one step of the simulator (sim.Poll of
		// virtual time) can allocate gigabytes at large N (every
		// broadcast is N queued deliveries), so the check between steps
		// is not enough. Above the guard it writes what it knows and ends
		// the process before the kernel's OOM killer picks a victim on
		// this shared machine.
		var phase atomic.Pointer[string]
		var convS, convWallS atomic.Int64 // ns, once the converge phase ended
		var last sim.Counts
		setPhase := func(p string) {
			if *byType && res.Phase != "" {
				printTypes(n, res.Phase, last, s.Counts())
			}
			last = s.Counts()
			res.Phase = p
			phase.Store(&p)
		}
		stopWatch := make(chan struct{})
		go func() {
			tk := time.NewTicker(200 * time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-stopWatch:
					return
				case <-tk.C:
				}
				rss, _ := selfMemKiB()
				if r.memLimit == 0 || rss <= r.memLimit {
					continue
				}
				out := ScaleResult{Kind: "sim-scale", N: n, Seed: *seed, Status: "memory-limit",
					Error: fmt.Sprintf("VmRSS %.1f GiB > guard %.1f GiB: stopped inside a simulation step", rss/(1<<20), *memGiB),
					Phase: *phase.Load(), SimulatedS: time.Duration(r.virt.Load()).Seconds(), WallS: time.Since(wall).Seconds(),
					RSSGiB: selfPeakKiB() / (1 << 20), Load: load(),
					ConvergeS: time.Duration(convS.Load()).Seconds(), ConvWallS: time.Duration(convWallS.Load()).Seconds()}
				say("sim-scale N=%-5d memory-limit (phase %s): %s after %.1fs wall, %.2fs virtual reached", n, out.Phase, out.Error, out.WallS, out.SimulatedS)
				_ = emit(out)
				os.Exit(0)
			}
		}()
		fail := func(err error) {
			res.Status = "error"
			if errors.Is(err, errWall) {
				res.Status = "wall-limit"
			}
			if errors.Is(err, errMem) {
				res.Status = "memory-limit"
			}
			res.Error = err.Error()
		}
		setPhase("converge")
		d, err := r.until(func() bool { return r.allUp() && s.Converged() }, 3*s.HealBound())
		res.ConvergeS, res.ConvWallS = secs(d), time.Since(wall).Seconds()
		convS.Store(int64(d))
		convWallS.Store(int64(time.Since(wall)))
		if err != nil {
			fail(err)
		} else {
			s.Partition(simbench.Halves(n))
			setPhase("hold")
			if err := r.runFor(*hold); err != nil {
				fail(err)
			} else {
				s.Heal()
				setPhase("heal")
				hw := time.Now()
				d, err := r.until(s.Converged, 3*s.HealBound())
				res.HealS, res.HealWallS = secs(d), time.Since(hw).Seconds()
				if err != nil {
					fail(err)
				} else {
					setPhase("done")
				}
			}
		}
		if *byType && res.Phase != "done" {
			printTypes(n, res.Phase, last, s.Counts())
		}
		sizes := map[wire.GroupNumber]int{}
		for _, st := range s.Statuses() {
			sizes[st.Group]++
		}
		res.Groups = len(sizes)
		for _, v := range sizes {
			res.Largest = max(res.Largest, v)
		}
		close(stopWatch)
		res.WallS = time.Since(wall).Seconds()
		res.SimulatedS = s.Elapsed().Seconds()
		res.Events = s.Events()
		res.MsgsPerNode = float64(s.Counts().TotalSent()) / float64(n)
		res.Load = load()
		res.RSSGiB = selfPeakKiB() / (1 << 20)
		say("sim-scale N=%-5d %s (phase %s, %d groups, largest %d): converged in %.2fs virtual (%.1fs wall), heal %.2fs virtual (%.1fs wall), %d events, %.0f msgs/node, %.1fs wall in all",
			n, res.Status, res.Phase, res.Groups, res.Largest, res.ConvergeS, res.ConvWallS, res.HealS, res.HealWallS, res.Events, res.MsgsPerNode, res.WallS)
		if err := emit(res); err != nil {
			return err
		}
	}
	return nil
}

// printTypes prints, for one phase of a sim-scale run, the datagrams sent
// and delivered per type between two snapshots of the counters, per node.
func printTypes(n int, phase string, from, to sim.Counts) {
	say("sim-scale N=%d phase %s, per node:", n, phase)
	for t := range wire.NumTypes {
		sent, got := to.Sent[t]-from.Sent[t], to.Delivered[t]-from.Delivered[t]
		if sent == 0 && got == 0 {
			continue
		}
		say("  %-14s sent %9.1f  delivered %9.1f", wire.Type(t), float64(sent)/float64(n), float64(got)/float64(n))
	}
}

// BullyResult compares simbench.BullyRun with the seed's formulas.
type BullyResult struct {
	Kind        string `json:"kind"` // "bully"
	N           int    `json:"n"`
	Starter     int    `json:"starter"`
	Case        string `json:"case"` // worst (lowest starts) | best (highest starts)
	Election    int    `json:"election"`
	Answer      int    `json:"answer"`
	Coordinator int    `json:"coordinator"`
	Total       int    `json:"total"`
	SeedFormula int    `json:"seed_formula"` // n(n-1) worst, n-1 best
	Winner      int    `json:"winner"`
}

func cmdBully(args []string) error {
	fs := flag.NewFlagSet("bully", flag.ExitOnError)
	sizes := fs.String("n", "2,4,15", "survivor counts")
	fs.Parse(args)
	ns, err := parseInts(*sizes)
	if err != nil {
		return err
	}
	for _, n := range ns {
		for _, c := range []struct {
			name    string
			starter int
			formula int
		}{{"worst", 1, n * (n - 1)}, {"best", n, n - 1}} {
			bc, err := simbench.BullyRun(n, wire.NodeID(c.starter))
			if err != nil {
				return err
			}
			r := BullyResult{Kind: "bully", N: n, Starter: c.starter, Case: c.name, Election: bc.Election,
				Answer: bc.Answer, Coordinator: bc.Coordinator, Total: bc.Total(), SeedFormula: c.formula, Winner: int(bc.Winner)}
			say("bully    n=%-3d %-5s Election %d Answer %d Coordinator %d (seed formula %d)", n, c.name, r.Election, r.Answer, r.Coordinator, r.SeedFormula)
			if err := emit(r); err != nil {
				return err
			}
		}
	}
	return nil
}
