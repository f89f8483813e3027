package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/group"
)

// leaderDaemon is a fake daemon's GET /v1/leader: it answers the first
// lead requests as the leader of term with a lease of lease, then does
// what after says: "freeze" (never answers, like a SIGSTOPped daemon),
// "no" (503: no longer the leader) or "term" (leader of a newer term).
type leaderDaemon struct {
	lead  int
	lease time.Duration // 0: no lease (mode off)
	after string

	mu       sync.Mutex
	n        int
	lastLead time.Time // when the last leader answer was made
}

func (d *leaderDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/leader" {
		http.Error(w, "no such endpoint", http.StatusNotFound)
		return
	}
	d.mu.Lock()
	d.n++
	n := d.n
	d.mu.Unlock()
	ans := group.LeaderAnswer{Leader: true, ID: 4, Name: "n4", Term: "7.4", Group: "7.4", LeaderID: 4}
	if n > d.lead {
		switch d.after {
		case "freeze":
			<-r.Context().Done()
			return
		case "no":
			ans = group.LeaderAnswer{ID: 4, Name: "n4", Group: "8.5", LeaderID: 5}
		case "term":
			ans.Term, ans.Group = "8.4", "8.4"
		}
	}
	if ans.Leader && d.lease > 0 {
		ms := d.lease.Milliseconds()
		ans.LeaseRemainingMS = &ms
		ans.Expect = 3
	}
	if ans.Leader {
		d.mu.Lock()
		d.lastLead = time.Now()
		d.mu.Unlock()
	}
	b, _ := json.Marshal(ans)
	w.Header().Set("Content-Type", "application/json")
	if !ans.Leader {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	w.Write(b)
}

// TestExecStops runs `groupd exec` against a fake daemon and checks that
// the command is stopped, and gone, when the leadership ends, and in
// quorum mode before the last lease read could run out, even when the
// daemon stops answering mid-request.
func TestExecStops(t *testing.T) {
	cases := []struct {
		name  string
		d     *leaderDaemon
		why   string
		bound time.Duration // the command is gone this long after the last leader answer
	}{
		{"frozen daemon, lease", &leaderDaemon{lead: 3, lease: 600 * time.Millisecond, after: "freeze"},
			"the lease would run out", 600*time.Millisecond - 20*time.Millisecond},
		{"frozen daemon, no lease", &leaderDaemon{lead: 3, after: "freeze"},
			"the daemon did not answer", time.Second},
		{"no longer leader", &leaderDaemon{lead: 3, lease: 2 * time.Second, after: "no"},
			"no longer leads", time.Second},
		{"new term", &leaderDaemon{lead: 3, lease: 2 * time.Second, after: "term"},
			"term changed to 8.4", time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := serve(t, tc.d)
			pidFile := filepath.Join(t.TempDir(), "pid")
			code, _, errOut := runCLI(t, "exec", "--api", addr, "--grace", "150ms", "--poll", "20ms", "--",
				"sh", "-c", `echo $$ > "$0"; [ "$GROUPD_TERM" = 7.4 ] || exit 9; exec sleep 30`, pidFile)
			gone := time.Now()
			if code != exitNotLeader {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitNotLeader, errOut)
			}
			if !strings.Contains(errOut, tc.why) {
				t.Errorf("stderr does not say %q:\n%s", tc.why, errOut)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the command never ran: %v", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
				t.Errorf("command (pid %d) still exists after exec returned: kill 0 = %v", pid, err)
			}
			tc.d.mu.Lock()
			last := tc.d.lastLead
			tc.d.mu.Unlock()
			if after := gone.Sub(last); after > tc.bound {
				t.Errorf("command was gone %v after the last leader answer, want <= %v", after, tc.bound)
			}
		})
	}
}
