package group

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// startAgent runs one agent with cfg until the test ends.
func startAgent(t *testing.T, cfg Config) *Agent {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return")
		}
	})
	waitFor(t, 10*time.Second, "the agent to coordinate its group", func() bool { return a.Status().IsCoordinator() })
	return a
}

func get(t *testing.T, c *http.Client, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

var statusKeys = []string{"boot", "coordinator", "coordinator_name", "counter", "degraded", "duplicate_id", "expect",
	"group", "id", "incarnation", "leader", "leader_since", "lease_until", "member_priorities", "members", "name", "persist_error",
	"primary", "priority", "role", "since", "state", "tags", "term", "time", "timing_mismatches", "version"}

func TestAPIHandlers(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.ID = 42
	cfg.Name = "test42"
	cfg.Tags = map[string]string{"role": "db"}
	a := startAgent(t, cfg)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	c := srv.Client()

	t.Run("status", func(t *testing.T) {
		code, body, h := get(t, c, srv.URL+"/v1/status")
		if code != 200 || h.Get("Content-Type") != "application/json" {
			t.Fatalf("status %d %q", code, h.Get("Content-Type"))
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		if got := keys(m); !slices.Equal(got, statusKeys) {
			t.Errorf("keys %v, want %v", got, statusKeys)
		}
		if m["id"] != 42.0 || m["state"] != "normal" || m["role"] != "coordinator" || m["coordinator"] != 42.0 ||
			m["leader"] != true || m["name"] != "test42" || m["coordinator_name"] != "test42" {
			t.Errorf("status %s", body)
		}
		if ps, _ := m["member_priorities"].([]any); len(ps) != 1 || ps[0] != float64(cfg.Priority) {
			t.Errorf("member_priorities %v", m["member_priorities"])
		}
		if tags, _ := m["tags"].(map[string]any); tags["role"] != "db" {
			t.Errorf("tags %v", m["tags"])
		}
		if m["term"] != m["group"] {
			t.Errorf("a singleton's leader has term %v, want its group %v", m["term"], m["group"])
		}
		if g, _ := m["group"].(string); !strings.HasSuffix(g, ".42") {
			t.Errorf("group %q", g)
		}
		if ms, _ := m["members"].([]any); len(ms) != 1 || ms[0] != 42.0 {
			t.Errorf("members %v", m["members"])
		}
		for _, k := range []string{"since", "time"} {
			if _, err := time.Parse(time.RFC3339Nano, m[k].(string)); err != nil {
				t.Errorf("%s: %v", k, err)
			}
		}
		var s Status
		if err := json.Unmarshal([]byte(body), &s); err != nil || !s.IsCoordinator() || s.ID != 42 {
			t.Errorf("Status round trip: %+v, %v", s, err)
		}
	})
	t.Run("members", func(t *testing.T) {
		code, body, _ := get(t, c, srv.URL+"/v1/members")
		var ms []map[string]any
		if err := json.Unmarshal([]byte(body), &ms); code != 200 || err != nil || len(ms) != 1 {
			t.Fatalf("members %d %s %v", code, body, err)
		}
		want := []string{"addr", "degraded", "gossip", "group", "id", "in_group", "leader", "name", "priority", "reach", "state", "tags"}
		if got := keys(ms[0]); !slices.Equal(got, want) {
			t.Errorf("keys %v, want %v", got, want)
		}
		if ms[0]["id"] != 42.0 || ms[0]["gossip"] != "alive" || ms[0]["in_group"] != true || ms[0]["addr"] != a.Addrs().Wire ||
			ms[0]["name"] != "test42" || ms[0]["leader"] != true {
			t.Errorf("member %v", ms[0])
		}
		reach, _ := ms[0]["reach"].(map[string]any)
		if got, want := keys(reach), []string{"age_ms", "basis", "state", "window_ms"}; !slices.Equal(got, want) {
			t.Errorf("reach keys %v, want %v (via only for basis coordinator)", got, want)
		}
		if reach["state"] != ReachSelf || reach["basis"] != "none" || reach["age_ms"] != -1.0 || reach["window_ms"] != 0.0 {
			t.Errorf("own reach %v", reach)
		}
	})
	t.Run("healthz", func(t *testing.T) {
		if code, body, _ := get(t, c, srv.URL+"/healthz"); code != 200 || strings.TrimSpace(body) != "ok" {
			t.Errorf("healthz %d %q", code, body)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		code, body, _ := get(t, c, srv.URL+"/metrics")
		if code != 200 {
			t.Fatalf("metrics %d", code)
		}
		for _, want := range []string{
			"groupd_is_coordinator 1", `groupd_state{state="normal"} 1`, "groupd_recoveries_total 1",
			`groupd_messages_sent_total{type="Beacon"}`, `groupd_dropped_packets_total{reason="auth"} 0`,
			"groupd_seconds_since_last_change", "groupd_members 1", "go_goroutines",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
	})
	t.Run("method", func(t *testing.T) {
		resp, err := c.Post(srv.URL+"/v1/status", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST: %d", resp.StatusCode)
		}
	})
	t.Run("events", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/events", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("content type %q", ct)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if got, want := keys(m), []string{"name", "new", "node", "old", "reason", "time"}; !slices.Equal(got, want) {
			t.Errorf("event keys %v, want %v", got, want)
		}
		if m["reason"] != "snapshot" || m["old"] != nil || m["node"] != 42.0 {
			t.Errorf("first event %s", line)
		}
		if got := keys(m["new"].(map[string]any)); !slices.Equal(got, statusKeys) {
			t.Errorf("event status keys %v", got)
		}
	})
}

// TestEventsStreamEndsWhenAgentStops: /v1/events carries changes, and ends
// when the agent stops.
func TestEventsStreamEndsWhenAgentStops(t *testing.T) {
	cfg := newTestConfig(t)
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	r := bufio.NewReader(resp.Body)
	var reasons []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended early: %v (%v)", err, reasons)
		}
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		reasons = append(reasons, e.Reason)
		if e.New.IsCoordinator() {
			break
		}
	}
	if reasons[0] != "snapshot" || reasons[len(reasons)-1] != "recovery" {
		t.Errorf("reasons %v", reasons)
	}
	cancel()
	<-done
	readDone := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, r); readDone <- err }()
	select {
	case <-readDone:
	case <-time.After(3 * time.Second):
		t.Fatal("event stream still open after the agent stopped")
	}
}

func TestHealthzBeforeRun(t *testing.T) {
	a, err := New(newTestConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("healthz before Run: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/status", nil))
	var s Status
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil || s.State != wire.StateElection || s.Group != (wire.GroupNumber{}) {
		t.Errorf("status before Run: %s (%v)", rec.Body, err)
	}
}

// TestAPIWrap: the listener serves what Config.WrapAPI makes of Handler
// (groupd adds its live view so), and Handler stays the library's own.
func TestAPIWrap(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.API = "127.0.0.1:0"
	cfg.WrapAPI = func(api http.Handler) http.Handler {
		mux := http.NewServeMux()
		mux.Handle("/", api)
		mux.HandleFunc("GET /extra", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("extra\n")) })
		return mux
	}
	a := startAgent(t, cfg)
	for path, want := range map[string]int{"/extra": 200, "/healthz": 200, "/ui/": 404} {
		code, _, _ := get(t, http.DefaultClient, "http://"+a.Addrs().API+path)
		if code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/extra", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("Handler serves the wrapper's route: %d", rec.Code)
	}
}

func TestAPIListeners(t *testing.T) {
	t.Run("tcp", func(t *testing.T) {
		cfg := newTestConfig(t)
		cfg.API = "127.0.0.1:0"
		a := startAgent(t, cfg)
		code, body, _ := get(t, http.DefaultClient, "http://"+a.Addrs().API+"/healthz")
		if code != 200 || strings.TrimSpace(body) != "ok" {
			t.Errorf("healthz %d %q", code, body)
		}
	})
	t.Run("unix", func(t *testing.T) {
		cfg := newTestConfig(t)
		sock := filepath.Join(t.TempDir(), "api.sock")
		// A stale socket file, as a crash leaves it: replaced.
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close()
		cfg.API = "unix:" + sock
		a := startAgent(t, cfg)
		if a.Addrs().API != "unix:"+sock {
			t.Errorf("API addr %q", a.Addrs().API)
		}
		fi, err := os.Stat(sock)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("socket mode %v, %v", fi.Mode(), err)
		}
		c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
		var s Status
		_, body, _ := get(t, c, "http://groupd/v1/status")
		if err := json.Unmarshal([]byte(body), &s); err != nil || s.ID != a.ID() {
			t.Errorf("status over unix socket: %s, %v", body, err)
		}
		// A live socket is not taken over.
		cfg2 := newTestConfig(t)
		cfg2.API = "unix:" + sock
		if _, err := New(cfg2); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "in use") {
			t.Errorf("New on a live socket: %v", err)
		}
	})
	t.Run("unix path is a file", func(t *testing.T) {
		cfg := newTestConfig(t)
		f := filepath.Join(t.TempDir(), "file")
		os.WriteFile(f, []byte("x"), 0o600)
		cfg.API = "unix:" + f
		if _, err := New(cfg); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "not a socket") {
			t.Errorf("New on a regular file: %v", err)
		}
	})
	t.Run("tcp port in use", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		cfg := newTestConfig(t)
		cfg.API = ln.Addr().String()
		if _, err := New(cfg); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Config.API "+cfg.API+": ") {
			t.Errorf("New on a used API port: %v", err)
		}
	})
}
