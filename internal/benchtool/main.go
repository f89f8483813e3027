//go:build linux

// Command benchtool is groupd's benchmark suite: the scripts of
// scripts/bench only read their arguments and call it. It runs labs of
// real daemons (internal/lab) and the simulator, writes one JSON object
// per trial into a results directory, and turns those files into
// Markdown tables and SVG plots.
//
// Suites (need root; each has its own lab, named by GROUPD_LAB_PREFIX,
// GROUPD_LAB_SUBNET and GROUPD_LAB_DIR when they are set):
//
//	suite          failover against keepalived, heal, steady state, lab scale, simulator (scripts/bench/run.sh)
//	peers run      groupd beside corosync, serf, JGroups and keepalived (scripts/bench/peers.sh)
//	exclusive run  exclusive leadership under faults: groupd, corosync, keepalived (scripts/bench/exclusive.sh)
//	scale          cold starts, heals and failovers at lab scale (scripts/bench/scale.sh)
//	loss           sustained packet loss: new group numbers, convergence after (scripts/bench/loss.sh)
//
// Simulator (each run also by the suite, in a process of its own):
//
//	sim-msgs       failover and heal in sim/, with message counts by type
//	sim-scale      convergence and heal for large N, with wall time
//	bully          standalone bully elections (simbench.BullyRun) against the seed's formulas
//
// Reports:
//
//	report            summary.md and plots/*.svg from a suite's results directory
//	report --benchmarks BENCHMARKS.md [--readme README.md]
//	                  rewrite the generated blocks of BENCHMARKS.md (and README's
//	                  compare block) from the raw results they name (also: report-md)
//	peers report      peers.md from peers.ndjson
//	exclusive report  the tables of exclusive leadership
//	exclusive cleanup what a crashed run left (processes, namespaces)
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
		"suite":     cmdSuite,
		"peers":     cmdPeers,
		"exclusive": cmdExclusive,
		"scale":     cmdScale,
		"loss":      cmdLoss,
		"sim-msgs":  cmdSimMsgs,
		"sim-scale": cmdSimScale,
		"bully":     cmdBully,
		"report":    cmdReport,
		"report-md": cmdReportMD,
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
suites:    suite | peers run | exclusive run | scale | loss
simulator: sim-msgs | sim-scale | bully
reports:   report | peers report | exclusive report|cleanup
Run "benchtool COMMAND -h" for the flags of one command.`)
}
