// Package cgroup is the few cgroup v2 calls that `groupd exec` and its
// daemon need to hold a command and every process it starts in one group
// that can be killed at once: a descendant that calls setsid leaves the
// command's process group and session, and one whose parent dies leaves
// its process tree, but neither can leave its cgroup (moving a process
// between cgroups takes write access to the cgroups above both).
//
// It uses only the core files every cgroup v2 group has, with no
// controller enabled: cgroup.procs (who is in it, and to move a process
// in), cgroup.events (populated, frozen), cgroup.kill (Linux 5.14: SIGKILL
// to every process in the group and its descendants, including one
// forking at that moment) and cgroup.freeze (Linux 5.2). Where
// cgroup.kill is missing, Kill freezes the group, so that nothing in it
// can fork, sends SIGKILL to every member, and thaws it.
//
// cgroup v2 is mounted at /sys/fs/cgroup on a pure v2 host and often at
// /sys/fs/cgroup/unified on a hybrid one (v1 controllers beside a v2
// hierarchy with none); Self finds the mount from /proc/self/mountinfo.
// What it cannot give: on a host with cgroup v1 only there is no cgroup2
// mount (ErrNoCgroup2), and a process may create groups only where it may
// write (root, or a subtree delegated to its user, systemd's Delegate=yes).
package cgroup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoCgroup2 is Self's error on a host (or in a mount namespace) with no
// cgroup2 file system mounted.
var ErrNoCgroup2 = errors.New("cgroup: no cgroup2 file system is mounted (cgroup v1 only, or a mount namespace without it)")

// mount is one cgroup2 mount: where it is mounted, and which directory of
// the hierarchy it shows there (mountinfo's root field; "/" unless a
// subtree is bind-mounted).
type mount struct {
	point, root string
}

// parseMountinfo returns the cgroup2 mounts listed in a mountinfo file
// (proc(5)), in order.
func parseMountinfo(r io.Reader) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 5 || len(rf) < 1 || rf[0] != "cgroup2" {
			continue
		}
		out = append(out, mount{point: unescapeMount(lf[4]), root: unescapeMount(lf[3])})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cgroup: reading mountinfo: %w", err)
	}
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, \011,
// \012, \134).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseSelf returns the process's path in the cgroup v2 hierarchy from a
// /proc/PID/cgroup file: the "0::PATH" line.
func parseSelf(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			return strings.TrimSuffix(p, " (deleted)"), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("cgroup: reading /proc/self/cgroup: %w", err)
	}
	return "", ErrNoCgroup2
}

// resolve returns the directory of cgroup path p (as /proc/PID/cgroup
// names it) under the first of mounts that shows it.
func resolve(mounts []mount, p string) (string, error) {
	if len(mounts) == 0 {
		return "", ErrNoCgroup2
	}
	for _, m := range mounts {
		rel, ok := strings.CutPrefix(p, m.root)
		if m.root == "/" {
			rel, ok = p, true
		}
		if ok && (rel == "" || strings.HasPrefix(rel, "/")) {
			return filepath.Join(m.point, rel), nil
		}
	}
	return "", fmt.Errorf("cgroup: this process's cgroup %s is not under any cgroup2 mount (%s is mounted at %s)",
		p, mounts[0].root, mounts[0].point)
}

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

// Group is one cgroup v2 directory.
type Group struct {
	dir string
}

// Path is the group's directory.
func (g *Group) Path() string { return g.dir }

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
