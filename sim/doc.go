// Package sim is a deterministic discrete-event simulator for groupd's
// protocol: it runs N real invitation.Nodes on a virtual clock and a
// modelled network, crashes and restarts them, and checks the invariants
// of design §4 (package internal/invariant) after every event.
//
// # Model
//
// Clock and events. Virtual time starts at Epoch. Events wait in a binary
// heap ordered by (time, scheduling order), so a run is a function of
// Config.Seed alone. One *math/rand.Rand, seeded from it, drives the
// network model and start-up times; each node gets its own jitter source
// (Config.Rand) derived from the seed, its ID and its incarnation.
//
//	event          effect
//	start          a node boots for the first time (at a random time within
//	               Config.StartSpread)
//	deliver        a message arrives: Step
//	tick           the node's NextDeadline came: Tick
//	saved          the modelled store finished a save: Persisted (or
//	               PersistFailed, with probability Config.SaveFailure)
//	peer-down      the modelled failure detector reports a peer: PeerDown
//
// After every input the simulator drains the node's Output: each Event's
// view goes to the checker (S1–S4 are checked after every event), a
// Persist request starts a save, each message goes to the network, and the
// node's tick is rescheduled at its new NextDeadline (stale ticks are
// dropped). A trace line records the input and everything it caused.
//
// Network. A unicast message to a live node is delivered after Base +
// uniform[0, Jitter], plus uniform[0, ReorderDelay] with probability
// Reorder, so messages overtake each other; it is lost with probability
// Loss (and the per-link loss of SetLinkLoss) and duplicated with
// probability Dup. A broadcast (wire.Broadcast, the multicast beacon) is
// one datagram that each other live node reachable from the sender receives
// independently. Partition puts nodes on sides that cannot talk; Cut drops
// one direction of one link; both apply when a message is sent and when it
// would arrive. CutBroadcast drops one direction's broadcasts alone, when
// they are sent (a node that stopped hearing a peer's multicast while
// unicast works). Crashed nodes receive nothing. Without multicast
// (Config.SeedsOnly) a broadcast reaches the nodes the sender's memberlist
// lists; a second process with a node's ID is found by memberlist's
// conflict report when it joins its seeds, and the runtimes' probes
// (dupid.go, as group/dupid.go).
//
// Host. Config.Host (and SetHost) models the CPU of the one machine the
// nodes share, as in a lab of namespaces: every delivery costs it
// PerDelivery, it has Cores of them, and deliveries wait for it in the
// order they were sent, so the LAN's own traffic delays every packet. A
// beacon that would wait more than half of Backlog is shed, any packet
// that would wait more than Backlog dropped, as the daemon's inbox does.
// Quiet puts back the configured host.
//
// Stalls. Pause stops one process for a while without crashing it (a
// loaded host's run queue, a stop signal, a long runtime pause): its
// inputs wait, and when it resumes its overdue tick comes first, carrying
// the deadline it was armed for, then what it was told meanwhile, in
// order. Quiet resumes every paused node. A quarter of the random
// schedules pause nodes for up to three seconds.
//
// Failure detector. Like memberlist, Detect.Delay (1.5 s) after a crash
// every live node that can reach the crashed one gets PeerDown for it (each
// after a further uniform[0, Detect.Jitter]), unless it restarted. With
// Detect.Partitions, the same happens after a partition or cut to every
// pair of nodes that can no longer talk both ways. News that no longer
// holds when it would arrive (the peer restarted, the network changed
// again) is dropped, as memberlist would refute it.
//
// Durable store. A save of the counter takes Config.SaveLatency (1–5 ms);
// saves of one node complete in order. On completion the counter is
// durable and the node is told. A crash loses the machine and everything in
// it; a save being written when the node crashes lands or not at random
// (the store keeps the previous value on a torn write, never less). A
// restarted node is a new invitation.Node whose Counter is the durable one.
//
// # Checks
//
// After every event: S1 (no group number created twice, across crashes;
// no number created or sent before its sequence was durable), S2, S3 and
// S4 on the live nodes' views, plus two checks of the machine's contract:
// EV (a view change with no Event, when Config.VerifyStatus) and DL (a node
// whose Tick never gets done with an instant). At check points: L1
// (CheckConverged, after a quiet T_heal = Timing.HealBound) and L2
// (CheckFailover, T_failover = Timing.FailoverBound after a coordinator
// crash). The first violation stops the run with a *Failure, which prints
// the seed, the violations, the last Config.TraceLines trace lines and the
// command that reproduces it.
//
// # Using it
//
// Scripted: New, then RunFor (or RunUntil a condition holds), Partition,
// Cut, CutBroadcast, Heal, Quiet, SetNet, SetHost, Pause, SetLoss, Crash,
// Restart, SetDurable, and the checks CheckConverged, CheckConvergedAmong,
// CheckFailover, Failover. Random: RandomSchedule(seed)
// builds a Schedule (N in [2, 20], partitions, cuts, loss, crashes, quiet
// check points); Schedule.Run plays it. Counts gives messages and bytes by
// type (bytes as wire.Encode sizes; Config.Codec also sends every message
// through the codec).
//
// The package is the engine and its checks. The experiments run with it
// (the failover and heal trials, their distributions, the bully/ring
// comparison, the standalone bully counts) are defined once, in
// internal/simbench, beside the benchmarks that use them.
//
//	go test ./sim                                          300 random schedules, the scenarios and the pinned histories
//	GROUPD_SIM_SEEDS=10000 go test ./sim -run Random -timeout 30m
//	go test ./sim -run TestRandomSchedules -seed=12345 -v  one schedule, traced
package sim
