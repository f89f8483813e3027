package simbench

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/groupd/groupd/wire"
)

// TestBullyCounts runs the standalone bully machine for n survivors,
// started by the lowest-ranked, the second-highest and the highest, and
// checks the counts against BullyFormula. With GROUPD_SIM_REPORT=1 it prints
// them next to the textbook figures (seed 001: n(n−1) messages when the
// lowest starts, n−1 when the highest does).
func TestBullyCounts(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "%4s %-15s %9s %7s %12s %7s %10s %s\n", "n", "started by", "Election", "Answer", "Coordinator", "total", "textbook", "formula")
	for _, n := range []int{2, 3, 4, 5, 8, 10, 16, 32} {
		for _, who := range []struct {
			name     string
			id       wire.NodeID
			textbook string
		}{
			{"lowest", 1, fmt.Sprintf("n(n-1)=%d", n*(n-1))},
			{"second-highest", wire.NodeID(n - 1), "-"},
			{"highest", wire.NodeID(n), fmt.Sprintf("n-1=%d", n-1)},
		} {
			if who.id < 1 || (who.name == "second-highest" && n < 3) {
				continue // with n = 2 the second-highest is the lowest
			}
			got, err := BullyRun(n, who.id)
			if err != nil {
				t.Fatalf("n=%d %s: %v", n, who.name, err)
			}
			want := BullyFormula(n, who.id)
			if got != want {
				t.Errorf("n=%d started by %s: got %+v, want %+v", n, who.name, got, want)
			}
			formula := map[string]string{"lowest": "n²-1", "second-highest": "n+1", "highest": "n-1"}[who.name]
			fmt.Fprintf(&b, "%4d %-15s %9d %7d %12d %7d %10s %s=%d\n", n, who.name, got.Election, got.Answer, got.Coordinator, got.Total(), who.textbook, formula, want.Total())
		}
	}
	if os.Getenv("GROUPD_SIM_REPORT") != "" {
		t.Logf("standalone bully (Announce, AutoStart), n survivors, reliable network, equal delays:\n%s", b.String())
	}
}
