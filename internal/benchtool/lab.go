package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// lab is a running scripts/netem lab: node I has its API socket at
// RUN/nodeI/api.sock and its daemon's pid in RUN/nodeI/pid.
type lab struct {
	run string
}

func (l lab) sock(i int) string { return filepath.Join(l.run, fmt.Sprintf("node%d", i), "api.sock") }

func (l lab) pid(i int) (int, error) {
	b, err := os.ReadFile(filepath.Join(l.run, fmt.Sprintf("node%d", i), "pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// unixClient talks HTTP to a daemon's API over its unix socket.
func unixClient(sock string, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		DisableKeepAlives: true,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// statusJ is the part of the API's Status JSON the benchmarks read.
type statusJ struct {
	ID          uint64   `json:"id"`
	State       string   `json:"state"`
	Role        string   `json:"role"`
	Group       string   `json:"group"`
	Coordinator uint64   `json:"coordinator"`
	Members     []uint64 `json:"members"`
	Version     uint64   `json:"version"`
}

// eventJ is one line of GET /v1/events.
type eventJ struct {
	Time   time.Time `json:"time"`
	Node   uint64    `json:"node"`
	Reason string    `json:"reason"`
	New    statusJ   `json:"new"`
}

type nodeEvent struct {
	node int
	ev   eventJ
	err  error // the stream ended
}

// watch streams the events of nodes into one channel until ctx ends. It
// retries a refused connection for up to 10 s (a node that was just
// restarted).
func (l lab) watch(ctx context.Context, nodes []int) (<-chan nodeEvent, error) {
	ch := make(chan nodeEvent, 4096)
	for _, i := range nodes {
		var resp *http.Response
		deadline := time.Now().Add(10 * time.Second)
		for {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://groupd/v1/events", nil)
			if err != nil {
				return nil, err
			}
			resp, err = unixClient(l.sock(i), 0).Do(req)
			if err == nil && resp.StatusCode == http.StatusOK {
				break
			}
			if err == nil {
				resp.Body.Close()
				err = fmt.Errorf("HTTP %s", resp.Status)
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("node %d: events: %w", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		go func(i int, body io.ReadCloser) {
			defer body.Close()
			sc := bufio.NewScanner(body)
			sc.Buffer(make([]byte, 64<<10), 8<<20)
			for sc.Scan() {
				var e eventJ
				if json.Unmarshal(sc.Bytes(), &e) != nil {
					continue
				}
				select {
				case ch <- nodeEvent{node: i, ev: e}:
				case <-ctx.Done():
					return
				}
			}
			select {
			case ch <- nodeEvent{node: i, err: io.EOF}:
			case <-ctx.Done():
			}
		}(i, resp.Body)
	}
	return ch, nil
}

// view is a node's latest status and when its view (state, group,
// coordinator, members) last changed, by the daemon's own event times.
type view struct {
	st    statusJ
	since time.Time
	seen  bool
}

// tracker follows the views of a set of nodes.
type tracker struct {
	views    map[int]*view
	firstAt  time.Time // earliest non-snapshot event after mark
	mark     time.Time
	nonSnaps int
}

func newTracker() *tracker { return &tracker{views: map[int]*view{}} }

// setMark makes firstAt the earliest non-snapshot event at or after t.
func (t *tracker) setMark(at time.Time) { t.mark, t.firstAt, t.nonSnaps = at, time.Time{}, 0 }

func sameView(a, b statusJ) bool {
	return a.State == b.State && a.Group == b.Group && a.Coordinator == b.Coordinator && slices.Equal(a.Members, b.Members)
}

func (t *tracker) apply(ne nodeEvent) {
	if ne.err != nil {
		return
	}
	v := t.views[ne.node]
	if v == nil {
		v = &view{}
		t.views[ne.node] = v
	}
	if !v.seen || !sameView(v.st, ne.ev.New) {
		v.since = ne.ev.Time
	}
	v.st, v.seen = ne.ev.New, true
	if ne.ev.Reason != "snapshot" && !t.mark.IsZero() && !ne.ev.Time.Before(t.mark) {
		t.nonSnaps++
		if t.firstAt.IsZero() || ne.ev.Time.Before(t.firstAt) {
			t.firstAt = ne.ev.Time
		}
	}
}

// doneAt is the latest "since" among nodes: when the last of them reached
// its current view.
func (t *tracker) doneAt(nodes []int) time.Time {
	var d time.Time
	for _, i := range nodes {
		if v := t.views[i]; v != nil && v.since.After(d) {
			d = v.since
		}
	}
	return d
}

// converged is lab.sh wait's condition: every node Normal in one group whose
// coordinator is the highest of nodes, listing exactly nodes.
func (t *tracker) converged(nodes []int) bool {
	want := slices.Max(nodes)
	members := sortedU64(nodes)
	var group string
	for _, i := range nodes {
		v := t.views[i]
		if v == nil || !v.seen || v.st.State != "normal" || v.st.Coordinator != uint64(want) || !slices.Equal(v.st.Members, members) {
			return false
		}
		if group == "" {
			group = v.st.Group
		}
		if v.st.Group != group {
			return false
		}
	}
	return true
}

// failedOver is invariant L2's condition, as the simulator checks it
// (internal/invariant.FailedOver): every survivor Normal in one group whose
// coordinator is a survivor, and every survivor's member list holds every
// survivor.
func (t *tracker) failedOver(survivors []int) bool {
	var group string
	for _, i := range survivors {
		v := t.views[i]
		if v == nil || !v.seen || v.st.State != "normal" || !slices.Contains(survivors, int(v.st.Coordinator)) {
			return false
		}
		if group == "" {
			group = v.st.Group
		}
		if v.st.Group != group {
			return false
		}
		for _, o := range survivors {
			if !slices.Contains(v.st.Members, uint64(o)) {
				return false
			}
		}
	}
	return true
}

func sortedU64(nodes []int) []uint64 {
	out := make([]uint64, len(nodes))
	for i, n := range nodes {
		out[i] = uint64(n)
	}
	slices.Sort(out)
	return out
}

// waitFor applies events until cond holds (checked after every event) or
// the deadline passes.
func (t *tracker) waitFor(ch <-chan nodeEvent, cond func() bool, deadline time.Time) error {
	if cond() {
		return nil
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		select {
		case ne := <-ch:
			t.apply(ne)
			if cond() {
				return nil
			}
		case <-timer.C:
			return errors.New("timed out; views: " + t.describe())
		}
	}
}

// drain applies what is already queued, without waiting.
func (t *tracker) drain(ch <-chan nodeEvent) {
	for {
		select {
		case ne := <-ch:
			t.apply(ne)
		default:
			return
		}
	}
}

func (t *tracker) describe() string {
	ids := make([]int, 0, len(t.views))
	for i := range t.views {
		ids = append(ids, i)
	}
	sort.Ints(ids)
	var b strings.Builder
	for _, i := range ids {
		v := t.views[i]
		fmt.Fprintf(&b, "[%d %s %s c=%d %v] ", i, v.st.State, v.st.Group, v.st.Coordinator, v.st.Members)
	}
	return b.String()
}

// ---- metrics ---------------------------------------------------------------

// scrape reads one node's /metrics into series -> value.
func (l lab) scrape(i int) (map[string]float64, error) {
	resp, err := unixClient(l.sock(i), 5*time.Second).Get("http://groupd/metrics")
	if err != nil {
		return nil, fmt.Errorf("node %d: metrics: %w", i, err)
	}
	defer resp.Body.Close()
	return parseProm(resp.Body)
}

func parseProm(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		k := strings.LastIndexByte(line, ' ')
		if k < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[k+1:], 64)
		if err != nil {
			continue
		}
		out[line[:k]] = v
	}
	return out, sc.Err()
}

// scrapeAll scrapes nodes concurrently.
func (l lab) scrapeAll(nodes []int) (map[int]map[string]float64, error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[int]map[string]float64{}
	var firstErr error
	for _, i := range nodes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			m, err := l.scrape(i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			out[i] = m
		}(i)
	}
	wg.Wait()
	return out, firstErr
}

// byType sums a counter family ("groupd_messages_sent_total") over nodes,
// by its type label, as after - before.
func byType(family string, before, after map[int]map[string]float64) map[string]float64 {
	out := map[string]float64{}
	prefix := family + `{type="`
	for i, a := range after {
		b := before[i]
		for k, v := range a {
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			typ := strings.TrimSuffix(k[len(prefix):], `"}`)
			if d := v - b[k]; d != 0 {
				out[typ] += d
			}
		}
	}
	return out
}

// ---- helpers ---------------------------------------------------------------

// load returns the 1, 5 and 15 minute load averages.
func load() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

// phaseSleep sleeps a random time in [0, max), so that faults do not
// always strike at the same point of the nodes' periodic timers.
func phaseSleep(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	d := time.Duration(rand.Int63n(int64(max)))
	time.Sleep(d)
	return d
}

func rangeInts(a, b int) []int {
	var out []int
	for i := a; i <= b; i++ {
		out = append(out, i)
	}
	return out
}

func secs(d time.Duration) float64 { return float64(d.Round(time.Microsecond)) / 1e9 }

// emit prints a result as one JSON line on stdout.
func emit(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s\n", b)
	return err
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}
