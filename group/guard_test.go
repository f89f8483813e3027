package group

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// guardLab is an agent that is never run: the tests set its view through
// the publisher (as the loop would), and serve its API on a loopback
// server, so that POST /v1/exec meets the real handler.
type guardLab struct {
	a    *Agent
	srv  *httptest.Server
	c    *client.Client
	term GroupNumber // the term it leads in once lead is called
}

// newGuardLab makes the agent, in quorum mode (--expect 3) when quorum,
// with its guards' cgroups made under base.
func newGuardLab(t *testing.T, quorum bool, base string) *guardLab {
	t.Helper()
	cfg := newTestConfig(t)
	cfg.ID = 1
	if quorum {
		cfg.Quorum = Quorum{Expect: 3}
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.guards.base = base
	srv := httptest.NewServer(a.Handler())
	c, err := client.New(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	gl := &guardLab{a: a, srv: srv, c: c}
	t.Cleanup(func() {
		a.Close()
		srv.Close()
		c.Close()
	})
	return gl
}

// lead makes the node the leader of group seq (its term), with, in
// quorum mode, a lease until until.
func (gl *guardLab) lead(seq uint64, until time.Time) {
	v := leaderView(1, until)
	v.Group = wire.GroupNumber{Seq: seq, ID: 1}
	v.Term = v.Group
	if gl.a.cfg.Quorum.Expect == 0 {
		v.Expect, v.LeaseUntil = 0, time.Time{}
	}
	now := time.Now()
	gl.a.pub.change(now, invitation.Event{Reason: invitation.ReasonLease, New: v})
	if !until.IsZero() {
		gl.a.pub.armLease(now, until)
	}
	gl.term = v.Term
}

// renew publishes a new lease end, as the loop does after every input.
func (gl *guardLab) renew(until time.Time) { gl.a.pub.armLease(time.Now(), until) }

// follow makes the node a participant of another leader's group: its
// leadership ends (leader-stop).
func (gl *guardLab) follow() {
	g := wire.GroupNumber{Seq: 99, ID: 9}
	v := invitation.Status{ID: 1, Priority: wire.DefaultPriority, State: wire.StateNormal, Group: g,
		Members: []wire.Member{{ID: 9, Priority: 200}, {ID: 1, Priority: 100}}, Version: 1, Term: g}
	gl.a.pub.change(time.Now(), invitation.Event{Reason: invitation.ReasonReady, New: v})
}

// post sends POST /v1/exec with body and headers, and returns the status
// and the first line of the answer.
func (gl *guardLab) post(t *testing.T, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, gl.srv.URL+"/v1/exec", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := make([]byte, 512)
	n, _ := io.ReadAtLeast(resp.Body, b, 1)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	return resp.StatusCode, line
}

// guardReq is a well-formed request body for term.
func guardReq(term GroupNumber) string {
	b, _ := json.Marshal(schema.ExecGuardRequest{Term: term.String(), GraceMS: 200, PollMS: 50})
	return string(b)
}

// TestGuardRefused: a guard is refused, with a clear 4xx or 5xx and
// never a panic, unless the node leads in the term named and the request
// is well formed; a daemon that cannot make cgroups says so with 501.
func TestGuardRefused(t *testing.T) {
	t.Parallel()
	notLeading := newGuardLab(t, false, t.TempDir())
	if code, line := notLeading.post(t, guardReq(wire.GroupNumber{Seq: 5, ID: 1}), nil); code != http.StatusConflict || !strings.Contains(line, "does not lead") {
		t.Errorf("not leading: %d %q, want 409 saying it does not lead", code, line)
	}

	gl := newGuardLab(t, false, t.TempDir()) // a base that is no cgroup
	gl.lead(5, time.Time{})
	other := wire.GroupNumber{Seq: 4, ID: 1}
	big := `{"term":"5.1","grace_ms":200,"poll_ms":50,"x":"` + strings.Repeat("a", maxGuardRequest) + `"}`
	cases := []struct {
		name   string
		body   string
		header map[string]string
		code   int
		says   string
	}{
		{"another term", guardReq(other), nil, http.StatusConflict, "does not lead in term 4.1 (it leads in term 5.1)"},
		{"not JSON", "term=5.1", nil, http.StatusBadRequest, "bad request body"},
		{"empty", "", nil, http.StatusBadRequest, "bad request body"},
		{"two objects", guardReq(gl.term) + guardReq(gl.term), nil, http.StatusBadRequest, "more after the JSON object"},
		{"wrong type", `{"term":5.1,"grace_ms":200}`, nil, http.StatusBadRequest, "bad request body"},
		{"no term", `{"grace_ms":200,"poll_ms":50}`, nil, http.StatusBadRequest, `bad term ""`},
		{"term not canonical", `{"term":"05.1","grace_ms":200,"poll_ms":50}`, nil, http.StatusBadRequest, `bad term "05.1"`},
		{"term zero", `{"term":"0.0","grace_ms":200,"poll_ms":50}`, nil, http.StatusBadRequest, "bad term"},
		{"no grace", `{"term":"5.1","poll_ms":50}`, nil, http.StatusBadRequest, "grace_ms must be in 1..60000"},
		{"negative poll", `{"term":"5.1","grace_ms":200,"poll_ms":-1}`, nil, http.StatusBadRequest, "poll_ms in 0..60000"},
		{"grace too long", `{"term":"5.1","grace_ms":60001,"poll_ms":50}`, nil, http.StatusBadRequest, "grace_ms must be"},
		{"too large", big, nil, http.StatusRequestEntityTooLarge, "bad request body"},
		{"form", guardReq(gl.term), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType, "takes application/json"},
		{"a browser", guardReq(gl.term), map[string]string{"Origin": "http://example.com"}, http.StatusForbidden, "not for browsers"},
		{"no cgroup here", guardReq(gl.term), nil, http.StatusNotImplemented, "cannot make a cgroup"},
	}
	for _, tc := range cases {
		code, line := gl.post(t, tc.body, tc.header)
		if code != tc.code || !strings.Contains(line, tc.says) {
			t.Errorf("%s: %d %q, want %d saying %q", tc.name, code, line, tc.code, tc.says)
		}
	}
	resp, err := http.Get(gl.srv.URL + "/v1/exec")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/exec: %s, want 405", resp.Status)
	}
	// The client reports refusals as *HTTPError with the daemon's line.
	_, err = gl.c.Guard(context.Background(), schema.ExecGuardRequest{Term: other.String(), GraceMS: 200, PollMS: 50})
	var he *client.HTTPError
	if !errors.As(err, &he) || he.Code != http.StatusConflict || !strings.Contains(err.Error(), "POST /v1/exec") {
		t.Errorf("client.Guard in another term: %v, want an HTTPError 409 naming POST /v1/exec", err)
	}
	gl.a.Close()
	if code, line := gl.post(t, guardReq(gl.term), nil); code != http.StatusServiceUnavailable || !strings.Contains(line, "stopping") {
		t.Errorf("after Close: %d %q, want 503 stopping", code, line)
	}
}

// FuzzGuardRequest: the decoder of POST /v1/exec never panics, its errors
// say what is wrong, and what it accepts encodes back to a request it
// reads as the same.
func FuzzGuardRequest(f *testing.F) {
	for _, s := range []string{
		`{"term":"5.1","grace_ms":200,"poll_ms":50}`,
		`{"term":"1795710000001.3","grace_ms":1,"poll_ms":0}`,
		`{"term":"5.1","grace_ms":200,"poll_ms":50,"future":true}`,
		`{"term":"5.1","grace_ms":200,"poll_ms":50} {}`,
		`{"term":"18446744073709551615.18446744073709551615","grace_ms":60000,"poll_ms":60000}`,
		`{"term":"5.1","grace_ms":1e3}`,
		`[]`, `null`, ``, `{"term":null}`, "{\"term\":\"5.1\",\"grace_ms\":200}\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseGuardRequest(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if req.term.IsZero() || req.grace <= 0 || req.grace > maxGuardTiming || req.poll < 0 || req.poll > maxGuardTiming {
			t.Fatalf("accepted %q as %+v", body, req)
		}
		again, err := json.Marshal(schema.ExecGuardRequest{Term: req.term.String(), GraceMS: req.grace.Milliseconds(), PollMS: req.poll.Milliseconds()})
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseGuardRequest(again)
		if err != nil || back != req {
			t.Fatalf("%q read as %+v, encoded as %s, read back as %+v (%v)", body, req, again, back, err)
		}
	})
}

func TestGuardDirPID(t *testing.T) {
	for name, want := range map[string]int{
		"groupd-77": 77, "groupd-77-2": 77, "groupd-77-64": 77,
		"groupd-": 0, "groupd-x": 0, "groupd-077": 0, "groupd-77-1": 0, "groupd-77-02": 0,
		"groupd-77-2-3": 0, "groupd--2": 0, "groupd-0": 0, "exec-1": 0, "groupd-77x": 0,
	} {
		pid, ok := guardDirPID(name)
		if ok != (want != 0) || pid != want && ok {
			t.Errorf("guardDirPID(%q) = %d, %v; want %d", name, pid, ok, want)
		}
	}
}
