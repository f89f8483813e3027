// Package e2e holds groupd's end-to-end tests: real `groupd run` processes,
// one per Linux network namespace, on a private bridge, with real
// partitions, one-way cuts, packet loss and kill -9.
//
// The package has no code of its own besides this comment; everything is in
// the _test.go files, among them:
//
//   - main_test.go: TestMain. It checks the preconditions (root, `ip`, network
//     namespaces usable; `iptables` for the fault tests), serialises
//     concurrent e2e runs with a lock file, removes what crashed earlier
//     runs left behind, builds ./cmd/groupd once into a temporary directory,
//     and tears everything down on exit, on SIGINT/SIGTERM and just before
//     the test binary's -timeout.
//   - lab_test.go: the lab. N namespaces on one bridge, iptables faults
//     (the kernel this was written on has no sch_netem), daemon and
//     recorder processes, status polling over the unix-socket API.
//   - history_test.go: the recorded history (every node's `groupd watch
//     --json` events, plus the lab's kills, restarts and check points) and
//     its adapter to internal/invariant, the checker shared with the
//     simulator.
//   - scenarios_test.go: the scenarios of issue 5 (other _test.go files
//     add more, on the same lab).
//
// # Naming
//
// The tests drive `ip` and `iptables` themselves rather than scripts/netem
// (whose default names are gd-I, gd-br0, 10.77.0.I): every test process
// gets names of its own, so neither a lab started by hand nor another test
// binary collides with it; the lab is set up in parallel; and the instants
// the checks need (when a fault started and was in place, when a process
// died) are known in-process. Everything a test process creates carries the
// tag "gde" + its PID in base 36 (T below):
//
//	bridge      Tbr          (root namespace, no address, multicast snooping
//	                          and bridge netfilter off)
//	namespaces  T-1 .. T-N    eth0 = 10.78.0.I/24 (MAC 02:4e:00:00:II:II), lo,
//	                          route 224.0.0.0/4 dev eth0, permanent neighbour
//	                          entries for every other node (the kernel's
//	                          neighbour table is shared by all namespaces, and
//	                          a big lab elsewhere can fill it)
//	veths       TvI           root side of each pair, enslaved to the bridge
//	iptables    chains GDE-PART, GDE-CUT, GDE-LOSS on INPUT inside each
//	            namespace (gone with the namespace)
//
// The PID in the tag lets a later run remove the leftovers of a test binary
// that was killed (a -timeout panic, SIGKILL) without touching a live run.
// Nodes' sockets, data dirs and logs live in a short temporary directory
// (/tmp/gdeNNN, kept and logged when a test fails).
//
// # Checks
//
// Every test records every node's events and, when it ends (pass or fail),
// replays the whole history through invariant.Checker: S1–S4 on every
// record, L1 (CheckConverged) and L2 (CheckFailover) at the check points the
// scenario placed at fault time + T_heal (or T_failover) + slack. Times
// (failover, heal) are measured on the recorded history, from the fault to
// the first instant at which the condition holds, and logged with t.Logf.
//
// Run them as root:
//
//	go test -count=1 -v ./e2e/
//
// Without root, without `ip`, or where namespaces cannot be created, every
// test skips with the reason; without `iptables`, the fault tests skip and
// say to apt-get install iptables. -short skips them all.
package e2e
