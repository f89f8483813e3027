package group_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/groupd/groupd/group"
)

// Example_leaderElection runs two agents on loopback, joined by a gossip
// seed instead of multicast. The higher-priority agent takes the lead when
// it joins; when it stops, the other leads again. Leadership is observed
// through the callbacks, as a program that embeds groupd to run
// leader-only work would.
func Example_leaderElection() {
	type change struct {
		node    string
		leading bool
	}
	changes := make(chan change, 16)

	start := func(name string, priority uint8, join []string) (*group.Agent, func()) {
		dir, err := os.MkdirTemp("", "groupd-example-")
		if err != nil {
			log.Fatal(err)
		}
		cfg := group.DefaultFastConfig()
		cfg.Name = name
		cfg.Priority = priority
		cfg.Bind = "127.0.0.1"
		cfg.Port = 0 // any free port, gossip too
		cfg.Multicast = "off"
		cfg.Join = join
		cfg.API = ""
		cfg.DataDir = dir
		cfg.Leader = group.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				changes <- change{name, true}
				<-ctx.Done() // leader-only work runs until here
			},
			OnStoppedLeading: func() { changes <- change{name, false} },
		}
		a, err := group.New(cfg)
		if err != nil {
			log.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		return a, func() {
			cancel()
			if err := <-done; err != nil {
				log.Fatal(err)
			}
			os.RemoveAll(dir)
		}
	}
	// await waits for the given changes in any order (two agents' callbacks
	// run on two goroutines) and prints them in the order given.
	await := func(want ...change) {
		pending := map[change]bool{}
		for _, c := range want {
			pending[c] = true
		}
		timeout := time.After(15 * time.Second)
		for len(pending) > 0 {
			select {
			case c := <-changes:
				if !pending[c] {
					log.Fatalf("unexpected change %+v", c)
				}
				delete(pending, c)
			case <-timeout:
				log.Fatalf("still waiting for %v", pending)
			}
		}
		for _, c := range want {
			fmt.Printf("%s leading: %v\n", c.node, c.leading)
		}
	}

	alpha, stopAlpha := start("alpha", 100, nil)
	await(change{"alpha", true})

	_, stopBeta := start("beta", 200, []string{alpha.Addrs().Gossip})
	await(change{"alpha", false}, change{"beta", true})

	stopBeta() // beta's leadership ends with it; alpha takes over
	await(change{"beta", false}, change{"alpha", true})

	stopAlpha()
	await(change{"alpha", false})
	// Output:
	// alpha leading: true
	// alpha leading: false
	// beta leading: true
	// beta leading: false
	// alpha leading: true
	// alpha leading: false
}
