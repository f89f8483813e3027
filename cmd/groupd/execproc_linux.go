//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/groupd/groupd/internal/cgroup"
)

// What `groupd exec` does with processes besides the guard's cgroup
// (exec.go): the parts that hold on every Linux host, with or without a
// cgroup.
//
//   - CMD gets a parent-death signal (SIGKILL): the kernel kills it when
//     exec dies, however exec dies. The signal fires when the *thread*
//     that forked CMD exits, not the process, and Go may run a goroutine
//     on any thread and ends threads; so CMD is forked from one goroutine
//     locked to its thread for exec's whole life (starter).
//   - exec is a child subreaper (PR_SET_CHILD_SUBREAPER): a descendant of
//     CMD whose parent dies is re-parented to exec, not to init, so that it
//     stays in the tree exec stops (descendants) and exec reaps it
//     (reapOrphans). exec starts no other process, so its children other
//     than CMD are CMD's orphans.
//
// Without a cgroup, a descendant that calls setsid and whose parent lives
// is still found by the tree walk when exec stops CMD; what cannot be
// helped is exec's death: the parent-death signal reaches CMD only, and
// whatever CMD started outside its process group runs on.

// platformLimits is what exec says at its start about this platform:
// nothing on Linux, where what is missing (cgroup v2, the permission to
// use it) is found out when exec registers its guard.
func platformLimits() (warning string, guard bool) { return "", true }

// procAttr is CMD's start: its own process group (a stop reaches whatever
// CMD started that did not leave it), SIGKILL as its parent-death signal
// (it dies with exec, however exec dies; procStarter keeps the thread
// alive), and, with cg, clone3 straight into the guard's cgroup. done
// closes what the start needed, once it is over.
func procAttr(cg *cgroup.Group) (attr *syscall.SysProcAttr, done func(), err error) {
	attr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if cg == nil {
		return attr, func() {}, nil
	}
	dir, err := cg.Dir()
	if err != nil {
		return nil, nil, err
	}
	attr.UseCgroupFD, attr.CgroupFD = true, int(dir.Fd())
	return attr, func() { dir.Close() }, nil
}

// starter forks from one OS thread that lives as long as the process.
type starter struct {
	reqs chan func()
}

var procStarter = sync.OnceValue(func() *starter {
	s := &starter{reqs: make(chan func())}
	go func() {
		// Never unlocked, never returns: the thread lives until exec
		// exits, and with it every child's parent-death signal.
		runtime.LockOSThread()
		for f := range s.reqs {
			f()
		}
	}()
	return s
})

// start starts cmd from the starter's thread.
func (s *starter) start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	s.reqs <- func() { done <- cmd.Start() }
	return <-done
}

// becomeSubreaper makes this process a child subreaper, once; it returns
// the error of the one attempt.
var becomeSubreaper = sync.OnceValue(func() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
})

// procStat is what descendants and reapOrphans read of a process.
type procStat struct {
	pid, ppid, pgrp int
	state           byte
}

// readStat reads /proc/PID/stat's state, parent and process group.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 3 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0]}, true
}

// allProcs lists every process /proc shows.
func allProcs() []procStat {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]procStat, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			out = append(out, st)
		}
	}
	return out
}

// descendants returns the live (not zombie) descendants of root, but
// those in process group skip (0: none).
func descendants(root, skip int) []int {
	kids := map[int][]procStat{}
	for _, st := range allProcs() {
		kids[st.ppid] = append(kids[st.ppid], st)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range kids[p] {
			if c.state != 'Z' && c.state != 'X' && (skip == 0 || c.pgrp != skip) {
				out = append(out, c.pid)
			}
			queue = append(queue, c.pid)
		}
	}
	return out
}

// signalTree sends sig to every live descendant of this process: CMD,
// what it started, and (exec being their subreaper) what they left
// behind; but those in process group skip, which the caller signals
// itself (a process handling SIGTERM gets it once). With SIGKILL it walks
// the tree again until nothing is left (a process may fork while the tree
// is read) or a second has passed.
func signalTree(sig syscall.Signal, skip int) {
	deadline := time.Now().Add(time.Second)
	for {
		pids := descendants(os.Getpid(), skip)
		for _, pid := range pids {
			_ = syscall.Kill(pid, sig)
		}
		if sig != syscall.SIGKILL || len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// reapOrphans reaps this process's zombie children other than keep (CMD,
// which its exec.Cmd waits for): orphans re-parented to exec, the
// subreaper, that exited.
func reapOrphans(keep int) {
	self := os.Getpid()
	for _, st := range allProcs() {
		if st.ppid == self && st.pid != keep && st.state == 'Z' {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(st.pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

// reaper reaps exited orphans whenever a child exits, until stop is
// closed.
func reaper(keep int, stop <-chan struct{}) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	defer signal.Stop(ch)
	for {
		select {
		case <-stop:
			return
		case <-ch:
			reapOrphans(keep)
		}
	}
}
