package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/client"
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
		{now.Add(-watchdogStale - time.Millisecond), false},
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
func TestSdNotifyReady(t *testing.T) {
	bin := buildGroupd(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A unix socket: a TCP port picked free could be taken by another
	// process (other tests, other runs on the host) before the daemon
	// binds it.
	api := "unix:" + filepath.Join(dir, "api.sock")
	hold := time.Second
	cmd := exec.Command(bin, "run", "--id", "7", "--profile", "fast", "--bind", "127.0.0.1", "--port", "0",
		"--multicast", "off", "--api", api, "--data-dir", filepath.Join(dir, "data"),
		"--start-at", strconv.FormatFloat(float64(time.Now().Add(hold).UnixNano())/1e9, 'f', 3, 64))
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=200000")
	logf, err := os.Create(filepath.Join(dir, "groupd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stderr = logf
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill() // by PID: our own child
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "groupd.log"))
			t.Logf("daemon log:\n%s", b)
		}
	}()
	c, err := client.New(api)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	buf := make([]byte, 4096)
	var ready, watchdog bool
	for !ready || !watchdog {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			t.Fatalf("waiting for READY=1 and WATCHDOG=1: %v", err)
		}
		msg := string(buf[:n])
		if strings.Contains(msg, "WATCHDOG=1") {
			watchdog = true
		}
		if !strings.Contains(msg, "READY=1") {
			continue
		}
		ready = true
		if since := time.Since(started); since < hold {
			t.Errorf("READY=1 %v after the start, before the protocol started (--start-at %v)", since, hold)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := c.Status(ctx)
		cancel()
		if err != nil {
			t.Fatalf("status after READY: %v", err)
		}
		if st.State != group.StateNormal || st.Group.IsZero() {
			t.Errorf("READY=1 sent, but the node is not in a group: %v", st)
		}
		if !strings.Contains(msg, "STATUS=leader of "+st.Group.String()+", 1 member, primary") {
			t.Errorf("READY's datagram %q lacks the status line", msg)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			t.Fatalf("no STOPPING=1 after SIGTERM: %v", err)
		}
		if strings.Contains(string(buf[:n]), "STOPPING=1") {
			break
		}
	}
	if err := <-done; err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}
