//go:build !linux

package group

// newBootAlarm has no boot-clock timer off Linux: the lease timer is the
// monotonic one alone (and readers check the monotonic clock only).
func newBootAlarm(func()) bootAlarm { return nil }

// bootNanos is 0 off Linux: there is no CLOCK_BOOTTIME, and readers check
// the monotonic clock only.
func bootNanos() int64 { return 0 }
