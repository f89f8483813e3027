package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/store"
)

func TestRunHardeningFlags(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	two := filepath.Join(t.TempDir(), "keys")
	text := "# new key first, old key still accepted\n" + base64.StdEncoding.EncodeToString(k2) + "\n" +
		base64.StdEncoding.EncodeToString(k1) + "\n"
	if err := os.WriteFile(two, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  []string
		check func(group.Config) bool
	}{
		{"defaults", nil, nil, func(c group.Config) bool {
			return c.MinCounter == 0 && c.RateLimit == group.DefaultRateLimit && c.AcceptKeys == nil
		}},
		{"min counter flag", nil, []string{"--min-counter", "5000"}, func(c group.Config) bool { return c.MinCounter == 5000 }},
		{"min counter env", map[string]string{"GROUPD_MIN_COUNTER": "77"}, nil, func(c group.Config) bool { return c.MinCounter == 77 }},
		{"rate limit flag", nil, []string{"--rate-limit", "50"}, func(c group.Config) bool { return c.RateLimit == 50 }},
		{"rate limit off", map[string]string{"GROUPD_RATE_LIMIT": "0"}, nil, func(c group.Config) bool { return c.RateLimit == 0 }},
		{"two keys", nil, []string{"--key-file", two}, func(c group.Config) bool {
			return bytes.Equal(c.Key, k2) && len(c.AcceptKeys) == 1 && bytes.Equal(c.AcceptKeys[0], k1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cfg, err := parseRun(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg) {
				t.Errorf("unexpected config: min counter %d, rate limit %d, %d accepted keys", cfg.MinCounter, cfg.RateLimit, len(cfg.AcceptKeys))
			}
		})
	}
	if _, err := parseRun(t, "--rate-limit", "-1"); err == nil || !strings.Contains(err.Error(), "--rate-limit must be >= 0") {
		t.Errorf("--rate-limit -1: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(bad, []byte(base64.StdEncoding.EncodeToString(k1)+"\nnot a key!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parseRun(t, "--key-file", bad); err == nil || !strings.Contains(err.Error(), "(line 2)") {
		t.Errorf("a bad second key: %v", err)
	}
}

// TestCorruptStateFile: groupd run on a data dir whose state slots are both
// corrupt exits 2 with one clear line that says what to do (--min-counter),
// and writes nothing: the corrupt files stay byte for byte, no slot or
// temporary file appears. After the operator moves them away, --min-counter
// starts the node with a counter above the given value.
func TestCorruptStateFile(t *testing.T) {
	dir := t.TempDir()
	corrupt := map[string][]byte{
		"state.a": []byte("groupd-state v1 garbage that is not a state record\n"),
		"state.b": bytes.Repeat([]byte{0xff}, 64),
	}
	for name, b := range corrupt {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := func(extra ...string) []string {
		return append([]string{"run", "--log-level", "error", "--multicast", "off", "--bind", "127.0.0.1",
			"--port", strconv.Itoa(freeUDPPort(t)), "--gossip-port", strconv.Itoa(freeUDPPort(t)),
			"--api", "127.0.0.1:0", "--data-dir", dir, "--profile", "fast"}, extra...)
	}
	ctx, cancel := contextWithTimeout(t, 10*time.Second)
	defer cancel()
	code, _, errOut := runCLIContext(t, ctx, args()...)
	if code != exitConfig {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitConfig, errOut)
	}
	wantLastLine(t, errOut, "no valid state in "+dir)
	for _, want := range []string{"--min-counter", "state.a", "state.b", "backup"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the error does not mention %q:\n%s", want, errOut)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if want, ok := corrupt[name]; ok {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s was changed: %q, %v", name, got, err)
			}
			continue
		}
		if name != "LOCK" { // the lock is taken before the state is read
			t.Errorf("groupd left %s in the data dir", name)
		}
	}

	// The operator's way out: move the slots away, start with
	// --min-counter above every number the node used.
	for name := range corrupt {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(t.TempDir(), name)); err != nil {
			t.Fatal(err)
		}
	}
	ctx2, cancel2 := contextWithTimeout(t, 1500*time.Millisecond)
	defer cancel2()
	code, _, errOut = runCLIContext(t, ctx2, args("--id", "4", "--min-counter", "5000")...)
	if code != exitOK {
		t.Fatalf("restart with --min-counter: exit %d; stderr:\n%s", code, errOut)
	}
	s, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if st.NodeID != 4 || st.Counter <= 5000 {
		t.Errorf("after --min-counter 5000: %v, want node 4 with a counter above 5000", st)
	}
}
