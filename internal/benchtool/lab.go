package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/internal/history"
	netlab "github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/schema" // the package name group is taken here (report.go)
)

// lab is a running scripts/netem lab (internal/lab), known by its run dir:
// the benchmarks find each node's API socket and daemon there.
type lab struct {
	run string
}

// open returns the lab of the run dir.
func (l lab) open() (*netlab.Lab, error) {
	return netlab.Open(l.run, nil)
}

// pid is node i's daemon's process ID.
func (l lab) pid(i int) (int, error) {
	nl, err := l.open()
	if err != nil {
		return 0, err
	}
	return nl.PID(i)
}

// sock is node i's API socket.
func (l lab) sock(i int) string { return netlab.SockPath(l.run, i) }

// client is node i's API client (package client: the one client of the
// daemons' API).
func (l lab) client(i int) (*client.Client, error) {
	nl, err := l.open()
	if err != nil {
		return nil, err
	}
	return nl.Client(i), nil
}

type nodeEvent struct {
	node int
	ev   schema.Event
	err  error // the stream ended
}

// watch streams the events of nodes into one channel until ctx ends. It
// retries a refused connection for up to 10 s (a node that was just
// restarted).
func (l lab) watch(ctx context.Context, nodes []int) (<-chan nodeEvent, error) {
	ch := make(chan nodeEvent, 4096)
	for _, i := range nodes {
		c, err := l.client(i)
		if err != nil {
			return nil, err
		}
		var s *client.Stream
		deadline := time.Now().Add(10 * time.Second)
		for {
			if s, err = c.Watch(ctx); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("node %d: events: %w", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		go func() {
			defer s.Close()
			for {
				e, err := s.Next()
				if err != nil {
					break
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
		}()
	}
	return ch, nil
}

// view is a node's latest status and when its view (state, group,
// coordinator, members) last changed, by the daemon's own event times.
type view struct {
	st    schema.Status
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

func sameView(a, b schema.Status) bool {
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
	if ne.ev.Reason != schema.ReasonSnapshot && !t.mark.IsZero() && !ne.ev.Time.Before(t.mark) {
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

// statuses returns the views of nodes, false if one has none yet.
func (t *tracker) statuses(nodes []int) ([]schema.Status, bool) {
	out := make([]schema.Status, 0, len(nodes))
	for _, i := range nodes {
		v := t.views[i]
		if v == nil || !v.seen {
			return nil, false
		}
		out = append(out, v.st)
	}
	return out, true
}

// converged is lab.sh wait's condition, the L1 predicate
// (invariant.IsConverged): every node Normal in one group whose
// coordinator is the highest-ranked of nodes, listing exactly nodes.
func (t *tracker) converged(nodes []int) bool {
	sts, ok := t.statuses(nodes)
	return ok && invariant.IsConverged(history.Views(sts))
}

// failedOver is invariant L2's condition (invariant.FailedOver): every
// survivor Normal in one group whose coordinator is a survivor, and every
// survivor's member list holds every survivor.
func (t *tracker) failedOver(survivors []int) bool {
	sts, ok := t.statuses(survivors)
	return ok && len(invariant.FailedOver(time.Time{}, history.Views(sts))) == 0
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
	c, err := l.client(i)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fams, err := c.Metrics(ctx)
	if err != nil {
		return nil, fmt.Errorf("node %d: metrics: %w", i, err)
	}
	return series(fams), nil
}

// series flattens metric families into one value per series, keyed as the
// text format writes them: name{label="value",...}.
func series(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			key := name
			if len(m.GetLabel()) > 0 {
				var ls []string
				for _, lp := range m.GetLabel() {
					ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
				}
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetUntyped() != nil:
				out[key] = m.GetUntyped().GetValue()
			}
		}
	}
	return out
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
