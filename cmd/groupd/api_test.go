package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	t.Helper()
	return context.WithTimeout(context.Background(), d)
}

const (
	statusJSON = `{"id":3,"name":"db3","priority":100,"state":"normal","role":"coordinator","group":"1795255200000.3",` +
		`"coordinator":3,"coordinator_name":"db3","members":[1,2,3],"member_priorities":[100,100,100],"version":2,` +
		`"since":"2026-11-21T10:00:00Z","counter":1795255200000,"incarnation":5,"boot":"8a1f","persist_error":"",` +
		`"degraded":false,"time":"2026-11-21T10:01:12.5Z","primary":true,"expect":0,"leader":true,` +
		`"leader_since":"2026-11-21T09:59:00Z","term":"1795255140000.3","tags":{"endpoint":"10.77.0.3:5432"},` +
		`"duplicate_id":null,"timing_mismatches":[]}`
	membersJSON = `[{"id":3,"name":"db3","priority":100,"addr":"10.77.0.3:7950","gossip":"alive","in_group":true,` +
		`"group":"1795255200000.3","state":"normal","leader":true,"degraded":false,"tags":{"endpoint":"10.77.0.3:5432"},` +
		`"reach":{"state":"up","basis":"heartbeat","age_ms":180,"window_ms":750}},` +
		`{"id":12,"name":"","priority":50,"addr":"10.77.0.12:7950","gossip":"dead","in_group":false,` +
		`"group":"","state":"","leader":false,"degraded":false,"tags":{},` +
		`"reach":{"state":"unknown","basis":"none","age_ms":-1,"window_ms":0}},` +
		`{"id":2,"name":"db2","priority":100,"addr":"10.77.0.2:7950","gossip":"suspect","in_group":true,` +
		`"group":"1795255200000.3","state":"normal","leader":false,"degraded":true,"tags":{},` +
		`"reach":{"state":"lost","basis":"coordinator","via":3,"age_ms":1320,"window_ms":750}},` +
		`{"id":1,"name":"db1","priority":100,"addr":"10.77.0.1:7950","gossip":"alive","in_group":true,` +
		`"group":"1795255200000.3","state":"normal","leader":false,"degraded":false,"tags":{},` +
		`"reach":{"state":"self","basis":"none","age_ms":-1,"window_ms":0}},` +
		`{"id":4,"name":"db4","priority":100,"addr":"10.77.0.4:7950","gossip":"alive","in_group":false,` +
		`"group":"","state":"","leader":false,"degraded":false,"tags":{}}]`
)

// fakeAPI serves the daemon's API from canned answers. events, when set,
// is streamed on /v1/events, one line at a time, followed by a wait for
// the client to go away if hold is set.
type fakeAPI struct {
	events []string
	hold   bool
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/status":
		// Pretty-printed, to check that --json compacts it.
		var buf bytes.Buffer
		_ = json.Indent(&buf, []byte(statusJSON), "", "  ")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(buf.Bytes())
	case "/v1/members":
		_, _ = w.Write([]byte(membersJSON + "\n"))
	case "/v1/events":
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, e := range f.events {
			fmt.Fprintln(w, e)
			w.(http.Flusher).Flush()
		}
		if f.hold {
			<-r.Context().Done()
		}
	default:
		http.Error(w, "no such endpoint", http.StatusNotFound)
	}
}

// serve starts a fake API on TCP loopback and returns its address.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// serveUnix starts a fake API on a unix socket and returns "unix:/path".
func serveUnix(t *testing.T, h http.Handler) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "groupd") // short: socket paths are limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "api.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return "unix:" + path
}

// closedAddr returns a loopback TCP address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestStatus(t *testing.T) {
	for _, transport := range []string{"tcp", "unix"} {
		t.Run(transport, func(t *testing.T) {
			addr := serve(t, &fakeAPI{})
			if transport == "unix" {
				addr = serveUnix(t, &fakeAPI{})
			}
			code, out, errOut := runCLI(t, "status", "--json", "--api", addr)
			if code != exitOK || errOut != "" {
				t.Fatalf("status --json: exit %d, stderr %q", code, errOut)
			}
			if out != statusJSON+"\n" {
				t.Errorf("status --json printed\n%s\nwant\n%s", out, statusJSON)
			}

			t.Setenv("GROUPD_API", addr)
			code, out, errOut = runCLI(t, "status")
			if code != exitOK || errOut != "" {
				t.Fatalf("status: exit %d, stderr %q", code, errOut)
			}
			want := `id:          3
name:        db3
priority:    100
state:       normal
role:        coordinator
group:       1795255200000.3 (formed 2026-11-21T10:00:00.000Z)
coordinator: 3 (db3)
members:     1 2 3 (3)
leader:      yes, term 1795255140000.3, since 2026-11-21T09:59:00Z (2m13s ago)
since:       2026-11-21T10:00:00Z (1m13s ago)
tags:        endpoint=10.77.0.3:5432
`
			if out != want {
				t.Errorf("status printed\n%s\nwant\n%s", out, want)
			}
		})
	}
}

func TestMembers(t *testing.T) {
	addr := serveUnix(t, &fakeAPI{})
	code, out, errOut := runCLI(t, "members", "--json", "--api", addr)
	if code != exitOK || errOut != "" {
		t.Fatalf("members --json: exit %d, stderr %q", code, errOut)
	}
	if out != membersJSON+"\n" {
		t.Errorf("members --json printed\n%s\nwant\n%s", out, membersJSON)
	}
	code, out, errOut = runCLI(t, "members", "--api", serve(t, &fakeAPI{}))
	if code != exitOK || errOut != "" {
		t.Fatalf("members: exit %d, stderr %q", code, errOut)
	}
	want := `ID  NAME  PRIORITY  ADDR             GOSSIP   REACH              IN GROUP  GROUP            LEADER    TAGS
1   db1   100       10.77.0.1:7950   alive    self               yes       1795255200000.3  -         -
2   db2   100       10.77.0.2:7950   suspect  lost 1.3s via 3    yes       1795255200000.3  degraded  -
3   db3   100       10.77.0.3:7950   alive    up 0.2s heartbeat  yes       1795255200000.3  yes       endpoint=10.77.0.3:5432
4   db4   100       10.77.0.4:7950   alive    -                  no        -                -         -
12  -     50        10.77.0.12:7950  dead     unknown            no        -                -         -
`
	if out != want {
		t.Errorf("members printed\n%s\nwant\n%s", out, want)
	}
}

func TestNoDaemon(t *testing.T) {
	addr := closedAddr(t)
	for _, cmd := range []string{"status", "members", "watch"} {
		for _, a := range []string{addr, "unix:/nonexistent/groupd.sock"} {
			t.Run(cmd+" "+a, func(t *testing.T) {
				code, out, errOut := runCLI(t, cmd, "--api", a)
				if code != exitFailure {
					t.Errorf("exit %d, want %d", code, exitFailure)
				}
				if out != "" {
					t.Errorf("stdout %q", out)
				}
				wantOneLine(t, errOut, "groupd: no daemon answering at "+a+": ")
				if !strings.HasSuffix(errOut, noDaemonHint+"\n") {
					t.Errorf("stderr %q lacks the hint", errOut)
				}
			})
		}
	}
}

func TestAPIError(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "loop not running\nsecond line", http.StatusServiceUnavailable)
	}))
	code, _, errOut := runCLI(t, "status", "--api", addr)
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	wantOneLine(t, errOut, "answered GET /v1/status with 503 Service Unavailable: loop not running")
}

var watchEvents = []string{
	`{"time":"2026-11-21T10:00:01.234Z","node":3,"reason":"snapshot","old":null,"new":{"id":3,"state":"normal","role":"coordinator","group":"16.3","coordinator":3,"members":[3]}}`,
	`{"time":"2026-11-21T10:00:02.5Z","node":3,"reason":"merge","old":{"id":3,"state":"normal","role":"coordinator","group":"16.3","coordinator":3,"members":[3]},"new":{"id":3,"state":"normal","role":"coordinator","group":"17.3","coordinator":3,"members":[1,2,3]}}`,
	`{"time":"2026-11-21T10:00:03Z","node":3,"reason":"invited","old":{"id":3,"state":"normal","role":"coordinator","group":"17.3","coordinator":3,"members":[1,2,3]},"new":{"id":3,"state":"reorganization","role":"participant","group":"18.5","coordinator":5,"members":[]}}`,
}

func TestWatch(t *testing.T) {
	addr := serveUnix(t, &fakeAPI{events: watchEvents})
	code, out, errOut := runCLI(t, "watch", "--json", "--api", addr)
	if code != exitOK || errOut != "" {
		t.Fatalf("watch --json: exit %d, stderr %q", code, errOut)
	}
	if want := strings.Join(watchEvents, "\n") + "\n"; out != want {
		t.Errorf("watch --json printed\n%s\nwant\n%s", out, want)
	}

	code, out, errOut = runCLI(t, "watch", "--api", addr)
	if code != exitOK {
		t.Fatalf("watch: exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(errOut, "ended the event stream") {
		t.Errorf("watch: stderr %q", errOut)
	}
	var want []string
	for _, e := range watchEvents {
		var ev group.Event
		if err := json.Unmarshal([]byte(e), &ev); err != nil {
			t.Fatal(err)
		}
		want = append(want, formatEvent(ev, time.Local))
	}
	if got := strings.Split(strings.TrimSpace(out), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("watch printed\n%s\nwant\n%s", out, strings.Join(want, "\n"))
	}
}

func TestFormatEvent(t *testing.T) {
	want := []string{
		"10:00:01.234 node 3 snapshot: 16.3 coordinator [3]",
		"10:00:02.500 node 3 merge: 16.3 coordinator -> 17.3 coordinator [1 2 3]",
		"10:00:03.000 node 3 invited: 17.3 coordinator -> 18.5 participant (reorganization) []",
	}
	for i, e := range watchEvents {
		var ev group.Event
		if err := json.Unmarshal([]byte(e), &ev); err != nil {
			t.Fatal(err)
		}
		if got := formatEvent(ev, time.UTC); got != want[i] {
			t.Errorf("formatEvent:\n got %s\nwant %s", got, want[i])
		}
	}
}

// lineWriter is a concurrency-safe writer that signals its first line.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{}
	once  sync.Once
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if bytes.Contains(w.buf.Bytes(), []byte("\n")) {
		w.once.Do(func() { close(w.first) })
	}
	return n, err
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestWatchInterrupt checks that Ctrl-C (the context's cancellation) ends
// a watch that is waiting for events with exit 0.
func TestWatchInterrupt(t *testing.T) {
	addr := serve(t, &fakeAPI{events: watchEvents[:1], hold: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lineWriter{first: make(chan struct{})}
	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"groupd", "watch", "--json", "--api", addr}, out, &errOut) }()
	select {
	case <-out.first:
	case <-time.After(5 * time.Second):
		t.Fatal("no snapshot event within 5s")
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d after interrupt, want 0; stderr %q", code, errOut.String())
		}
	case <-time.After(2 * time.Second):
		t.Fatal("watch did not stop within 2s of the interrupt")
	}
	if out.String() != watchEvents[0]+"\n" {
		t.Errorf("printed %q", out.String())
	}
}

// TestWatchBrokenStream checks that a connection lost mid-stream exits 1.
func TestWatchBrokenStream(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, watchEvents[0])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // no final chunk: the stream breaks
		}
	}))
	code, out, errOut := runCLI(t, "watch", "--json", "--api", addr)
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	if out != watchEvents[0]+"\n" {
		t.Errorf("printed %q", out)
	}
	wantOneLine(t, errOut, "lost the event stream from daemon at "+addr)
}

// TestWatchPrintsGroupEvents feeds watch the JSON package group writes, so
// that the CLI and the daemon cannot drift apart: a persist error, a
// member list and a state other than normal all reach the printed line.
func TestWatchPrintsGroupEvents(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	old := group.Status{
		ID: 3, Priority: 100, State: wire.StateNormal, Role: invitation.Coordinator,
		Group: wire.GroupNumber{Seq: 17, ID: 3}, Coordinator: 3, Members: []wire.NodeID{1, 2, 3},
		Version: 2, Since: at, Time: at,
	}
	st := old
	st.State, st.Role, st.Group, st.Coordinator = wire.StateReorganization, invitation.Participant, wire.GroupNumber{Seq: 18, ID: 5}, 5
	st.Members, st.PersistError = nil, "disk full"
	var lines []string
	for _, e := range []group.Event{
		{Time: at, Node: 3, Reason: group.ReasonSnapshot, New: old},
		{Time: at.Add(1500 * time.Millisecond), Node: 3, Reason: "invited", Old: &old, New: st},
	} {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	code, out, errOut := runCLI(t, "watch", "--api", serve(t, &fakeAPI{events: lines}))
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	at = at.Local()
	want := at.Format("15:04:05.000") + " node 3 snapshot: 17.3 coordinator [1 2 3]\n" +
		at.Add(1500*time.Millisecond).Format("15:04:05.000") +
		" node 3 invited: 17.3 coordinator -> 18.5 participant (reorganization) [] persist error: disk full\n"
	if out != want {
		t.Errorf("watch printed\n%s\nwant\n%s", out, want)
	}
}

// TestPermissionDenied checks that a socket this user may not connect to
// reads "permission denied", with the hint, and exits 1 like a missing
// daemon, rather than "no daemon answering". Root connects anywhere, so
// as root the built command runs as nobody.
func TestPermissionDenied(t *testing.T) {
	addr := serveUnix(t, &fakeAPI{})
	dir := filepath.Dir(strings.TrimPrefix(addr, "unix:"))
	if err := os.Chmod(dir, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)

	code, errOut := exitFailure+100, ""
	if os.Geteuid() != 0 {
		code, _, errOut = runCLI(t, "status", "--api", addr)
	} else {
		if testing.Short() {
			t.Skip("as root, builds the command to run it as nobody")
		}
		bin := buildGroupd(t)
		// The binary's directory and its parent are t.TempDir's, 0700.
		for _, d := range []string{filepath.Dir(bin), filepath.Dir(filepath.Dir(bin))} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "status", "--api", addr)
		cmd.Stderr = &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("status as nobody: %v, want an exit status", err)
		}
		code, errOut = ee.ExitCode(), stderr.String()
	}
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	wantOneLine(t, errOut, "groupd: permission denied on "+addr+" (the socket is mode 0600")
}

// TestMembersLeaderStale: after a kill -9 of the leader, gossip still
// says it leads for up to --member-timeout; the table shows it stale (not
// heard), and yes only for the leader this node hears.
func TestMembersLeaderStale(t *testing.T) {
	ms := []group.Member{
		{ID: 3, Name: "n3", Gossip: group.GossipAlive, Leader: true,
			Reach: group.Reach{State: group.ReachLost, Basis: "heartbeat", AgeMS: 4200, WindowMS: 750}},
		{ID: 2, Name: "n2", Gossip: group.GossipAlive, InGroup: true, Leader: true,
			Reach: group.Reach{State: group.ReachUp, Basis: "heartbeat", AgeMS: 100, WindowMS: 750}},
		{ID: 1, Name: "n1", Gossip: group.GossipAlive, InGroup: true, Reach: group.Reach{State: group.ReachSelf, AgeMS: -1}},
		{ID: 4, Name: "n4", Gossip: group.GossipAlive, Leader: true}, // a daemon that does not report reach
		{ID: 5, Name: "n5", Gossip: group.GossipAlive, Leader: true, Reach: group.Reach{State: group.ReachUnknown, AgeMS: -1}},
	}
	var b strings.Builder
	if err := printMembers(&b, ms); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"1": "-", "2": "yes", "3": "stale", "4": "yes", "5": "stale"}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	col := strings.Index(lines[0], "LEADER")
	for _, l := range lines[1:] {
		id := strings.Fields(l)[0]
		if got := strings.Fields(l[col:])[0]; got != want[id] {
			t.Errorf("node %s: LEADER %q, want %q\n%s", id, got, want[id], b.String())
		}
	}
}
