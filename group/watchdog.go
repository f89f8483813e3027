package group

import "time"

// MaxLoopSleep is the longest the event loop sleeps: it goes round at
// least this often while it runs, whatever the protocol's deadlines, so a
// LoopTurned older than this (with a margin) means a wedged loop.
const MaxLoopSleep = maxLoopSleep

// LoopTurned returns when the event loop last went round (it does at
// least every MaxLoopSleep while Run runs), or the zero time before Run
// started it. A supervisor's watchdog (systemd's WATCHDOG=1, which
// `groupd run` sends) reads it: a loop that stopped going round, blocked
// on a lock or a full channel, stops the pings, and the supervisor
// restarts the daemon, where a goroutine of its own that pinged on a
// timer would have kept a wedged daemon alive.
func (a *Agent) LoopTurned() time.Time {
	ns := a.turned.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
