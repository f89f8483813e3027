package lab

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/groupd/groupd/internal/history"
	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// Status asks node i's daemon for its view (GET /v1/status).
func (l *Lab) Status(i int) (schema.Status, error) {
	nd, err := l.node(i)
	if err != nil {
		return schema.Status{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return nd.client.Status(ctx)
}

// Views polls every node of ids once, all at once; a node that does not
// answer is missing from the views, with its error in errs.
func (l *Lab) Views(ids []int) (sts map[int]schema.Status, errs map[int]error) {
	sts, errs = make(map[int]schema.Status, len(ids)), map[int]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := l.Status(i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[i] = err
			} else {
				sts[i] = s
			}
		}()
	}
	wg.Wait()
	return sts, errs
}

// Cond judges polled views: "" when satisfied, else why not.
type Cond func(sts map[int]schema.Status) string

// WaitFor polls the views of ids until c holds and returns them with the
// instant they were seen; after timeout it fails, saying why and what each
// node saw. It only waits: bounds are asserted on the recorded history,
// whose times are the daemons' own, so polling need not be fast: every
// 100 ms, and 2 ms per node for labs over 50, so that waiting on a big lab
// (or on many labs at once) does not load the machine.
func (l *Lab) WaitFor(what string, ids []int, timeout time.Duration, c Cond) (map[int]schema.Status, time.Time, error) {
	deadline := time.Now().Add(timeout)
	every := max(100*time.Millisecond, time.Duration(len(ids))*2*time.Millisecond)
	for {
		sts, errs := l.Views(ids)
		why := ""
		for _, i := range ids {
			if err, ok := errs[i]; ok {
				why = fmt.Sprintf("node %d does not answer: %v", i, err)
				break
			}
		}
		if why == "" {
			why = c(sts)
		}
		if why == "" {
			return sts, time.Now(), nil
		}
		if time.Now().After(deadline) {
			return sts, time.Now(), fmt.Errorf("lab: %s: not within %v: %s\nviews:\n%s", what, timeout, why, FormatViews(ids, sts, errs))
		}
		time.Sleep(every)
	}
}

// FormatViews writes one line per node: its view, or why it has none.
func FormatViews(ids []int, sts map[int]schema.Status, errs map[int]error) string {
	var b strings.Builder
	for _, i := range ids {
		if s, ok := sts[i]; ok {
			fmt.Fprintf(&b, "  node %d: %s %s group %s coordinator %d members %v v%d\n", i, s.State, s.Role, s.Group, s.Coordinator, s.Members, s.Version)
		} else {
			fmt.Fprintf(&b, "  node %d: down (%v)\n", i, errs[i])
		}
	}
	return b.String()
}

// ordered returns the views of ids in the order of ids.
func ordered(ids []int, sts map[int]schema.Status) []schema.Status {
	out := make([]schema.Status, 0, len(ids))
	for _, i := range ids {
		out = append(out, sts[i])
	}
	return out
}

// Converged holds when the nodes of ids are converged among themselves:
// invariant.Converged, the L1 predicate (all Normal in one group
// coordinated by the highest-ranked of them, at one version, each listing
// exactly them), on their views.
func Converged(ids []int) Cond {
	return func(sts map[int]schema.Status) string {
		if vs := invariant.Converged(time.Now(), history.Views(ordered(ids, sts))); len(vs) > 0 {
			return vs[0].String()
		}
		return ""
	}
}

// FailedOver holds when the survivors ids have failed over:
// invariant.FailedOver, the L2 predicate (all Normal in one group
// coordinated by one of them, each listing them all).
func FailedOver(ids []int) Cond {
	return func(sts map[int]schema.Status) string {
		if vs := invariant.FailedOver(time.Now(), history.Views(ordered(ids, sts))); len(vs) > 0 {
			return vs[0].String()
		}
		return ""
	}
}

// All holds when every one of cs holds (both sides of a partition
// converged, each among its own).
func All(cs ...Cond) Cond {
	return func(sts map[int]schema.Status) string {
		for _, c := range cs {
			if why := c(sts); why != "" {
				return why
			}
		}
		return ""
	}
}

// Highest is the highest-ranked node among the views of ids (rank =
// (priority, id), as invariant ranks them).
func Highest(ids []int, sts map[int]schema.Status) int {
	return int(invariant.Highest(history.Views(ordered(ids, sts))))
}

// IDs converts node numbers to wire IDs.
func IDs(ids []int) []wire.NodeID {
	out := make([]wire.NodeID, len(ids))
	for i, id := range ids {
		out[i] = wireID(id)
	}
	return out
}
