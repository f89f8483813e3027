package daemon

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/groupd/groupd/group"
)

// testConfig is an agent alone on loopback, with no API listener.
func testConfig(t *testing.T) group.Config {
	c := group.DefaultFastConfig()
	c.Bind = "127.0.0.1"
	c.Port = 0
	c.Multicast = "off"
	c.API = ""
	c.DataDir = t.TempDir()
	return c
}

// TestAPIServesUI checks that the daemon's API serves the live view,
// read-only, beside the agent's endpoints.
func TestAPIServesUI(t *testing.T) {
	cfg := testConfig(t)
	New(Options{}).Configure(&cfg)
	a, err := group.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h := cfg.WrapAPI(a.Handler())
	for _, tc := range []struct {
		method, path string
		code         int
	}{{"GET", "/ui/", 200}, {"GET", "/ui/app.js", 200}, {"GET", "/ui", 301}, {"POST", "/ui/", 405}, {"GET", "/v1/status", 200}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, rec.Code, tc.code)
		}
		if tc.path == "/ui/" && tc.code == 200 && !strings.Contains(rec.Body.String(), "app.js") {
			t.Errorf("GET /ui/ is not the page: %.200s", rec.Body)
		}
	}
}

// TestDaemonHooks: the daemon's hook runs on the agent's events, through
// Config.OnEvent: a lone node's leader-start, and, when it stops, its
// leader-stop, before Run returns (Config.BeforeLeave); the runs are counted in the agent's
// /metrics.
func TestDaemonHooks(t *testing.T) {
	out := filepath.Join(t.TempDir(), "hooks")
	cfg := testConfig(t)
	cfg.API = "127.0.0.1:0"
	d := New(Options{OnChange: `echo "$GROUPD_EVENT $GROUPD_LEADER $GROUPD_COORDINATOR_NAME" >> ` + out, Logger: zerolog.Nop()})
	d.Configure(&cfg)
	a, err := group.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Attach(a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitFor(t, 10*time.Second, "the leader-start hook", func() bool { return strings.Contains(readFile(out), "leader-start 1 ") })
	resp, err := http.Get("http://" + a.Addrs().API + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "groupd_hook_runs_total") {
		t.Errorf("/metrics lacks groupd_hook_runs_total")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The leader-stop ran within Run, before memberlist's leave
	// (Config.BeforeLeave), not after it.
	lines := strings.Split(strings.TrimSpace(readFile(out)), "\n")
	d.Stop()
	if last := lines[len(lines)-1]; last != "leader-stop 0 "+a.Name() {
		t.Errorf("the last hook run when Run returned: %q, want the leader-stop; all: %q", last, lines)
	}
	if n := metricValue(d.m.hookRuns); n != float64(len(lines)) {
		t.Errorf("hook_runs_total %v, %d runs", n, len(lines))
	}
}
