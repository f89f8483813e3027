// Package simbench holds the experiments groupd runs in its simulator
// (package sim): the failover and heal trials, their distributions over
// many seeds, the bully/ring comparison, and the standalone bully
// election's message counts against the seed's formulas. Package sim is the
// engine and its invariant checks; what is measured with it, and how, is
// defined once, here, and used by the benchmarks (internal/benchtool's
// sim-msgs, sim-scale and bully subcommands) and the tests of this package.
//
// # The trials
//
// Both trials start the same way (Settle): N nodes boot within a second
// and converge (L1), then a random phase, uniform in [0, 2·CheckInterval)
// from the seed, passes so that the fault does not strike in step with the
// nodes' periodic timers.
//
//   - Failover: the coordinator (the highest-ranked node) crashes; the
//     result is the virtual time until the survivors are Normal in one
//     group (L2's condition), polled every sim.Poll, failing past
//     3·T_failover.
//   - Heal: the nodes split into 1..N/2 and N/2+1..N (the split of the
//     lab's partition.sh and of the lab benchmarks) for a hold (T_heal
//     unless given), each side forming its own group; then the network heals
//     and the result is the virtual time until L1 holds again, failing past
//     3·T_heal.
//
// Every run is checked for S1–S4 after every event by the simulator
// itself.
//
//	go test ./internal/simbench                           the trials at small N, the bully formulas
//	GROUPD_SIM_REPORT=1 go test ./internal/simbench -v    the distributions for BENCHMARKS.md
//	go test ./internal/simbench -run XXX -bench SplitHeal -benchtime 1x
package simbench
