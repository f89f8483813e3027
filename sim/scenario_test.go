package sim

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

func newSim(t *testing.T, cfg Config) *Sim {
	t.Helper()
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if os.Getenv("GROUPD_SIM_TRACE") != "" {
		cfg.Trace = os.Stdout
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// settle runs T_heal and checks L1, and that the coordinator is want.
func settle(t *testing.T, s *Sim, want wire.NodeID) {
	t.Helper()
	must(t, s.RunFor(s.HealBound()))
	must(t, s.CheckConverged())
	if st := s.Statuses(); st[0].Group.ID != want {
		t.Fatalf("coordinator %d, want %d", st[0].Group.ID, want)
	}
}

func TestScenarioSplitHeal(t *testing.T) {
	for _, detect := range []bool{false, true} {
		s := newSim(t, Config{N: 6, Detect: Detect{Partitions: detect}})
		settle(t, s, 6)
		a, b := []wire.NodeID{1, 2, 3}, []wire.NodeID{4, 5, 6}
		s.Partition(a, b)
		must(t, s.RunFor(s.HealBound()))
		must(t, s.CheckConvergedAmong(a))
		must(t, s.CheckConvergedAmong(b))
		s.Heal()
		settle(t, s, 6)
	}
}

func TestScenarioCoordinatorCrash(t *testing.T) {
	s := newSim(t, Config{N: 5})
	settle(t, s, 5)
	must(t, s.Failover()) // crashes 5, checks L2 at T_failover
	if s.Alive(5) {
		t.Fatal("Failover did not crash the coordinator")
	}
	settle(t, s, 4)
	s.Restart(5)
	settle(t, s, 5)
}

// The coordinator crashes while it merges the two sides after a heal.
func TestScenarioCoordinatorCrashDuringMerge(t *testing.T) {
	s := newSim(t, Config{N: 6})
	settle(t, s, 6)
	s.Partition([]wire.NodeID{1, 2, 3}, []wire.NodeID{4, 5, 6})
	must(t, s.RunFor(s.HealBound()))
	s.Heal()
	_, ok, err := s.RunUntil(func(s *Sim) bool {
		st, _ := s.Status(6)
		return st.State == wire.StateElection
	}, time.Millisecond, s.HealBound())
	must(t, err)
	if !ok {
		t.Fatal("6 never started a merge")
	}
	s.Crash(6)
	settle(t, s, 5)
}

func TestScenarioLossy(t *testing.T) {
	s := newSim(t, Config{N: 8, Net: Net{Base: 100 * time.Microsecond, Jitter: 10 * time.Millisecond,
		Loss: 0.3, Dup: 0.05, Reorder: 0.1, ReorderDelay: 30 * time.Millisecond}})
	must(t, s.RunFor(30*time.Second))
	s.Quiet()
	settle(t, s, 8)
}

// A lossy network converges without a quiet period, too (not an invariant:
// a check with a reply lost delays the merge, so only probably).
func TestScenarioLossyConverges(t *testing.T) {
	s := newSim(t, Config{N: 8, Net: Net{Base: 100 * time.Microsecond, Jitter: 5 * time.Millisecond, Loss: 0.1}})
	d, err := s.Converge(60 * time.Second)
	must(t, err)
	t.Logf("converged in %v at 10%% loss", d)
}

func TestScenarioRestartWithData(t *testing.T) {
	s := newSim(t, Config{N: 3})
	settle(t, s, 3)
	old := s.Statuses()[0].Group
	s.Crash(3)
	s.Crash(2)
	if got := s.Durable(3); got.Counter < old.Seq || got.LastGroup != old {
		t.Fatalf("3's state file %s is below its group %s", got, old)
	}
	s.Restart(3)
	settle(t, s, 3)
	if g := s.Statuses()[0].Group; g.Seq <= old.Seq {
		t.Fatalf("new group %s is not newer than %s", g, old)
	}
	// A node restarting with a higher counter than anyone has seen joins
	// the running group (no new number), and tells everyone of it: the
	// next number, made by another node, jumps past it.
	high := s.Statuses()[0].Group.Seq + 1_000_000
	s.Crash(1)
	must(t, s.SetDurable(1, invitation.Durable{Counter: high}))
	s.Restart(1)
	s.Restart(2)
	settle(t, s, 3)
	must(t, s.Failover())
	settle(t, s, 2)
	if g := s.Statuses()[0].Group; g.Seq <= high {
		t.Fatalf("group %s did not grow past the restored counter %d", g, high)
	}
}

func TestScenarioTwoNodes(t *testing.T) {
	s := newSim(t, Config{N: 2})
	settle(t, s, 2)
	s.Isolate(1)
	must(t, s.RunFor(s.HealBound()))
	must(t, s.CheckConvergedAmong([]wire.NodeID{1}))
	must(t, s.CheckConvergedAmong([]wire.NodeID{2}))
	s.Heal()
	settle(t, s, 2)
	must(t, s.Failover())
	settle(t, s, 1)
	s.Restart(2)
	settle(t, s, 2)
}

func TestScenarioOneWayCut(t *testing.T) {
	s := newSim(t, Config{N: 4})
	settle(t, s, 4)
	s.Cut(4, 1) // 1 no longer hears its coordinator
	must(t, s.RunFor(5*time.Second))
	s.Cut(2, 4) // 4 no longer hears 2
	must(t, s.RunFor(5*time.Second))
	s.Heal()
	settle(t, s, 4)
}

func TestScenarioPriority(t *testing.T) {
	s := newSim(t, Config{N: 5, Priorities: []uint8{200, 100, 150, 100, 100}})
	settle(t, s, 1)
	must(t, s.Failover())
	settle(t, s, 3)
}

func TestScenarioSaveFailures(t *testing.T) {
	s := newSim(t, Config{N: 5, SaveFailure: 0.5})
	must(t, s.RunFor(20*time.Second))
	s.cfg.SaveFailure = 0
	settle(t, s, 5)
}

// The checker catches a node whose numbers go backwards: its state file is
// lost and its clock set back, with no peer to remember its numbers (the
// one case the design leaves open, see docs/design.md). On a sane clock
// the wall-clock floor would cover the loss, which is its point.
func TestStateLossOnClockSetBackCaught(t *testing.T) {
	s := newSim(t, Config{N: 1})
	must(t, s.RunFor(time.Second))
	s.Crash(1)
	must(t, s.Wipe(1))
	s.SetClock(1, -time.Minute)
	s.Restart(1)
	err := s.RunFor(time.Second)
	var f *Failure
	if !errors.As(err, &f) || !hasInvariant(f, "S1") {
		t.Fatalf("want an S1 failure, got %v", err)
	}
	t.Logf("as expected:\n%v", err)
}

func TestDeterministic(t *testing.T) {
	run := func() string {
		var b bytes.Buffer
		sc := RandomSchedule(42)
		sc.Config.TraceAll = true
		if _, err := sc.Run(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	a, b := run(), run()
	if a != b {
		t.Fatalf("two runs of one seed differ (%d and %d bytes of trace)", len(a), len(b))
	}
	if len(a) < 10000 {
		t.Fatalf("suspiciously short trace: %d bytes", len(a))
	}
}

// The coordinator and the highest survivor crash together: the survivors
// that held back for the highest one (see invitation's startElection) run
// bully after all, and still fail over within T_failover.
func TestScenarioTwoHighestCrash(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		s := newSim(t, Config{N: 6, Seed: seed})
		settle(t, s, 6)
		s.Crash(6)
		s.Crash(5)
		must(t, s.RunFor(s.FailoverBound()))
		must(t, s.CheckFailover([]wire.NodeID{1, 2, 3, 4}))
		if st, _ := s.Status(1); st.Group.ID != 4 {
			t.Fatalf("seed %d: survivors' coordinator is %d, want 4", seed, st.Group.ID)
		}
	}
}

func hasInvariant(f *Failure, inv string) bool {
	for _, v := range f.Violations {
		if v.Invariant == inv {
			return true
		}
	}
	return false
}
