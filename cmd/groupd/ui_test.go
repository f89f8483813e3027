package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestUITCP(t *testing.T) {
	addr := serve(t, &fakeAPI{})
	code, out, errOut := runCLI(t, "ui", "--api", addr)
	if code != exitOK || out != "http://"+addr+"/ui/\n" {
		t.Errorf("exit %d, out %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "ui", "--api", closedAddr(t))
	if code != exitFailure || !strings.Contains(errOut, "no daemon") {
		t.Errorf("no daemon: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "ui", "--api", addr, "--listen", "0.0.0.0:0")
	if code != exitConfig || !strings.Contains(errOut, "loopback only") {
		t.Errorf("--listen 0.0.0.0:0: exit %d, stderr %q", code, errOut)
	}
	if got := browserHost("0.0.0.0:7953"); got != "127.0.0.1:7953" {
		t.Errorf("browserHost(0.0.0.0:7953) = %q", got)
	}
}

// pipeWriter hands the first line written to it to a channel.
type pipeWriter struct {
	mu   bytes.Buffer
	line chan string
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.mu.Write(p)
	if i := bytes.IndexByte(w.mu.Bytes(), '\n'); i >= 0 && w.line != nil {
		w.line <- string(w.mu.Bytes()[:i])
		w.line = nil
	}
	return len(p), nil
}

// TestUIProxy runs `groupd ui` against a unix-socket API: it prints a
// loopback URL, passes on the page's GETs, refuses the rest, and stops on
// interrupt.
func TestUIProxy(t *testing.T) {
	addr := serveUnix(t, &fakeAPI{events: watchEvents[:1], hold: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan string, 1)
	out := &pipeWriter{line: first} // Write clears out.line: read first
	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"groupd", "ui", "--api", addr}, out, &errOut) }()
	var url string
	select {
	case url = <-first:
	case code := <-done:
		t.Fatalf("exit %d before printing a URL: %s", code, errOut.String())
	case <-time.After(5 * time.Second):
		t.Fatal("no URL within 5s")
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/ui/") {
		t.Fatalf("URL %q", url)
	}
	base := strings.TrimSuffix(url, "/ui/")
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		if path == "/v1/events" {
			line, _ := bufio.NewReader(resp.Body).ReadString('\n')
			return resp.StatusCode, line
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/v1/status"); code != 200 || !strings.Contains(body, `"db3"`) {
		t.Errorf("GET /v1/status through the proxy: %d %.80q", code, body)
	}
	if code, body := get("/v1/events"); code != 200 || strings.TrimSpace(body) != watchEvents[0] {
		t.Errorf("GET /v1/events through the proxy: %d %.80q", code, body)
	}
	if code, _ := get("/metrics"); code != http.StatusNotFound {
		t.Errorf("GET /metrics through the proxy: %d, want 404", code)
	}
	resp, err := http.Post(base+"/v1/status", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /v1/status through the proxy: %d, want 405", resp.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d after interrupt; stderr %q", code, errOut.String())
		}
	case <-time.After(3 * time.Second):
		t.Fatal("ui did not stop within 3s of the interrupt")
	}
}
