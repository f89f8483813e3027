package group

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/internal/cgroup"
	"github.com/groupd/groupd/schema"
	"golang.org/x/sys/unix"
)

// guardBase makes a cgroup of the test's own under this process's, for an
// agent's guards, or skips the test saying why it cannot; it kills what is
// left in it and removes it when the test ends.
func guardBase(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the guards make cgroups and start processes into them")
	}
	self, err := cgroup.Self()
	if err != nil {
		t.Skipf("needs cgroup v2: %v", err)
	}
	g, err := cgroup.Create(filepath.Join(self, fmt.Sprintf("guard-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_"))))
	if err != nil {
		t.Skipf("cannot make a cgroup under %s: %v", self, err)
	}
	if err := g.Check(); err != nil {
		_ = g.Remove()
		t.Skip(err)
	}
	t.Cleanup(func() {
		_ = g.Kill()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = g.WaitEmpty(ctx)
		if err := g.Remove(); err != nil {
			t.Errorf("removing the test's cgroup: %v", err)
		}
	})
	return g.Path()
}

// register opens a guard for the lab's term, as exec does.
func (gl *guardLab) register(t *testing.T) *client.Guard {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, err := gl.c.Guard(ctx, schema.ExecGuardRequest{Term: gl.term.String(), GraceMS: 100, PollMS: 20})
	if err != nil {
		t.Fatalf("registering a guard: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// guardOf returns the agent's live guard id.
func (gl *guardLab) guardOf(t *testing.T, id uint64) *guard {
	t.Helper()
	gs := &gl.a.guards
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g := gs.live[id]
	if g == nil {
		t.Fatalf("guard %d is not live", id)
	}
	return g
}

// killAt returns when the daemon sent the guard's kill (zero: not yet).
func (gl *guardLab) killAt(g *guard) time.Time {
	gl.a.guards.mu.Lock()
	defer gl.a.guards.mu.Unlock()
	return g.killAt
}

// tree is a command started into a guard's cgroup as exec starts it:
// `sh -c 'setsid sleep 600 & exec sleep 600'`, a child and a grandchild
// in a session of its own.
type tree struct {
	cmd               *exec.Cmd
	child, grandchild int
	exited            chan error
}

func startTree(t *testing.T, dir string) *tree {
	t.Helper()
	cg, err := cgroup.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := cg.Dir()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sh", "-c", "setsid sleep 600 & exec sleep 600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: int(f.Fd())}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting into %s: %v", dir, err)
	}
	tr := &tree{cmd: cmd, child: cmd.Process.Pid, exited: make(chan error, 1)}
	go func() { tr.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if tr.grandchild != 0 {
			_ = syscall.Kill(tr.grandchild, syscall.SIGKILL)
		}
	})
	waitFor(t, 10*time.Second, "the child and its setsid'd grandchild to run sleep", func() bool {
		procs, _ := cg.Procs()
		for _, p := range procs {
			if p != tr.child && procComm(p) == "sleep" {
				tr.grandchild = p
			}
		}
		return tr.grandchild != 0 && procComm(tr.child) == "sleep"
	})
	if sid, _ := unix.Getsid(tr.grandchild); sid != tr.grandchild {
		t.Fatalf("the grandchild (pid %d) is in session %d: setsid did not take", tr.grandchild, sid)
	}
	return tr
}

func procComm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// running reports whether pid runs: it exists and is no zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// gone waits until the tree's child and grandchild no longer run, and
// returns how long after from that was seen; the bound is an outer one.
func (tr *tree) gone(t *testing.T, from time.Time, what string) time.Duration {
	t.Helper()
	waitFor(t, 5*time.Second, what+": child and setsid'd grandchild gone", func() bool {
		return !running(tr.child) && !running(tr.grandchild)
	})
	return time.Since(from)
}

// alive fails the test unless both run.
func (tr *tree) alive(t *testing.T, when string) {
	t.Helper()
	if !running(tr.child) || !running(tr.grandchild) {
		t.Fatalf("%s: the command was killed (child running %v, grandchild %v)", when, running(tr.child), running(tr.grandchild))
	}
}

// TestGuardKilledOnClose: exec dies (its connection closes) while its
// command runs: the daemon kills the guard's cgroup at once, the setsid'd
// grandchild too, and removes the cgroup. A guard closed with its cgroup
// empty (exec stopped its command itself) kills nothing.
func TestGuardKilledOnClose(t *testing.T) {
	t.Parallel()
	gl := newGuardLab(t, false, guardBase(t))
	gl.lead(5, time.Time{})
	g := gl.register(t)
	if !strings.HasPrefix(g.Info.Cgroup, gl.a.guards.base+"/groupd-") || filepath.Base(g.Info.Cgroup) != "exec-1" || g.Info.Term != "5.1" {
		t.Fatalf("first line %+v: want exec-1 under the agent's groupd-PID in %s, term 5.1", g.Info, gl.a.guards.base)
	}
	tr := startTree(t, g.Info.Cgroup)
	at := time.Now()
	g.Close()
	took := tr.gone(t, at, "after the guard's connection closed")
	t.Logf("child and setsid'd grandchild gone %v after the connection closed", took.Round(time.Microsecond))
	waitFor(t, 5*time.Second, "the guard's cgroup to be removed", func() bool {
		_, err := os.Stat(g.Info.Cgroup)
		return errors.Is(err, fs.ErrNotExist)
	})

	quiet := gl.register(t)
	if quiet.Info.Cgroup == g.Info.Cgroup {
		t.Fatalf("a second guard got the first one's cgroup %s", quiet.Info.Cgroup)
	}
	quiet.Close()
	waitFor(t, 5*time.Second, "the empty guard's cgroup to be removed", func() bool {
		_, err := os.Stat(quiet.Info.Cgroup)
		return errors.Is(err, fs.ErrNotExist)
	})
	gl.a.guards.mu.Lock()
	live := len(gl.a.guards.live)
	gl.a.guards.mu.Unlock()
	if live != 0 {
		t.Errorf("%d guards live after both closed", live)
	}
}

// TestGuardKilledAtLeaseEnd: in quorum mode the guard's command runs
// while the lease is renewed, and when the leadership ends with the lease
// still running, it is killed guardKillMargin before the lease's end, not
// at the leader-stop and not after the end.
func TestGuardKilledAtLeaseEnd(t *testing.T) {
	t.Parallel()
	gl := newGuardLab(t, true, guardBase(t))
	gl.lead(5, time.Now().Add(2*time.Second))
	g := gl.register(t)
	gd := gl.guardOf(t, g.Info.ID)
	tr := startTree(t, g.Info.Cgroup)
	var until time.Time
	for range 25 { // renewals past the first end: the guard follows them
		time.Sleep(100 * time.Millisecond)
		until = time.Now().Add(2 * time.Second)
		gl.renew(until)
	}
	tr.alive(t, "while the lease was renewed, past its first end")
	stop := time.Now()
	gl.follow() // the leadership ends; the lease published runs on
	end, err := g.End()
	if err != nil {
		t.Fatalf("the guard's stream: %v", err)
	}
	killed := gl.killAt(gd)
	took := tr.gone(t, killed, "after the guard's kill")
	if !end.Killed || !strings.Contains(end.End, "the leadership of term 5.1 ended") {
		t.Errorf("last line %+v: want killed, the leadership of term 5.1 ended", end)
	}
	if killed.Before(until.Add(-guardKillMargin)) || killed.After(until.Add(2*time.Second)) {
		t.Errorf("killed %v before the lease's end, want %v (and not after it; the outer bound is 2 s)", until.Sub(killed), guardKillMargin)
	}
	t.Logf("leader-stop %v before the lease's end; killed %v before it; child and grandchild gone %v after the kill",
		until.Sub(stop).Round(time.Millisecond), until.Sub(killed).Round(time.Millisecond), took.Round(time.Microsecond))
}

// TestGuardLeaseRunsOut: the loop says nothing (blocked, starved), the
// lease is not renewed: the guard's own timer kills the command before
// the lease's end.
func TestGuardLeaseRunsOut(t *testing.T) {
	t.Parallel()
	gl := newGuardLab(t, true, guardBase(t))
	// Long enough for the guard and its command to be in place before
	// the guard's timer fires, on a loaded machine too: a command started
	// into a guard already killed is killed at once, and never runs.
	until := time.Now().Add(2 * time.Second)
	gl.lead(5, until)
	g := gl.register(t)
	gd := gl.guardOf(t, g.Info.ID)
	tr := startTree(t, g.Info.Cgroup)
	if _, err := g.End(); err != nil {
		t.Fatalf("the guard's stream: %v", err)
	}
	killed := gl.killAt(gd)
	tr.gone(t, killed, "after the lease ran out")
	if killed.Before(until.Add(-guardKillMargin)) || killed.After(until.Add(time.Second)) {
		t.Errorf("killed %v before the lease's end, want %v (outer bound: 1 s after it)", until.Sub(killed), guardKillMargin)
	}
	t.Logf("killed %v before the lease's end", until.Sub(killed).Round(time.Microsecond))
}

// TestGuardEndPast: the leadership ends when the lease's end is already
// within the margin (the guard's timer is late: a starved daemon): the
// kill is sent at once, by the leader-stop.
func TestGuardEndPast(t *testing.T) {
	t.Parallel()
	gl := newGuardLab(t, true, guardBase(t))
	// Long enough for the timers to be stopped before they fire, on a
	// loaded machine too (a guard whose timer fired kills what starts
	// in it).
	until := time.Now().Add(2 * time.Second)
	gl.lead(5, until)
	g := gl.register(t)
	gd := gl.guardOf(t, g.Info.ID)
	// Late, as if the daemon were starved: the guard's timer and the
	// lease timer (whose expiry would end the leadership first).
	gl.a.guards.mu.Lock()
	gd.timer.Stop()
	gl.a.guards.mu.Unlock()
	gl.a.pub.leaseTimer.stop()
	tr := startTree(t, g.Info.Cgroup)
	time.Sleep(time.Until(until.Add(10 * time.Millisecond))) // past the lease's end: the experiment, not a synchronisation
	if gl.killAt(gd) != (time.Time{}) {
		t.Fatal("killed before the leadership ended, with the timer stopped")
	}
	tr.alive(t, "past the lease's end, before the leader-stop")
	stop := time.Now()
	gl.follow()
	killed := gl.killAt(gd)
	if killed.IsZero() {
		t.Fatal("the leader-stop did not kill the guard's cgroup at once")
	}
	took := tr.gone(t, stop, "after the leader-stop")
	t.Logf("killed %v after the leader-stop; gone %v after it", killed.Sub(stop).Round(time.Microsecond), took.Round(time.Microsecond))
}

// TestGuardNoQuorum: without a lease the guard kills exec's poll + grace
// + guardSlack after the leader-stop, so that a live exec stops its
// command first; a leadership that goes on under a new term ends the old
// term's guard the same way.
func TestGuardNoQuorum(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"leader-stop", "leader-term"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			gl := newGuardLab(t, false, guardBase(t))
			gl.lead(5, time.Time{})
			g := gl.register(t) // grace 100 ms, poll 20 ms
			gd := gl.guardOf(t, g.Info.ID)
			tr := startTree(t, g.Info.Cgroup)
			stop := time.Now()
			if how == "leader-stop" {
				gl.follow()
			} else {
				gl.lead(6, time.Time{})
			}
			end, err := g.End()
			if err != nil {
				t.Fatal(err)
			}
			killed := gl.killAt(gd)
			tr.gone(t, killed, "after the kill")
			after := 100*time.Millisecond + 20*time.Millisecond + guardSlack
			if killed.Sub(stop) < after || killed.Sub(stop) > after+2*time.Second {
				t.Errorf("killed %v after the %s, want %v (outer bound 2 s more)", killed.Sub(stop), how, after)
			}
			if !strings.Contains(end.End, "term 5.1 ended") {
				t.Errorf("last line %+v", end)
			}
		})
	}
}

// TestGuardKilledOnAgentStop: the agent stops: nothing guards the command
// any more, so it is killed, and the agent's cgroup directory removed.
func TestGuardKilledOnAgentStop(t *testing.T) {
	t.Parallel()
	gl := newGuardLab(t, true, guardBase(t))
	gl.lead(5, time.Now().Add(time.Hour))
	g := gl.register(t)
	tr := startTree(t, g.Info.Cgroup)
	at := time.Now()
	gl.a.Close()
	end, err := g.End()
	if err != nil || !end.Killed || end.End != "the daemon stops" {
		t.Errorf("last line %+v, %v: want killed, the daemon stops", end, err)
	}
	tr.gone(t, at, "after the agent stopped")
	if _, err := os.Stat(filepath.Dir(g.Info.Cgroup)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the agent's cgroup %s is left after Close: %v", filepath.Dir(g.Info.Cgroup), err)
	}
}

// TestGuardMax: at most maxGuards live at once (429), and a closed one
// makes room.
func TestGuardMax(t *testing.T) {
	t.Parallel()
	gl := newGuardLab(t, false, guardBase(t))
	gl.lead(5, time.Time{})
	var gs []*client.Guard
	for range maxGuards {
		gs = append(gs, gl.register(t))
	}
	if code, line := gl.post(t, guardReq(gl.term), nil); code != http.StatusTooManyRequests || !strings.Contains(line, "64 exec guards") {
		t.Fatalf("guard %d: %d %q, want 429", maxGuards+1, code, line)
	}
	gs[0].Close()
	waitFor(t, 5*time.Second, "a closed guard to make room", func() bool {
		gl.a.guards.mu.Lock()
		defer gl.a.guards.mu.Unlock()
		return len(gl.a.guards.live) < maxGuards
	})
	gl.register(t)
}

// TestGuardOnlyOwnCgroups: the daemon kills only cgroups it made. A
// groupd-PID directory that exists (another agent's, or one a crashed
// daemon with this pid left) is not taken, nor an exec-N inside the
// agent's own that someone else made; what runs in them survives every
// kill and the agent's stop.
func TestGuardOnlyOwnCgroups(t *testing.T) {
	t.Parallel()
	base := guardBase(t)
	foreign, err := cgroup.Create(filepath.Join(base, fmt.Sprintf("groupd-%d", os.Getpid())))
	if err != nil {
		t.Fatal(err)
	}
	ftree := startTree(t, foreign.Path())
	gl := newGuardLab(t, false, base)
	gl.lead(5, time.Time{})
	g := gl.register(t)
	if filepath.Dir(g.Info.Cgroup) == foreign.Path() {
		t.Fatalf("the agent took the existing %s", foreign.Path())
	}
	// Someone makes exec-2 in the agent's own directory.
	squat, err := cgroup.Create(filepath.Join(filepath.Dir(g.Info.Cgroup), "exec-2"))
	if err != nil {
		t.Fatal(err)
	}
	stree := startTree(t, squat.Path())
	g2 := gl.register(t)
	if g2.Info.Cgroup == squat.Path() {
		t.Fatalf("the agent took the existing %s", squat.Path())
	}
	tr := startTree(t, g.Info.Cgroup)
	tr2 := startTree(t, g2.Info.Cgroup)
	at := time.Now()
	g.Close()
	tr.gone(t, at, "the agent's own guard closed")
	gl.a.Close()
	tr2.gone(t, at, "the agent stopped")
	ftree.alive(t, "a groupd-PID the agent did not make, after its guards ended")
	stree.alive(t, "an exec-N the agent did not make, after its guards ended")
	for _, tr := range []*tree{ftree, stree} {
		_ = syscall.Kill(tr.grandchild, syscall.SIGKILL)
		_ = tr.cmd.Process.Kill()
		<-tr.exited
	}
	_ = squat.WaitEmpty(context.Background())
	_ = foreign.WaitEmpty(context.Background())
	_ = squat.Remove()
	_ = foreign.Remove()
}

// TestGuardKeepsDead: a command started into a guard's cgroup after the
// guard ended (a start racing the kill) is killed too, while exec keeps
// the connection open.
func TestGuardKeepsDead(t *testing.T) {
	t.Parallel()
	gl := newGuardLab(t, false, guardBase(t))
	gl.lead(5, time.Time{})
	g := gl.register(t)
	gl.follow()
	if _, err := g.End(); err != nil {
		t.Fatal(err)
	}
	cg, err := cgroup.Open(g.Info.Cgroup)
	if err != nil {
		t.Fatal(err)
	}
	f, err := cg.Dir()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("a command started after the guard ended: %v, want killed", err)
	}
	t.Logf("killed %v after its start", time.Since(at).Round(time.Microsecond))
}

// TestGuardRemovesStale: an agent making its directory removes the empty
// ones of daemons that are gone, and nothing else: not one of a live
// process, not one with a process in it, not another name.
func TestGuardRemovesStale(t *testing.T) {
	t.Parallel()
	base := guardBase(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := gone.Process.Pid // gone, and not reused within the test (pids grow)
	mk := func(name string) string {
		t.Helper()
		g, err := cgroup.Create(filepath.Join(base, name))
		if err != nil {
			t.Fatal(err)
		}
		return g.Path()
	}
	stale := mk(fmt.Sprintf("groupd-%d", dead))
	staleK := mk(fmt.Sprintf("groupd-%d-2", dead))
	staleSub := mk(fmt.Sprintf("groupd-%d-3", dead))
	mk(fmt.Sprintf("groupd-%d-3/exec-7", dead))
	busy := mk(fmt.Sprintf("groupd-%d-4", dead))
	busyExec := mk(fmt.Sprintf("groupd-%d-4/exec-1", dead))
	live := mk("groupd-1") // init's
	other := mk(fmt.Sprintf("mine-%d", dead))
	tr := startTree(t, busyExec)

	gl := newGuardLab(t, false, base)
	gl.lead(5, time.Time{})
	first := gl.register(t)
	for _, d := range []string{stale, staleK, staleSub} {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s (a gone daemon's, empty) is still there: %v", d, err)
		}
	}
	for _, d := range []string{busy, busyExec, live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	tr.alive(t, "in a gone daemon's directory that had a process in it")
	// The agent's own directory removed from outside while empty: the
	// next guard makes it again.
	first.Close()
	waitFor(t, 5*time.Second, "the first guard's cgroup to go", func() bool {
		_, err := os.Stat(first.Info.Cgroup)
		return errors.Is(err, fs.ErrNotExist)
	})
	parent := filepath.Dir(first.Info.Cgroup)
	if err := unix.Rmdir(parent); err != nil {
		t.Fatal(err)
	}
	g := gl.register(t)
	if filepath.Dir(g.Info.Cgroup) != parent {
		t.Errorf("the guard after the agent's directory went is in %s, want %s made again", g.Info.Cgroup, parent)
	}
}
