package lab

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// withParent makes a daemon's process die with this one, whatever kills
// it (a parent-death signal), in a process group of its own.
func withParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// inNetns runs f on an OS thread moved into network namespace ns. The
// thread is moved back before it is unlocked. It must not simply exit
// instead (what a locked goroutine that returns does to its thread): the
// lab starts daemons with a parent-death signal, which the kernel sends
// when the *thread* that forked them exits, and they may have been forked
// from this very thread. (The Go runtime starts new threads from a clean
// template thread while a thread is locked, so no other thread inherits
// the namespace.)
func inNetns(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("lab: this thread's network namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		fd, err := unix.Open(filepath.Join("/run/netns", ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("lab: namespace %s: %w", ns, err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("lab: entering namespace %s: %w", ns, err)
			return
		}
		ferr := f()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// Stuck in ns: keep the thread locked; it exits with this
			// goroutine (see above for the risk).
			errc <- errors.Join(ferr, fmt.Errorf("lab: leaving namespace %s: %w", ns, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
