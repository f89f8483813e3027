package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	netlab "github.com/groupd/groupd/internal/lab"
)

// ---- metrics ---------------------------------------------------------------

// scrapeAll reads the /metrics of nodes of l concurrently, each flattened
// to series -> value.
func scrapeAll(l *netlab.Lab, nodes []int) (map[int]map[string]float64, error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[int]map[string]float64{}
	var firstErr error
	for _, i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			fams, err := l.Client(i).Metrics(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("node %d: metrics: %w", i, err)
			}
			out[i] = series(fams)
		}()
	}
	wg.Wait()
	return out, firstErr
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
	for i, f := range strings.Fields(loadString()) {
		l[i], _ = strconv.ParseFloat(f, 64)
	}
	return l
}

// loadString is the three load averages as /proc/loadavg writes them.
func loadString() string {
	_, s := netlab.Load()
	return s
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

func secs(d time.Duration) float64 { return float64(d.Round(time.Microsecond)) / 1e9 }

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

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
