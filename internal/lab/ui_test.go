package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/schema"
)

// uiTestLab is a lab of n nodes in a temporary run dir, with nothing up:
// what the view's handlers need without root.
func uiTestLab(t *testing.T, n int) *Lab {
	t.Helper()
	dir := t.TempDir()
	l := newLab(Config{Nodes: n, Prefix: "hl", Subnet: netip.MustParsePrefix("10.81.0.0/24"), Dir: dir, Profile: "lan"})
	t.Cleanup(func() {
		for _, nd := range l.nodes[1:] {
			nd.client.Close()
		}
	})
	return l
}

// fakeNode serves h on node i's API socket.
func fakeNode(t *testing.T, l *Lab, i int, h http.Handler) {
	t.Helper()
	if err := os.MkdirAll(l.NodeDir(i), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", l.Sock(i))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// uiGet asks the view's handler for target.
func uiGet(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	return w
}

func TestUIStatusMembers(t *testing.T) {
	l := uiTestLab(t, 2)
	// A member field this package does not know (a newer daemon's) must
	// reach the page unchanged.
	members := `[{"id":1,"name":"hl-1","priority":100,"addr":"10.81.0.1:7950","gossip":"alive","in_group":true,"group":"","state":"normal","leader":true,"degraded":false,"tags":null,"reach":{"2":"cut"}}]`
	fakeNode(t, l, 1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/status":
			w.Write([]byte(`{"id":1,"name":"hl-1","state":"normal"}`))
		case "/v1/members":
			w.Write([]byte(members + "\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	w := uiGet(t, l.UIHandler(), "/lab/status")
	if w.Code != http.StatusOK {
		t.Fatalf("/lab/status: %d %s", w.Code, w.Body)
	}
	var got []map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || len(got) != 2 {
		t.Fatalf("/lab/status: %v: %s", err, w.Body)
	}
	if string(got[0]["node"]) != "1" || string(got[0]["members"]) != members || got[0]["error"] != nil || got[0]["members_error"] != nil {
		t.Errorf("node 1's entry is %s; want its members unchanged and no error", w.Body)
	}
	if !strings.Contains(string(got[0]["status"]), `"name":"hl-1"`) {
		t.Errorf("node 1's status is %s", got[0]["status"])
	}
	if string(got[1]["node"]) != "2" || string(got[1]["status"]) != "null" || string(got[1]["members"]) != "null" ||
		got[1]["error"] == nil || got[1]["members_error"] == nil {
		t.Errorf("node 2 (no daemon) is %s; want status and members null with their errors", w.Body)
	}
}

// writeRun writes a history whose first line is at t0 and last at t0+s
// seconds, with events of nodes 1..n.
func writeRun(t *testing.T, path string, t0 time.Time, s, n int) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"time":%q,"kind":"start","spec":"1-%d"}`+"\n", t0.Format(time.RFC3339Nano), n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"time":%q,"node":%d,"reason":"start","old":{},"new":{}}`+"\n", t0.Add(time.Second).Format(time.RFC3339Nano), i)
	}
	fmt.Fprintf(&b, `{"time":%q,"kind":"end","spec":"teardown"}`+"\n", t0.Add(time.Duration(s)*time.Second).Format(time.RFC3339Nano))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestArchiveRun(t *testing.T) {
	dir := t.TempDir()
	if id, err := ArchiveRun(dir); id != "" || err != nil {
		t.Fatalf("no history: ArchiveRun = %q, %v", id, err)
	}
	t0 := time.Date(2026, 11, 21, 10, 0, 4, 0, time.UTC)
	hist := filepath.Join(dir, HistoryFile)
	// A lab is up: the run goes on.
	writeRun(t, hist, t0, 60, 3)
	os.WriteFile(filepath.Join(dir, stateFile), []byte("{}"), 0o644)
	if id, err := ArchiveRun(dir); id != "" || err != nil {
		t.Fatalf("lab up: ArchiveRun = %q, %v; want nothing done", id, err)
	}
	os.Remove(filepath.Join(dir, stateFile))
	want := writeRun(t, hist, t0, 60, 3)
	id, err := ArchiveRun(dir)
	if id != "20261121T100004Z" || err != nil {
		t.Fatalf("ArchiveRun = %q, %v", id, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, PastRunsDir, id, HistoryFile)); err != nil || string(b) != want {
		t.Errorf("the archived history: %v\n%s", err, b)
	}
	if _, err := os.Stat(hist); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the history is still in the run dir: %v", err)
	}
	// The same start again, then more runs than are kept.
	writeRun(t, hist, t0, 60, 3)
	if id, err := ArchiveRun(dir); id != "20261121T100004Z-2" || err != nil {
		t.Fatalf("a second run of the same start: ArchiveRun = %q, %v", id, err)
	}
	for k := 1; k <= MaxPastRuns; k++ {
		writeRun(t, hist, t0.Add(time.Duration(k)*time.Hour), 60, 3)
		if _, err := ArchiveRun(dir); err != nil {
			t.Fatal(err)
		}
	}
	ids := pastRuns(dir)
	if len(ids) != MaxPastRuns || ids[0] != "20261121T200004Z" || ids[MaxPastRuns-1] != "20261121T110004Z" {
		t.Errorf("kept %q; want the %d newest, newest first", ids, MaxPastRuns)
	}
}

func TestUIRuns(t *testing.T) {
	l := uiTestLab(t, 3)
	h := l.UIHandler()
	t0 := time.Date(2026, 11, 21, 10, 0, 4, 0, time.UTC)
	past := writeRun(t, filepath.Join(l.Dir(), PastRunsDir, "20261121T100004Z", HistoryFile), t0, 60, 5)
	writeRun(t, filepath.Join(l.Dir(), PastRunsDir, "20261121T090004Z", HistoryFile), t0.Add(-time.Hour), 30, 2)
	// Not runs: a name of another form, a file.
	writeRun(t, filepath.Join(l.Dir(), PastRunsDir, "other", HistoryFile), t0, 1, 1)
	os.WriteFile(filepath.Join(l.Dir(), PastRunsDir, "20261121T080004Z"), []byte("x"), 0o644)
	secret := filepath.Join(l.Dir(), "secret.ndjson")
	os.WriteFile(secret, []byte("SECRET\n"), 0o644)

	// The current run: nothing recorded yet.
	var runs []RunInfo
	w := uiGet(t, h, "/lab/runs")
	if err := json.Unmarshal(w.Body.Bytes(), &runs); err != nil || w.Code != 200 {
		t.Fatalf("/lab/runs: %d %v %s", w.Code, err, w.Body)
	}
	if len(runs) != 3 || runs[0].ID != CurrentRun || !runs[0].Current || runs[0].Nodes != 3 || runs[0].Bytes != 0 || runs[0].Started != nil ||
		runs[1].ID != "20261121T100004Z" || runs[2].ID != "20261121T090004Z" {
		t.Fatalf("/lab/runs is %s", w.Body)
	}
	r := runs[1]
	if r.Current || r.Nodes != 5 || r.Bytes != int64(len(past)) || r.Started == nil || !r.Started.Equal(t0) || r.Ended == nil || !r.Ended.Equal(t0.Add(time.Minute)) ||
		r.Name != "2026-11-21 10:00:04 UTC" {
		t.Errorf("the past run is %+v", r)
	}
	if w := uiGet(t, h, "/lab/history.ndjson"); w.Code != 200 || w.Body.Len() != 0 {
		t.Errorf("the current run's history before any: %d %q", w.Code, w.Body)
	}

	// Now with lines, the last one unfinished.
	l.Mark(schema.KindStart, "1-3", "", t0)
	l.Mark(schema.KindPartition, "1|2,3", "", t0.Add(2*time.Second))
	l.mu.Lock()
	l.hfile.Write([]byte(`{"time":"2026-11-21T10:00:09Z","kind":"he`))
	l.mu.Unlock()
	cur, _ := os.ReadFile(filepath.Join(l.Dir(), HistoryFile))
	complete := string(cur[:strings.LastIndexByte(string(cur), '\n')+1])
	for _, path := range []string{"/lab/history.ndjson", "/lab/runs/current/history.ndjson"} {
		w := uiGet(t, h, path)
		if w.Code != 200 || w.Body.String() != complete || w.Header().Get("Content-Type") != "application/x-ndjson" {
			t.Errorf("%s: %d %q %q; want its complete lines", path, w.Code, w.Header().Get("Content-Type"), w.Body)
		}
	}
	w = uiGet(t, h, "/lab/runs")
	json.Unmarshal(w.Body.Bytes(), &runs)
	if c := runs[0]; c.Started == nil || !c.Started.Equal(t0) || c.Ended == nil || !c.Ended.Equal(t0.Add(2*time.Second)) || c.Bytes != int64(len(cur)) {
		t.Errorf("the current run is %s", w.Body)
	}
	if w := uiGet(t, h, "/lab/runs/20261121T100004Z/history.ndjson"); w.Code != 200 || w.Body.String() != past {
		t.Errorf("the past run's history: %d %q", w.Code, w.Body)
	}
	if w := uiGet(t, h, "/lab/runs/20261121T100004Z/history.ndjson"); w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("headers %v", w.Header())
	}

	// Only listed IDs are served; nothing else of the disk.
	for _, path := range []string{
		"/lab/runs/other/history.ndjson",
		"/lab/runs/20261121T080004Z/history.ndjson",
		"/lab/runs/nope/history.ndjson",
		"/lab/runs/../history.ndjson",
		"/lab/runs/%2e%2e/history.ndjson",
		"/lab/runs/%2e%2e%2fsecret.ndjson%2f/history.ndjson",
		"/lab/runs/..%2f..%2f..%2fetc%2fpasswd%00/history.ndjson",
		"/lab/runs/%2Fetc%2Fpasswd/history.ndjson",
		"/lab/runs//etc/passwd/history.ndjson",
		"/lab/runs/" + url.PathEscape(secret) + "/history.ndjson",
		"/lab/runs/20261121T100004Z/../../secret.ndjson",
		"/lab/runs/20261121T100004Z/history.ndjson/..",
		"/lab/runs/20261121T100004Z/lab.json",
		"/lab/runs/",
		"/lab/secret.ndjson",
	} {
		w := uiGet(t, h, path)
		if w.Code == http.StatusOK || strings.Contains(w.Body.String(), "SECRET") || strings.Contains(w.Body.String(), "root:") {
			t.Errorf("%s: %d %q; want a refusal", path, w.Code, w.Body)
		}
	}
	// Read-only.
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(m, "/lab/runs/20261121T100004Z/history.ndjson", nil))
		if w.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d", m, w.Code)
		}
	}
}
