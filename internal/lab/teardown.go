package lab

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// OnSignal runs f (in a goroutine of its own) when this process gets
// SIGINT or SIGTERM; stop undoes it.
func OnSignal(f func(os.Signal)) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			f(s)
		case <-quit:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(quit)
	}
}

// CloseOnSignal makes SIGINT and SIGTERM close every lab of this process
// (CloseAll), run then (if set), and exit with status 1: deferred calls and
// t.Cleanup do not run on a signal, and the namespaces would stay. stop
// undoes it.
func CloseOnSignal(then func()) (stop func()) {
	return OnSignal(func(s os.Signal) {
		dirs := CloseAll()
		fmt.Fprintf(os.Stderr, "lab: %v: took every lab down; logs and data kept in %s\n", s, strings.Join(dirs, " "))
		if then != nil {
			then()
		}
		os.Exit(1)
	})
}

// CloseBefore closes every lab of this process (and runs then) when d has
// passed: a test binary calls it with its -timeout minus a margin, since
// the timeout's panic runs no cleanup. stop undoes it.
func CloseBefore(d time.Duration, then func()) (stop func()) {
	t := time.AfterFunc(d, func() {
		dirs := CloseAll()
		fmt.Fprintf(os.Stderr, "lab: out of time: took every lab down; logs and data kept in %s\n", strings.Join(dirs, " "))
		if then != nil {
			then()
		}
	})
	return func() { t.Stop() }
}
