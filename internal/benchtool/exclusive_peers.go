package main

// The implementations `benchtool exclusive` measures, each on the lab's
// namespaces: groupd (the lab's own daemons), corosync with votequorum and
// keepalived, from the configuration templates of scripts/bench/peers
// (the ones peers.sh uses), with the same run-dir layout as peers.sh
// (DIR/PEER/nI/...), so that peerSpecs' pid files and parsers apply.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/groupd/groupd/internal/history"
	netlab "github.com/groupd/groupd/internal/lab"
)

// exclPeer is one implementation under test.
type exclPeer interface {
	exclProber
	name() string
	// leaderDef says what its "primary leader" is, for the record.
	leaderDef() string
	// startAll starts every node; start(i) one node again (after a kill).
	startAll() error
	start(i int) error
	// pids are node i's processes, in the order a signal hits them.
	pids(i int) ([]int, error)
	// kill sends SIGKILL to node i's processes and returns the instant
	// just before.
	kill(i int) (time.Time, error)
	// ready waits (up to timeout) for what the polls cannot show
	// (groupd: the lab's convergence check); nil when nothing.
	ready(timeout time.Duration) error
	// check cross-checks the polled state with the peer's own tool after
	// a round ("" when it has none).
	check() string
	// stopAll stops every node.
	stopAll() error
}

// exclEnv is what every peer needs.
type exclEnv struct {
	l   *netlab.Lab
	n   int
	cfg *peersCfg // DIR/PEER/nI/..., namespaces
	src string    // scripts/bench/peers: the configuration templates
	ctx context.Context
}

// render fills a template of src: every @KEY@ replaced.
func (e *exclEnv) render(tmpl string, vars map[string]string) (string, error) {
	b, err := os.ReadFile(filepath.Join(e.src, tmpl))
	if err != nil {
		return "", fmt.Errorf("template: %w", err)
	}
	s := string(b)
	for k, v := range vars {
		s = strings.ReplaceAll(s, "@"+k+"@", v)
	}
	if k := strings.Index(s, "@"); k >= 0 {
		if end := strings.Index(s[k+1:], "@"); end >= 0 && !strings.ContainsAny(s[k+1:k+1+end], " \n\t") {
			return "", fmt.Errorf("template %s: %s is not filled in", tmpl, s[k:k+2+end])
		}
	}
	return s, nil
}

// proc is a process this harness started: its pid and when it ended.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// launch starts cmd (in node i's namespace when inNS) with its output
// appended to logPath. It dies with this process (parent-death signal).
func (e *exclEnv) launch(i int, inNS bool, cmd *exec.Cmd, logPath string) (*proc, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", i, err)
	}
	defer lf.Close()
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if inNS {
		err = e.l.Do(i, cmd.Start)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("node %d: starting %s: %w", i, cmd.Path, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// signalAll sends sig to pids in order.
func signalAll(pids []int, sig syscall.Signal) error {
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			errs = append(errs, fmt.Errorf("%v to %d: %w", sig, pid, err))
		}
	}
	return errors.Join(errs...)
}

// stopProcs sends SIGTERM to the live ones, and SIGKILL to any still there
// after wait.
func stopProcs(ps []*proc, wait time.Duration) {
	var live []*proc
	for _, p := range ps {
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			live = append(live, p)
		}
	}
	deadline := time.After(wait)
	for _, p := range live {
		select {
		case <-p.done:
		case <-deadline:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// ---- groupd ----------------------------------------------------------------

type exclGroupd struct {
	*groupdProber
	e *exclEnv
}

func (g *exclGroupd) name() string { return "groupd" }
func (g *exclGroupd) leaderDef() string {
	return "leader AND primary (GET /v1/leader 200, or /v1/status leader && primary), --expect " + strconv.Itoa(g.n)
}
func (g *exclGroupd) startAll() error {
	_, err := g.e.l.Start(netlab.Span(1, g.n)...)
	return err
}
func (g *exclGroupd) start(i int) error {
	_, err := g.e.l.Start(i)
	return err
}
func (g *exclGroupd) pids(i int) ([]int, error) {
	pid, err := g.e.l.PID(i)
	return []int{pid}, err
}
func (g *exclGroupd) kill(i int) (time.Time, error) {
	w, err := g.e.l.Kill(i)
	return w.Start, err
}
func (g *exclGroupd) ready(timeout time.Duration) error {
	all := netlab.Span(1, g.n)
	_, _, err := g.e.l.WaitFor("converge", all, timeout, netlab.Converged(all))
	return err
}
func (g *exclGroupd) check() string { return "" }
func (g *exclGroupd) stopAll() error {
	return g.e.l.Stop(netlab.Span(1, g.n)...)
}

// ---- corosync --------------------------------------------------------------

// exclCorosync runs corosync 3 with votequorum (scripts/bench/peers/
// corosync.conf.in, as peers.sh does). Its "primary" is votequorum's
// Quorate on that node, its "leader" the highest node ID of that node's
// quorate membership, its term the ring id (sequence, representative).
//
// `corosync-quorumtool -s` costs corosync about 15 ms of CPU per call
// (libqb sets up a new IPC connection each time): five nodes every 20 ms
// would need several cores. So each node runs one `corosync-quorumtool -m`
// (the same status, printed by corosync at every change, in the same
// format) whose last block is the node's answer; a poll is answered only
// while the node's corosync runs (not stopped, not dead: a direct call
// would hang or fail then). After every round, `corosync-quorumtool -s`
// on every node cross-checks the mirror (check).
type exclCorosync struct {
	e     *exclEnv
	mcast string
	port  int

	mu    sync.Mutex
	nodes map[int]*coroNode
}

type coroNode struct {
	p   *proc
	pid int
	mon *proc            // the running corosync-quorumtool -m
	q   quorumtoolStatus // its last complete block
	qOK bool
}

func newExclCorosync(e *exclEnv, mcast string, port int) (*exclCorosync, error) {
	c := &exclCorosync{e: e, mcast: mcast, port: port, nodes: map[int]*coroNode{}}
	var nl []string
	for j := 1; j <= e.n; j++ {
		nl = append(nl, fmt.Sprintf("\tnode {\n\t\tname: n%d\n\t\tnodeid: %d\n\t\tring0_addr: %s\n\t}", j, j, e.l.Addr(j)))
	}
	for i := 1; i <= e.n; i++ {
		d := filepath.Dir(e.cfg.peerFile("corosync", i, "x"))
		for _, sub := range []string{"run", "state"} {
			if err := os.MkdirAll(filepath.Join(d, sub), 0o755); err != nil {
				return nil, fmt.Errorf("corosync: %w", err)
			}
		}
		conf, err := e.render("corosync.conf.in", map[string]string{"NODELIST": strings.Join(nl, "\n"), "MCAST": mcast,
			"PORT": strconv.Itoa(port), "DIR": d, "I": strconv.Itoa(i), "N": strconv.Itoa(e.n)})
		if err != nil {
			return nil, fmt.Errorf("corosync: %w", err)
		}
		if err := os.WriteFile(filepath.Join(d, "corosync.conf"), []byte(conf), 0o644); err != nil {
			return nil, fmt.Errorf("corosync: %w", err)
		}
	}
	return c, nil
}

func (c *exclCorosync) name() string { return "corosync" }
func (c *exclCorosync) leaderDef() string {
	return "Quorate (votequorum, corosync-quorumtool) AND the highest node ID of the node's quorate membership"
}
func (c *exclCorosync) source() string {
	return "corosync-quorumtool -m per node (its last status block), answered while corosync runs; -s cross-check after each round"
}

func (c *exclCorosync) startAll() error {
	for i := 1; i <= c.e.n; i++ {
		if err := c.start(i); err != nil {
			return err
		}
	}
	return nil
}

func (c *exclCorosync) start(i int) error {
	c.cleanShm()
	d := filepath.Dir(c.e.cfg.peerFile("corosync", i, "x"))
	// corosync locks /run/corosync.pid, one per host: each node gets its
	// own /run, bind-mounted in the private mount namespace that ip netns
	// exec gives every command (as peers.sh does).
	cmd, err := c.e.l.Command(i, "sh", "-c", `mount --bind "$1" /run && exec corosync -f -c "$2"`, "sh",
		filepath.Join(d, "run"), filepath.Join(d, "corosync.conf"))
	if err != nil {
		return err
	}
	p, err := c.e.launch(i, false, cmd, filepath.Join(d, "stdout.log"))
	if err != nil {
		return fmt.Errorf("corosync: %w", err)
	}
	pid := p.cmd.Process.Pid
	if err := os.WriteFile(filepath.Join(d, "pid"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("corosync: %w", err)
	}
	if err := appendLine(filepath.Join(filepath.Dir(d), "started.pids"), strconv.Itoa(pid)); err != nil {
		return fmt.Errorf("corosync: %w", err)
	}
	nd := &coroNode{p: p, pid: pid}
	c.mu.Lock()
	c.nodes[i] = nd
	c.mu.Unlock()
	go c.monitor(i, nd)
	return nil
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	return errors.Join(err, f.Close())
}

// monitor keeps `corosync-quorumtool -m` running for node i's corosync nd
// (it fails until corosync serves IPC, and ends with it) and mirrors its
// last complete block.
func (c *exclCorosync) monitor(i int, nd *coroNode) {
	d := filepath.Dir(c.e.cfg.peerFile("corosync", i, "x"))
	for c.e.ctx.Err() == nil {
		select {
		case <-nd.p.done:
			return
		default:
		}
		// stdbuf: quorumtool writes to a pipe, which stdio would buffer.
		cmd := exec.CommandContext(c.e.ctx, "stdbuf", "-oL", "corosync-quorumtool", "-m")
		out, err := cmd.StdoutPipe()
		if err == nil {
			cmd.Stderr = io.Discard
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			err = c.e.l.Do(i, cmd.Start)
		}
		if err != nil {
			_ = appendLine(filepath.Join(d, "monitor.log"), fmt.Sprintf("%s start: %v", time.Now().Format(time.RFC3339Nano), err))
			time.Sleep(500 * time.Millisecond)
			continue
		}
		c.mu.Lock()
		nd.mon = &proc{cmd: cmd}
		c.mu.Unlock()
		c.readBlocks(nd, out)
		_ = cmd.Wait()
		c.mu.Lock()
		nd.qOK, nd.mon = false, nil
		c.mu.Unlock()
		time.Sleep(200 * time.Millisecond)
	}
}

// readBlocks reads quorumtool's blocks ("Quorum information" ... the
// membership table) and keeps the last complete one. A block is complete
// when its table lists "Nodes:" members.
func (c *exclCorosync) readBlocks(nd *coroNode, r io.Reader) {
	sc := bufio.NewScanner(r)
	var block bytes.Buffer
	want, have, inTable := -1, 0, false
	for sc.Scan() {
		line := sc.Text()
		t := strings.TrimSpace(line)
		switch {
		case t == "Quorum information":
			block.Reset()
			want, have, inTable = -1, 0, false
		case strings.HasPrefix(t, "Nodes:"):
			if n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(t, "Nodes:"))); err == nil {
				want = n
			}
		case strings.HasPrefix(t, "Nodeid") && strings.Contains(t, "Votes"):
			inTable = true
		case inTable && t != "":
			if f := strings.Fields(t); len(f) > 0 {
				if _, err := strconv.Atoi(f[0]); err == nil {
					have++
				}
			}
		}
		block.WriteString(line + "\n")
		if inTable && want >= 0 && have == want {
			q, err := parseQuorumtool(bytes.NewReader(block.Bytes()))
			c.mu.Lock()
			nd.q, nd.qOK = q, err == nil
			c.mu.Unlock()
			inTable = false
		}
	}
}

func (c *exclCorosync) node(i int) (*coroNode, quorumtoolStatus, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nd := c.nodes[i]
	if nd == nil {
		return nil, quorumtoolStatus{}, false
	}
	return nd, nd.q, nd.qOK
}

// ringTerm turns a ring id "REP.SEQ" (hex) into a term.
func ringTerm(ring string) exclTerm {
	rep, seq, ok := strings.Cut(ring, ".")
	if !ok {
		return exclTerm{}
	}
	r, err1 := strconv.ParseUint(rep, 16, 64)
	s, err2 := strconv.ParseUint(seq, 16, 64)
	if err1 != nil || err2 != nil {
		return exclTerm{}
	}
	return exclTerm{Seq: s, ID: r}
}

// corosyncSample is node i's answer from a quorumtool status.
func corosyncSample(i, n int, q quorumtoolStatus) exclSample {
	s := exclSample{Primary: q.Quorate, Term: ringTerm(q.Ring), Full: q.Quorate && len(q.Members) == n}
	s.Leader = q.Quorate && len(q.Members) > 0 && slices.Max(q.Members) == i
	s.PL = s.Leader
	if !s.Leader {
		s.Term = exclTerm{}
	}
	return s
}

func (c *exclCorosync) probe(_ context.Context, i int) (exclSample, error) {
	nd, q, ok := c.node(i)
	if nd == nil {
		return exclSample{}, errors.New("corosync not started")
	}
	if err := procRunning(nd.pid); err != nil {
		return exclSample{}, fmt.Errorf("corosync: %w", err)
	}
	if !ok {
		return exclSample{}, errors.New("no status from corosync-quorumtool -m yet")
	}
	return corosyncSample(i, c.e.n, q), nil
}

func (c *exclCorosync) pids(i int) ([]int, error) {
	nd, _, _ := c.node(i)
	if nd == nil {
		return nil, fmt.Errorf("corosync node %d not started", i)
	}
	return []int{nd.pid}, nil
}

func (c *exclCorosync) kill(i int) (time.Time, error) {
	nd, _, _ := c.node(i)
	if nd == nil {
		return time.Time{}, fmt.Errorf("corosync node %d not started", i)
	}
	t := time.Now()
	if _, err := c.e.l.Mark(history.KindKill, strconv.Itoa(i), "", t); err != nil {
		return t, err
	}
	if err := syscall.Kill(nd.pid, syscall.SIGKILL); err != nil {
		return t, fmt.Errorf("kill -9 corosync of node %d (pid %d): %w", i, nd.pid, err)
	}
	select {
	case <-nd.p.done:
	case <-time.After(5 * time.Second):
		return t, fmt.Errorf("corosync of node %d (pid %d) still there 5 s after SIGKILL", i, nd.pid)
	}
	return t, nil
}

func (c *exclCorosync) ready(time.Duration) error { return nil }

// check compares every running node's `corosync-quorumtool -s` with what
// its monitor said last.
func (c *exclCorosync) check() string {
	var bad, good []string
	for i := 1; i <= c.e.n; i++ {
		nd, q, ok := c.node(i)
		if nd == nil || procRunning(nd.pid) != nil {
			continue
		}
		out, err := nsOutput(c.e.cfg, "corosync", i, "quorumtool-s.txt", "corosync-quorumtool", "-s")
		s, perr := parseQuorumtool(bytes.NewReader(out))
		switch {
		case perr != nil:
			bad = append(bad, fmt.Sprintf("node %d: -s: %v (%v)", i, perr, err))
		case !ok:
			bad = append(bad, fmt.Sprintf("node %d: no monitor status", i))
		case s.Quorate != q.Quorate || s.Ring != q.Ring || !slices.Equal(s.Members, q.Members):
			bad = append(bad, fmt.Sprintf("node %d: -s quorate=%v ring %s members %s, monitor quorate=%v ring %s members %s",
				i, s.Quorate, s.Ring, joinInts(s.Members), q.Quorate, q.Ring, joinInts(q.Members)))
		default:
			good = append(good, strconv.Itoa(i))
		}
	}
	if len(bad) > 0 {
		return "corosync-quorumtool -s DISAGREES with the monitor: " + strings.Join(bad, "; ")
	}
	return "corosync-quorumtool -s on nodes " + strings.Join(good, ",") + " agrees with the monitor"
}

func (c *exclCorosync) stopAll() error {
	c.mu.Lock()
	var ps []*proc
	for _, nd := range c.nodes {
		ps = append(ps, nd.p)
		if nd.mon != nil {
			_ = nd.mon.cmd.Process.Kill()
		}
	}
	c.nodes = map[int]*coroNode{}
	c.mu.Unlock()
	stopProcs(ps, 5*time.Second)
	c.cleanShm()
	return nil
}

// cleanShm removes what corosyncs started here and killed with -9 left in
// /dev/shm, once they are gone (peers.sh removes the blackboxes).
func (c *exclCorosync) cleanShm() { corosyncCleanShm(filepath.Join(c.e.cfg.dir, "corosync")) }

// corosyncCleanShm does it for the pids listed in DIR/started.pids.
func corosyncCleanShm(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "started.pids"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		if _, err := procState(pid); err == nil {
			continue // still there (perhaps a zombie not yet reaped)
		}
		// Its blackbox, and the IPC directories of the clients connected
		// when it died (the harness's corosync-quorumtool -m):
		// qb-SERVERPID-CLIENTPID-*.
		blackbox, _ := filepath.Glob("/dev/shm/qb-corosync-" + strconv.Itoa(pid) + "-*")
		ipc, _ := filepath.Glob("/dev/shm/qb-" + strconv.Itoa(pid) + "-*")
		for _, g := range append(blackbox, ipc...) {
			_ = os.RemoveAll(g)
		}
	}
}

// ---- keepalived ------------------------------------------------------------

// exclKeepalived runs keepalived (scripts/bench/peers/keepalived.conf.in,
// as peers.sh does). Its primary leader is a node whose namespace holds
// the VIP (MASTER): keepalived has no quorum, so every MASTER is one. A
// poll is answered while the node's keepalived processes exist (a frozen
// MASTER's kernel still holds, and serves, the VIP); a dead keepalived
// does not answer, although kill -9 leaves its VIP in the kernel until the
// next start removes it (the round records that).
type exclKeepalived struct {
	e         *exclEnv
	vip       netip.Addr
	notifyDir string

	mu    sync.Mutex
	procs map[int]*proc
}

func newExclKeepalived(e *exclEnv, vrid int, vip netip.Addr, notifyDir string) (*exclKeepalived, error) {
	k := &exclKeepalived{e: e, vip: vip, notifyDir: notifyDir, procs: map[int]*proc{}}
	// keepalived's script security refuses scripts under a world-writable
	// directory such as /tmp: a root-only one (as peers.sh does).
	if err := os.MkdirAll(notifyDir, 0o700); err != nil {
		return nil, fmt.Errorf("keepalived: %w", err)
	}
	for i := 1; i <= e.n; i++ {
		d := filepath.Dir(e.cfg.peerFile("keepalived", i, "x"))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("keepalived: %w", err)
		}
		notify := filepath.Join(notifyDir, fmt.Sprintf("notify-%d.sh", i))
		script := fmt.Sprintf("#!/bin/bash\n# keepalived notify for lab node %d: $1=INSTANCE $2=name $3=state $4=priority\necho \"$EPOCHREALTIME $3 $4\" >>%s\n",
			i, filepath.Join(d, "notify.log"))
		if err := os.WriteFile(notify, []byte(script), 0o755); err != nil {
			return nil, fmt.Errorf("keepalived: %w", err)
		}
		conf, err := e.render("keepalived.conf.in", map[string]string{"PREFIX": e.cfg.prefix, "I": strconv.Itoa(i),
			"VRID": strconv.Itoa(vrid), "PRIO": strconv.Itoa(100 + i), "VIP": vip.String(), "NOTIFY": notify})
		if err != nil {
			return nil, fmt.Errorf("keepalived: %w", err)
		}
		if err := os.WriteFile(filepath.Join(d, "keepalived.conf"), []byte(conf), 0o644); err != nil {
			return nil, fmt.Errorf("keepalived: %w", err)
		}
	}
	return k, nil
}

func (k *exclKeepalived) name() string { return "keepalived" }
func (k *exclKeepalived) leaderDef() string {
	return "MASTER: the node's namespace holds the VIP " + k.vip.String() + " (no quorum: every MASTER counts)"
}
func (k *exclKeepalived) source() string {
	return "keepalived: VIP on the node's interfaces (netlink dump in its namespace), answered while its keepalived processes exist"
}

func (k *exclKeepalived) startAll() error {
	for i := 1; i <= k.e.n; i++ {
		if err := k.start(i); err != nil {
			return err
		}
	}
	return nil
}

func (k *exclKeepalived) start(i int) error {
	d := filepath.Dir(k.e.cfg.peerFile("keepalived", i, "x"))
	pidf, vrrpf := filepath.Join(d, "keepalived.pid"), filepath.Join(d, "vrrp.pid")
	for _, f := range []string{pidf, vrrpf} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("keepalived: %w", err)
		}
	}
	cmd := exec.Command("keepalived", "-n", "-l", "-D", "-P", "-f", filepath.Join(d, "keepalived.conf"), "-p", pidf, "-r", vrrpf)
	p, err := k.e.launch(i, true, cmd, filepath.Join(d, "keepalived.log"))
	if err != nil {
		return fmt.Errorf("keepalived: %w", err)
	}
	k.mu.Lock()
	k.procs[i] = p
	k.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pids, err := k.pids(i); err == nil && procAliveOrStopped(pids[0]) == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("keepalived of node %d exited at start; see %s", i, filepath.Join(d, "keepalived.log"))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("keepalived of node %d: no VRRP process within 10 s; see %s", i, filepath.Join(d, "keepalived.log"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pids are the VRRP child's and then the parent's (peerSpecs' order).
func (k *exclKeepalived) pids(i int) ([]int, error) {
	return readPids(peerSpecs["keepalived"].pidFiles(k.e.cfg, i))
}

func (k *exclKeepalived) probe(_ context.Context, i int) (exclSample, error) {
	pids, err := k.pids(i)
	if err != nil {
		return exclSample{}, fmt.Errorf("keepalived: %w", err)
	}
	for _, pid := range pids {
		if err := procAliveOrStopped(pid); err != nil {
			return exclSample{}, fmt.Errorf("keepalived: %w", err)
		}
	}
	has, err := hasAddr(k.e.l, i, k.vip)
	if err != nil {
		return exclSample{}, err
	}
	return exclSample{PL: has, Leader: has, Primary: has, Full: true}, nil
}

func (k *exclKeepalived) kill(i int) (time.Time, error) {
	pids, err := k.pids(i)
	if err != nil {
		return time.Time{}, fmt.Errorf("keepalived: %w", err)
	}
	k.mu.Lock()
	p := k.procs[i]
	k.mu.Unlock()
	t := time.Now()
	if _, err := k.e.l.Mark(history.KindKill, strconv.Itoa(i), "", t); err != nil {
		return t, err
	}
	// The VRRP child first, then its parent, microseconds apart: neither
	// sends a priority-0 advert or respawns the other (as peers.sh).
	if err := signalAll(pids, syscall.SIGKILL); err != nil {
		return t, fmt.Errorf("keepalived of node %d: %w", i, err)
	}
	if p != nil {
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			return t, fmt.Errorf("keepalived of node %d still there 5 s after SIGKILL", i)
		}
	}
	return t, nil
}

func (k *exclKeepalived) ready(time.Duration) error { return nil }

// check says which namespaces hold the VIP, dead keepalived or not.
func (k *exclKeepalived) check() string {
	var holders []string
	for i := 1; i <= k.e.n; i++ {
		if has, err := hasAddr(k.e.l, i, k.vip); err == nil && has {
			holders = append(holders, strconv.Itoa(i))
		}
	}
	return "VIP " + k.vip.String() + " held by nodes " + strings.Join(holders, ",")
}

func (k *exclKeepalived) stopAll() error {
	k.mu.Lock()
	var ps []*proc
	for _, p := range k.procs {
		ps = append(ps, p)
	}
	k.procs = map[int]*proc{}
	k.mu.Unlock()
	// SIGTERM to the parent: it stops its VRRP child and removes the VIP.
	stopProcs(ps, 5*time.Second)
	return nil
}
