//go:build linux

package main

import (
	"encoding/xml"
	"io"
	"maps"
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/groupd/groupd/invitation"
)

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	for _, c := range []struct{ q, want float64 }{{0.5, 10}, {0.95, 19}, {1, 20}, {0, 1}} {
		if got := quantile(xs, c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if !math.IsNaN(quantile(nil, .5)) {
		t.Error("quantile of nothing should be NaN")
	}
}

// parse reads metrics in the text format, as client.Metrics does.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// TestSumByLabel sums a family over nodes by the label it is split by,
// whatever its name: type for what was sent, reason for what was dropped.
func TestSumByLabel(t *testing.T) {
	fams := []map[string]*dto.MetricFamily{parse(t, `# TYPE groupd_messages_sent_total counter
groupd_messages_sent_total{type="Beacon"} 10
groupd_messages_sent_total{type="Election"} 0
# TYPE groupd_dropped_packets_total counter
groupd_dropped_packets_total{reason="bad_seal"} 2
groupd_dropped_packets_total{reason="queue_full"} 1
# TYPE go_goroutines gauge
go_goroutines 12
`), nil, parse(t, `# TYPE groupd_dropped_packets_total counter
groupd_dropped_packets_total{reason="queue_full"} 4
`)}
	if got, want := sumByLabel(fams, "groupd_dropped_packets_total", "reason"), map[string]float64{"bad_seal": 2, "queue_full": 5}; !maps.Equal(got, want) {
		t.Errorf("dropped by reason = %v, want %v", got, want)
	}
	if got, want := sumByLabel(fams, "groupd_messages_sent_total", "type"), map[string]float64{"Beacon": 10, "Election": 0}; !maps.Equal(got, want) {
		t.Errorf("sent by type = %v, want %v", got, want)
	}
	if got := sumByLabel(fams, "groupd_dropped_packets_total", "type"); len(got) != 0 {
		t.Errorf("by a label the family lacks: %v, want nothing", got)
	}
}

func TestChartSVGIsXML(t *testing.T) {
	c := Chart{Title: "t <&>", YLabel: "s", XLabel: "N", HLines: map[float64]string{1: "target"},
		Series: []Series{
			{Name: "a", Points: []Point{{X: 3, P50: 0.7, P95: 0.8, Count: 20}, {X: 16, P50: 0.9, P95: 1.2, Count: 20}}},
			{Name: "b", Dashed: true, Points: []Point{{X: 5, P50: 3, P95: 3.4, Count: 20}}},
		}}
	d := xml.NewDecoder(strings.NewReader(c.SVG()))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
	}
}

func TestSimFailoverCounts(t *testing.T) {
	tm, _ := timing("lan")
	r, err := simFailover(5, 1, tm, invitation.ElectionBully, "sim-lan")
	if err != nil {
		t.Fatal(err)
	}
	if r.Seconds <= 0 || r.Coordinator != 4 || r.Msgs["Invitation"] == 0 {
		t.Errorf("unexpected failover result %+v", r)
	}
}
