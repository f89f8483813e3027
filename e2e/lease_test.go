//go:build linux

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// Exclusive, fenced leadership (issue 23), with real daemons: 5 nodes on
// the lan profile with --expect 5. Every node's GET /v1/leader is polled
// every 20 ms, and every node runs `groupd exec` with a child that appends
// a line (its clock, its GROUPD_TERM) to a file every 20 ms, as a writer to
// a fenced store would. Through a partition with the leader on the
// minority side, a 3 s freeze of the leader, and both one-way cuts, no two
// nodes may answer 200 at once, the terms of the 200 answers only grow,
// and no two exec children ever run at once, in growing terms. The
// recorded history is replayed through LP1 as well (teardown).

// leaderPoll is one answer of GET /v1/leader, with when the request left
// and when the answer came.
type leaderPoll struct {
	node       int
	sent, recv time.Time
	leader     bool
	term       wire.GroupNumber
}

// leasePoller polls every node's /v1/leader every 20 ms.
type leasePoller struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu    sync.Mutex
	polls []leaderPoll
	errs  int
	bad   []string // answers that break the API's contract
}

func (l *tlab) pollLeases(ids []int) *leasePoller {
	p := &leasePoller{stop: make(chan struct{})}
	for _, i := range ids {
		c := l.Client(i)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-tick.C:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				sent := time.Now()
				ans, err := c.Leader(ctx)
				recv := time.Now()
				cancel()
				p.mu.Lock()
				if err != nil {
					p.errs++
				} else {
					lp := leaderPoll{node: i, sent: sent, recv: recv, leader: ans.Leader}
					if ans.Leader {
						term, perr := wire.ParseGroupNumber(ans.Term)
						if perr != nil || (ans.LeaseRemainingMS == nil || *ans.LeaseRemainingMS <= 0) {
							p.bad = append(p.bad, fmt.Sprintf("node %d: 200 with term %q, lease %v", i, ans.Term, ans.LeaseRemainingMS))
						}
						lp.term = term
					}
					p.polls = append(p.polls, lp)
				}
				p.mu.Unlock()
			}
		}()
	}
	return p
}

func (p *leasePoller) end() []leaderPoll {
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.polls)
}

// since returns the polls sent at or after t.
func (p *leasePoller) since(t time.Time) []leaderPoll {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []leaderPoll
	for _, lp := range p.polls {
		if !lp.sent.Before(t) {
			out = append(out, lp)
		}
	}
	return out
}

// waitLeader waits until a poll sent after from says node, or any node of
// ids when node is 0, is a primary leader; it returns the poll.
func (p *leasePoller) waitLeader(t *testing.T, what string, ids []int, from time.Time, timeout time.Duration) leaderPoll {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, lp := range p.since(from) {
			if lp.leader && slices.Contains(ids, lp.node) {
				return lp
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("e2e: %s: no primary leader among %s within %v", what, list(ids), timeout)
	return leaderPoll{}
}

// leaderRuns turns polls into each node's stretches of 200 answers: from
// the sending of the first to the answer of the last, bounding when it
// may have been a primary leader (a 503 or the end of the polls ends a
// stretch).
type leaderRun struct {
	node     int
	term     wire.GroupNumber
	from, to time.Time
}

func leaderRuns(polls []leaderPoll) []leaderRun {
	byNode := map[int][]leaderPoll{}
	for _, lp := range polls {
		byNode[lp.node] = append(byNode[lp.node], lp)
	}
	var runs []leaderRun
	for node, ps := range byNode {
		slices.SortFunc(ps, func(a, b leaderPoll) int { return a.sent.Compare(b.sent) })
		var cur *leaderRun
		for _, lp := range ps {
			switch {
			case lp.leader && cur != nil && cur.term == lp.term:
				cur.to = lp.recv
			case lp.leader:
				if cur != nil {
					runs = append(runs, *cur)
				}
				cur = &leaderRun{node: node, term: lp.term, from: lp.sent, to: lp.recv}
			case cur != nil:
				runs = append(runs, *cur)
				cur = nil
			}
		}
		if cur != nil {
			runs = append(runs, *cur)
		}
	}
	slices.SortFunc(runs, func(a, b leaderRun) int { return a.from.Compare(b.from) })
	return runs
}

// execChild is one `groupd exec` on a node: its process and the file its
// child writes.
type execChild struct {
	node int
	cmd  *exec.Cmd
	file string
	out  *os.File
}

// startExecs runs `groupd exec --repeat` on each node: whenever the node
// leads, its child appends "UNIXNANO TERM" every 20 ms.
func (l *tlab) startExecs(ids []int) []*execChild {
	l.t.Helper()
	var xs []*execChild
	for _, i := range ids {
		file := filepath.Join(l.NodeDir(i), "fenced-writes")
		out, err := os.Create(filepath.Join(l.NodeDir(i), "exec.log"))
		if err != nil {
			l.t.Fatal(err)
		}
		cmd, err := l.Command(i, groupdBin, "exec", "--repeat", "--api", "unix:"+l.Sock(i), "--",
			"sh", "-c", `while :; do echo "$(date +%s%N) $GROUPD_TERM" >> "$0"; sleep 0.02; done`, file)
		if err != nil {
			l.t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			l.t.Fatalf("e2e: groupd exec on node %d: %v", i, err)
		}
		xs = append(xs, &execChild{node: i, cmd: cmd, file: file, out: out})
	}
	return xs
}

// writeRun is one exec child's writes: node, term and the first and last
// write.
type writeRun struct {
	node     int
	term     string
	from, to time.Time
	n        int
}

// endExecs stops every exec still running (SIGTERM: it stops its child)
// and returns each node's runs of writes, per term, with exec's output.
// childWrote waits, at most timeout, until node's exec child has
// written a line in term; it fails t if it has not by then.
func childWrote(t *testing.T, xs []*execChild, node int, term string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for _, x := range xs {
		if x.node != node {
			continue
		}
		for {
			b, _ := os.ReadFile(x.file)
			if strings.Contains(string(b), " "+term+"\n") {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("node %d's exec child wrote nothing in term %s within %v", node, term, timeout)
				return
			}
			time.Sleep(20 * time.Millisecond) // polling the child's file
		}
	}
}

func endExecs(t *testing.T, xs []*execChild) ([]writeRun, map[int]string) {
	logs := map[int]string{}
	var runs []writeRun
	for _, x := range xs {
		if x.cmd.ProcessState == nil {
			_ = x.cmd.Process.Signal(syscall.SIGTERM)
			_ = x.cmd.Wait()
		}
		x.out.Close()
		b, _ := os.ReadFile(x.out.Name())
		logs[x.node] = string(b)
		f, err := os.Open(x.file)
		if err != nil {
			continue // this node's child never ran
		}
		sc := bufio.NewScanner(f)
		var cur *writeRun
		for sc.Scan() {
			ns, term, ok := strings.Cut(sc.Text(), " ")
			v, err := strconv.ParseInt(ns, 10, 64)
			if !ok || err != nil {
				t.Errorf("node %d's child wrote %q", x.node, sc.Text())
				continue
			}
			at := time.Unix(0, v)
			if cur == nil || cur.term != term {
				if cur != nil {
					runs = append(runs, *cur)
				}
				cur = &writeRun{node: x.node, term: term, from: at}
			}
			cur.to, cur.n = at, cur.n+1
		}
		if cur != nil {
			runs = append(runs, *cur)
		}
		f.Close()
	}
	slices.SortFunc(runs, func(a, b writeRun) int { return a.from.Compare(b.from) })
	return runs, logs
}

// freeze stops node i's daemon for d (SIGSTOP), then lets it go on
// (SIGCONT), and returns when it was stopped; it sends that instant on
// stopped as soon as the node is stopped.
func (l *tlab) freeze(i int, d time.Duration, stopped chan<- time.Time) time.Time {
	l.t.Helper()
	pid, err := l.PID(i)
	if err != nil {
		l.t.Fatalf("e2e: %v", err)
	}
	at := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		l.t.Fatalf("e2e: SIGSTOP node %d: %v", i, err)
	}
	l.t.Logf("froze node %d (pid %d) for %v", i, pid, d)
	stopped <- at
	time.Sleep(d) // the freeze's duration: the fault, not a synchronisation
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		l.t.Fatalf("e2e: SIGCONT node %d: %v", i, err)
	}
	return at
}

func TestLeaseExclusive(t *testing.T) {
	t.Parallel()
	requireFaults(t)
	l := newLab(t, 5, "lan", "--expect", "5")
	l.start(l.all()...)
	l.convergedUnder("nodes converge", l.all(), 5)
	p := l.pollLeases(l.all())
	first := p.waitLeader(t, "the first lease", []int{5}, time.Time{}, 10*time.Second)
	t.Logf("node 5 is a primary leader in term %s", first.term)
	checkLeaderAPI(t, l, 5, first.term)
	xs := l.startExecs(l.all())

	type round struct {
		name  string
		fault func() time.Time // applies the fault, returns when
		end   func()           // ends it
	}
	others := []int{1, 2, 3, 4}
	rounds := []round{
		{"partition {4,5}|{1,2,3}", func() time.Time { return l.partition([]int{4, 5}, []int{1, 2, 3}).Start }, func() { l.heal() }},
		{"freeze of the leader (3 s)", nil, nil},
		{"nobody hears the leader", func() time.Time { return l.cut(5, others...).Start }, func() { l.heal() }},
		{"the leader hears nobody", func() time.Time {
			var at time.Time
			for k, i := range others {
				w := l.cut(i, 5)
				if k == 0 {
					at = w.Start
				}
			}
			return at
		}, func() { l.heal() }},
	}
	var report []string
	for _, r := range rounds {
		var at time.Time
		var newLeader leaderPoll
		if r.fault == nil {
			// The freeze: the others elect while node 5 is stopped.
			done, stopped := make(chan time.Time, 1), make(chan time.Time, 1)
			go func() { done <- l.freeze(5, 3*time.Second, stopped) }()
			var since time.Time
			select {
			case since = <-stopped:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: node 5 was not stopped within 10 s", r.name)
			}
			newLeader = p.waitLeader(t, r.name, others, since, 10*time.Second)
			at = <-done
		} else {
			at = r.fault()
			newLeader = p.waitLeader(t, r.name, others, at, 15*time.Second)
			time.Sleep(time.Second)
			r.end()
		}
		var lastOld time.Time
		for _, lp := range p.since(at.Add(-time.Second)) {
			if lp.node == 5 && lp.leader && lp.recv.Before(newLeader.sent) {
				lastOld = lp.recv
			}
		}
		report = append(report, fmt.Sprintf("%s: node 5 last answered primary leader %v after the fault, node %d first %v after it (term %s)",
			r.name, lastOld.Sub(at).Round(time.Millisecond), newLeader.node, newLeader.sent.Sub(at).Round(time.Millisecond), newLeader.term))
		// Back to one group under node 5, which leads again.
		l.convergedUnder("nodes converge after: "+r.name, l.all(), 5)
		back := p.waitLeader(t, "node 5 leads again after: "+r.name, []int{5}, time.Now(), 15*time.Second)
		// Its exec sees the leadership and starts its child: wait for the
		// child's first write before the next fault, or a loaded host
		// can take the leadership away before the child ever runs.
		childWrote(t, xs, 5, back.term.String(), 10*time.Second)
	}
	// Node 5's exec sees its leadership and starts its child: wait until
	// the child has written in node 5's term.
	childWrote(t, xs, 5, l.status(5).Term.String(), 10*time.Second)
	polls := p.end()
	writes, logs := endExecs(t, xs)
	for _, r := range report {
		t.Log(r)
	}

	// No two primary leaders at once, in growing terms, by the polls.
	runs := leaderRuns(polls)
	for a := range runs {
		for b := a + 1; b < len(runs); b++ {
			x, y := runs[a], runs[b]
			if x.node != y.node && y.from.Before(x.to) && x.from.Before(y.to) {
				t.Errorf("two primary leaders at once by the polls: node %d (term %s) %s–%s and node %d (term %s) %s–%s",
					x.node, x.term, x.from.Format("15:04:05.000"), x.to.Format("15:04:05.000"),
					y.node, y.term, y.from.Format("15:04:05.000"), y.to.Format("15:04:05.000"))
			}
		}
		if a > 0 && runs[a].term.Less(runs[a-1].term) {
			t.Errorf("terms of the primary leaders went back: %s (node %d) after %s (node %d)", runs[a].term, runs[a].node, runs[a-1].term, runs[a-1].node)
		}
	}
	// The exec children: never two at once, in growing terms (a store
	// that refuses lower terms refuses none of their writes).
	for a := range writes {
		if a > 0 {
			x, y := writes[a-1], writes[a]
			if x.node != y.node && y.from.Before(x.to) {
				t.Errorf("two exec children ran at once: node %d (term %s) until %s, node %d (term %s) from %s",
					x.node, x.term, x.to.Format("15:04:05.000"), y.node, y.term, y.from.Format("15:04:05.000"))
			}
			tx, _ := wire.ParseGroupNumber(x.term)
			ty, _ := wire.ParseGroupNumber(y.term)
			if ty.Less(tx) {
				t.Errorf("an exec child wrote with term %s after one wrote with %s", y.term, x.term)
			}
		}
	}
	if len(writes) < 2*len(rounds) {
		t.Errorf("%d runs of exec children over %d rounds: want at least %d (a new leader's, and node 5's back)", len(writes), len(rounds), 2*len(rounds))
	}
	gap := time.Duration(-1)
	for a := 1; a < len(writes); a++ {
		if d := writes[a].from.Sub(writes[a-1].to); writes[a].node != writes[a-1].node && (gap < 0 || d < gap) {
			gap = d
		}
	}
	t.Logf("%d polls (%d unanswered), %d primary stretches, %d exec children's runs; the shortest gap between two nodes' children: %v",
		len(polls), p.errs, len(runs), len(writes), gap)
	for _, b := range p.bad {
		t.Errorf("/v1/leader: %s", b)
	}
	if t.Failed() {
		for i, s := range logs {
			t.Logf("groupd exec on node %d:\n%s", i, s)
		}
	}
}

// checkLeaderAPI checks GET /v1/leader's contract on every node: 200 with
// the term in X-Groupd-Term on the leader, 503 on the others, JSON both.
func checkLeaderAPI(t *testing.T, l *tlab, leader int, term wire.GroupNumber) {
	t.Helper()
	for _, i := range l.all() {
		sock := l.Sock(i)
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}, Timeout: 2 * time.Second}
		resp, err := hc.Get("http://groupd/v1/leader")
		if err != nil {
			t.Errorf("GET /v1/leader on node %d: %v", i, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := http.StatusServiceUnavailable
		if i == leader {
			want = http.StatusOK
		}
		if resp.StatusCode != want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET /v1/leader on node %d: %s %q, want %d application/json; body %s", i, resp.Status, resp.Header.Get("Content-Type"), want, body)
		}
		if i == leader && resp.Header.Get("X-Groupd-Term") != term.String() {
			t.Errorf("GET /v1/leader on the leader: X-Groupd-Term %q, want %s", resp.Header.Get("X-Groupd-Term"), term)
		}
	}
}
