package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/internal/history"
	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/schema"
)

func TestEnv(t *testing.T) {
	for _, k := range []string{"GROUPD_LAB_PREFIX", "GROUPD_LAB_SUBNET", "GROUPD_LAB_BRIDGE", "GROUPD_LAB_DIR", "GROUPD_PROFILE", "GROUPD_FAULTS"} {
		t.Setenv(k, "")
	}
	e, err := readEnv()
	if err != nil || e.Prefix != "gd" || e.Subnet != "10.77.0" || e.Dir != "/tmp/groupd-lab" || e.Profile != "lan" {
		t.Errorf("defaults: %+v, %v", e, err)
	}
	t.Setenv("GROUPD_LAB_PREFIX", "gh")
	if e, _ := readEnv(); e.Dir != "/tmp/groupd-lab-gh" {
		t.Errorf("another prefix gets its own run dir: %q", e.Dir)
	}
	t.Setenv("GROUPD_LAB_BRIDGE", "labbr7")
	if e, _ := readEnv(); e.Bridge != "labbr7" {
		t.Errorf("GROUPD_LAB_BRIDGE: %q", e.Bridge)
	} else if cfg, err := (&cli{}).config(e, 3); err != nil || cfg.Bridge != "labbr7" {
		t.Errorf("the lab's configuration does not take GROUPD_LAB_BRIDGE: %+v, %v", cfg, err)
	}
	t.Setenv("GROUPD_FAULTS", "tbf")
	if _, err := readEnv(); err == nil {
		t.Error("GROUPD_FAULTS=tbf was accepted")
	}
	t.Setenv("GROUPD_FAULTS", "")
	t.Setenv("GROUPD_LAB_DIR", "relative")
	if _, err := readEnv(); err == nil {
		t.Error("a relative run dir was accepted")
	}
}

// TestUsage: bad arguments are refused before anything touches the
// machine (no root needed), with status 2 where the scripts used it.
func TestUsage(t *testing.T) {
	t.Setenv("GROUPD_LAB_DIR", t.TempDir())
	c := &cli{prog: "test"}
	code := func(err error) int {
		if err == nil {
			return 0
		}
		if ex, ok := err.(exitError); ok { // returned as is, never wrapped
			return ex.code
		}
		return 1
	}
	for _, tc := range []struct {
		name string
		run  func() error
		want int
	}{
		{"partition without a spec", func() error { return c.partition(nil) }, 2},
		{"oneway without nodes", func() error { return c.partition([]string{"--oneway", "1"}) }, 1},
		{"heal with junk", func() error { return c.heal([]string{"--all"}) }, 2},
		{"degrade without a value", func() error { return c.degrade([]string{"--loss"}) }, 2},
		{"degrade with nothing to do", func() error { return c.degrade([]string{"--nodes", "1"}) }, 1},
		{"degrade 0%", func() error { return c.degrade([]string{"--loss", "0%"}) }, 1},
		{"jitter without delay", func() error { return c.degrade([]string{"--loss", "5%", "--jitter", "1ms"}) }, 1},
		{"lab without a command", func() error { return c.lab(nil) }, 2},
		{"up of 300 nodes", func() error { return c.lab([]string{"up", "300"}) }, 1},
		{"experiment without a scenario", func() error { return c.experiment(nil) }, 2},
		{"unknown scenario", func() error { return c.experiment([]string{"split"}) }, 1},
	} {
		if got := code(tc.run()); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestExperimentOptions(t *testing.T) {
	x := &experiment{c: &cli{prog: "experiment"}, e: lab.Env{Profile: "fast"}}
	if err := x.parse([]string{"chaos", "--minutes", "2", "--seed", "7", "--keep", "--", "--log-level", "debug"}); err != nil {
		t.Fatal(err)
	}
	// --settle defaults to the profile's T_heal + 2 s, in whole seconds.
	settle := (lab.ProfileTiming("fast").HealBound() + 2*time.Second + time.Second - 1).Truncate(time.Second)
	if x.n != 8 || x.minutes != 2 || x.seed != 7 || !x.keep || x.o.Chaos.Settle != settle || strings.Join(x.runArgs, " ") != "--log-level debug" {
		t.Errorf("chaos options: %+v", x)
	}
	x = &experiment{c: &cli{prog: "experiment"}, e: lab.Env{Profile: "lan"}}
	if err := x.parse([]string{"split-heal", "--nodes", "1"}); err == nil {
		t.Error("a one-node experiment was accepted")
	}
	if err := x.parse([]string{"split-heal", "--fault-max", "1"}); err == nil {
		t.Error("--fault-max 1 was accepted")
	}
}

// TestExport: the timeline gets the events and the faults, not the lab's
// starts, stops and check points.
func TestExport(t *testing.T) {
	h := history.New()
	_, err := h.Read(strings.NewReader(`{"time":"2026-11-21T10:00:00Z","node":1,"reason":"snapshot","old":null,"new":{"id":1,"priority":100,"state":"normal","role":"coordinator","group":"1.1","coordinator":1,"members":[1],"version":1,"incarnation":1}}
{"time":"2026-11-21T09:59:59Z","kind":"start","spec":"1"}
{"time":"2026-11-21T10:00:01Z","kind":"partition","spec":"1|2"}
{"time":"2026-11-21T10:00:02Z","kind":"check","spec":"L1","label":"x"}
{"time":"2026-11-21T10:00:03Z","kind":"heal","spec":"all"}
{"time":"2026-11-21T10:00:04Z","kind":"loss","spec":"20% \"odd\" \u0001 ±1->3"}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := writeHistory(h, dir, time.Time{}); err != nil {
		t.Fatal(err)
	}
	ev, _ := os.ReadFile(filepath.Join(dir, "events.ndjson"))
	fa, _ := os.ReadFile(filepath.Join(dir, "faults.ndjson"))
	if strings.Count(string(ev), "\n") != 1 || !strings.Contains(string(fa), `"partition"`) || !strings.Contains(string(fa), `"heal"`) ||
		strings.Contains(string(fa), "start") || strings.Contains(string(fa), "check") {
		t.Errorf("events:\n%s\nfaults:\n%s", ev, fa)
	}
	// Every line is JSON that reads back as the mark it was (Go's %q,
	// used before, wrote \x01 where JSON wants \u0001).
	var specs []string
	for _, line := range strings.Split(strings.TrimSpace(string(fa)), "\n") {
		var m schema.Mark
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("faults.ndjson line %s: %v", line, err)
		}
		specs = append(specs, m.Spec)
	}
	if want := []string{"1|2", "all", "20% \"odd\" \x01 ±1->3"}; !slices.Equal(specs, want) {
		t.Errorf("specs %q, want %q", specs, want)
	}
}
