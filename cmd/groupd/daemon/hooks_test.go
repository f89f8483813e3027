package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/internal/testkit"
	"github.com/groupd/groupd/wire"
)

// syncBuffer is a bytes.Buffer safe for the runner's goroutine.
type syncBuffer = testkit.SyncBuffer

func testEvent(reason string, seq uint64) group.Event {
	old := group.Status{ID: 2, State: wire.StateNormal, Role: group.Participant, Group: wire.GroupNumber{Seq: seq - 1, ID: 3}, Coordinator: 3}
	return group.Event{
		Time: time.Now(), Node: 2, Reason: reason, Old: &old,
		New: group.Status{ID: 2, State: wire.StateNormal, Role: group.Coordinator, Group: wire.GroupNumber{Seq: seq, ID: 2},
			Coordinator: 2, Members: []wire.NodeID{1, 2}},
	}
}

func newTestRunner(t *testing.T, cmd string, timeout time.Duration) (*hookRunner, *hookMetrics, *syncBuffer) {
	t.Helper()
	m := newHookMetrics()
	logs := &syncBuffer{}
	r := newHookRunner(cmd, timeout, zerolog.New(logs), m)
	t.Cleanup(r.stop)
	return r, m, logs
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, d, what, cond)
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func TestHookEnv(t *testing.T) {
	// The hook inherits the daemon's environment: GROUPD_* variables of
	// the shell that runs the tests (a lab's, say) would show in its
	// output. Unset them for the test; t.Setenv restores them after.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "GROUPD_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	out := filepath.Join(t.TempDir(), "env")
	r, m, _ := newTestRunner(t, "env | grep ^GROUPD_ | sort > "+out+".tmp && mv "+out+".tmp "+out, 5*time.Second)
	r.enqueue(testEvent("merge", 17))
	waitFor(t, 5*time.Second, "the hook's output", func() bool { return readFile(out) != "" })
	want := strings.Join([]string{
		"GROUPD_COORDINATOR=2",
		"GROUPD_COORDINATOR_NAME=",
		"GROUPD_DEGRADED=0",
		"GROUPD_EVENT=merge",
		"GROUPD_GROUP=17.2",
		"GROUPD_ID=2",
		"GROUPD_LEADER=0",
		"GROUPD_MEMBERS=1,2",
		"GROUPD_NAME=",
		"GROUPD_OLD_GROUP=16.3",
		"GROUPD_OLD_ROLE=participant",
		"GROUPD_OLD_TERM=",
		"GROUPD_PRIMARY=0",
		"GROUPD_ROLE=coordinator",
		"GROUPD_STATE=normal",
		"GROUPD_TERM=",
	}, "\n") + "\n"
	if got := readFile(out); got != want {
		t.Errorf("env:\n%s\nwant:\n%s", got, want)
	}
	waitFor(t, time.Second, "the run count", func() bool { return metricValue(m.hookRuns) == 1 })
}

func TestHookTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	child := filepath.Join(dir, "child")
	// The shell starts a background child (same process group) and
	// waits: the timeout must kill both.
	cmd := fmt.Sprintf("sleep 60 & echo $! > %s.tmp; mv %s.tmp %s; wait", child, child, child)
	r, m, logs := newTestRunner(t, cmd, 300*time.Millisecond)
	start := time.Now()
	r.enqueue(testEvent("merge", 2))
	waitFor(t, 5*time.Second, "the hook failure", func() bool { return metricValue(m.hookFailures) == 1 })
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("timed-out hook took %v to be reaped", took)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(child)))
	if err != nil {
		t.Fatalf("child pid: %v", err)
	}
	waitFor(t, 2*time.Second, "the background child to die", func() bool { return processDead(pid) })
	if !strings.Contains(logs.String(), "timed out") {
		t.Errorf("log does not say the hook timed out: %s", logs)
	}
}

func TestHookFailureLogged(t *testing.T) {
	r, m, logs := newTestRunner(t, "echo oops >&2; exit 3", 5*time.Second)
	r.enqueue(testEvent("ready", 2))
	waitFor(t, 5*time.Second, "the hook failure", func() bool { return metricValue(m.hookFailures) == 1 })
	waitFor(t, time.Second, "the log line", func() bool { return strings.Contains(logs.String(), "hook failed") })
	l := logs.String()
	if !strings.Contains(l, `"exit_status":3`) || !strings.Contains(l, `"stderr":"oops"`) {
		t.Errorf("log lacks exit status or stderr: %s", l)
	}
}

// TestHookSerialisedAndCoalesced: runs never overlap, run in order, and a
// burst that overflows the queue is merged into its last entry, so the
// last run sees the newest state.
func TestHookSerialisedAndCoalesced(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	started := filepath.Join(dir, "started")
	order := filepath.Join(dir, "order")
	lock := filepath.Join(dir, "lock")
	// Each run takes a lock directory (mkdir is atomic): a failure to
	// take it means two runs overlap. The first run waits for the gate.
	cmd := fmt.Sprintf(`mkdir %[1]s || echo OVERLAP >> %[2]s
touch %[3]s
while [ ! -e %[4]s ]; do sleep 0.01; done
echo "$GROUPD_GROUP $GROUPD_OLD_GROUP" >> %[2]s
rmdir %[1]s`, lock, order, started, gate)
	r, m, _ := newTestRunner(t, cmd, 10*time.Second)
	r.enqueue(testEvent("merge", 10))
	waitFor(t, 5*time.Second, "the first run to start", func() bool { return fileExists(started) })
	for seq := uint64(11); seq <= 20; seq++ {
		r.enqueue(testEvent("members", seq))
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// 1 running + hookQueueMax queued; the other 5 merged into the last.
	wantRuns := 1 + hookQueueMax
	waitFor(t, 10*time.Second, "all runs", func() bool { return metricValue(m.hookRuns) == float64(wantRuns) })
	waitFor(t, 5*time.Second, "the last run's output", func() bool {
		return strings.Count(readFile(order), "\n") == wantRuns
	})
	got := strings.Split(strings.TrimSpace(readFile(order)), "\n")
	want := []string{"10.2 9.3", "11.2 10.3", "12.2 11.3", "13.2 12.3", "20.2 13.3"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := metricValue(m.hookDropped); n != 6 {
		t.Errorf("coalesced %v events, want 6", n)
	}
}

func TestHookStopKillsRunning(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	m := newHookMetrics()
	r := newHookRunner("touch "+started+"; sleep 60", time.Minute, zerolog.Nop(), m)
	r.enqueue(testEvent("merge", 2))
	waitFor(t, 5*time.Second, "the hook to start", func() bool { return fileExists(started) })
	start := time.Now()
	r.stop()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("stop took %v", took)
	}
}

// processDead reports whether pid is gone or a zombie (killed, waiting
// for init, which in a container may reap it late, to collect it).
func processDead(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat := readFile(fmt.Sprintf("/proc/%d/stat", pid))
	if i := strings.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z' || stat[i+2] == 'X'
	}
	return false
}

// metricValue reads a counter or gauge.
func metricValue(c prometheus.Metric) float64 { return testkit.MetricValue(c) }

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestHookWorthy(t *testing.T) {
	base := testEvent("members", 5)
	same := *base.Old
	same.Role, same.Group = base.New.Role, base.New.Group
	for _, tc := range []struct {
		name string
		e    group.Event
		want bool
	}{
		{"group and role change", base, true},
		{"snapshot", group.Event{Reason: group.ReasonSnapshot, New: base.New}, false},
		{"members only", group.Event{Reason: "members", Old: &same, New: base.New}, false},
		{"confirmed", group.Event{Reason: "confirmed", Old: &same, New: base.New}, true},
		{"became normal", func() group.Event {
			o := same
			o.State = wire.StateReorganization
			return group.Event{Reason: "ready", Old: &o, New: base.New}
		}(), true},
	} {
		if got := hookWorthy(tc.e); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLeaderStopPreempts: a leader-stop does not wait behind its
// leadership's running leader-start (docs/hooks.md's VIP recipe
// runs arping -c 3, about 2 s, in leader-start; a leader cut off meanwhile
// still held the address after its successor added it) nor behind queued
// changes: the leader-start is killed, the leader-stop runs next.
func TestLeaderStopPreempts(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	cmd := `echo "$GROUPD_EVENT $GROUPD_TERM begin" >> ` + log + `; if [ "$GROUPD_EVENT" = leader-start ]; then sleep 10; fi; echo "$GROUPD_EVENT end" >> ` + log
	r, _, logs := newTestRunner(t, cmd, 30*time.Second)
	start := testEvent(group.ReasonLeaderStart, 5)
	start.New.Term = wire.GroupNumber{Seq: 5, ID: 2}
	r.enqueue(start)
	waitFor(t, 5*time.Second, "the leader-start hook to begin", func() bool { return strings.Contains(readFile(log), "leader-start") })
	r.enqueue(testEvent("members", 6)) // a change queued behind it
	stop := testEvent(group.ReasonLeaderStop, 6)
	old := *stop.Old
	old.Term = start.New.Term
	stop.Old = &old
	began := time.Now()
	r.enqueue(stop)
	waitFor(t, 5*time.Second, "the leader-stop hook", func() bool { return strings.Contains(readFile(log), "leader-stop end") })
	took := time.Since(began)
	t.Logf("leader-stop ran %v after it was queued, behind a 10 s leader-start", took.Round(time.Millisecond))
	if took > 3*time.Second {
		t.Errorf("leader-stop waited %v", took)
	}
	waitFor(t, 5*time.Second, "the queued change's hook", func() bool { return strings.Contains(readFile(log), "members end") })
	lines := strings.Split(strings.TrimSpace(readFile(log)), "\n")
	want := []string{"leader-start 5.2 begin", "leader-stop 5.2 begin", "leader-stop end", "members  begin", "members end"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("hooks ran\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(logs.String(), "leader-start hook killed") {
		t.Errorf("the kill is not logged: %s", logs.String())
	}
}
