package group

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/groupd/groupd/internal/testkit"
)

// syncBuffer is a bytes.Buffer safe for concurrent writers (an agent's
// logger).
type syncBuffer = testkit.SyncBuffer

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, d, what, cond)
}

// metricValue reads a counter or gauge.
func metricValue(c prometheus.Metric) float64 { return testkit.MetricValue(c) }
