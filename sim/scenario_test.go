package sim

import (
	"bytes"
	"fmt"
	"os"
	"testing"

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

// The scenarios that were here are scripts now: testdata/*.txt, run by
// TestScripts.

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
		s := newSim(t, Config{N: 6, Seed: seed, Repro: fmt.Sprintf("go test ./sim -run TestScenarioTwoHighestCrash (seed %d)", seed)})
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
