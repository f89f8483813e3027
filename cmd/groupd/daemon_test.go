package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunDaemonParts: `groupd run` wires its daemon package in: the live
// view on its API at /ui/ beside /v1/status, and the --on-change hook,
// whose leader-start runs once the lone node leads and whose leader-stop
// runs when SIGTERM stops it, before the process exits.
func TestRunDaemonParts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	bin := buildGroupd(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "hooks")
	// A unix socket: a TCP port picked free could be taken by another
	// process before the daemon binds it.
	sock := filepath.Join(dir, "api.sock")
	api := "unix:" + sock
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	cmd, done := startLone(t, bin, dir, api, nil, "--on-change", `echo "$GROUPD_EVENT $GROUPD_LEADER" >> `+out)
	hooks := func() string { b, _ := os.ReadFile(out); return string(b) }
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(hooks(), "leader-start 1") {
		if time.Now().After(deadline) {
			t.Fatalf("no leader-start hook; hooks ran: %q", hooks())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for path, want := range map[string]string{"/ui/": "app.js", "/v1/status": `"state"`} {
		resp, err := hc.Get("http://groupd" + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d %.100q", path, resp.StatusCode, b)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("groupd run after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("groupd run did not stop after SIGTERM")
	}
	lines := strings.Split(strings.TrimSpace(hooks()), "\n")
	if last := lines[len(lines)-1]; last != "leader-stop 0" {
		t.Errorf("the last hook before the exit: %q, want leader-stop 0; all: %q", last, lines)
	}
}
