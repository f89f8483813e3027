package daemon

import (
	"context"
	"fmt"
	"strings"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
	"github.com/rs/zerolog"

	"github.com/groupd/groupd/group"
)

// systemd readiness (issue 27), with coreos/go-systemd's daemon package:
// the one implementation of sd_notify's protocol (a datagram to
// $NOTIFY_SOCKET, abstract sockets included) and of $WATCHDOG_USEC and
// $WATCHDOG_PID that Go daemons share; it has no dependencies and does
// nothing without $NOTIFY_SOCKET. With the unit's Type=notify:
//
//   - READY=1 once the node is Normal in a group (it joined one, or formed
//     its own at the end of its boot window), so that units ordered after
//     groupd start once there is a group to ask, not when the process
//     exists;
//   - STATUS= on every change of view, what `systemctl status groupd`
//     shows: "leader of 1795…3, 5 members, primary";
//   - WATCHDOG=1 every half WatchdogSec while the agent's event loop goes
//     round (Agent.LoopTurned, at least once a second): a loop wedged on a
//     lock or a full channel stops the pings, and systemd restarts the
//     daemon;
//   - STOPPING=1 when a signal stops it.

// WatchdogStale is how old the loop's last turn may be for a ping: the
// loop goes round at least every group.MaxLoopSleep, so twice that is a
// loop that is not running.
const WatchdogStale = 2 * group.MaxLoopSleep

// agentView is what the notifier reads of the agent.
type agentView interface {
	Subscribe() (<-chan group.Event, func())
	LoopTurned() time.Time
}

// Notifier tells systemd about the daemon; without $NOTIFY_SOCKET it does
// nothing. Run it alongside the agent's Run, and call Stopping when a
// signal stops the daemon.
type Notifier struct {
	agent agentView
	log   zerolog.Logger
	send  func(state string) (bool, error) // sd.SdNotify, without unsetting the environment
}

// NewNotifier returns the notifier of agent (a *group.Agent), logging to
// log.
func NewNotifier(agent agentView, log zerolog.Logger) *Notifier {
	return &Notifier{agent: agent, log: log, send: func(s string) (bool, error) { return sd.SdNotify(false, s) }}
}

// notify sends one state, logging a failure once at debug (a socket that
// went away must not stop the daemon).
func (n *Notifier) notify(state string) {
	if _, err := n.send(state); err != nil {
		n.log.Debug().Err(err).Str("state", state).Msg("sd_notify")
	}
}

// Run follows the agent's events until ctx is done or they end: READY=1
// with the first view in a group, STATUS= on every change; and pings the
// watchdog if systemd asked for one.
func (n *Notifier) Run(ctx context.Context) {
	if iv, err := sd.SdWatchdogEnabled(false); err != nil {
		n.log.Warn().Err(err).Msg("systemd watchdog: bad WATCHDOG_USEC; not pinging it")
	} else if iv > 0 {
		go n.watchdog(ctx, iv)
	}
	events, stop := n.agent.Subscribe()
	defer stop()
	ready := false
	last := ""
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			line := statusLine(ev.New)
			state := ""
			if !ready && inGroup(ev.New) {
				ready = true
				state = sd.SdNotifyReady + "\n"
				n.log.Info().Str("status", line).Msg("ready: in a group")
			}
			if line != last || state != "" {
				last = line
				n.notify(state + "STATUS=" + line)
			}
		}
	}
}

// watchdog sends WATCHDOG=1 every half interval while the event loop goes
// round (and before it starts: --start-at holds it).
func (n *Notifier) watchdog(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	quiet := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		turned := n.agent.LoopTurned()
		if !loopAlive(turned, time.Now()) {
			if !quiet {
				n.log.Error().Time("loop_turned", turned).Msg("the event loop has not gone round: no systemd watchdog ping (systemd restarts a daemon that misses them)")
				quiet = true
			}
			continue
		}
		quiet = false
		n.notify(sd.SdNotifyWatchdog)
	}
}

// loopAlive reports whether a loop that last turned at turned is alive at
// now: it has not started yet (zero), or it turned within WatchdogStale.
func loopAlive(turned, now time.Time) bool {
	return turned.IsZero() || now.Sub(turned) <= WatchdogStale
}

// Stopping tells systemd the daemon is stopping.
func (n *Notifier) Stopping() { n.notify(sd.SdNotifyStopping + "\nSTATUS=stopping: leaving the group") }

// inGroup reports whether st is a view in a group: Normal, with a number.
func inGroup(st group.Status) bool {
	return st.State == group.StateNormal && !st.Group.IsZero()
}

// statusLine is the STATUS= line: "leader of 1795….3, 5 members, primary".
func statusLine(st group.Status) string {
	var b strings.Builder
	switch {
	case st.State != group.StateNormal && st.Group.IsZero():
		b.WriteString("looking for a group (" + st.State.String() + ")")
	case st.State != group.StateNormal:
		fmt.Fprintf(&b, "%s in %s", st.State, st.Group)
	case st.Role == group.Coordinator && st.Leader:
		fmt.Fprintf(&b, "leader of %s", st.Group)
	case st.Role == group.Coordinator:
		fmt.Fprintf(&b, "coordinator of %s", st.Group)
	default:
		fmt.Fprintf(&b, "member of %s (coordinator %s)", st.Group, coordName(st))
	}
	if !st.Group.IsZero() {
		fmt.Fprintf(&b, ", %d member", len(st.Members))
		if len(st.Members) != 1 {
			b.WriteString("s")
		}
	}
	switch {
	case st.Primary && !st.Group.IsZero():
		b.WriteString(", primary") // without --expect every Normal node is
	case st.Expect > 0:
		b.WriteString(", not primary")
	}
	if st.Degraded {
		b.WriteString(", degraded: " + st.PersistError)
	}
	return b.String()
}

// coordName names a coordinator: its name, else its ID.
func coordName(st group.Status) string {
	if st.CoordinatorName != "" {
		return st.CoordinatorName
	}
	return fmt.Sprint(st.Coordinator)
}
