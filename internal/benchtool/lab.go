//go:build linux

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

// metricsOf reads the /metrics of nodes of l concurrently (a lab scale's
// hundreds of nodes are read in about the time of one), parsed by package
// client with prometheus/common's expfmt rather than by splitting lines,
// so that labels with spaces or escapes cannot be misread. On an error it
// returns what it read (nil for a node it could not read) and the first
// error.
func metricsOf(l *netlab.Lab, nodes []int) ([]map[string]*dto.MetricFamily, error) {
	out := make([]map[string]*dto.MetricFamily, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for k, i := range nodes {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			fams, err := l.Client(i).Metrics(ctx)
			if err != nil {
				errs[k] = fmt.Errorf("node %d: metrics: %w", i, err)
				return
			}
			out[k] = fams
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// sumByLabel sums the counters of family over fams, keyed by the value
// of their label.
func sumByLabel(fams []map[string]*dto.MetricFamily, family, label string) map[string]float64 {
	sum := map[string]float64{}
	for _, f := range fams {
		for _, m := range f[family].GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label {
					sum[lp.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
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
