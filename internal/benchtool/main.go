// Command benchtool is the measuring half of groupd's benchmark suite;
// scripts/bench/run.sh is the driving half. It runs one trial at a time in
// the network lab of scripts/netem (or in the simulator) and prints one JSON
// object per trial on stdout, with a one-line human summary on stderr.
// `benchtool report` turns the collected NDJSON files into Markdown tables
// and SVG plots.
//
// Lab subcommands (need root and a lab started with scripts/netem/lab.sh):
//
//	failover       kill -9 the coordinator; time until the survivors agree on a new one
//	heal           partition into halves, hold, heal; time until one group forms
//	vrrp-failover  kill -9 the keepalived MASTER; time until a BACKUP's notify says MASTER
//	wait           until the lab is one group (from the event streams)
//	converge       time from a given instant until the lab is one group (from the recorded events)
//	sample         a window of steady state: messages, bytes, RSS and CPU
//	peers          groupd beside corosync, serf, JGroups and keepalived (see peers.go)
//	exclusive      exclusive leadership under faults: groupd, corosync, keepalived (see exclusive.go)
//
// Simulator subcommands:
//
//	sim-msgs       failover and heal in sim/, with message counts by type
//	sim-scale      convergence and heal for large N, with wall time
//	bully          standalone bully elections (simbench.BullyRun) against the seed's formulas
//
// And:
//
//	report         summary.md and plots/*.svg from a results directory
//	plot-demo      write the plots from built-in sample data (for tests)
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"failover":      cmdFailover,
		"heal":          cmdHeal,
		"vrrp-failover": cmdVRRP,
		"converge":      cmdConverge,
		"wait":          cmdWait,
		"sample":        cmdSample,
		"sim-msgs":      cmdSimMsgs,
		"sim-scale":     cmdSimScale,
		"bully":         cmdBully,
		"report":        cmdReport,
		"peers":         cmdPeers,
		"exclusive":     cmdExclusive,
	}
	f, ok := cmds[os.Args[1]]
	if !ok {
		usage()
		os.Exit(2)
	}
	if err := f(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "benchtool %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: benchtool COMMAND [FLAGS]
lab:       failover | heal | vrrp-failover | wait | converge | sample
peers:     peers wait|cold|failover|heal|idle|report
exclusive: exclusive run|report|cleanup
simulator: sim-msgs | sim-scale | bully
output:    report
Run "benchtool COMMAND -h" for the flags of one command.`)
}
