package group

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/groupd/groupd/wire"
)

// TestKeyRotation is step 2 of a key rotation (docs/security.md, "Key rotation"):
// every node holds both keys, some already seal with the new one and some
// still with the old one. They all open each other's wire packets and
// memberlist gossip, so they form one group as usual, without a single
// packet dropped as unauthenticated.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := bytes.Repeat([]byte{1}, wire.KeySize), bytes.Repeat([]byte{2}, wire.KeySize)
	c := newCluster(t, memMulticast)
	start := func(id wire.NodeID, primary []byte, others ...[]byte) *testNode {
		dir, err := os.MkdirTemp(c.base, "node")
		if err != nil {
			t.Fatal(err)
		}
		cfg := c.config(id, dir)
		cfg.Key, cfg.AcceptKeys = primary, others
		a, err := New(cfg)
		if err != nil {
			t.Fatalf("New(%d): %v", id, err)
		}
		return c.run(a, dir)
	}
	start(1, oldKey, newKey)
	start(2, newKey, oldKey)
	start(3, oldKey, newKey)
	g, _ := c.waitConverged(convergeBound(c))
	if g.ID != 3 {
		t.Fatalf("group %s, want coordinator 3", g)
	}
	c.waitGossip(convergeBound(c))
	for _, n := range c.live() {
		if got := metricValue(n.a.metrics.dropped.WithLabelValues("auth")); got != 0 {
			t.Errorf("node %d dropped %v packets as unauthenticated", n.id, got)
		}
	}
}

func TestAcceptKeysValidated(t *testing.T) {
	c := newTestConfig(t)
	c.Key = bytes.Repeat([]byte{1}, wire.KeySize)
	c.AcceptKeys = [][]byte{bytes.Repeat([]byte{2}, wire.KeySize), make([]byte, 16)}
	if err := c.Validate(); err == nil || err.Error() != "group: Config.AcceptKeys[1] is 16 bytes, want 32" {
		t.Fatalf("Validate: %v", err)
	}
}

// TestNoKeyWarning: without a key the agent says so, loudly, when it
// starts; with one it does not.
func TestNoKeyWarning(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		logs := &lockedWriter{w: &bytes.Buffer{}}
		c := newTestConfig(t)
		c.Logger = zerolog.New(logs)
		if keyed {
			c.Key = bytes.Repeat([]byte{1}, wire.KeySize)
		}
		a, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		waitFor(t, 10*time.Second, "the agent to run", func() bool { return a.running.Load() })
		cancel()
		<-done
		warned := strings.Contains(logs.String(), `"level":"warn"`) && strings.Contains(logs.String(), "NO KEY (--key-file)")
		if warned == keyed {
			t.Errorf("keyed %v: warned %v; logs:\n%s", keyed, warned, logs.String())
		}
	}
}
