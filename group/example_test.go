package group_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/groupd/groupd/group"
)

// Example starts one agent on loopback with ephemeral ports and no
// multicast, waits until it coordinates its (singleton) group, and stops
// it.
func Example() {
	dir, err := os.MkdirTemp("", "groupd-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	cfg := group.DefaultFastConfig()
	cfg.Bind = "127.0.0.1"
	cfg.Port = 0 // any free port; GossipPort 0 then means any free port too
	cfg.Multicast = "off"
	cfg.API = "" // or "127.0.0.1:0", or mount a.Handler() on your own server
	cfg.DataDir = dir

	a, err := group.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	// The first event is a snapshot, so no change is missed.
	events, unsubscribe := a.Subscribe()
	timeout := time.After(10 * time.Second)
wait:
	for {
		select {
		case e := <-events:
			if e.New.IsCoordinator() {
				break wait
			}
		case <-timeout:
			log.Fatal("no group formed")
		}
	}
	unsubscribe()

	st := a.Status()
	fmt.Println("coordinator:", st.IsCoordinator())
	fmt.Println("members:", len(st.Members))

	cancel()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// coordinator: true
	// members: 1
}
