//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testGroup creates a group of its own under this process's cgroup, or
// skips the test saying why it cannot, and removes it when the test ends.
func testGroup(t *testing.T) *Group {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creating a cgroup and moving processes into it takes write access to the hierarchy")
	}
	self, err := Self()
	if err != nil {
		t.Skipf("no cgroup v2 here: %v", err)
	}
	g, err := Create(filepath.Join(self, fmt.Sprintf("cgroup-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_"))))
	if err != nil {
		t.Skipf("cannot create a cgroup under %s: %v", self, err)
	}
	t.Cleanup(func() {
		_ = g.Kill()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = g.WaitEmpty(ctx)
		if err := g.Remove(); err != nil {
			t.Errorf("removing the test's group: %v", err)
		}
	})
	if err := g.Check(); err != nil {
		t.Skip(err)
	}
	return g
}

// startTree starts, inside g (CLONE_INTO_CGROUP), a shell that starts a
// setsid'd grandchild and then becomes `sleep 600`, and returns the
// child's and the grandchild's pids once both run.
func startTree(t *testing.T, g *Group) (cmd *exec.Cmd, child, grandchild int) {
	t.Helper()
	dir, err := g.Dir()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	pidFile := filepath.Join(t.TempDir(), "grandchild")
	cmd = exec.Command("sh", "-c", `setsid sh -c 'echo $$ > "$0"; exec sleep 600' "$0" & exec sleep 600`, pidFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting into %s: %v", g.Path(), err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(pidFile)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && strings.HasSuffix(string(b), "\n") {
			procs, _ := g.Procs()
			if slices.Contains(procs, pid) && slices.Contains(procs, cmd.Process.Pid) && comm(pid) == "sleep" {
				grandchild = pid
				break
			}
		}
		if time.Now().After(deadline) {
			procs, _ := g.Procs()
			t.Fatalf("the grandchild did not start within 10s (pid file %q, group has %v)", b, procs)
		}
		time.Sleep(2 * time.Millisecond)
	}
	sid, _ := unix.Getsid(grandchild)
	if csid, _ := unix.Getsid(cmd.Process.Pid); sid == csid || sid != grandchild {
		t.Fatalf("the grandchild (pid %d) has session %d, the child %d: setsid did not take", grandchild, sid, csid)
	}
	return cmd, cmd.Process.Pid, grandchild
}

// comm is a process's command name, "" if it is gone.
func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// gone reports whether pid no longer runs: no such process, or a zombie
// waiting for its parent.
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// TestKillSetsidGrandchild: killing a group kills a descendant that left
// its parent's session with setsid, which a process-group kill misses.
func TestKillSetsidGrandchild(t *testing.T) {
	for _, how := range []string{"cgroup.kill", "freeze"} {
		t.Run(how, func(t *testing.T) {
			g := testGroup(t)
			if how == "freeze" {
				if _, err := os.Stat(filepath.Join(g.Path(), "cgroup.freeze")); err != nil {
					t.Skip("no cgroup.freeze (Linux before 5.2)")
				}
			}
			cmd, child, grandchild := startTree(t, g)
			// What Setpgid's process-group kill reaches: the child, not
			// the grandchild.
			if pg, _ := syscall.Getpgid(grandchild); pg == child {
				t.Fatalf("the grandchild is in the child's process group")
			}
			start := time.Now()
			var err error
			if how == "freeze" {
				err = g.killFrozen()
			} else {
				err = g.Kill()
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := g.WaitEmpty(ctx); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if !gone(grandchild) {
				t.Errorf("the setsid'd grandchild (pid %d) survived the group's kill", grandchild)
			}
			werr := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Errorf("the child (pid %d) ended with %v, want SIGKILL", child, werr)
			}
			if _, frozen, _ := g.events(); frozen {
				t.Errorf("the group is left frozen")
			}
			t.Logf("%s: child and setsid'd grandchild gone %v after the kill", how, took.Round(time.Microsecond))
		})
	}
}

// TestSignalAndAdd: Signal reaches every member (SIGTERM before a kill),
// and Add moves a running process in.
func TestSignalAndAdd(t *testing.T) {
	g := testGroup(t)
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if procs, err := g.Procs(); err != nil || !slices.Equal(procs, []int{cmd.Process.Pid}) {
		t.Fatalf("Procs after Add: %v, %v", procs, err)
	}
	if p, err := g.Populated(); err != nil || !p {
		t.Fatalf("Populated: %v, %v", p, err)
	}
	if err := g.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("sleep ended with %v, want SIGTERM", werr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.WaitEmpty(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCreateRemove: Create refuses a group that exists, Remove takes
// nested groups, and Kill and WaitEmpty accept a group already gone.
func TestCreateRemove(t *testing.T) {
	g := testGroup(t)
	if _, err := Create(g.Path()); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create of an existing group: %v, want ErrExist", err)
	}
	sub, err := Create(filepath.Join(g.Path(), "a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(filepath.Join(sub.Path(), "b")); err != nil {
		t.Fatal(err)
	}
	if err := sub.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sub.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s still exists after Remove: %v", sub.Path(), err)
	}
	if err := sub.Kill(); err != nil {
		t.Errorf("Kill of a removed group: %v", err)
	}
	if err := sub.WaitEmpty(context.Background()); err != nil {
		t.Errorf("WaitEmpty of a removed group: %v", err)
	}
	if err := sub.Remove(); err != nil {
		t.Errorf("Remove of a removed group: %v", err)
	}
	if _, err := Open(t.TempDir()); err == nil {
		t.Errorf("Open of a directory outside cgroup2 succeeded")
	}
	if _, err := Create(filepath.Join(t.TempDir(), "x")); err == nil {
		t.Errorf("Create outside cgroup2 succeeded")
	}
}
