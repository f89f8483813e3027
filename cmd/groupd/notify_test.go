package main

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/group"
)

// TestSdNotifyReady: the daemon says READY=1 once in a group, not before
// --start-at, and pings the watchdog (daemon.Notifier).
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
	started := time.Now()
	cmd, done := startLone(t, bin, dir, api, []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=200000"},
		"--start-at", strconv.FormatFloat(float64(time.Now().Add(hold).UnixNano())/1e9, 'f', 3, 64))
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
