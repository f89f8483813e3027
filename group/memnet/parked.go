package memnet

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// WaitParked waits until a goroutine is parked in state (as a goroutine
// dump names it: "select", "IO wait", "chan receive") with every one of
// fns on its stack (the function that waits, the test that started it),
// for at most timeout. A test that must act while another
// goroutine waits (a dial across a partition, a read of an empty socket)
// synchronises on this, rather than sleeping and hoping the other has
// begun to wait. It is for tests: it stops the world to read every
// goroutine's stack, once a millisecond.
func WaitParked(timeout time.Duration, state string, fns ...string) error {
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n == len(buf) {
			buf = make([]byte, 2*len(buf)) // truncated: read it all
			continue
		}
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			head, stack, _ := strings.Cut(g, "\n")
			if strings.Contains(head, "["+state) && containsAll(stack, fns) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("memnet: no goroutine parked in %q in %s within %v", state, strings.Join(fns, " < "), timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
