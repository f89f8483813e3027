package sim

import (
	"errors"
	"flag"
	"os"
	"strconv"
	"testing"
	"time"
)

var (
	flagSeed  = flag.Int64("seed", 0, "run only this random schedule, verbosely (TestRandomSchedules)")
	flagSeeds = flag.Int("seeds", 0, "number of random schedules (default 300, 60 with -short or -race; env GROUPD_SIM_SEEDS)")
)

// seedCount is how many random schedules TestRandomSchedules runs.
func seedCount() int {
	if *flagSeeds > 0 {
		return *flagSeeds
	}
	if v, err := strconv.Atoi(os.Getenv("GROUPD_SIM_SEEDS")); err == nil && v > 0 {
		return v
	}
	if testing.Short() || raceEnabled {
		return 60
	}
	return 300
}

func TestRandomSchedules(t *testing.T) {
	if *flagSeed != 0 {
		sc := RandomSchedule(*flagSeed)
		t.Logf("%s", sc)
		var w *os.File
		if testing.Verbose() {
			w = os.Stdout
		}
		s, err := sc.Run(w)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d passed: %v simulated, %d events\n%s", *flagSeed, s.Elapsed(), s.Events(), s.Counts())
		return
	}
	n := seedCount()
	start := time.Now()
	var simulated time.Duration
	var events uint64
	var failed []int64
	for seed := int64(1); seed <= int64(n) && len(failed) < 20; seed++ {
		sc := RandomSchedule(seed)
		s, err := sc.Run(nil)
		if err != nil {
			// The first failure in full; then one line per seed.
			if len(failed) == 0 {
				t.Errorf("%s\n%v", sc, err)
			} else if f, ok := err.(*Failure); ok {
				t.Errorf("seed %d: %s", seed, f.Violations[0])
			} else {
				t.Errorf("seed %d: %v", seed, err)
			}
			failed = append(failed, seed)
			continue
		}
		if c := s.Counts(); c.EncodeErrors > 0 {
			t.Fatalf("seed %d: %d messages failed to encode, first: %s", seed, c.EncodeErrors, c.FirstEncodeError)
		}
		if c := s.Counts(); c.LazyMisses > 0 {
			t.Errorf("seed %d: %d inputs without output brought a deadline forward: Config.LazyDeadlines is unsound; first: %s", seed, c.LazyMisses, c.FirstLazyMiss)
		}
		simulated += s.Elapsed()
		events += s.Events()
	}
	if len(failed) > 0 {
		t.Errorf("failing seeds: %v (rerun one with: go test ./sim -run TestRandomSchedules -seed=N -v)", failed)
	}
	t.Logf("%d schedules: %v simulated, %d events, in %v", n, simulated, events, time.Since(start))
}

// TestLeaseNegativeControl runs the random schedules that use quorum mode
// again with a leader's primary flag taken from its member list alone, as
// before the lease (Config.ViewPrimary): the checker must find two primary
// leaders at once (LP1) in some of them, or its check of the lease proves
// nothing. It prints how many did.
func TestLeaseNegativeControl(t *testing.T) {
	n := max(seedCount()/3, 40)
	runs, caught := 0, 0
	var first int64
	for seed := int64(1); runs < n; seed++ {
		sc := RandomSchedule(seed)
		if !sc.Config.Quorum.Enabled() {
			continue
		}
		runs++
		sc.Config.ViewPrimary = true
		_, err := sc.Run(nil)
		var f *Failure
		if errors.As(err, &f) && f.Violations[0].Invariant == "LP1" {
			caught++
			if first == 0 {
				first = seed
				t.Logf("seed %d, without the lease: %s", seed, f.Violations[0])
			}
		}
	}
	t.Logf("without the lease, %d of %d quorum-mode schedules had two primary leaders at once", caught, runs)
	if caught == 0 {
		t.Errorf("no schedule of %d found two primary leaders without the lease: the LP1 check proves nothing", runs)
	}
}
