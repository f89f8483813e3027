package sim

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// historiesFile holds, per run of historyRuns, the SHA-256 of its full
// trace. Not a .txt: TestScripts reads those.
const historiesFile = "testdata/histories.sha256"

// historyRun is one run whose full history is pinned.
type historyRun struct {
	name string
	sc   Schedule
}

// historyRuns are the runs TestHistories pins: random schedules of every
// kind (ring and bully, quorum mode, operator faults, lossy networks,
// failing disks, duplicates) and a large cold start on a loaded host,
// where beacons are paced and heartbeats go by unicast.
func historyRuns(short bool) []historyRun {
	seeds := 200
	if short {
		seeds = 20
	}
	var runs []historyRun
	for seed := int64(1); seed <= int64(seeds); seed++ {
		runs = append(runs, historyRun{name: fmt.Sprintf("seed-%d", seed), sc: RandomSchedule(seed)})
	}
	if short {
		return runs
	}
	lazy := true
	runs = append(runs, historyRun{name: "cold-start-96-loaded", sc: Schedule{
		Config: Config{N: 96, Seed: 3, StartSpread: time.Second, LazyDeadlines: &lazy,
			Host: Host{Cores: 2, PerDelivery: 100 * time.Microsecond},
			Net:  Net{Base: 100 * time.Microsecond, Jitter: 500 * time.Microsecond, Loss: 0.02}},
		Steps: []Step{{Kind: StepRun, D: 20 * time.Second}, {Kind: StepCrashCoord}, {Kind: StepRun, D: 10 * time.Second}},
	}})
	return runs
}

// historyHash runs sc with every input traced and returns the SHA-256 of
// the trace, the run's outcome and its datagram counts.
func historyHash(sc Schedule) string {
	h := sha256.New()
	sc.Config.TraceAll = true
	s, err := sc.Run(h)
	fmt.Fprintf(h, "err=%v\n", err)
	if s != nil {
		fmt.Fprintf(h, "events=%d elapsed=%v\n%s\n", s.Events(), s.Elapsed(), s.Counts())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestHistories checks that the simulator still produces, event for event,
// the histories it produced when testdata/histories.sha256 was written: a
// refactoring of the machine or the simulator must not change what
// happens. A change of behaviour that is meant rewrites the file with
//
//	go test ./sim -run TestHistories -rewrite
//
// and says so in its commit. Go may fuse floating-point operations on
// other architectures (the heartbeat loss estimate), so the hashes are
// checked on amd64 only.
func TestHistories(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("the pinned histories are amd64's; GOARCH is %s", runtime.GOARCH)
	}
	rewrite := false
	if f := flag.Lookup("rewrite"); f != nil {
		rewrite = f.Value.String() == "true"
	}
	want, err := readHistories(historiesFile)
	if err != nil && !rewrite {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, r := range historyRuns(testing.Short() || raceEnabled) {
		got := historyHash(r.sc)
		fmt.Fprintf(&out, "%s %s\n", r.name, got)
		if rewrite {
			continue
		}
		switch w, ok := want[r.name]; {
		case !ok:
			t.Errorf("%s: no pinned history in %s (rerun with -rewrite)", r.name, historiesFile)
		case w != got:
			t.Errorf("%s: history changed: trace hash %s, pinned %s (replay it with: go test ./sim -run TestRandomSchedules -seed=N -v)", r.name, got, w)
		}
	}
	if rewrite {
		if testing.Short() || raceEnabled {
			t.Fatal("rewrite without -short or -race: they pin fewer runs")
		}
		if err := os.WriteFile(historiesFile, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readHistories reads the pinned hashes, by run name.
func readHistories(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("pinned histories: %w", err)
	}
	defer f.Close()
	m := make(map[string]string)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, hash, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			return nil, fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		m[name] = hash
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
