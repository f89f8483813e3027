package group

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestSelfSeed: --join seeds that are all this node's own gossip address
// are a configuration error (the node joined itself, silently, and found
// nobody); another port on the same host is a seed like any other, and a
// list that names this node among others is fine.
func TestSelfSeed(t *testing.T) {
	gp, err := freeUDPPort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultFastConfig()
	cfg.Bind, cfg.Port, cfg.GossipPort = "127.0.0.1", 0, gp
	cfg.Multicast, cfg.API = "off", ""
	for _, tc := range []struct {
		seed string
		want string // "" when New must accept it
	}{
		{"127.0.0.1", `Config.Join "127.0.0.1" is this node's own gossip address (127.0.0.1:` + strconv.Itoa(gp) + `; a seed without a port uses this node's gossip port)`},
		{"localhost", `Config.Join "localhost" is this node's own gossip address`},
		{"127.0.0.1:" + strconv.Itoa(gp), `is this node's own gossip address (127.0.0.1:` + strconv.Itoa(gp) + `)`},
		{"127.0.0.1:" + strconv.Itoa(gp+1), ""},
		{"192.0.2.1", ""},
		// The same list on every node names this one too: fine.
		{"127.0.0.1," + "127.0.0.1:" + strconv.Itoa(gp+1), ""},
		{"localhost,127.0.0.1", `Config.Join "localhost" is this node's own gossip address`},
	} {
		t.Run(tc.seed, func(t *testing.T) {
			c := cfg
			c.Join = strings.Split(tc.seed, ",")
			c.DataDir = t.TempDir()
			a, err := New(c)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				a.Close()
				return
			}
			if err == nil {
				a.Close()
				t.Fatalf("New accepted the seed %q", tc.seed)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want a configuration error containing %q", err, tc.want)
			}
		})
	}
}

type fakeMultiError []error

func (m fakeMultiError) Error() string {
	s := "2 errors occurred:\n"
	for _, e := range m {
		s += "\t* " + e.Error() + "\n"
	}
	return s + "\n"
}

func (m fakeMultiError) WrappedErrors() []error { return m }

func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fakeMultiError{errors.New("failed to resolve foo: no such host"), errors.New("dial tcp: refused")},
			"failed to resolve foo: no such host; dial tcp: refused"},
		{errors.New("a\n\tb"), "a b"},
	} {
		if got := oneLine(tc.err).Error(); got != tc.want {
			t.Errorf("oneLine(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// syncBuf collects log lines.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSeedFailureOneLine: a seed that cannot be joined is a one-line
// warning that says why (memberlist's multi-line error, flattened).
func TestSeedFailureOneLine(t *testing.T) {
	var logs syncBuf
	cfg := DefaultFastConfig()
	cfg.Bind, cfg.Port = "127.0.0.1", 0
	cfg.Multicast, cfg.API = "off", ""
	cfg.DataDir = t.TempDir()
	cfg.Join = []string{"nowhere.invalid:7951"}
	cfg.Logger = zerolog.New(&logs)
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "cannot join --join seed") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning about the seed:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, "cannot join --join seed") {
			continue
		}
		if strings.Contains(line, `\n`) || strings.Contains(line, "error occurred") || !strings.Contains(line, "nowhere.invalid") {
			t.Errorf("the warning is not one line saying why: %s", line)
		}
	}
}
