package simbench

import (
	"testing"
	"time"
)

// BenchmarkSplitHeal1000 simulates N = 1000 nodes that start within a
// second, converge into one group, split into two random halves for T_heal,
// and converge again after the heal. msgs/node counts every datagram sent
// (a multicast beacon is one) over the whole run, per node.
func BenchmarkSplitHeal1000(b *testing.B) {
	const n = 1000
	var msgs, events uint64
	var simulated, heal time.Duration
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tr, err := Heal(Options{N: n, Seed: int64(i + 1)})
		if err != nil {
			b.Fatal(err)
		}
		msgs += tr.Sim.Counts().TotalSent()
		events += tr.Sim.Events()
		simulated += tr.Sim.Elapsed()
		heal += tr.Took
	}
	b.ReportMetric(float64(msgs)/float64(b.N)/n, "msgs/node")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
	b.ReportMetric(simulated.Seconds()/float64(b.N), "sim-s/op")
	b.ReportMetric(heal.Seconds()/float64(b.N), "heal-s/op")
}
