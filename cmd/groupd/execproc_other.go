//go:build !linux

package main

import (
	"errors"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"github.com/groupd/groupd/internal/cgroup"
)

// Off Linux, `groupd exec` has no cgroup (no guard: the daemon cannot
// stop CMD when exec is stopped), no child subreaper and no /proc to walk:
// it stops CMD's process group when the leadership ends, and CMD gets a
// parent-death signal only where the kernel has one (FreeBSD). What holds
// is said once at exec's start (platformLimits).

// platformLimits is what exec says at its start: what does not hold on
// this platform.
func platformLimits() (warning string, guard bool) {
	if hasPdeathsig {
		return "on " + runtime.GOOS + " exec has no cgroup and no subreaper: CMD dies with exec (parent-death signal), " +
			"but what CMD started lives on if exec is killed; a stopped exec leaves CMD running past the leadership; " +
			"exec stops CMD's process group when the leadership ends", false
	}
	return "on " + runtime.GOOS + " exec has no cgroup, no parent-death signal and no subreaper: if exec is killed, CMD and " +
		"what it started live on; a stopped exec leaves CMD running past the leadership; exec stops CMD's process " +
		"group when the leadership ends", false
}

// procAttr is CMD's start: its own process group, and SIGKILL as its
// parent-death signal where there is one. There is never a cgroup here.
func procAttr(cg *cgroup.Group) (attr *syscall.SysProcAttr, done func(), err error) {
	if cg != nil {
		return nil, nil, cgroup.ErrUnsupported
	}
	attr = &syscall.SysProcAttr{Setpgid: true}
	setPdeathsig(attr)
	return attr, func() {}, nil
}

// starter starts processes; off Linux any thread will do.
type starter struct{}

var procStarter = sync.OnceValue(func() *starter { return &starter{} })

func (*starter) start(cmd *exec.Cmd) error { return cmd.Start() }

// becomeSubreaper fails: no child subreaper here.
func becomeSubreaper() error { return errors.New("no child subreaper on " + runtime.GOOS) }

// signalTree does nothing: without /proc the tree is not walked (exec
// signals CMD's process group).
func signalTree(syscall.Signal, int) {}

// reapOrphans does nothing: exec is no subreaper here, so orphans are
// not its children.
func reapOrphans(int) {}

// reaper waits for stop.
func reaper(_ int, stop <-chan struct{}) { <-stop }
