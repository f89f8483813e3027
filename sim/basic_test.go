package sim

import (
	"os"
	"testing"

	"github.com/groupd/groupd/wire"
)

// The smallest run: three nodes on a perfect network converge.
func TestThreeNodesConverge(t *testing.T) {
	cfg := Config{N: 3, Seed: 1}
	if os.Getenv("GROUPD_SIM_TRACE") != "" {
		cfg.Trace = os.Stdout
	}
	s := MustNew(cfg)
	if err := s.RunFor(s.HealBound()); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckConverged(); err != nil {
		t.Fatal(err)
	}
	if c := s.Counts(); c.EncodeErrors > 0 || c.TotalSent() == 0 || c.TotalBytes() == 0 {
		t.Fatalf("counts: %s", c)
	}
	t.Logf("converged; %d events\n%s", s.Events(), s.Counts())
}

// TestCountsCoverEveryType guards against counters sized for fewer types
// than the wire enum has (it panicked once ring types were appended).
func TestCountsCoverEveryType(t *testing.T) {
	var c Counts
	for _, ty := range wire.Types() {
		c.Sent[ty]++
	}
	if s := c.String(); s == "" {
		t.Fatal("empty Counts string")
	}
}
