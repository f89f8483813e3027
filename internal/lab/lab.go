package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/internal/history"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// Files in the run dir.
const (
	stateFile   = "lab.json"         // the lab's configuration and faults, for the next command
	HistoryFile = "history.ndjson"   // every node's events and the lab's marks
	recorderPid = "recorder.pid"     // the background recorder (Config.Recorder)
	recorderLog = "recorder.log"     // what the recorders had to say
	nodeDirFmt  = "node%d"           // RUN/nodeI: data/, api.sock, groupd.log, pid
	dataDir     = "data"             // RUN/nodeI/data: groupd's --data-dir
	sockFile    = "api.sock"         // RUN/nodeI/api.sock: groupd's --api
	logFile     = "groupd.log"       // RUN/nodeI/groupd.log: the daemon's stdout and stderr
	pidFile     = "pid"              // RUN/nodeI/pid: the daemon's process ID
	permFile    = os.FileMode(0o644) // the run dir's files: readable for an operator who is not root
)

// ClearRunDir removes what a lab left in its run dir dir (the node
// directories, its state, history and recorder log) and the names extra
// there, so that the next lab starts without old data, events or faults.
// The lab must be down.
func ClearRunDir(dir string, extra ...string) error {
	old, _ := filepath.Glob(filepath.Join(dir, "node[0-9]*"))
	for _, f := range append([]string{stateFile, HistoryFile, recorderLog}, extra...) {
		old = append(old, filepath.Join(dir, f))
	}
	for _, p := range old {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
	}
	return nil
}

// Lab is a running lab: namespaces on a bridge, and the daemons in them.
// Its methods may be called from several goroutines.
type Lab struct {
	cfg    Config
	timing invitation.Timing
	nodes  []*node // nodes[1..N]

	// hist is the history recorded by this process (nil when the lab was
	// opened by a command, or records through Config.Recorder).
	hist *history.History

	mu     sync.Mutex
	faults faultState
	netem  *bool    // the sch_netem probe's answer, once probed
	hfile  *os.File // history.ndjson, appended to (O_APPEND: other processes append too)
	hdone  bool     // hfile closed for good
	closed bool

	ctx    context.Context // cancelled by Close: stops the recorders
	cancel context.CancelFunc
	wg     sync.WaitGroup // recorders
	recMu  sync.Mutex     // serialises recorder starts
	recOn  bool
}

// state is what lab.json keeps: the configuration (without Logf) and the
// faults in place, so that the next command (partition.sh after lab.sh
// up) knows the lab.
type state struct {
	Nodes      int             `json:"nodes"`
	Prefix     string          `json:"prefix"`
	Subnet     netip.Prefix    `json:"subnet"`
	Subnet6    netip.Prefix    `json:"subnet6,omitzero"`
	NoMcast    bool            `json:"no_multicast,omitempty"`
	Bridge     string          `json:"bridge,omitempty"`
	Bin        string          `json:"bin"`
	Profile    string          `json:"profile"`
	Args       []string        `json:"args"`
	Env        []string        `json:"env"`
	InheritEnv bool            `json:"inherit_env"`
	Faults     string          `json:"faults"`
	Detach     bool            `json:"detach"`
	Recorder   []string        `json:"recorder"`
	Netem      *bool           `json:"netem"`
	Options    map[int]Options `json:"node_options,omitempty"`
	Fault      faultState      `json:"fault_state"`
}

// registry holds the labs of this process, for CloseAll.
var registry = struct {
	sync.Mutex
	labs map[*Lab]bool
}{labs: map[*Lab]bool{}}

// Up creates the lab of cfg, or repairs it when its run dir already holds
// one of the same prefix (a missing namespace, veth, address, route or
// neighbour entry is put back, nodes above cfg.Nodes are removed, the
// faults in place are applied again). Nothing runs in it yet. Up is O(N)
// per node: one `ip -batch` for the root namespace, then one `ip -batch`
// and one iptables-restore per namespace, in parallel.
func Up(ctx context.Context, cfg Config) (*Lab, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	l := newLab(cfg)
	if !cfg.Detach {
		// This process owns the lab: CloseAll takes it down on a signal.
		// A command's lab (Detach) outlives the command.
		registry.Lock()
		registry.labs[l] = true
		registry.Unlock()
	}
	if old, err := readState(cfg.Dir); err == nil && old.Prefix == cfg.Prefix {
		l.faults = old.Fault.trim(cfg.Nodes)
		l.netem = old.Netem
		for i, o := range old.Options {
			if i <= cfg.Nodes {
				l.nodes[i].opts = o
			}
		}
	}
	start := time.Now()
	err := l.setupNetwork(ctx)
	if err == nil && HaveIptables() == nil {
		err = l.applyChains(ctx, l.all(), true)
	}
	if err == nil {
		err = l.save()
	}
	if err != nil {
		if !cfg.Detach {
			// Half a lab is no use to its owner: nothing of it stays.
			err = errors.Join(err, l.Close())
		}
		return nil, err
	}
	l.logf("up: %d namespace(s) %s..%s on bridge %s, %v..%v/%d, run dir %s (%.2fs)",
		cfg.Nodes, l.NS(1), l.NS(cfg.Nodes), l.Bridge(), l.Addr(1), l.Addr(cfg.Nodes), cfg.Subnet.Bits(), cfg.Dir, time.Since(start).Seconds())
	return l, nil
}

// Open returns the lab whose run dir is dir, as the last Up (or command)
// left it; nothing is changed.
func Open(dir string, logf func(string, ...any)) (*Lab, error) {
	st, err := readState(dir)
	if err != nil {
		return nil, err
	}
	cfg := Config{Nodes: st.Nodes, Prefix: st.Prefix, Subnet: st.Subnet, Subnet6: st.Subnet6, NoMulticast: st.NoMcast, Bridge: st.Bridge, Dir: dir, Bin: st.Bin, Profile: st.Profile,
		Args: st.Args, Env: st.Env, InheritEnv: st.InheritEnv, Faults: st.Faults, Detach: st.Detach, Recorder: st.Recorder, Logf: logf}
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("lab: %s: %w", filepath.Join(dir, stateFile), err)
	}
	l := newLab(cfg)
	l.faults, l.netem = st.Fault.trim(cfg.Nodes), st.Netem
	for i, o := range st.Options {
		if i >= 1 && i <= cfg.Nodes {
			l.nodes[i].opts = o
		}
	}
	return l, nil
}

func newLab(cfg Config) *Lab {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Lab{cfg: cfg, timing: ProfileTiming(cfg.Profile), nodes: make([]*node, cfg.Nodes+1), ctx: ctx, cancel: cancel}
	if !cfg.Detach || len(cfg.Recorder) == 0 {
		l.hist = history.New()
	}
	for i := 1; i <= cfg.Nodes; i++ {
		d := filepath.Join(cfg.Dir, fmt.Sprintf(nodeDirFmt, i))
		c, _ := client.New("unix:" + SockPath(cfg.Dir, i)) // cannot fail: the address is a unix path
		l.nodes[i] = &node{l: l, id: i, dir: d, client: c, wake: make(chan struct{})}
	}
	return l
}

func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("lab: no lab is up in %s (no %s): run lab.sh up N first", dir, stateFile)
	}
	if err != nil {
		return st, fmt.Errorf("lab: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("lab: %s is corrupt: %w", filepath.Join(dir, stateFile), err)
	}
	return st, nil
}

// save writes lab.json (atomically: a command reading it meanwhile sees
// the old or the new state).
func (l *Lab) save() error {
	l.mu.Lock()
	st := state{Nodes: l.cfg.Nodes, Prefix: l.cfg.Prefix, Subnet: l.cfg.Subnet, Subnet6: l.cfg.Subnet6, NoMcast: l.cfg.NoMulticast, Bridge: l.cfg.Bridge, Bin: l.cfg.Bin, Profile: l.cfg.Profile,
		Args: l.cfg.Args, Env: l.cfg.Env, InheritEnv: l.cfg.InheritEnv, Faults: l.cfg.Faults, Detach: l.cfg.Detach,
		Recorder: l.cfg.Recorder, Netem: l.netem, Fault: l.faults, Options: map[int]Options{}}
	l.mu.Unlock()
	for _, nd := range l.nodes[1:] {
		if o := nd.options(); len(o.Args) > 0 || len(o.Env) > 0 {
			st.Options[nd.id] = o
		}
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("lab: encoding the state: %w", err)
	}
	tmp := filepath.Join(l.cfg.Dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), permFile); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(l.cfg.Dir, stateFile)); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}

// Close ends the lab that this process owns: it stops the recorders, kills
// its daemons (SIGKILL: the run is over) and removes its namespaces, veths
// and bridge. The run dir stays. Close is idempotent; use it in t.Cleanup.
func (l *Lab) Close() error { return l.teardown(false) }

// Down is Close for an operator: daemons get SIGTERM (SIGKILL after 3 s),
// a background recorder is stopped, and everything named with the lab's
// prefix goes, also what a crashed run left behind. Processes that the lab
// did not start are never killed; one still inside a namespace is named.
func (l *Lab) Down() error { return l.teardown(true) }

func (l *Lab) teardown(graceful bool) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	var errs []error
	if graceful {
		errs = append(errs, l.Stop(l.all()...))
	}
	// What the daemons say from here on is their shutdown, not the run. A
	// lab taken down by name (Remove) may have no run dir at all: then
	// there is no history to end.
	if _, err := l.Mark(schema.KindEnd, "teardown", "", time.Now()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if !graceful {
		l.killAll()
	}
	errs = append(errs, l.stopRecording())
	errs = append(errs, l.removeNetwork(graceful))
	l.mu.Lock()
	if l.hfile != nil {
		errs = append(errs, l.hfile.Close())
		l.hfile = nil
	}
	l.hdone = true
	l.mu.Unlock()
	if graceful {
		if err := os.Remove(filepath.Join(l.cfg.Dir, stateFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, nd := range l.nodes[1:] {
		nd.client.Close()
	}
	registry.Lock()
	delete(registry.labs, l)
	registry.Unlock()
	return errors.Join(errs...)
}

// Configure changes what later starts run: the groupd binary, the
// profile, and the arguments for every node (lab.sh start -- ARGS). It is
// kept in lab.json.
func (l *Lab) Configure(bin, profile string, args []string) error {
	c := l.cfg
	c.Bin, c.Profile, c.Args = bin, profile, args
	if err := c.check(); err != nil {
		return err
	}
	l.cfg = c
	l.timing = ProfileTiming(c.Profile)
	return l.save()
}

// CloseAll closes every lab of this process: the emergency path (a signal,
// the test binary's -timeout) where t.Cleanup and deferred calls do not
// run. It returns the run dirs, kept for a post-mortem.
func CloseAll() []string {
	registry.Lock()
	ls := make([]*Lab, 0, len(registry.labs))
	for l := range registry.labs {
		ls = append(ls, l)
	}
	registry.Unlock()
	var dirs []string
	var wg sync.WaitGroup
	for _, l := range ls {
		dirs = append(dirs, l.cfg.Dir)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = l.Close()
		}()
	}
	wg.Wait()
	return dirs
}

// ---------------------------------------------------------------- accessors

// N is the number of nodes.
func (l *Lab) N() int { return l.cfg.Nodes }

// all returns 1..N.
func (l *Lab) all() []int { return Span(1, l.cfg.Nodes) }

// Span returns a..b.
func Span(a, b int) []int {
	var out []int
	for i := a; i <= b; i++ {
		out = append(out, i)
	}
	return out
}

// Config returns the lab's configuration.
func (l *Lab) Config() Config { return l.cfg }

// Dir is the run dir.
func (l *Lab) Dir() string { return l.cfg.Dir }

// Timing is the protocol timing of the lab's profile (for the T_heal and
// T_failover bounds).
func (l *Lab) Timing() invitation.Timing { return l.timing }

// NS is node i's namespace.
func (l *Lab) NS(i int) string { return nsName(l.cfg.Prefix, i) }

// Veth is the root-namespace end of node i's veth pair.
func (l *Lab) Veth(i int) string { return vethName(l.cfg.Prefix, i) }

// Bridge is the lab's bridge.
func (l *Lab) Bridge() string {
	if l.cfg.Bridge != "" {
		return l.cfg.Bridge
	}
	return bridgeName(l.cfg.Prefix)
}

// Addr is node i's address on eth0 (of Subnet).
func (l *Lab) Addr(i int) netip.Addr { return hostAddr(l.cfg.Subnet, i) }

// Addr6 is node i's address of Subnet6 (dual stack), or the zero Addr.
func (l *Lab) Addr6(i int) netip.Addr {
	if !l.cfg.Subnet6.IsValid() {
		return netip.Addr{}
	}
	return hostAddr(l.cfg.Subnet6, i)
}

// NodeDir is node i's directory in the run dir.
func (l *Lab) NodeDir(i int) string { return l.nodes[i].dir }

// Sock is node i's API socket.
func (l *Lab) Sock(i int) string { return SockPath(l.cfg.Dir, i) }

// SockPath is node i's API socket in run dir dir, for tools that read a
// lab's daemons without opening the lab.
func SockPath(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf(nodeDirFmt, i), sockFile)
}

// DataDir is node i's data dir.
func (l *Lab) DataDir(i int) string { return filepath.Join(l.nodes[i].dir, dataDir) }

// LogFile is node i's daemon log.
func (l *Lab) LogFile(i int) string { return filepath.Join(l.nodes[i].dir, logFile) }

// Client is the API client of node i's daemon.
func (l *Lab) Client(i int) *client.Client { return l.nodes[i].client }

// History is the history this process recorded (every node's events and
// the lab's marks), or, for a lab opened by a command, the one in the run
// dir's history.ndjson.
func (l *Lab) History() (*history.History, error) {
	if l.hist != nil {
		return l.hist, nil
	}
	return ReadHistory(l.cfg.Dir)
}

// ReadHistory reads the history.ndjson of run dir dir.
func ReadHistory(dir string) (*history.History, error) {
	f, err := os.Open(filepath.Join(dir, HistoryFile))
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	defer f.Close()
	h := history.New()
	if _, err := h.Read(f); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	return h, nil
}

func (l *Lab) logf(format string, args ...any) {
	if l.cfg.Logf != nil {
		l.cfg.Logf(format, args...)
	}
}

// node checks a node number.
func (l *Lab) node(i int) (*node, error) {
	if i < 1 || i > l.cfg.Nodes {
		return nil, fmt.Errorf("lab: no node %d (the lab has nodes 1..%d)", i, l.cfg.Nodes)
	}
	return l.nodes[i], nil
}

// ---------------------------------------------------------------- history

// Mark records what the lab did (or a check point) at t in the history and
// returns its ID (history.Result.Check).
func (l *Lab) Mark(kind, spec, label string, t time.Time) (int, error) {
	m := schema.Mark{Time: t.UTC(), Kind: kind, Spec: spec, Label: label}
	id := 0
	if l.hist != nil {
		var err error
		if id, err = l.hist.AddMark(m); err != nil {
			return 0, err
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return 0, fmt.Errorf("lab: %w", err)
	}
	return id, l.appendHistory(b)
}

// appendHistory adds one line to history.ndjson. One write per line, with
// O_APPEND: lines of the recorders and of other commands never interleave.
func (l *Lab) appendHistory(line []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hfile == nil {
		if l.hdone {
			return errors.New("lab: closed")
		}
		f, err := os.OpenFile(filepath.Join(l.cfg.Dir, HistoryFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, permFile)
		if err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		l.hfile = f
	}
	if _, err := l.hfile.Write(append(slices.Clip(line), '\n')); err != nil {
		return fmt.Errorf("lab: writing %s: %w", HistoryFile, err)
	}
	return nil
}

// markNodes records kind for the nodes ids at t.
func (l *Lab) markNodes(kind string, ids []int, t time.Time) error {
	_, err := l.Mark(kind, FormatIDs(ids), "", t)
	return err
}

// FormatIDs writes node numbers as schema.FormatIDs does ("1-3,5").
func FormatIDs(ids []int) string { return schema.FormatIDs(IDs(ids)) }

// ParseIDs reads a node list ("1,2,4-6") of a lab of n nodes.
func ParseIDs(spec string, n int) ([]int, error) {
	ws, err := schema.ParseIDs(spec)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	out := make([]int, len(ws))
	for i, w := range ws {
		if w > wire.NodeID(n) {
			return nil, fmt.Errorf("lab: node %d in %q: the lab has nodes 1..%d", w, spec, n)
		}
		out[i] = int(w)
	}
	return out, nil
}
