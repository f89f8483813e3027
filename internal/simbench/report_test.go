package simbench

import (
	"os"
	"strings"
	"testing"
)

// TestReport prints heal and failover time distributions. It is slow (tens
// of seconds), so it runs only with GROUPD_SIM_REPORT=1.
func TestReport(t *testing.T) {
	if os.Getenv("GROUPD_SIM_REPORT") == "" {
		t.Skip("set GROUPD_SIM_REPORT=1 to measure heal and failover times")
	}
	rows, err := Measure(ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	PrintRows(&b, rows)
	t.Logf("\n%s", b.String())
	for _, r := range rows {
		if m := r.Dist.Quantile(1); m > r.Bound {
			t.Errorf("%s N=%d: slowest %v exceeds the bound %v", r.Measure, r.N, m, r.Bound)
		}
	}
}
