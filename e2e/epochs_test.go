//go:build linux

package e2e

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/internal/lab"
)

// TestEpochs replays the two lab cases of issue 28, where a node moved to
// a lower group number than the one it held. The teardown's replay checks
// S5 (docs/design.md §4: the distinct numbers a node holds only grow,
// across restarts too) over the whole recorded history, so each subtest
// fails on the first step down. `go test ./e2e -run TestEpochs -count 20`
// is the 20 lab runs of each.
func TestEpochs(t *testing.T) {
	t.Parallel()
	t.Run("cold start with a fast node among lan nodes", func(t *testing.T) {
		t.Parallel()
		// Node 5 on --profile fast (a 40 ms boot window) creates its
		// number and invites around the moment the lan nodes' boot
		// windows (200 ms) end: each of them may form a number of its
		// own just before the invitation to node 5's, older, number
		// arrives. The daemons open their sockets at once and start
		// the protocol at --start-at, node 5 a random 100..260 ms after
		// the others; five cold starts of the same nodes, from their
		// state files after the first.
		l := newLab(t, 5, "lan")
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 28))
		for round := 1; round <= 5; round++ {
			at := time.Now().Add(2 * time.Second)
			d := time.Duration(rng.Int64N(int64(time.Second)))
			startAt := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
			if err := l.SetOptions(lab.Options{Args: []string{"--start-at", startAt(at)}}, 1, 2, 3, 4); err != nil {
				t.Fatal(err)
			}
			if err := l.SetOptions(lab.Options{Args: []string{"--profile", "fast", "--start-at", startAt(at.Add(d))}}, 5); err != nil {
				t.Fatal(err)
			}
			// Lab.Start keeps the options just set (tlab.start would
			// clear them).
			if _, err := l.Start(l.all()...); err != nil {
				t.Fatal(err)
			}
			sts, _ := l.waitFor(fmt.Sprintf("cold start %d: one group", round), l.all(), 60*time.Second, lab.Converged(l.all()))
			t.Logf("cold start %d at %s, node 5 %v after the others: one group %s (coordinator %d)", round, at.Format("15:04:05.000"), d.Round(time.Millisecond), sts[1].Group, sts[1].Coordinator)
			if err := l.Stop(l.all()...); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("multicast off, seeds, one node partitioned and healed", func(t *testing.T) {
		t.Parallel()
		requireFaults(t)
		// Without beacons the nodes meet through memberlist only. Node 3
		// alone forms its number after the others renumbered their
		// group without it; at the heal it must not step down into
		// their older number.
		l := newLab(t, 5, "lan")
		var seeds []string
		for _, i := range l.all() {
			seeds = append(seeds, l.Addr(i).String()+":"+strconv.Itoa(group.DefaultPort+1))
		}
		if err := l.SetOptions(lab.Options{Args: []string{"--multicast", "off", "--join", strings.Join(seeds, ",")}}, l.all()...); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Start(l.all()...); err != nil {
			t.Fatal(err)
		}
		l.waitFor("5 nodes converge", l.all(), 60*time.Second, lab.Converged(l.all()))
		others := []int{1, 2, 4, 5}
		l.partition([]int{3}, others)
		l.waitFor("node 3 alone", []int{3}, 30*time.Second, lab.Converged([]int{3}))
		l.waitFor("nodes 1,2,4,5 without node 3", others, 30*time.Second, lab.Converged(others))
		held := l.status(3).Group
		time.Sleep(10 * time.Second)
		l.heal()
		sts, _ := l.waitFor("one group after the heal", l.all(), 60*time.Second, lab.Converged(l.all()))
		t.Logf("node 3 held %s alone; after the heal: %s (coordinator %d)", held, sts[3].Group, sts[3].Coordinator)
		if sts[3].Group.Less(held) {
			t.Errorf("node 3 moved from %s down to %s", held, sts[3].Group)
		}
	})
}
