package sim

import "time"

// Converge runs s until every node has started and L1's condition holds,
// for at most max, and returns how long that took.
func (s *Sim) Converge(max time.Duration) (time.Duration, error) {
	d, ok, err := s.RunUntil(func() bool { return s.started() && s.Converged() }, Until{Max: max})
	if err != nil {
		return d, err
	}
	if !ok {
		return d, s.CheckConverged()
	}
	return d, nil
}

// started reports whether every node has booted at least once.
func (s *Sim) started() bool {
	for _, n := range s.nodes {
		if n.inc == 0 {
			return false
		}
	}
	return true
}
