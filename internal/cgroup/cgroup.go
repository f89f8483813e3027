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
// Off Linux there are no cgroups: every call fails with ErrUnsupported.
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
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

// Group is one cgroup v2 directory.
type Group struct {
	dir string
}

// Path is the group's directory.
func (g *Group) Path() string { return g.dir }
