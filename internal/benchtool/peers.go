package main

// benchtool peers: the measuring half of scripts/bench/peers.sh, which
// compares groupd with its peers (corosync, serf, JGroups, keepalived) on
// the same lab namespaces and the same fault schedule.
//
//	benchtool peers wait      --peer P --nodes N       until nodes 1..N agree on one view
//	benchtool peers cold      --peer P --nodes N --since T   time from T until they agree
//	benchtool peers failover  --peer P --nodes N       kill -9 the leader; time until the survivors agree
//	benchtool peers heal      --peer P --nodes N       partition in halves, hold, heal; time until one view
//	benchtool peers idle      --peer P --nodes N       a quiet window: tx packets/s, CPU %, RSS per node
//	benchtool peers report    --dir DIR                peers.md from DIR/peers.ndjson
//
// Every figure is read from the nodes' own view output, with the times the
// nodes gave (see peers_views.go), never from when benchtool noticed.
// peers.sh starts and restarts the daemons; benchtool only kills them (by
// the pids in their pid files) and runs the lab's partition.sh and heal.sh.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// peersCfg is where things are. The layout is shared with peers.sh:
// DIR/PEER/nI/... for the peers, the lab's RUN/nodeI/... for groupd.
type peersCfg struct {
	dir    string // peers' run dir
	lab    string // the lab's run dir
	prefix string // namespaces are PREFIX-I
	netem  string // directory of partition.sh and heal.sh
}

func (c *peersCfg) peerFile(peer string, i int, name string) string {
	return filepath.Join(c.dir, peer, fmt.Sprintf("n%d", i), name)
}

func (c *peersCfg) ns(i int) string { return fmt.Sprintf("%s-%d", c.prefix, i) }

// peerSource is one kind of view output of a peer.
type peerSource struct {
	name   string
	file   func(c *peersCfg, i int) string
	parser func(i int) viewParser // for node i
}

// peerSpec says how a peer is measured.
type peerSpec struct {
	name      string
	leaderDef string // what "leader" means for it, for the record
	leaderCol string // the same, for a table
	hasLeader bool   // its views name a leader
	hasID     bool   // its views have an id that all members share
	state     string // the state every node must be in (groupd: normal)
	vrrp      bool   // agreement is one MASTER, the highest node (priority 100+I), the rest BACKUP
	// sources: the first gives the figures; the others are recorded
	// beside them (alt).
	sources []peerSource
	// pidFiles of node i, in the order a kill -9 hits them.
	pidFiles func(c *peersCfg, i int) []string
	// check cross-checks the agreed view of set with the peer's own
	// command-line tool, after the figure is taken; "" if it has none.
	check func(c *peersCfg, set []int, v pview) string
}

func inPeer(peer, name string) func(c *peersCfg, i int) string {
	return func(c *peersCfg, i int) string { return c.peerFile(peer, i, name) }
}

var peerSpecs = map[string]*peerSpec{
	"groupd": {
		name: "groupd", leaderDef: "coordinator", leaderCol: "coordinator", hasLeader: true, hasID: true, state: "normal",
		sources: []peerSource{{
			name: "events",
			// The lab's one recorded history: every node's events.
			file:   func(c *peersCfg, i int) string { return filepath.Join(c.lab, "history.ndjson") },
			parser: func(i int) viewParser { return groupdParser{node: i} },
		}},
		pidFiles: func(c *peersCfg, i int) []string {
			return []string{filepath.Join(c.lab, fmt.Sprintf("node%d", i), "pid")}
		},
	},
	"corosync": {
		name: "corosync", leaderDef: "ring representative (lowest node id of the membership)",
		leaderCol: "ring representative",
		hasLeader: true, hasID: true,
		sources: []peerSource{{
			name:   "log",
			file:   inPeer("corosync", "corosync.log"),
			parser: func(int) viewParser { return newCorosyncLogParser(time.Now) },
		}},
		pidFiles: func(c *peersCfg, i int) []string { return []string{c.peerFile("corosync", i, "pid")} },
		check:    checkQuorumtool,
	},
	"serf": {
		name: "serf", leaderDef: "none (serf has no leader: membership convergence)", leaderCol: "none",
		sources: []peerSource{
			{name: "agent-log", file: inPeer("serf", "agent.log"), parser: func(int) viewParser { return &serfLogParser{} }},
			{name: "event-handler", file: inPeer("serf", "events.log"), parser: func(int) viewParser { return &serfHandlerParser{} }},
		},
		pidFiles: func(c *peersCfg, i int) []string { return []string{c.peerFile("serf", i, "pid")} },
		check:    checkSerfMembers,
	},
	"jgroups": {
		name: "jgroups", leaderDef: "view coordinator (first member)", leaderCol: "coordinator",
		hasLeader: true, hasID: true,
		sources: []peerSource{{
			name: "view-printer", file: inPeer("jgroups", "view.log"),
			parser: func(int) viewParser { return jgroupsParser{} },
		}},
		pidFiles: func(c *peersCfg, i int) []string { return []string{c.peerFile("jgroups", i, "pid")} },
	},
	"keepalived": {
		name: "keepalived", leaderDef: "VRRP MASTER", leaderCol: "MASTER", vrrp: true,
		// Not the notify script's log: keepalived runs notify scripts
		// detached, and under load two quick changes get logged in the
		// wrong order (seen at N = 16).
		sources: []peerSource{{
			name: "log", file: inPeer("keepalived", "keepalived.log"),
			parser: func(int) viewParser { return keepalivedLogParser{} },
		}},
		// The VRRP child first, then its parent, microseconds apart:
		// neither can send a priority-0 advert or respawn the other.
		pidFiles: func(c *peersCfg, i int) []string {
			return []string{c.peerFile("keepalived", i, "vrrp.pid"), c.peerFile("keepalived", i, "keepalived.pid")}
		},
	},
}

// peersOrder is the order of the report's rows.
var peersOrder = []string{"groupd", "corosync", "serf", "jgroups", "keepalived"}

// PeerResult is one cold start, failover or heal trial, or a note.
type PeerResult struct {
	Kind   string `json:"kind"` // cold | failover | heal | note
	Peer   string `json:"peer"`
	N      int    `json:"n"`
	Trial  int    `json:"trial,omitempty"`
	Source string `json:"source,omitempty"` // the view output the figure was read from

	Seconds  float64  `json:"seconds"`            // the figure
	DetectS  *float64 `json:"detect_s,omitempty"` // first view change of any node after the fault
	SplitS   *float64 `json:"split_s,omitempty"`  // heal: the sides' own views, after partition.sh returned
	FromCmdS float64  `json:"from_cmd_start_s,omitempty"`
	CmdS     float64  `json:"cmd_s,omitempty"`           // heal: how long heal.sh ran
	PartCmdS float64  `json:"partition_cmd_s,omitempty"` // heal: how long partition.sh ran
	PhaseS   float64  `json:"phase_s,omitempty"`

	Victim       int    `json:"victim,omitempty"`
	LeaderBefore int    `json:"leader_before,omitempty"`
	Leader       int    `json:"leader,omitempty"` // of the agreed view at the end
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

// ---- the command -----------------------------------------------------------

func cmdPeers(args []string) error {
	subs := map[string]func([]string) error{
		"wait":     cmdPeersWait,
		"cold":     cmdPeersCold,
		"failover": cmdPeersFailover,
		"heal":     cmdPeersHeal,
		"idle":     cmdPeersIdle,
		"report":   cmdPeersReport,
	}
	if len(args) == 0 || subs[args[0]] == nil {
		return fmt.Errorf("usage: benchtool peers wait|cold|failover|heal|idle|report [FLAGS] (peers: %s)",
			strings.Join(peersOrder, ", "))
	}
	return subs[args[0]](args[1:])
}

// peersFlags are the flags every lab subcommand takes.
type peersFlags struct {
	fs      *flag.FlagSet
	peer    string
	n       int
	trial   int
	timeout time.Duration
	cfg     peersCfg
}

func newPeersFlags(name string, timeout time.Duration) *peersFlags {
	p := &peersFlags{fs: flag.NewFlagSet("peers "+name, flag.ContinueOnError)}
	prefix := os.Getenv("GROUPD_LAB_PREFIX")
	if prefix == "" {
		prefix = "gd"
	}
	p.fs.StringVar(&p.peer, "peer", "", "groupd | corosync | serf | jgroups | keepalived")
	p.fs.IntVar(&p.n, "nodes", 0, "node count (nodes 1..N)")
	p.fs.IntVar(&p.trial, "trial", 0, "trial number")
	p.fs.DurationVar(&p.timeout, "timeout", timeout, "give up waiting for agreement after this")
	p.fs.StringVar(&p.cfg.dir, "dir", "", "peers' run dir (DIR/PEER/nI/...)")
	p.fs.StringVar(&p.cfg.lab, "lab", os.Getenv("GROUPD_LAB_DIR"), "the lab's run dir (groupd: RUN/nodeI/...)")
	p.fs.StringVar(&p.cfg.prefix, "prefix", prefix, "the lab's namespace prefix")
	p.fs.StringVar(&p.cfg.netem, "netem", "scripts/netem", "directory of partition.sh and heal.sh")
	return p
}

func (p *peersFlags) parse(args []string) (*peerSpec, error) {
	if err := p.fs.Parse(args); err != nil {
		return nil, err
	}
	spec := peerSpecs[p.peer]
	if spec == nil {
		return nil, fmt.Errorf("--peer %q: want one of %s", p.peer, strings.Join(peersOrder, ", "))
	}
	if p.n < 2 {
		return nil, fmt.Errorf("--nodes %d: want 2 or more", p.n)
	}
	if spec.name == "groupd" && p.cfg.lab == "" {
		return nil, fmt.Errorf("--lab (or GROUPD_LAB_DIR) is needed for groupd")
	}
	if spec.name != "groupd" && p.cfg.dir == "" {
		return nil, fmt.Errorf("--dir is needed for %s", spec.name)
	}
	return spec, nil
}

func (p *peersFlags) trackers(spec *peerSpec) []*peerTracker {
	ts := make([]*peerTracker, len(spec.sources))
	for k, src := range spec.sources {
		ts[k] = newPeerTracker(spec, src, &p.cfg, p.n)
	}
	return ts
}

// ---- helpers ---------------------------------------------------------------

func peersSecsPtr(d time.Duration) *float64 {
	s := secs(d)
	return &s
}

func peersSay(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "peers: "+format+"\n", args...)
}

// readPids reads node i's pid files (one pid each).
func readPids(files []string) ([]int, error) {
	var out []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			return nil, fmt.Errorf("%s: not a pid: %q", f, strings.TrimSpace(string(b)))
		}
		out = append(out, pid)
	}
	return out, nil
}
