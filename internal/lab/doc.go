// Package lab is groupd's network lab: real `groupd run` processes, one per
// Linux network namespace, on a private bridge, with real partitions,
// one-way cuts, packet loss, kill -9 and restarts, and one recorded history
// of all of it. The end-to-end tests (e2e), the scripts of scripts/netem
// (through the command internal/cmd/lab) and the benchmarks use it; it
// needs root (CAP_NET_ADMIN), `ip`, and `iptables` for faults.
//
//	l, err := lab.Up(ctx, lab.Config{Nodes: 5, Prefix: "hl", Subnet: netip.MustParsePrefix("10.81.0.0/24"),
//		Dir: "/tmp/hl", Bin: "/tmp/groupd"})
//	defer l.Close()
//	up, err := l.Start(1, 2, 3, 4, 5)
//	sts, seen, err := l.WaitFor("converge", lab.Span(1, 5), time.Minute, lab.Converged(lab.Span(1, 5)))
//	w, err := l.Partition([]int{1, 2}, []int{3, 4, 5})
//	h, err := l.History() // replay with internal/history
//
// # Names and addresses
//
// Everything a lab creates carries its prefix P (a lower-case letter and up
// to 9 lower-case letters or digits), so that it can be found again after a
// crash, and so that several labs (of several tests, or people) run side by
// side on one host; a lab removes only what carries its prefix, and kills
// only the processes it started, by PID:
//
//	bridge      P-br0        root namespace, no address, multicast snooping,
//	                         STP and bridge netfilter off (Config.Bridge
//	                         names it otherwise; a host's bridge is refused)
//	namespaces  P-1 .. P-N   eth0 = the I-th address of the lab's subnet
//	                         (MAC 02:4e:00:00:II:II), lo, route 224.0.0.0/4
//	                         dev eth0, permanent neighbour entries
//	veths       P-vI         root side of each pair, enslaved to the bridge
//	probe       P-probe-PID  short-lived, to detect sch_netem
//	iptables    chains P-PART, P-CUT, P-LOSS (P in capitals) on INPUT inside
//	            each namespace (gone with the namespace)
//
// Each lab has its own subnet (a /24 holds 254 nodes; 256 need a /23). Lab
// traffic never leaves its bridge: the namespaces have no default route and
// the bridge has no address, so equal subnets on two bridges would not
// collide either; distinct ones keep captures and logs readable.
//
// # Neighbour (ARP) tuning
//
// Every namespace gets a permanent neighbour entry for every other node
// (N·(N−1) entries: 65,280 at N = 256), made up front with one `ip -batch`
// per namespace, so ARP never runs between lab nodes. The kernel's
// neighbour table is one for all namespaces and its garbage-collected
// entries are limited by net.ipv4.neigh.default.gc_thresh3 (1,024 by
// default): without permanent entries, a lab of 33 nodes, or a big lab of
// someone else's, fills it, and nodes then lose unicast traffic (`No
// buffer space available`, "neighbour table overflow" in dmesg), which
// looks like a protocol failure. Permanent entries are not counted against
// the gc thresholds (Linux ≥ 4.20), so the lab needs no sysctl change and
// makes none; ReadHostStats reports table overflows and backlog drops so
// that a test can tell a loaded host from a protocol fault.
//
// # Faults
//
// Partitions and one-way cuts are iptables DROP rules matching the source
// address on INPUT of the receiver (multicast from a cut peer is dropped
// too; the sender sees no error, as on a broken link). Loss and delay use
// `tc qdisc netem` on each sender's eth0 where the kernel has sch_netem;
// without it, loss is `-m statistic --mode random` on INPUT of the
// receivers and delay is not applied (tbf and htb shape rates; they do not
// delay). Mechanism says which is used. Every change is one
// iptables-restore per namespace, all in parallel, and is marked in the
// history with the instant it started (Window).
//
// # Daemons and the history
//
// Start launches daemons (all at once) with the lab's and each node's
// Options; Kill (SIGKILL), Stop (SIGTERM, SIGKILL after 3 s), Restart,
// Wipe and Restore (an older copy of the data dir, taken with Backup) act
// on the processes the lab started, by PID. A node may run with another
// node's ID (Options.ID: a duplicate ID, which groupd refuses); Exited
// says how its daemon ended. A lab owned by a
// process (Config.Detach false: tests) kills its daemons with it (parent
// death signal) and records every node's event stream (GET /v1/events,
// what `groupd watch --json` prints) with goroutines; a lab set up by
// commands that exit (Detach: the scripts) leaves its daemons in their own
// sessions and records with a background process (Config.Recorder).
// Either way the run dir's history.ndjson holds every event line as the
// daemon sent it and every mark of the lab (start, kill, stop, restart,
// wipe, partition, oneway, loss, delay, heal, check points), one JSON
// object per line, for internal/history to replay.
//
// # Teardown
//
// Close (tests: t.Cleanup) and Down (operators) stop the daemons and the
// recorders and remove the network; CloseOnSignal and CloseBefore cover a
// signal and a test binary's -timeout, where no cleanup runs;
// RemoveLeftovers clears what a killed process left behind.
//
// # Run dir
//
//	lab.json         the configuration and the faults in place (for the next command)
//	history.ndjson   events and marks
//	recorder.pid, recorder.log
//	nodeI/           data/ (--data-dir), api.sock (--api), groupd.log, pid
package lab
