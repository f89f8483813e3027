package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// This file holds the checks: every view and lease fed to the invariant
// checker, the violations that stop a run, and the liveness checks (L1,
// L2) a caller makes.

// Primary is one primary leadership (quorum mode): node Node led in Term,
// and was primary from From until To, its lease's end (real time on the
// virtual clock); Open while it still runs.
type Primary struct {
	Node     wire.NodeID
	Term     wire.GroupNumber
	From, To time.Time
	Open     bool
}

// Primaries returns the primary leaderships seen so far (quorum mode).
func (s *Sim) Primaries() []Primary { return s.primaries }

// lead tells the checker, in quorum mode, when n is a primary leader and
// until when its lease runs (in real, virtual time), so that it checks
// that no two nodes are primary leaders at once and that terms grow.
func (s *Sim) lead(n *node) {
	primary, until := n.d.Node().Lease()
	st := n.d.Node().Status()
	proc := int32(0)
	if n.dup {
		proc = n.slot // a second process with the ID (StartDuplicateSplit)
	}
	if !primary || !st.Leader {
		if n.leading {
			n.leading = false
			s.endPrimary(n)
			s.chk.UnleadProcess(s.Now(), n.id, proc)
		}
		return
	}
	end := time.Time{} // without a lease (the negative control): until it stops
	if !until.IsZero() {
		at := s.leaseEnd(n, until)
		if n.leading && at == n.leadUntil && n.leadTerm == st.Term {
			return
		}
		n.leadUntil = at
		end = Epoch.Add(time.Duration(at))
	}
	s.recordPrimary(n, st.Term, end)
	n.leading, n.leadTerm = true, st.Term
	for _, v := range s.chk.LeadProcess(s.Now(), n.id, proc, st.Term, end) {
		s.fail(v)
	}
}

// recordPrimary keeps the record of n's primary leaderships: a new one
// when it was not leading, or in another term, or after its lease ran
// out; else the current one's new end.
func (s *Sim) recordPrimary(n *node, term wire.GroupNumber, end time.Time) {
	for i := len(s.primaries) - 1; i >= 0; i-- {
		p := &s.primaries[i]
		if p.Node != n.id {
			continue
		}
		if n.leading && p.Term == term && (p.Open || p.To.After(s.Now())) {
			p.To, p.Open = end, end.IsZero()
			return
		}
		break
	}
	s.primaries = append(s.primaries, Primary{Node: n.id, Term: term, From: s.Now(), To: end, Open: end.IsZero()})
}

// endPrimary closes n's open primary leadership without a lease at now.
func (s *Sim) endPrimary(n *node) {
	for i := len(s.primaries) - 1; i >= 0; i-- {
		if p := &s.primaries[i]; p.Node == n.id {
			if p.Open {
				p.To, p.Open = s.Now(), false
			}
			return
		}
	}
}

// observe feeds one view of n to the checker.
func (s *Sim) observe(n *node, st invitation.Status) {
	n.last = st
	if n.dup {
		return // the checker follows one process per ID (see Report's D1)
	}
	for _, v := range s.chk.Observe(invariant.Observation{Time: s.Now(), Node: n.id, Status: st, Alive: true}) {
		s.fail(v)
	}
}

// fail records a violation; the run stops after the current event.
func (s *Sim) fail(v invariant.Violation) {
	s.failures = append(s.failures, v)
	if s.err == nil {
		s.err = &Failure{Seed: s.cfg.Seed, Repro: s.cfg.Repro}
	}
	s.err.Violations = s.failures
	s.err.Trace = "" // rendered when the event ends
}

// Failure is the error a violated invariant stops a run with: the seed, the
// violations, the last trace lines and the command that reproduces it.
type Failure struct {
	Seed       int64
	Violations []invariant.Violation
	Trace      string
	Repro      string
}

func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invariant violated (seed %d):\n", f.Seed)
	for _, v := range f.Violations {
		fmt.Fprintf(&b, "  %s\n", v)
	}
	if f.Trace != "" {
		b.WriteString("trace (last events, oldest first):\n")
		b.WriteString(f.Trace)
	}
	if f.Repro != "" {
		fmt.Fprintf(&b, "reproduce: %s\n", f.Repro)
	}
	return b.String()
}

// failNow records a violation found outside an event (a liveness check)
// and renders the trace.
func (s *Sim) failNow(vs []invariant.Violation) error {
	if len(vs) == 0 {
		return nil
	}
	for _, v := range vs {
		s.fail(v)
	}
	s.err.Trace = s.trace.render()
	return s.err
}

// CheckConvergedAmong checks L1's condition on a subset of the live nodes
// (one side of a partition): Normal in one group coordinated by the
// highest-ranked of them, listing exactly them.
func (s *Sim) CheckConvergedAmong(ids []wire.NodeID) error {
	sts, vs := s.liveViews(ids, "L1", "node is down")
	return s.failNow(append(vs, invariant.Converged(s.Now(), sts)...))
}

// liveViews returns the views of the live nodes among ids, and a violation
// of invariant inv for each one that is down.
func (s *Sim) liveViews(ids []wire.NodeID, inv, down string) ([]invitation.Status, []invariant.Violation) {
	var sts []invitation.Status
	var vs []invariant.Violation
	for _, id := range ids {
		n := s.nodes[s.index(id)]
		if !n.alive {
			vs = append(vs, invariant.Violation{Invariant: inv, Time: s.Now(), Nodes: []wire.NodeID{id}, Detail: down})
			continue
		}
		sts = append(sts, n.last)
	}
	return sts, vs
}

// Converged reports whether L1's condition holds now, with at least one
// live node (without failing the run if it does not).
func (s *Sim) Converged() bool {
	sts := s.Statuses()
	return len(sts) > 0 && invariant.IsConverged(sts)
}

// CheckConverged checks L1 now: call it after the network was connected
// and quiet for HealBound. A violation stops the run and is returned.
func (s *Sim) CheckConverged() error {
	return s.failNow(invariant.Converged(s.Now(), s.Statuses()))
}

// CheckFailover checks L2 now for the given survivors: call it
// FailoverBound after their coordinator crashed.
func (s *Sim) CheckFailover(survivors []wire.NodeID) error {
	sts, vs := s.liveViews(survivors, "L2", "survivor is down")
	return s.failNow(append(vs, invariant.FailedOver(s.Now(), sts)...))
}

// HealBound is T_heal of the slowest configured timing.
func (s *Sim) HealBound() time.Duration {
	var b time.Duration
	for _, n := range s.nodes {
		b = max(b, n.timing.HealBoundFor(n.alg, s.cfg.N))
	}
	return b
}

// FailoverBound is T_failover of the slowest configured timing.
func (s *Sim) FailoverBound() time.Duration {
	var b time.Duration
	for _, n := range s.nodes {
		b = max(b, n.timing.FailoverBoundFor(n.alg, s.cfg.N))
	}
	return b
}

// newChecker returns the checker for a run of cfg: in quorum mode it
// also holds successive primary leaders LeaseMargin apart (the least of
// the nodes' margins, less 2 % for the clocks' drift, design §8).
func newChecker(cfg Config) *invariant.Checker {
	c := invariant.New()
	if cfg.quorumMode() && !cfg.ViewPrimary {
		m := cfg.Timing.LeaseMargin
		for _, t := range cfg.NodeTimings {
			if t.LeaseMargin > 0 {
				m = min(m, t.LeaseMargin)
			}
		}
		c.MinGap = m * 98 / 100
	}
	return c
}
