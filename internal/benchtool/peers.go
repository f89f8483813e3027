//go:build linux

package main

// benchtool peers: groupd beside its peers (corosync, serf, JGroups,
// keepalived) on the same lab namespaces and the same fault schedule
// (scripts/bench/peers.sh calls it).
//
//	benchtool peers run    [--nodes LIST] [--peers LIST] [--trials K] [--idle S] [--out DIR] [--quick] [--force] [--no-install]
//	benchtool peers report --dir DIR       peers.md from DIR/peers.ndjson
//
// groupd's figures come from the lab's recorded history (lab.Measure, as
// the lab trials); every peer's from its nodes' own view output, with
// the times the nodes gave (peers_views.go), never from when benchtool
// noticed.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	netlab "github.com/groupd/groupd/internal/lab"
)

// peerSource is one kind of view output of a peer: a file of each node.
type peerSource struct {
	name   string
	file   string
	parser func() viewParser
}

// peerSpec says how a peer is measured.
type peerSpec struct {
	name      string
	leaderDef string // what "leader" means for it, for the record
	leaderCol string // the same, for a table
	hasLeader bool   // its views name a leader
	hasID     bool   // its views have an id that all members share
	vrrp      bool   // agreement is one MASTER, the highest node (priority 100+I), the rest BACKUP
	// sources: the first gives the figures; the others are recorded
	// beside them (alt). None for groupd: the lab's history.
	sources []peerSource
	// check cross-checks the agreed view of set with the peer's own
	// command-line tool, after the figure is taken; nil if it has none.
	check func(e *peerEnv, set []int, v pview) string
	// progs must be there; pkgs are the Debian packages that bring them.
	progs, pkgs []string
}

var peerSpecs = map[string]*peerSpec{
	"groupd": {name: "groupd", leaderDef: "coordinator", leaderCol: "coordinator", hasLeader: true, hasID: true},
	"corosync": {
		name: "corosync", leaderDef: "ring representative (lowest node id of the membership)", leaderCol: "ring representative",
		hasLeader: true, hasID: true,
		sources: []peerSource{{name: "log", file: "corosync.log", parser: func() viewParser { return newCorosyncLogParser(time.Now) }}},
		check:   checkQuorumtool, progs: []string{"corosync", "corosync-quorumtool"}, pkgs: []string{"corosync"},
	},
	"serf": {
		name: "serf", leaderDef: "none (serf has no leader: membership convergence)", leaderCol: "none",
		sources: []peerSource{
			{name: "agent-log", file: "agent.log", parser: func() viewParser { return &serfLogParser{} }},
			{name: "event-handler", file: "events.log", parser: func() viewParser { return &serfHandlerParser{} }},
		},
		check: checkSerfMembers, progs: []string{"serf"}, pkgs: []string{"serf"},
	},
	"jgroups": {
		name: "jgroups", leaderDef: "view coordinator (first member)", leaderCol: "coordinator", hasLeader: true, hasID: true,
		sources: []peerSource{{name: "view-printer", file: "view.log", parser: func() viewParser { return jgroupsParser{} }}},
		progs:   []string{jgroupsJar, "java", "javac"}, pkgs: []string{"libjgroups-java", "default-jdk-headless"},
	},
	"keepalived": {
		name: "keepalived", leaderDef: "VRRP MASTER", leaderCol: "MASTER", vrrp: true,
		// Not the notify script's log: keepalived runs notify scripts
		// detached, and under load two quick changes get logged in the
		// wrong order (seen at N = 16).
		sources: []peerSource{{name: "log", file: "keepalived.log", parser: func() viewParser { return keepalivedLogParser{} }}},
		progs:   []string{"keepalived"}, pkgs: []string{"keepalived"},
	},
}

// peersOrder is the order of the report's rows.
var peersOrder = []string{"groupd", "corosync", "serf", "jgroups", "keepalived"}

// PeerResult is one cold start, failover or heal trial.
type PeerResult struct {
	Kind   string `json:"kind"` // cold | failover | heal | note
	Peer   string `json:"peer"`
	N      int    `json:"n"`
	Trial  int    `json:"trial,omitempty"`
	Source string `json:"source,omitempty"` // the view output the figure was read from

	Seconds  float64  `json:"seconds"`            // the figure
	DetectS  *float64 `json:"detect_s,omitempty"` // first view change of any node after the fault
	SplitS   *float64 `json:"split_s,omitempty"`  // heal: the sides' own views, after the partition was in place
	FromCmdS float64  `json:"from_cmd_start_s,omitempty"`
	CmdS     float64  `json:"cmd_s,omitempty"`           // heal: how long the heal took to apply
	PartCmdS float64  `json:"partition_cmd_s,omitempty"` // heal: how long the partition took to apply
	PhaseS   float64  `json:"phase_s,omitempty"`

	Victim       int    `json:"victim,omitempty"`
	LeaderBefore int    `json:"leader_before,omitempty"`
	Leader       int    `json:"leader,omitempty"` // of the agreed view at the end
	First        int    `json:"first,omitempty"`  // failover: the node whose view changed first
	View         string `json:"view,omitempty"`   // the agreed view
	// Alt are the same figure read from the peer's other view outputs
	// (serf: its event handler, which the agent feeds coalesced events).
	Alt   map[string]float64 `json:"alt,omitempty"`
	Check string             `json:"check,omitempty"` // the cross-check with the peer's own tool

	FaultTime time.Time  `json:"fault_time,omitzero"`
	Load      [3]float64 `json:"load"`
	What      string     `json:"what,omitempty"` // note: what it is about
	Note      string     `json:"note,omitempty"`
}

func cmdPeers(args []string) error {
	subs := map[string]func([]string) error{"run": cmdPeersRun, "report": cmdPeersReport}
	if len(args) == 0 || subs[args[0]] == nil {
		return fmt.Errorf("usage: benchtool peers run|report [FLAGS] (peers: %s)", strings.Join(peersOrder, ", "))
	}
	return subs[args[0]](args[1:])
}

// peersRun is one run of the comparison.
type peersRun struct {
	b           *bench
	peers       []string
	trials      int
	idle        time.Duration
	unavailable map[string]string
}

func cmdPeersRun(args []string) error {
	fs := flag.NewFlagSet("peers run", flag.ContinueOnError)
	sizes := fs.String("nodes", "5", "lab sizes, comma-separated (the full comparison is 5,16)")
	peers := fs.String("peers", strings.Join(peersOrder, ","), "which peers, in this order")
	trials := fs.Int("trials", 3, "trials per measure: cold start, failover, heal")
	idle := fs.Int("idle", 30, "the quiet window for the idle cost, seconds")
	out := fs.String("out", "", "results directory (default /tmp/groupd-peers-TIME)")
	quick := fs.Bool("quick", false, "N=3, 1 trial, 10 s idle window: checks the harness")
	force := fs.Bool("force", false, "take down a lab of this prefix that is already up")
	noInstall := fs.Bool("no-install", false, "never apt-get install a missing peer; report it as not run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quick {
		*sizes, *trials, *idle = "3", 1, 10
	}
	ns, err := parseInts(*sizes)
	if err != nil || len(ns) == 0 || *trials < 1 || *idle < 1 {
		return fmt.Errorf("want --nodes like 5 or 5,16 (%v) and positive --trials and --idle", err)
	}
	r := &peersRun{trials: *trials, idle: time.Duration(*idle) * time.Second, unavailable: map[string]string{}}
	if r.peers, err = listFlag(*peers, peersOrder, "--peers"); err != nil {
		return err
	}
	if r.b, err = newBench("peers", *out, "pb", "10.91.0", *force); err != nil {
		return err
	}
	defer r.b.finish()
	r.install(!*noInstall)
	if err := r.b.writeEnv(r.versions()...); err != nil {
		return err
	}
	for _, n := range ns {
		if err := r.size(n); err != nil {
			return err
		}
	}
	r.b.section("report")
	return cmdPeersReport([]string{"--dir", r.b.out, "-o", "-"})
}

// install makes sure the peers' programs are there, or says why a peer
// cannot run.
func (r *peersRun) install(may bool) {
	for _, p := range r.peers {
		s := peerSpecs[p]
		switch {
		case len(s.progs) == 0:
		case !may:
			if len(missing(s.progs)) > 0 {
				r.unavailable[p] = fmt.Sprintf("not installed (%s), and --no-install", strings.Join(s.pkgs, " "))
			}
		default:
			if err := r.b.install(s.progs, s.pkgs); err != nil {
				r.unavailable[p] = err.Error()
			}
		}
	}
}

// versions are env.txt's lines on the peers.
func (r *peersRun) versions() []string {
	first := func(name string, args ...string) string {
		out, _ := exec.Command(name, args...).CombinedOutput()
		line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return line
	}
	deb := func(pkg string) string { return first("dpkg-query", "-W", "-f", "${Version}", pkg) }
	v := map[string]string{
		"corosync":   fmt.Sprintf("%s (Debian %s); transport udp (IP multicast)", first("corosync", "-v"), deb("corosync")),
		"serf":       fmt.Sprintf("%s (Debian %s)", first("serf", "version"), deb("serf")),
		"jgroups":    fmt.Sprintf("Debian libjgroups-java %s, udp.xml; %s", deb("libjgroups-java"), first("java", "-version")),
		"keepalived": first("keepalived", "--version"),
	}
	lines := []string{fmt.Sprintf("peers:      %s; %d trials; %v idle", strings.Join(r.peers, ","), r.trials, r.idle)}
	for _, p := range r.peers {
		if v[p] != "" && r.unavailable[p] == "" {
			lines = append(lines, fmt.Sprintf("%-11s %s", p+":", v[p]))
		}
	}
	return lines
}

// size runs every peer on a lab of n nodes, and keeps their logs in
// OUT/logs/N<n>.
func (r *peersRun) size(n int) error {
	r.b.section("lab N=%d", n)
	l, err := r.b.labUp(n, "lan")
	if err != nil {
		return err
	}
	for _, p := range r.peers {
		if why := r.unavailable[p]; why != "" {
			r.b.note("peers.ndjson", Note{Peer: p, N: n, What: "unavailable", Note: why})
			continue
		}
		if err := r.block(l, p); err != nil {
			r.b.say("%s N=%d stopped early: %v", p, n, err)
		}
		_, _ = l.Heal(false)
	}
	// Every node's configuration and view output, groupd's logs and the
	// lab's history, for later reading.
	logs := r.b.path(fmt.Sprintf("logs/N%d", n))
	copies := [][2]string{{filepath.Join(l.Dir(), "peers") + "/.", logs}, {filepath.Join(l.Dir(), netlab.HistoryFile), logs + "/groupd/"}}
	for i := 1; i <= n; i++ {
		copies = append(copies, [2]string{l.LogFile(i), fmt.Sprintf("%s/groupd/n%d/", logs, i)})
	}
	for _, c := range copies {
		if err := os.MkdirAll(filepath.Dir(c[1]+"x"), 0o755); err != nil {
			return err
		}
		_ = exec.Command("cp", "-r", c[0], c[1]).Run()
	}
	return nil
}

// stagger is the pause between two nodes' starts when a peer cannot
// start all at once.
const stagger = 500 * time.Millisecond

// block runs one peer on the lab: K cold starts, the idle window, K
// failovers and K heals.
func (r *peersRun) block(l *netlab.Lab, peer string) error {
	n := l.N()
	r.b.section("%s N=%d: %d cold starts, %v idle, %d failovers, %d heals", peer, n, r.trials, r.idle, r.trials, r.trials)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := r.b.peerEnv(ctx, l)
	procs, err := newPeerProcs(e, peer)
	if err != nil {
		return err
	}
	defer procs.stopAll()
	m := &peerTrials{spec: peerSpecs[peer], e: e, procs: procs}
	note := func(what, format string, args ...any) {
		r.b.note("peers.ndjson", Note{Peer: peer, N: n, What: what, Note: fmt.Sprintf(format, args...)})
	}
	// keep writes a trial's line, or a note that it failed.
	keep := func(what string, t int, res PeerResult, err error) bool {
		if err != nil {
			note(what, "trial %d: %v (load %s)", t, err, loadString())
			return false
		}
		return r.b.emit("peers.ndjson", res) == nil
	}
	staggered := false
	for t := 1; t <= r.trials && !staggered; t++ {
		if res, err := m.cold(t); keep("cold", t, res, err) {
			continue
		}
		// A peer whose cold start of all N at once fails (corosync 3.1.7
		// asserts in totemsrp.c at N = 16 here) is started one node at a
		// time, so that its idle cost, failovers and heals are measured.
		if err := m.staggered(); err != nil {
			note("cold", "started one node every %v: still no single view within 180 s (load %s); no further cold starts", stagger, loadString())
			return err
		}
		note("cold", "started again one node every %v: the idle window, failovers and heals below follow that start", stagger)
		staggered = true
	}
	time.Sleep(5 * time.Second)
	res, err := m.idleWindow(r.idle)
	if err == nil && staggered {
		res.Note = strings.TrimSuffix(fmt.Sprintf("after a staggered start (one node every %v); %s", stagger, res.Note), "; ")
	}
	if err != nil {
		note("idle", "the idle window failed: %v (load %s)", err, loadString())
	} else if err := r.b.emit("peers.ndjson", res); err != nil {
		return err
	}
	for t := 1; t <= r.trials; t++ {
		res, err := m.failover(t)
		keep("failover", t, res, err)
		if err := m.revive(); err != nil {
			note("failover", "no single view within 180 s of restarting node %d (load %s)", res.Victim, loadString())
			return err
		}
	}
	for t := 1; t <= r.trials; t++ {
		if res, err := m.heal(t); !keep("heal", t, res, err) {
			_, _ = l.Heal(false)
			if _, err := m.wait(netlab.Span(1, n), 180*time.Second); err != nil {
				return err
			}
		}
	}
	return nil
}

// listFlag reads a comma-separated list of some of allowed.
func listFlag(s string, allowed []string, what string) ([]string, error) {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x == "" {
			continue
		}
		if !slices.Contains(allowed, x) {
			return nil, fmt.Errorf("%s %q: want some of %s", what, x, strings.Join(allowed, ","))
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s given", what)
	}
	return out, nil
}
