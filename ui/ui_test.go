package ui

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tc := range []struct {
		method, path string
		code         int
		ctype, body  string
	}{
		{"GET", "/ui/", 200, "text/html", `<script src="app.js">`},
		{"GET", "/ui/app.js", 200, "javascript", "/v1/events"},
		{"GET", "/ui/style.css", 200, "text/css", "section.group"},
		{"HEAD", "/ui/", 200, "text/html", ""},
		{"GET", "/ui", 301, "", ""},
		{"GET", "/ui/missing.js", 404, "", ""},
		{"POST", "/ui/", 405, "", ""},
		{"DELETE", "/ui/app.js", 405, "", ""},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.code)
			continue
		}
		if tc.code == 301 && resp.Header.Get("Location") != Prefix {
			t.Errorf("GET /ui redirects to %q", resp.Header.Get("Location"))
		}
		if tc.code != 200 {
			continue
		}
		if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, tc.ctype) {
			t.Errorf("%s %s: Content-Type %q, want %s", tc.method, tc.path, ct, tc.ctype)
		}
		if !strings.Contains(string(b), tc.body) {
			t.Errorf("%s %s: body lacks %q", tc.method, tc.path, tc.body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("%s %s: CSP %q", tc.method, tc.path, csp)
		}
	}
}

// TestAssetsSelfContained checks that the page fetches nothing from
// elsewhere, and reports its weight.
func TestAssetsSelfContained(t *testing.T) {
	err := fs.WalkDir(Assets(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Assets(), path)
		if err != nil {
			return err
		}
		for _, s := range []string{"http://", "https://", "//cdn", "@import"} {
			if strings.Contains(string(b), s) {
				t.Errorf("%s contains %q: the page must fetch nothing from outside", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := Size()
	if err != nil || n == 0 {
		t.Fatalf("Size: %d, %v", n, err)
	}
	t.Logf("page weight: %d bytes (uncompressed, all assets)", n)
	if n > 60_000 {
		t.Errorf("the page weighs %d bytes: more than 60 kB is not a small page (issue 26)", n)
	}
}

// fakeDaemon is an API on a unix socket that records what reaches it.
type fakeDaemon struct {
	mu   sync.Mutex
	seen []string
}

func (f *fakeDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, r.Method+" "+r.URL.RequestURI())
	f.mu.Unlock()
	switch r.URL.Path {
	case "/v1/events":
		w.Header().Set("Content-Type", "application/x-ndjson")
		for i := range 2 {
			fmt.Fprintf(w, `{"reason":"line%d"}`+"\n", i)
			w.(http.Flusher).Flush()
			if i == 0 {
				time.Sleep(300 * time.Millisecond) // the first line must not wait for the second
			}
		}
	default:
		fmt.Fprintf(w, "daemon %s\n", r.URL.Path)
	}
}

func (f *fakeDaemon) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func TestProxyReadOnly(t *testing.T) {
	dir, err := os.MkdirTemp("", "gdui") // short: socket paths are limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	daemon := &fakeDaemon{}
	back := httptest.NewUnstartedServer(daemon)
	back.Listener = ln
	back.Start()
	defer back.Close()

	front := httptest.NewServer(nil)
	defer front.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(front.URL, "http://"))
	front.Config.Handler = Proxy("unix", sock, LoopbackHosts(port)...)
	c := front.Client()

	do := func(method, path, host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, front.URL+path, strings.NewReader(""))
		if host != "" {
			req.Host = host
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/v1/status", "/v1/members", "/ui/", "/ui/app.js", "/v1/status?x=1"} {
		if code, body := do("GET", path, ""); code != 200 || !strings.HasPrefix(body, "daemon /") {
			t.Errorf("GET %s: %d %q, want the daemon's answer", path, code, body)
		}
	}
	refused := []struct{ method, path, host string }{
		{"GET", "/metrics", ""},
		{"GET", "/healthz", ""},
		{"GET", "/debug/pprof/", ""},
		{"GET", "/v1/statusx", ""},
		{"GET", "/", ""},
		{"GET", "/lab/info", ""},
		{"POST", "/v1/status", ""},
		{"PUT", "/ui/", ""},
		{"DELETE", "/v1/members", ""},
		{"PATCH", "/v1/events", ""},
		{"GET", "/v1/status", "evil.example:" + port}, // DNS rebinding
		{"GET", "/v1/status", "127.0.0.1:1"},
	}
	before := len(daemon.requests())
	for _, r := range refused {
		if code, _ := do(r.method, r.path, r.host); code < 400 {
			t.Errorf("%s %s (Host %q): %d, want it refused", r.method, r.path, r.host, code)
		}
	}
	if got := daemon.requests()[before:]; len(got) != 0 {
		t.Errorf("refused requests reached the daemon: %v", got)
	}
	for _, r := range daemon.requests() {
		if strings.Contains(r, "?") {
			t.Errorf("the query string reached the daemon: %s", r)
		}
	}

	// The event stream is passed on line by line.
	resp, err := c.Get(front.URL + "/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, "line0") {
		t.Fatalf("first event line %q, %v", line, err)
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("the first event line took %v: the proxy buffers the stream", d)
	}
}

func TestProxyDaemonDown(t *testing.T) {
	srv := httptest.NewServer(Proxy("unix", filepath.Join(t.TempDir(), "none.sock")))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "does not answer") {
		t.Errorf("%d %q, want 502 saying the daemon does not answer", resp.StatusCode, b)
	}
}
