// Command embed is a program that embeds groupd (package group): every
// node of an application runs an agent, and does the leader's work while it
// leads. docs/embedding.md shows its functions node and config verbatim,
// and README.md a shortened node (tests check that they match).
//
// To show a failover without a LAN it runs two nodes in one process, on
// loopback, with no multicast: beta finds alpha by alpha's gossip address
// (Config.Join). Beta, of higher priority, takes the lead from alpha; the
// program then kills beta as kill -9 would kill a daemon (Agent.Kill), and
// alpha takes over again:
//
//	go run ./examples/embed
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/groupd/groupd/group"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.SetFlags(log.Lmicroseconds)
	if err := demo(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

// node runs one groupd node until ctx is done or the agent stops by
// itself, and runs lead while the node leads. It hands the running agent to
// started (the demo kills a node with it).
func node(ctx context.Context, cfg group.Config, lead func(ctx context.Context), started func(*group.Agent)) error {
	cfg.Leader.OnStartedLeading = lead // its ctx ends with the leadership
	a, err := group.New(cfg)           // validates, locks the data dir, binds the sockets
	if err != nil {
		return err // errors.Is(err, group.ErrConfig): the configuration's fault
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }() // never throw Run's error away
	started(a)

	w, stop := a.WatchLeader()
	defer stop()
	for l := range w { // closed when the agent stops, whatever the reason
		switch {
		case l.Leader:
			log.Printf("%s: leading (term %s)", cfg.Name, l.Term)
		case l.LeaderID == a.ID():
			log.Printf("%s: no longer leading", cfg.Name) // the agent stops
		case l.LeaderID != 0:
			log.Printf("%s: %s (node %d) leads", cfg.Name, l.LeaderName, l.LeaderID)
		}
	}
	return <-done // nil once ctx was done (or after Kill); else why it stopped
}

// config is a node's configuration: on loopback, apart from the LAN.
func config(name string, priority uint8, join []string, dir string, key []byte) group.Config {
	cfg := group.DefaultFastConfig() // DefaultLANConfig in production (detection in 1 s, not 0.2 s)
	cfg.Name, cfg.Priority = name, priority
	cfg.Bind, cfg.Port = "127.0.0.1", 0 // loopback, free ports (gossip too)
	cfg.Multicast = "off"               // not the LAN's groupd: only the nodes of Join
	cfg.Join = join                     // memberlist seeds: other nodes' Addrs().Gossip
	cfg.API = ""                        // or "127.0.0.1:0", or mount a.Handler() on a server
	cfg.DataDir = dir                   // one per node: its ID and group-number counter
	cfg.Key = key                       // 32 bytes every node shares: traffic is sealed
	// The zero Logger discards everything, the warnings included.
	cfg.Logger = zerolog.New(os.Stderr).Level(zerolog.WarnLevel)
	return cfg
}

// demo runs alpha, then beta, which takes the lead; kills beta; and waits
// for alpha to lead again.
func demo(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "groupd-embed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type lead struct {
		name string
		at   time.Time
	}
	leading := make(chan lead, 16) // a leader's work, here: saying when it began
	agents := make(chan *group.Agent, 1)
	var errs []chan error
	start := func(name string, priority uint8, join []string) (*group.Agent, error) {
		cfg := config(name, priority, join, filepath.Join(dir, name), key)
		done := make(chan error, 1)
		errs = append(errs, done)
		go func() {
			done <- node(ctx, cfg, func(ctx context.Context) {
				leading <- lead{name, time.Now()}
				<-ctx.Done() // the leader's work runs until here
			}, func(a *group.Agent) { agents <- a })
		}()
		select {
		case a := <-agents:
			return a, nil
		case err := <-done:
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	await := func(name string) (time.Time, error) {
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l := <-leading:
				if l.name == name {
					return l.at, nil
				}
			case <-timeout:
				return time.Time{}, fmt.Errorf("%s did not take the lead within 20 s", name)
			case <-ctx.Done():
				return time.Time{}, ctx.Err()
			}
		}
	}
	wait := func() error { // every node's error, once ctx is done
		cancel()
		var all []error
		for _, done := range errs {
			all = append(all, <-done)
		}
		return errors.Join(all...)
	}

	alpha, err := start("alpha", 100, nil)
	if err != nil {
		return errors.Join(err, wait())
	}
	if _, err := await("alpha"); err != nil {
		return errors.Join(err, wait())
	}
	beta, err := start("beta", 200, []string{alpha.Addrs().Gossip})
	if err != nil {
		return errors.Join(err, wait())
	}
	if _, err := await("beta"); err != nil {
		return errors.Join(err, wait())
	}
	log.Printf("killing beta, the leader")
	killed := time.Now()
	beta.Kill() // as kill -9 would: no goodbye, alpha's failure detector notices
	took, err := await("alpha")
	if err != nil {
		return errors.Join(err, wait())
	}
	log.Printf("alpha took over %v after the kill", took.Sub(killed).Round(time.Millisecond))
	return wait()
}
