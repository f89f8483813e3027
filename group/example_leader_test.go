package group_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/groupd/groupd/group"
)

// Example_leaderElection runs two agents on loopback, joined by a gossip
// seed instead of multicast. The higher-priority agent takes the lead when
// it joins; when it stops, the other leads again. Leadership is observed
// through the callbacks, as a program that embeds groupd to run
// leader-only work would; the example prints the changes the callbacks
// reported.
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
	// observe prints the next n changes as they came, each agent's in its
	// own order. The two agents' callbacks run on two goroutines, so the
	// changes of two agents that come together are printed by name.
	observe := func(n int) {
		var got []change
		timeout := time.After(15 * time.Second)
		for len(got) < n {
			select {
			case c := <-changes:
				got = append(got, c)
			case <-timeout:
				fmt.Printf("after 15 s, %d of %d changes\n", len(got), n)
				n = len(got)
			}
		}
		slices.SortStableFunc(got, func(a, b change) int { return strings.Compare(a.node, b.node) })
		for _, c := range got {
			fmt.Printf("%s leading: %v\n", c.node, c.leading)
		}
	}

	alpha, stopAlpha := start("alpha", 100, nil)
	observe(1)

	_, stopBeta := start("beta", 200, []string{alpha.Addrs().Gossip})
	observe(2) // alpha gives way to beta

	stopBeta() // beta's leadership ends with it; alpha takes over
	observe(2)

	stopAlpha()
	observe(1)
	select {
	case c := <-changes:
		fmt.Printf("and then %s leading: %v\n", c.node, c.leading)
	default:
	}
	// Output:
	// alpha leading: true
	// alpha leading: false
	// beta leading: true
	// alpha leading: true
	// beta leading: false
	// alpha leading: false
}
