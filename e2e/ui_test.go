package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/ui"
)

// TestUILiveView loads the live view in headless Chromium, served by the
// lab view (every node's API over its unix socket, as `lab.sh ui` does) on
// loopback in the root namespace, and checks what the DOM shows: one group
// with the number `status` reports; two groups within 3 s of a partition,
// without a reload; one group again after the heal. It saves a screenshot
// taken during the split, and logs the page's update latency. Then it
// loads the node mode through ui.Proxy to node 1's socket (what `groupd
// ui` serves) and checks it shows the group too.
//
// Chromium is driven through chromedriver's WebDriver HTTP API (a few
// JSON requests; no dependency). It skips when chromium or chromedriver
// is missing (apt-get install chromium chromium-driver).
func TestUILiveView(t *testing.T) {
	t.Parallel()
	requireFaults(t)
	browser, driver := findBrowser(t)
	l := newLab(t, 5, "fast")
	l.converge()

	labURL := serveLoopback(t, l.UIHandler)
	nodeURL := serveLoopback(t, func(hosts ...string) http.Handler { return ui.Proxy("unix", l.Sock(1), hosts...) })
	wd := startWebDriver(t, driver, browser)
	wd.navigate(labURL + ui.Prefix)

	want := l.status(1).Group.String()
	all := []int{1, 2, 3, 4, 5}
	wd.waitGroups("the lab view shows one group", 10*time.Second, func(gs []domGroup) bool {
		return len(gs) == 1 && gs[0].Group == want && slices.Equal(gs[0].IDs, all)
	})
	t.Logf("ui: the lab view shows one group %s of nodes 1-5, as status reports", want)

	part := l.partition([]int{1, 2}, []int{3, 4, 5})
	gs := wd.waitGroups("the lab view shows the split", 3*time.Second+applied(part), func(gs []domGroup) bool {
		return len(gs) == 2 && (slices.Equal(gs[0].IDs, []int{1, 2}) && slices.Equal(gs[1].IDs, []int{3, 4, 5}) ||
			slices.Equal(gs[1].IDs, []int{1, 2}) && slices.Equal(gs[0].IDs, []int{3, 4, 5}))
	})
	var st pageStats
	wd.eval("return window.groupdUI.stats", &st)
	shown := time.UnixMilli(int64(st.GroupsChangedAt))
	t.Logf("ui: the page showed groups %s and %s %v after the partition was applied (%v after it started); "+
		"event→DOM latency so far: %s", gs[0].Group, gs[1].Group, shown.Sub(part.End).Round(time.Millisecond),
		shown.Sub(part.Start).Round(time.Millisecond), st)
	time.Sleep(500 * time.Millisecond) // let the timeline show the split
	png := wd.screenshot()
	for _, dir := range []string{l.Dir(), t.ArtifactDir()} {
		path := filepath.Join(dir, "ui-split.png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Errorf("ui: saving the screenshot: %v", err)
			continue
		}
		t.Logf("ui: screenshot during the split: %s (%d bytes)", path, len(png))
	}

	l.heal()
	wd.waitGroups("the lab view shows one group after the heal", l.Timing().HealBound()+slack, func(gs []domGroup) bool {
		return len(gs) == 1 && slices.Equal(gs[0].IDs, all)
	})
	wd.eval("return window.groupdUI.stats", &st)
	t.Logf("ui: one group again after the heal; event→DOM latency over the run: %s", st)

	// Node mode, through the proxy of `groupd ui`: node 1's view, from its
	// member list and gossip meta.
	wd.navigate(nodeURL + ui.Prefix)
	want = l.status(1).Group.String()
	wd.waitGroups("node 1's view shows one group", 10*time.Second, func(gs []domGroup) bool {
		return len(gs) == 1 && gs[0].Group == want && slices.Equal(gs[0].IDs, all)
	})
	t.Logf("ui: node 1's view through the proxy shows group %s of nodes 1-5", want)
}

// domGroup is one group box of the page: its number and its nodes.
type domGroup struct {
	Group string `json:"group"`
	IDs   []int  `json:"ids"`
}

// pageStats is window.groupdUI.stats (ui/assets/app.js).
type pageStats struct {
	Events          int     `json:"events"`
	SumLatencyMs    float64 `json:"sumLatencyMs"`
	MaxLatencyMs    float64 `json:"maxLatencyMs"`
	SumSinceEventMs float64 `json:"sumSinceEventMs"`
	MaxSinceEventMs float64 `json:"maxSinceEventMs"`
	GroupsChangedAt float64 `json:"groupsChangedAt"`
	Renders         int     `json:"renders"`
}

func (s pageStats) String() string {
	// Snapshots are not timed, so the averages are over the events at
	// most: a floor, not a mean, when snapshots were many.
	n := float64(max(s.Events, 1))
	return fmt.Sprintf("%d events; arrival→DOM max %.1f ms (≤ %.2f ms mean); daemon's event time→DOM max %.1f ms (≤ %.1f ms mean)",
		s.Events, s.MaxLatencyMs, s.SumLatencyMs/n, s.MaxSinceEventMs, s.SumSinceEventMs/n)
}

// domGroups is the script that reads the group boxes off the DOM (the
// "no group" and "unreachable" boxes are not groups).
const domGroups = `return [...document.querySelectorAll('section.group')]
  .filter(s => s.dataset.group !== 'none' && s.dataset.group !== 'unreachable')
  .map(s => ({group: s.dataset.group, ids: [...s.querySelectorAll('tr.node')].map(r => Number(r.dataset.id))}));`

// waitGroups polls the DOM every 50 ms until ok holds, failing the test
// after timeout with what the page showed last.
func (wd *webDriver) waitGroups(what string, timeout time.Duration, ok func([]domGroup) bool) []domGroup {
	wd.t.Helper()
	deadline := time.Now().Add(timeout)
	var gs []domGroup
	for {
		gs = nil
		wd.eval(domGroups, &gs)
		if ok(gs) {
			return gs
		}
		if time.Now().After(deadline) {
			wd.t.Fatalf("ui: %s: not within %v; the page shows %+v", what, timeout, gs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// findBrowser returns chromium's and chromedriver's paths, or skips t.
func findBrowser(t *testing.T) (browser, driver string) {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	driver, err := exec.LookPath("chromedriver")
	if browser == "" || err != nil {
		t.Skip("e2e: the browser test needs chromium and chromedriver: apt-get install chromium chromium-driver")
	}
	return browser, driver
}

// serveLoopback serves the handler that handler(hosts...) returns on
// 127.0.0.1, on a free port, until t ends, and returns its base URL.
func serveLoopback(t *testing.T, handler func(hosts ...string) http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ui: %v", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	srv := &http.Server{Handler: handler(ui.LoopbackHosts(port)...), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// webDriver is a session of chromedriver's W3C WebDriver HTTP API.
type webDriver struct {
	t       *testing.T
	base    string // http://127.0.0.1:PORT/session/ID
	hc      *http.Client
	started time.Time
}

// startWebDriver starts chromedriver on a free loopback port and a
// headless session of browser in it; both end with t.
func startWebDriver(t *testing.T, driver, browser string) *webDriver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ui: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	logPath := filepath.Join(t.TempDir(), "chromedriver.log")
	cmd := exec.Command(driver, fmt.Sprintf("--port=%d", port), "--allowed-ips=127.0.0.1", "--log-path="+logPath)
	if err := cmd.Start(); err != nil {
		t.Fatalf("ui: starting %s: %v", driver, err)
	}
	t.Cleanup(func() {
		// Ours, by PID: chromedriver ends the browsers of its sessions.
		cmd.Process.Kill()
		cmd.Wait()
	})
	wd := &webDriver{t: t, hc: &http.Client{Timeout: 30 * time.Second}, started: time.Now()}
	root := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(15 * time.Second); ; {
		if resp, err := wd.hc.Get(root + "/status"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("ui: chromedriver did not answer on port %d within 15 s; its log:\n%s", port, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": browser,
			// --no-sandbox: Chromium's sandbox refuses to run as root.
			"args": []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
				"--window-size=1280,860", "--no-first-run", "--disable-extensions"},
		},
	}}}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	wd.base = root
	wd.call(http.MethodPost, "/session", caps, &sess)
	if sess.SessionID == "" {
		t.Fatalf("ui: chromedriver returned no session")
	}
	wd.base = root + "/session/" + sess.SessionID
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, wd.base, nil)
		if resp, err := wd.hc.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	t.Logf("ui: headless %s driven by %s, up in %.1fs", filepath.Base(browser), filepath.Base(driver), time.Since(wd.started).Seconds())
	return wd
}

// call sends one WebDriver command and decodes its "value" into out.
func (wd *webDriver) call(method, path string, in, out any) {
	wd.t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			wd.t.Fatalf("ui: webdriver %s: %v", path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, wd.base+path, body)
	if err != nil {
		wd.t.Fatalf("ui: webdriver %s: %v", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := wd.hc.Do(req)
	if err != nil {
		wd.t.Fatalf("ui: webdriver %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		wd.t.Fatalf("ui: webdriver %s %s: %v", method, path, err)
	}
	var r struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &r); err != nil || resp.StatusCode != http.StatusOK {
		wd.t.Fatalf("ui: webdriver %s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out != nil {
		if err := json.Unmarshal(r.Value, out); err != nil {
			wd.t.Fatalf("ui: webdriver %s %s: decoding %s: %v", method, path, r.Value, err)
		}
	}
}

func (wd *webDriver) navigate(url string) {
	wd.t.Helper()
	wd.call(http.MethodPost, "/url", map[string]string{"url": url}, nil)
}

// eval runs script (a function body) in the page and decodes its result.
func (wd *webDriver) eval(script string, out any) {
	wd.t.Helper()
	wd.call(http.MethodPost, "/execute/sync", map[string]any{"script": script, "args": []any{}}, out)
}

func (wd *webDriver) screenshot() []byte {
	wd.t.Helper()
	var b64 string
	wd.call(http.MethodGet, "/screenshot", nil, &b64)
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		wd.t.Fatalf("ui: screenshot: %v", err)
	}
	return png
}
