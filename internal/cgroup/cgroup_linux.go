//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Self returns the directory of this process's own cgroup in the v2
// hierarchy, as this process's mount namespace shows it.
func Self() (string, error) {
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	defer mi.Close()
	mounts, err := parseMountinfo(mi)
	if err != nil {
		return "", err
	}
	if len(mounts) == 0 {
		return "", ErrNoCgroup2
	}
	cg, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	defer cg.Close()
	p, err := parseSelf(cg)
	if err != nil {
		return "", err
	}
	return resolve(mounts, p)
}

// isCgroup2 reports whether dir is on a cgroup2 file system.
func isCgroup2(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("cgroup: %s: %w", dir, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return fmt.Errorf("cgroup: %s is not on a cgroup2 file system", dir)
	}
	return nil
}

// Open returns the group at dir, which must exist on a cgroup2 file
// system.
func Open(dir string) (*Group, error) {
	if err := isCgroup2(dir); err != nil {
		return nil, err
	}
	return &Group{dir: dir}, nil
}

// Create makes a new group at dir, whose parent must be a cgroup2 group.
// It fails with an error wrapping fs.ErrExist if dir exists: a group
// another process made is not this one's to use.
func Create(dir string) (*Group, error) {
	if err := isCgroup2(filepath.Dir(dir)); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup: create %s: %w", dir, err)
	}
	return &Group{dir: dir}, nil
}

// Check reports whether the group can be killed as a whole: it has
// cgroup.kill, or at least cgroup.freeze (Kill's fallback). A kernel
// older than 5.2 has neither.
func (g *Group) Check() error {
	for _, f := range []string{"cgroup.kill", "cgroup.freeze"} {
		if _, err := os.Stat(filepath.Join(g.dir, f)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("cgroup: %s has neither cgroup.kill nor cgroup.freeze (Linux before 5.2): its processes cannot be killed as one", g.dir)
}

// Dir opens the group's directory, for clone3's CLONE_INTO_CGROUP
// (syscall.SysProcAttr's UseCgroupFD and CgroupFD): a process started so
// is in the group from its first instruction, with no window in which it
// could fork outside it. The caller closes it.
func (g *Group) Dir() (*os.File, error) {
	f, err := os.OpenFile(g.dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cgroup: open %s: %w", g.dir, err)
	}
	return f, nil
}

// Add moves process pid into the group (for a process started without
// CLONE_INTO_CGROUP: whatever it forked before the move stays outside).
func (g *Group) Add(pid int) error {
	if err := os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("cgroup: move pid %d into %s: %w", pid, g.dir, err)
	}
	return nil
}

// Procs returns the processes in the group and in every group below it.
func (g *Group) Procs() ([]int, error) {
	var out []int
	err := filepath.WalkDir(g.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != g.dir {
				return nil // a child group removed meanwhile
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != g.dir {
				return nil
			}
			return err
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				out = append(out, pid)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cgroup: list processes of %s: %w", g.dir, err)
	}
	return out, nil
}

// events reads cgroup.events' populated and frozen.
func (g *Group) events() (populated, frozen bool, err error) {
	b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.events"))
	if err != nil {
		return false, false, fmt.Errorf("cgroup: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "populated":
			populated = v == "1"
		case "frozen":
			frozen = v == "1"
		}
	}
	return populated, frozen, nil
}

// Populated reports whether any process is in the group or below it (a
// process that exited counts no more, even before its parent reaps it).
func (g *Group) Populated() (bool, error) {
	p, _, err := g.events()
	return p, err
}

// Signal sends sig to every process in the group and below it (for
// SIGTERM: a request to stop, which the group's processes may handle).
// Processes that exit meanwhile are not an error.
func (g *Group) Signal(sig syscall.Signal) error {
	pids, err := g.Procs()
	if err != nil {
		return err
	}
	return g.signalMembers(pids, sig)
}

// signalMembers sends sig to each of pids that is still in the group when
// the signal is sent: each pid is pinned with a pidfd, and the group's
// list read again, so that a pid that left and was reused meanwhile by a
// process elsewhere is never signalled.
func (g *Group) signalMembers(pids []int, sig syscall.Signal) error {
	type pinned struct{ pid, fd int }
	var pins []pinned
	defer func() {
		for _, p := range pins {
			unix.Close(p.fd)
		}
	}()
	var first error
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		switch {
		case err == nil:
			pins = append(pins, pinned{pid, fd})
		case errors.Is(err, unix.ESRCH):
		case errors.Is(err, unix.ENOSYS):
			// Linux before 5.3: signal by pid.
			if err := unix.Kill(pid, sig); err != nil && !errors.Is(err, unix.ESRCH) && first == nil {
				first = fmt.Errorf("cgroup: signal %v to pid %d: %w", sig, pid, err)
			}
		default:
			if first == nil {
				first = fmt.Errorf("cgroup: pidfd_open %d: %w", pid, err)
			}
		}
	}
	if len(pins) == 0 {
		return first
	}
	now, err := g.Procs()
	if err != nil {
		return err
	}
	member := make(map[int]bool, len(now))
	for _, pid := range now {
		member[pid] = true
	}
	for _, p := range pins {
		if !member[p.pid] {
			continue
		}
		if err := unix.PidfdSendSignal(p.fd, sig, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) && first == nil {
			first = fmt.Errorf("cgroup: signal %v to pid %d: %w", sig, p.pid, err)
		}
	}
	return first
}

// Kill sends SIGKILL to every process in the group and below it, at once:
// through cgroup.kill, or, on a kernel without it (before 5.14), by
// freezing the group, killing each member and thawing it. It does not
// wait for them to be gone (WaitEmpty). A group already removed is not an
// error.
func (g *Group) Kill() error {
	err := os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := os.Stat(g.dir); errors.Is(serr, fs.ErrNotExist) {
			return nil
		}
		return g.killFrozen()
	default:
		return fmt.Errorf("cgroup: kill %s: %w", g.dir, err)
	}
}

// freezeWait bounds how long killFrozen waits for the group to freeze: a
// process in an uninterruptible sleep freezes when it leaves it.
const freezeWait = time.Second

// killFrozen is Kill without cgroup.kill: freeze the group so that no
// member forks or leaves while the list is read, SIGKILL every member (a
// frozen process dies of it once thawed), thaw. If the group does not
// report frozen within freezeWait, it kills what it finds all the same,
// and again until the group is empty or the time is up.
func (g *Group) killFrozen() error {
	freeze := filepath.Join(g.dir, "cgroup.freeze")
	if err := os.WriteFile(freeze, []byte("1"), 0); err != nil {
		return fmt.Errorf("cgroup: freeze %s (no cgroup.kill here): %w", g.dir, err)
	}
	deadline := time.Now().Add(freezeWait)
	for {
		_, frozen, err := g.events()
		if err != nil || frozen || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	var kerr error
	for {
		pids, err := g.Procs()
		if err != nil {
			kerr = err
			break
		}
		if len(pids) == 0 {
			break
		}
		if err := g.signalMembers(pids, unix.SIGKILL); err != nil {
			kerr = err
		}
		_, frozen, _ := g.events()
		if frozen || time.Now().After(deadline) {
			break // frozen: no member forked since the list was read
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.WriteFile(freeze, []byte("0"), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errors.Join(kerr, fmt.Errorf("cgroup: thaw %s: %w", g.dir, err))
	}
	return kerr
}

// WaitEmpty waits until no process is left in the group (or the group is
// gone), polling cgroup.events, or until ctx ends.
func (g *Group) WaitEmpty(ctx context.Context) error {
	wait := 200 * time.Microsecond
	for {
		populated, err := g.Populated()
		if errors.Is(err, fs.ErrNotExist) || err == nil && !populated {
			return nil
		}
		if err != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cgroup: %s still has processes: %w", g.dir, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 10*time.Millisecond)
	}
}

// Remove removes the group and the groups below it, which must have no
// process left (the kernel refuses with EBUSY otherwise). A group already
// gone is not an error.
func (g *Group) Remove() error {
	var dirs []string
	err := filepath.WalkDir(g.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cgroup: remove %s: %w", g.dir, err)
	}
	for i := len(dirs) - 1; i >= 0; i-- { // the deepest first
		if err := unix.Rmdir(dirs[i]); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("cgroup: remove %s: %w", dirs[i], err)
		}
	}
	return nil
}
