package group

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestGeneratedIDLogged: without Config.ID, the first start with a data
// dir draws the node's ID, says so once, and every later start keeps it
// silently; a given ID is not announced.
func TestGeneratedIDLogged(t *testing.T) {
	dir := t.TempDir()
	start := func(id NodeID) (NodeID, string) {
		t.Helper()
		var logs bytes.Buffer
		cfg := DefaultFastConfig()
		cfg.Bind, cfg.Port, cfg.Multicast, cfg.API = "127.0.0.1", 0, "off", ""
		cfg.DataDir, cfg.ID, cfg.Logger = dir, id, zerolog.New(&logs)
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		return a.ID(), logs.String()
	}
	const said = "drawn at random on this first start with the data dir and kept there"
	first, logs := start(0)
	if !strings.Contains(logs, said) || !strings.Contains(logs, strconv.FormatUint(uint64(first), 10)) {
		t.Errorf("first start (ID %d) did not say where its ID came from:\n%s", first, logs)
	}
	again, logs := start(0)
	if again != first || strings.Contains(logs, said) {
		t.Errorf("second start: ID %d (first %d), logs:\n%s", again, first, logs)
	}
	dir = t.TempDir()
	if _, logs := start(7); strings.Contains(logs, said) {
		t.Errorf("a given ID was announced as drawn:\n%s", logs)
	}
}
