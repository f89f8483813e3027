package lab

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/groupd/groupd/schema"
)

// ChaosOptions configure Chaos.
type ChaosOptions struct {
	// Duration is how long faults are injected; the round running at the
	// deadline finishes.
	Duration time.Duration
	// Seed fixes the schedule.
	Seed uint64
	// FaultMax is the longest a round's faults stay (at least 2 s; each
	// round holds them 2 s..FaultMax, in whole seconds).
	FaultMax time.Duration
	// Settle is from the heal (and the restarts) to the L1 check point:
	// T_heal plus slack.
	Settle time.Duration
	// Quiet is the time left alone after each check point.
	Quiet time.Duration
	// Timeout bounds every wait for convergence.
	Timeout time.Duration
	// Logf, if set, gets one line per round.
	Logf func(format string, args ...any)
}

// ChaosResult is what Chaos did. The verdict is the history's: replay it
// (S1–S4 over every record, L1 at every "quiet" check point).
type ChaosResult struct {
	Rounds int
	// Converged is false when a wait for convergence timed out.
	Converged bool
	Notes     []string
	// Faults counts the faults injected, by kind.
	Faults map[string]int
	// FirstFault is when the first fault was applied, LastHeal when the
	// last heal was.
	FirstFault, LastHeal time.Time
}

// Chaos injects rounds of 1 to 3 random faults into a converged lab, for
// o.Duration: a partition into 2 or 3 sides, a one-way cut, 5–30 % loss
// (all or some senders), kill -9 (at most N/2 down at once), a graceful
// restart; held 2..o.FaultMax s. Then a quiet period: heal, start the
// killed nodes, wait until converged, and o.Settle after the heal an L1
// check point (mark "quiet"), then o.Quiet s. The same seed gives the same
// schedule.
func Chaos(ctx context.Context, l *Lab, o ChaosOptions) (ChaosResult, error) {
	if o.FaultMax < 2*time.Second || o.Timeout <= 0 || l.N() < 2 {
		return ChaosResult{}, fmt.Errorf("lab: chaos: want FaultMax ≥ 2s, a timeout and 2 nodes or more (%+v, %d nodes)", o, l.N())
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	r := ChaosResult{Converged: true, Faults: map[string]int{}}
	note := func(format string, args ...any) {
		r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
		if o.Logf != nil {
			o.Logf("note: "+format, args...)
		}
	}
	logf := func(format string, args ...any) {
		if o.Logf != nil {
			o.Logf(format, args...)
		}
	}
	sleep := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	all := l.all()
	deadline := time.Now().Add(o.Duration)
	for time.Now().Before(deadline) {
		r.Rounds++
		var killed, did []string
		var down []int
		for range 1 + rng.IntN(3) {
			kind, spec, err := chaosFault(l, rng, &down)
			if err != nil {
				note("round %d: %s %s: %v", r.Rounds, kind, spec, err)
				continue
			}
			if kind == "" {
				continue
			}
			r.Faults[kind]++
			did = append(did, kind+" "+spec)
			if r.FirstFault.IsZero() {
				r.FirstFault = time.Now()
			}
		}
		for _, i := range down {
			killed = append(killed, fmt.Sprint(i))
		}
		hold := time.Duration(2+rng.IntN(int(o.FaultMax/time.Second)-1)) * time.Second
		logf("chaos round %d: %v; held %v", r.Rounds, did, hold)
		if err := sleep(hold); err != nil {
			return r, err
		}
		w, err := l.Heal(false)
		if err != nil {
			return r, err
		}
		r.LastHeal = w.End
		if len(down) > 0 {
			if _, err := l.Start(down...); err != nil {
				note("round %d: nodes %v failed to start again: %v", r.Rounds, killed, err)
			}
		}
		// L1: connected and quiet for T_heal, every node is converged.
		t0 := time.Now()
		label := fmt.Sprintf("round %d", r.Rounds)
		if _, t1, err := l.WaitFor("chaos: every node converges", all, o.Timeout, Converged(all)); err != nil {
			r.Converged = false
			note("round %d: nodes %s did not converge within %v of the heal: %v", r.Rounds, FormatIDs(all), o.Timeout, err)
			label += " (timed out)"
		} else {
			if err := sleep(o.Settle - t1.Sub(t0)); err != nil {
				return r, err
			}
			if _, _, err := l.WaitFor("chaos: every node converged at the check point", all, o.Timeout, Converged(all)); err != nil {
				note("round %d: converged after the heal, then not at the check point", r.Rounds)
			}
			logf("chaos round %d: converged %.1fs after the heal and restarts; check point at +%v", r.Rounds, t1.Sub(t0).Seconds(), o.Settle)
		}
		if _, err := l.Mark(schema.KindQuiet, label, label+": L1 at heal + "+o.Settle.String(), time.Now()); err != nil {
			return r, err
		}
		if err := sleep(o.Quiet); err != nil {
			return r, err
		}
	}
	return r, nil
}

// chaosFault injects one random fault. Kills spare the nodes already down,
// and at most N/2 nodes are down at once; restarts spare the nodes down.
func chaosFault(l *Lab, rng *rand.Rand, down *[]int) (kind, spec string, err error) {
	n := l.N()
	perm := l.all()
	rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	switch rng.IntN(6) {
	case 0, 1: // a partition into 2 (or, from 4 nodes, 3) non-empty sides
		k := 2
		if n >= 4 && rng.IntN(3) == 0 {
			k = 3
		}
		sides := make([][]int, k)
		for i, id := range perm {
			if i < k {
				sides[i] = []int{id}
			} else {
				s := rng.IntN(k)
				sides[s] = append(sides[s], id)
			}
		}
		for _, s := range sides {
			slices.Sort(s)
		}
		_, err = l.Partition(sides...)
		return schema.KindPartition, fmt.Sprint(sides), err
	case 2: // a one-way cut
		_, err = l.Cut(perm[0], perm[1])
		return schema.KindOneway, fmt.Sprintf("%d->%d", perm[0], perm[1]), err
	case 3: // loss on every sender, or on some
		d := Degradation{LossPct: float64(5 * (1 + rng.IntN(6)))}
		if rng.IntN(2) == 0 {
			d.Nodes = slices.Sorted(slices.Values(perm[:1+rng.IntN(n-1)]))
		}
		_, _, err = l.Degrade(d)
		spec := fmt.Sprintf("%v%%", d.LossPct)
		if d.Nodes != nil {
			spec += " from " + FormatIDs(d.Nodes)
		}
		return schema.KindLoss, spec, err
	case 4: // kill -9
		for _, i := range perm {
			if len(*down) >= n/2 {
				break
			}
			if !slices.Contains(*down, i) {
				*down = append(*down, i)
				_, err = l.Kill(i)
				return schema.KindKill, fmt.Sprint(i), err
			}
		}
	default: // a graceful restart on the same data dir
		for _, i := range perm {
			if !slices.Contains(*down, i) {
				_, err = l.Restart(i, false)
				return schema.KindRestart, fmt.Sprint(i), err
			}
		}
	}
	return "", "", nil
}
