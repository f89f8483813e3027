package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChaosSoak runs `scripts/netem/experiment.sh chaos` for N=8 nodes:
// rounds of random partitions, one-way cuts, loss, kill -9 and restarts,
// each followed by a quiet period, for GROUPD_CHAOS_MINUTES minutes (default
// 2, the CI version; the full run is 10). The script replays the
// recorded history through the invariant checker (internal/cmd/checkhistory);
// the test requires zero S1–S4 violations and every node converged at
// every quiet period.
//
// The lab is the script's own, named apart from every other lab on the
// machine: GROUPD_LAB_PREFIX "gk" + this process's PID in base 36, subnet
// 10.79.8.0/24, a temporary run dir. GROUPD_CHAOS_SEED fixes the schedule.
func TestChaosSoak(t *testing.T) {
	requireFaults(t)
	for _, tool := range []string{"jq", "curl", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is missing (apt-get install -y %s): the chaos scenario needs it", tool, tool)
		}
	}
	minutes := envInt(t, "GROUPD_CHAOS_MINUTES", 2)
	seed := os.Getenv("GROUPD_CHAOS_SEED")
	if seed == "" {
		seed = strconv.FormatInt(time.Now().UnixNano()%1_000_000_007, 10)
	}
	prefix := "gk" + strconv.FormatInt(int64(os.Getpid()), 36)
	runDir, err := os.MkdirTemp("", prefix+"-lab-")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(runDir, "out")
	checker := filepath.Join(runDir, "checkhistory")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	build := exec.Command(goTool, "build", "-o", checker, "./internal/cmd/checkhistory")
	build.Dir = ".."
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./internal/cmd/checkhistory: %v\n%s", err, b)
	}

	cmd := exec.Command("bash", "scripts/netem/experiment.sh", "chaos", "--nodes", "8",
		"--minutes", strconv.Itoa(minutes), "--seed", seed, "--out", out)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(),
		"GROUPD_LAB_PREFIX="+prefix, "GROUPD_LAB_SUBNET=10.79.8", "GROUPD_LAB_DIR="+filepath.Join(runDir, "lab"),
		"GROUPD_BIN="+groupdBin, "GROUPD_CHECKHISTORY="+checker, "GROUPD_NO_INSTALL=1", "GROUPD_PROFILE=lan")
	logPath := filepath.Join(runDir, "experiment.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group; SIGTERM makes the script tear its lab down.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	t.Logf("chaos: %d minute(s), seed %s, lab prefix %s, run dir %s", minutes, seed, prefix, runDir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	limit := time.Duration(minutes)*time.Minute + 5*time.Minute
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(limit):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case runErr = <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			runErr = <-done
		}
		t.Errorf("experiment.sh chaos did not finish within %v", limit)
	}
	logf.Close()
	logText, _ := os.ReadFile(logPath)
	defer func() {
		if t.Failed() {
			t.Logf("chaos: results kept in %s", runDir)
		} else {
			os.RemoveAll(runDir)
		}
	}()

	var sum struct {
		Rounds    int  `json:"rounds"`
		Converged bool `json:"converged"`
		Check     struct {
			OK               bool     `json:"ok"`
			Events           int      `json:"events"`
			Nodes            int      `json:"nodes"`
			GroupsCreated    int      `json:"groups_created"`
			Restarts         int      `json:"restarts"`
			Crashes          int      `json:"crashes"`
			SafetyViolations []string `json:"safety_violations"`
			Checks           int      `json:"checks"`
			ChecksConverged  int      `json:"checks_converged"`
			ConvergedAfter   *struct {
				Median, Mean, Max float64
			} `json:"converged_after_heal_s"`
		} `json:"check"`
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err == nil {
		err = json.Unmarshal(b, &sum)
	}
	if err != nil || runErr != nil {
		t.Fatalf("experiment.sh chaos: %v (summary: %v); last lines:\n%s", runErr, err, tail(string(logText), 40))
	}
	c := sum.Check
	conv := ""
	if a := c.ConvergedAfter; a != nil {
		conv = fmt.Sprintf("; converged after the heal: median %.2fs, mean %.2fs, max %.2fs", a.Median, a.Mean, a.Max)
	}
	t.Logf("chaos: %d rounds over %d minute(s); %d events from %d nodes, %d group numbers created, %d kills, %d restarts; S1–S4 violations: %d; converged at %d of %d quiet periods%s",
		sum.Rounds, minutes, c.Events, c.Nodes, c.GroupsCreated, c.Crashes, c.Restarts, len(c.SafetyViolations), c.ChecksConverged, c.Checks, conv)
	if !c.OK || !sum.Converged || len(c.SafetyViolations) > 0 || c.Checks != c.ChecksConverged || c.Checks == 0 || sum.Rounds == 0 {
		for _, v := range c.SafetyViolations[:min(len(c.SafetyViolations), 20)] {
			t.Errorf("violation: %s", v)
		}
		check, _ := os.ReadFile(filepath.Join(out, "check.txt"))
		t.Errorf("chaos failed: see %s\n%s", out, check)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
