// Package fenced tests store.sh, docs/leader.md's fenced store: a write with
// a term below the highest seen is refused, an equal or higher one
// accepted, with terms ordered as groupd orders group numbers.
package fenced

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, term, line string) (int, string) {
	t.Helper()
	cmd := exec.Command("sh", "store.sh", dir, term, line)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("store.sh: %v", err)
	return 0, ""
}

func TestFencedStore(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock (util-linux) is not installed")
	}
	dir := filepath.Join(t.TempDir(), "store")
	steps := []struct {
		term string
		want int
	}{
		{"1795710000000.5", 0},
		{"1795710000000.5", 0}, // the same leader again
		{"1795710000001.3", 0}, // a later leadership
		{"1795710000000.5", 3}, // the stale leader, late
		{"999999999999.9", 3},  // fewer digits is a lower sequence, not a string order
		{"1795710000001.4", 0}, // same sequence, higher ID
		{"1795710000001.3", 3},
	}
	for k, s := range steps {
		if code, out := write(t, dir, s.term, "write "+s.term); code != s.want {
			t.Errorf("step %d: term %s: exit %d (%s), want %d", k, s.term, code, strings.TrimSpace(out), s.want)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(data), "\n"); got != 4 {
		t.Errorf("%d writes kept, want 4:\n%s", got, data)
	}
}
