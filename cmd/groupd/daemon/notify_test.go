package daemon

import (
	"testing"
	"time"

	"github.com/groupd/groupd/group"
)

func TestStatusLine(t *testing.T) {
	g := group.GroupNumber{Seq: 1795710000000, ID: 3}
	for _, tc := range []struct {
		name string
		st   group.Status
		want string
	}{
		{"booting", group.Status{State: group.StateElection}, "looking for a group (election)"},
		{"leader", group.Status{State: group.StateNormal, Role: group.Coordinator, Leader: true, Group: g,
			Members: []group.NodeID{1, 2, 3, 4, 5}, Primary: true}, "leader of 1795710000000.3, 5 members, primary"},
		{"leader alone", group.Status{State: group.StateNormal, Role: group.Coordinator, Leader: true, Group: g,
			Members: []group.NodeID{3}, Primary: true}, "leader of 1795710000000.3, 1 member, primary"},
		{"member", group.Status{State: group.StateNormal, Role: group.Participant, Group: g, Coordinator: 3,
			CoordinatorName: "n3", Members: []group.NodeID{1, 3}, Primary: true}, "member of 1795710000000.3 (coordinator n3), 2 members, primary"},
		{"minority", group.Status{State: group.StateNormal, Role: group.Coordinator, Leader: true, Group: g,
			Members: []group.NodeID{3}, Expect: 5}, "leader of 1795710000000.3, 1 member, not primary"},
		{"reorganizing", group.Status{State: group.StateReorganization, Group: g, Members: []group.NodeID{3}},
			"reorganization in 1795710000000.3, 1 member"},
		{"degraded", group.Status{State: group.StateNormal, Role: group.Participant, Group: g, Coordinator: 3,
			Members: []group.NodeID{1, 3}, Primary: true, Degraded: true, PersistError: "disk full"},
			"member of 1795710000000.3 (coordinator 3), 2 members, primary, degraded: disk full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusLine(tc.st); got != tc.want {
				t.Errorf("statusLine = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoopAlive(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		turned time.Time
		want   bool
	}{
		{time.Time{}, true}, // not started (--start-at): ping
		{now, true},
		{now.Add(-group.MaxLoopSleep), true}, // an idle loop sleeps this long
		{now.Add(-WatchdogStale - time.Millisecond), false},
		{now.Add(-time.Minute), false},
	} {
		if got := loopAlive(tc.turned, now); got != tc.want {
			t.Errorf("loopAlive(now-%v) = %v, want %v", now.Sub(tc.turned), got, tc.want)
		}
	}
}

// TestSdNotifyReady runs `groupd run` with a unix datagram socket standing
// in for systemd ($NOTIFY_SOCKET, $WATCHDOG_USEC): it holds the protocol
// for a second (--start-at), and READY=1 must come only once the node is
// in a group (its API says so when READY arrives), with a STATUS= line;
// WATCHDOG=1 comes while the loop runs, STOPPING=1 on SIGTERM.
