package group

import (
	"bytes"
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

// TestProtocolPortSeed: a seed at a protocol port (this node's own wire
// port, or DefaultPort) draws a warning at start naming the gossip port it
// most likely meant; a seed at a gossip port, or without a port, does not.
func TestProtocolPortSeed(t *testing.T) {
	wp, err := freeUDPPort()
	if err != nil {
		t.Fatal(err)
	}
	gp, err := freeUDPPort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultFastConfig()
	cfg.Bind, cfg.Port, cfg.GossipPort = "127.0.0.1", wp, gp
	cfg.Multicast, cfg.API = "off", ""
	for _, tc := range []struct {
		seed string
		try  string // "" when there must be no warning
	}{
		{"192.0.2.1:" + strconv.Itoa(wp), "192.0.2.1:" + strconv.Itoa(wp+1)},
		{"node2.lan:7950", "node2.lan:7951"},
		{"[fd00::2]:7950", "[fd00::2]:7951"},
		{"192.0.2.1:7951", ""},
		{"192.0.2.1", ""},
		{"srv:_groupd._udp.lan", ""},
	} {
		t.Run(tc.seed, func(t *testing.T) {
			var logs bytes.Buffer
			c := cfg
			c.Join = []string{tc.seed}
			c.DataDir = t.TempDir()
			c.Logger = zerolog.New(&logs)
			if strings.HasPrefix(tc.seed, "[") {
				c.Bind = "::1"
			}
			a, err := New(c)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			a.Close()
			want := "seed " + tc.seed + " looks like a protocol port: seeds name a node's gossip port (its protocol port + 1 by default), so try " + tc.try
			switch got := logs.String(); {
			case tc.try == "" && strings.Contains(got, "looks like a protocol port"):
				t.Errorf("warned about a gossip port:\n%s", got)
			case tc.try != "" && !strings.Contains(got, want):
				t.Errorf("logs lack %q:\n%s", want, got)
			}
		})
	}
}

// TestProtocolPortSeedHeard: a seed at the wire address of a node this one
// has heard (its beacons) is a protocol port too: three nodes on one host,
// where node 2 joins 127.0.0.1:7910, node 1's --port.
func TestProtocolPortSeedHeard(t *testing.T) {
	a := &Agent{peers: newPeerBook(2), gossipAddr: "127.0.0.1:7921"}
	s, err := parseSeed("127.0.0.1:7910")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.protocolPortSeed(s, nil); got != "" {
		t.Errorf("before node 1 is heard: %q, want no hint", got)
	}
	a.peers.noteUDP(1, 100, 11, false, kindBeacon, udpAddr("127.0.0.1:7910"), true, time.Now())
	if got := a.protocolPortSeed(s, nil); got != "127.0.0.1:7911" {
		t.Errorf("node 1 heard from 127.0.0.1:7910: %q, want 127.0.0.1:7911", got)
	}
	named, _ := parseSeed("node1.lan:7910")
	if got := a.protocolPortSeed(named, []string{"127.0.0.1:7910"}); got != "node1.lan:7911" {
		t.Errorf("a name resolved to node 1's wire address: %q, want node1.lan:7911", got)
	}
}
