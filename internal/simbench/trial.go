package simbench

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/sim"
	"github.com/groupd/groupd/wire"
)

// Options says what a trial simulates.
type Options struct {
	N        int
	Seed     int64
	Timing   invitation.Timing   // zero: invitation.DefaultTiming()
	Election invitation.Election // zero: bully
	// Detect is the failure detector model; nil: crashes and partitions
	// are detected (sim.Detect{Partitions: true}).
	Detect *sim.Detect
	// Hold is how long a heal trial's split lasts; zero: T_heal.
	Hold time.Duration
	// Guard, when set, is called between polls; an error ends the trial
	// with it (a wall-clock limit or a memory guard at huge N).
	Guard func() error
}

// Trial is the outcome of one trial.
type Trial struct {
	Sim *sim.Sim
	// Phase is the random wait between convergence and the fault.
	Phase time.Duration
	// Took is the virtual time from the fault (the crash, or the heal)
	// until the trial's condition held.
	Took time.Duration
	// Counts is what the network carried over the same span.
	Counts sim.Counts
	// Victim is the crashed coordinator (Failover only).
	Victim wire.NodeID
}

func (o Options) config() sim.Config {
	det := sim.Detect{Partitions: true}
	if o.Detect != nil {
		det = *o.Detect
	}
	return sim.Config{N: o.N, Seed: o.Seed, Timing: o.Timing, Election: o.Election, Detect: det, StartSpread: time.Second}
}

// Settle starts a simulation of o, runs it until every node has booted and
// L1 holds (failing past 3·T_heal), then for a random phase in
// [0, 2·CheckInterval) from the seed. It returns the simulation, the time
// convergence took and the phase.
func Settle(o Options) (s *sim.Sim, converge, phase time.Duration, err error) {
	s, err = sim.New(o.config())
	if err != nil {
		return nil, 0, 0, err
	}
	allUp := func() bool { return len(s.LiveIDs()) == s.N() && s.Converged() }
	converge, ok, err := s.RunUntil(allUp, sim.Until{Max: 3 * s.HealBound(), Guard: o.Guard})
	if err == nil && !ok {
		err = fmt.Errorf("simbench: not converged within %v: %w", 3*s.HealBound(), s.CheckConverged())
	}
	if err != nil {
		return s, converge, 0, err
	}
	t := s.Config().Timing
	phase = time.Duration(rand.New(rand.NewSource(o.Seed)).Int63n(int64(2 * t.CheckInterval)))
	return s, converge, phase, s.RunFor(phase)
}

// Failover runs a failover trial (see the package doc).
func Failover(o Options) (Trial, error) {
	s, _, phase, err := Settle(o)
	tr := Trial{Sim: s, Phase: phase}
	if err != nil {
		return tr, err
	}
	tr.Victim = s.Highest()
	var survivors []wire.NodeID
	for _, id := range s.LiveIDs() {
		if id != tr.Victim {
			survivors = append(survivors, id)
		}
	}
	before := s.Counts()
	s.Crash(tr.Victim)
	view := make([]invitation.Status, 0, len(survivors))
	failedOver := func() bool {
		view = view[:0]
		for _, id := range survivors {
			view = append(view, s.View(id))
		}
		return invariant.IsFailedOver(view)
	}
	took, ok, err := s.RunUntil(failedOver, sim.Until{Max: 3 * s.FailoverBound(), Guard: o.Guard})
	tr.Took, tr.Counts = took, s.Counts().Sub(before)
	if err == nil && !ok {
		err = fmt.Errorf("simbench: no failover within %v: %w", 3*s.FailoverBound(), s.CheckFailover(survivors))
	}
	return tr, err
}

// Halves returns the sides of a heal trial: 1..n/2 and n/2+1..n.
func Halves(n int) (a, b []wire.NodeID) {
	for i := 1; i <= n; i++ {
		if i <= n/2 {
			a = append(a, wire.NodeID(i))
		} else {
			b = append(b, wire.NodeID(i))
		}
	}
	return a, b
}

// Heal runs a heal trial (see the package doc).
func Heal(o Options) (Trial, error) {
	s, _, phase, err := Settle(o)
	tr := Trial{Sim: s, Phase: phase}
	if err != nil {
		return tr, err
	}
	hold := o.Hold
	if hold == 0 {
		hold = s.HealBound()
	}
	s.Partition(Halves(s.N()))
	if err := s.RunFor(hold); err != nil {
		return tr, err
	}
	before := s.Counts()
	s.Heal()
	took, ok, err := s.RunUntil(s.Converged, sim.Until{Max: 3 * s.HealBound(), Guard: o.Guard})
	tr.Took, tr.Counts = took, s.Counts().Sub(before)
	if err == nil && !ok {
		err = fmt.Errorf("simbench: not one group within %v of the heal: %w", 3*s.HealBound(), s.CheckConverged())
	}
	return tr, err
}
