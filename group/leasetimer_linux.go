package group

import (
	"encoding/binary"
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// bootNanos reads CLOCK_BOOTTIME; 0 if it cannot be read (the monotonic
// clock alone then).
func bootNanos() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// timerfdAlarm is a bootAlarm on a timerfd of CLOCK_BOOTTIME: it counts a
// suspended host, and fires at once on the resume when its time passed
// meanwhile. One goroutine waits on the file (the runtime's poller) and
// calls f at each expiry, until stop.
type timerfdAlarm struct {
	fd   int
	file *os.File
	once sync.Once
}

func newBootAlarm(f func()) bootAlarm {
	fd, err := unix.TimerfdCreate(unix.CLOCK_BOOTTIME, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil // no boot-clock timer here: the monotonic one alone
	}
	a := &timerfdAlarm{fd: fd, file: os.NewFile(uintptr(fd), "lease-timerfd")}
	go a.wait(f)
	return a
}

func (a *timerfdAlarm) wait(f func()) {
	var buf [8]byte
	for {
		n, err := a.file.Read(buf[:])
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			continue // EAGAIN is handled by the poller; anything else: wait again
		}
		if n == 8 && binary.NativeEndian.Uint64(buf[:]) > 0 {
			f()
		}
	}
}

func (a *timerfdAlarm) at(ns int64) error {
	spec := unix.ItimerSpec{}
	if ns > 0 {
		spec.Value = unix.NsecToTimespec(ns)
	}
	return unix.TimerfdSettime(a.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

func (a *timerfdAlarm) stop() {
	a.once.Do(func() { a.file.Close() })
}
