package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groupd/groupd/internal/cgroup"
	"github.com/groupd/groupd/schema"
)

// guardDaemon is a fake daemon with POST /v1/exec beside leaderDaemon's
// GET /v1/leader. mode says what the guard does: "501" (cannot guard
// here), "409" (no longer leads), "hang" (never answers), "end" (a guard
// over cg that the daemon ends after endAfter, without a kill) or "kill"
// (the daemon kills cg after endAfter and says so).
type guardDaemon struct {
	*leaderDaemon
	mode     string
	cg       *cgroup.Group
	endAfter time.Duration

	mu       sync.Mutex
	tries    int
	closedAt []bool // per guard: whether cg still had processes when exec closed it
}

func (d *guardDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/exec" {
		d.leaderDaemon.ServeHTTP(w, r)
		return
	}
	var req schema.ExecGuardRequest
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&req) != nil ||
		req.Term != "7.4" || req.GraceMS != 150 || req.PollMS != 20 {
		http.Error(w, fmt.Sprintf("unexpected request %s %+v", r.Method, req), http.StatusBadRequest)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	d.mu.Lock()
	d.tries++
	d.mu.Unlock()
	switch d.mode {
	case "501":
		http.Error(w, "this daemon cannot make a cgroup for the guard: cgroup: no cgroup2 file system is mounted", http.StatusNotImplemented)
		return
	case "409":
		http.Error(w, "this node does not lead in term 7.4 (it does not lead)", http.StatusConflict)
		return
	case "hang":
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	_ = enc.Encode(schema.ExecGuard{ID: 1, Term: "7.4", Cgroup: d.cg.Path(), Time: time.Now()})
	w.(http.Flusher).Flush()
	select {
	case <-r.Context().Done():
	case <-time.After(d.endAfter):
		last := schema.ExecGuard{ID: 1, Term: "7.4", End: "the lease of term 7.4 ran out unrenewed", Time: time.Now()}
		if d.mode == "kill" {
			last.Killed = d.cg.Kill() == nil
		}
		_ = enc.Encode(last)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	populated, _ := d.cg.Populated()
	d.mu.Lock()
	d.closedAt = append(d.closedAt, populated)
	d.mu.Unlock()
}

// testCgroup makes a cgroup under this process's, or skips the test.
func testCgroup(t *testing.T) *cgroup.Group {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: exec starts CMD into a cgroup")
	}
	self, err := cgroup.Self()
	if err != nil {
		t.Skipf("needs cgroup v2: %v", err)
	}
	g, err := cgroup.Create(filepath.Join(self, fmt.Sprintf("exec-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_"))))
	if err != nil {
		t.Skipf("cannot make a cgroup under %s: %v", self, err)
	}
	t.Cleanup(func() {
		_ = g.Kill()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = g.WaitEmpty(ctx)
		_ = g.Remove()
	})
	return g
}

// TestExecGuardUnavailable: a daemon that cannot guard here: exec says so
// in one line, with the reason and what does not hold, and runs CMD.
func TestExecGuardUnavailable(t *testing.T) {
	d := &guardDaemon{leaderDaemon: &leaderDaemon{lead: 1000, lease: 2 * time.Second}, mode: "501"}
	out := filepath.Join(t.TempDir(), "ran")
	code, _, errOut := runCLI(t, "exec", "--api", serve(t, d), "--grace", "150ms", "--poll", "20ms", "--",
		"sh", "-c", `echo ran > "$0"`, out)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(out); string(b) != "ran\n" {
		t.Errorf("the command did not run")
	}
	var warns []string
	for _, l := range strings.Split(errOut, "\n") {
		if strings.Contains(l, "warning: no guard") {
			warns = append(warns, l)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "no cgroup2 file system is mounted") ||
		!strings.Contains(warns[0], "what CMD started in a new session (setsid) lives on") ||
		!strings.Contains(warns[0], "if exec is stopped or starved, nothing stops CMD") {
		t.Errorf("want one line saying why there is no guard and what does not hold; stderr:\n%s", errOut)
	}
}

// TestExecGuardWaits: exec does not start CMD while the daemon refuses
// the guard because it no longer leads in the term, nor while a
// registration goes unanswered (a frozen daemon): each attempt gives up
// within the lease, and CMD never runs.
func TestExecGuardWaits(t *testing.T) {
	for _, mode := range []string{"409", "hang"} {
		t.Run(mode, func(t *testing.T) {
			d := &guardDaemon{leaderDaemon: &leaderDaemon{lead: 1000, lease: 600 * time.Millisecond}, mode: mode}
			out := filepath.Join(t.TempDir(), "ran")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			code, _, errOut := runCLIContext(t, ctx, "exec", "--api", serve(t, d), "--grace", "150ms", "--poll", "20ms", "--",
				"sh", "-c", `echo ran > "$0"`, out)
			if code != 0 {
				t.Fatalf("exit %d, want 0 (asked to stop); stderr:\n%s", code, errOut)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("the command ran without a guard the daemon refused or did not answer")
			}
			d.mu.Lock()
			tries := d.tries
			d.mu.Unlock()
			// An unanswered registration gives up at the lease read
			// minus the grace (450 ms): 2 s leave room for three.
			if tries < 2 {
				t.Errorf("%d registrations in 2 s, want several (each bounded by the lease); stderr:\n%s", tries, errOut)
			}
			if strings.Contains(errOut, "warning: no guard") {
				t.Errorf("a refusal or a silence is not a platform's limit:\n%s", errOut)
			}
		})
	}
}

// TestExecGuardEnds: exec starts CMD inside the guard's cgroup; when the
// daemon ends the guard, exec stops CMD (exit 3, saying why); when the
// daemon killed CMD, exec says that. Either way exec closes the guard
// only once the cgroup is empty.
func TestExecGuardEnds(t *testing.T) {
	for _, mode := range []string{"end", "kill"} {
		t.Run(mode, func(t *testing.T) {
			cg := testCgroup(t)
			d := &guardDaemon{leaderDaemon: &leaderDaemon{lead: 1000, lease: 2 * time.Second}, mode: mode, cg: cg, endAfter: 400 * time.Millisecond}
			pidFile := filepath.Join(t.TempDir(), "pid")
			code, _, errOut := runCLI(t, "exec", "--api", serve(t, d), "--grace", "150ms", "--poll", "20ms", "--",
				"sh", "-c", `cat /proc/self/cgroup > "$0"; setsid sleep 600 & exec sleep 600`, pidFile)
			if code != exitNotLeader {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitNotLeader, errOut)
			}
			want := "the daemon ended its guard: the lease of term 7.4 ran out unrenewed"
			if mode == "kill" {
				want = "the daemon killed sh: the lease of term 7.4 ran out unrenewed"
			}
			if !strings.Contains(errOut, want) || !strings.Contains(errOut, "in cgroup "+cg.Path()) {
				t.Errorf("stderr does not say %q, nor that CMD ran in cgroup %s:\n%s", want, cg.Path(), errOut)
			}
			if b, _ := os.ReadFile(pidFile); !strings.Contains(string(b), "/"+filepath.Base(cg.Path())+"\n") {
				t.Errorf("CMD's /proc/self/cgroup is %q, want it in %s", b, cg.Path())
			}
			if p, err := cg.Populated(); err != nil || p {
				t.Errorf("exec returned with processes left in the guard's cgroup (%v)", err)
			}
			waitClosed := time.Now().Add(5 * time.Second)
			for {
				d.mu.Lock()
				closed := slices.Clone(d.closedAt)
				d.mu.Unlock()
				if len(closed) == 1 {
					if closed[0] {
						t.Errorf("exec closed the guard before its cgroup was empty")
					}
					break
				}
				if time.Now().After(waitClosed) {
					t.Fatalf("the guard's connection was not closed (%d closes)", len(closed))
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
