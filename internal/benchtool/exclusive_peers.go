//go:build linux

package main

// The implementations `benchtool exclusive` measures, on the processes of
// peers_procs.go: groupd (the lab's own daemons), corosync with
// votequorum and keepalived, each with how to ask a node whether it is a
// primary leader (exclProber).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	netlab "github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/wire"
)

// exclPeer is one implementation under test.
type exclPeer interface {
	peerProcs
	exclProber
	// leaderDef says what its "primary leader" is, for the record.
	leaderDef() string
	// ready waits (up to timeout) for what the polls cannot show
	// (groupd: the lab's convergence check among the nodes of live, the
	// others stopped); nil when nothing.
	ready(live []int, timeout time.Duration) error
	// check cross-checks the polled state with the peer's own tool after
	// a round ("" when it has none).
	check() string
}

// exclProgs are the programs a peer needs here: its own, and stdbuf for
// corosync's monitors (exclCorosync).
func exclProgs(name string) []string {
	progs := peerSpecs[name].progs
	if name == "corosync" {
		progs = append(slices.Clone(progs), "stdbuf")
	}
	return progs
}

// newExclPeer sets up one implementation on the lab.
func newExclPeer(e *peerEnv, name string) (exclPeer, error) {
	if m := missing(exclProgs(name)); len(m) > 0 {
		return nil, fmt.Errorf("%s is not installed (%s missing): apt-get install -y %s", name, strings.Join(m, ", "), strings.Join(peerSpecs[name].pkgs, " "))
	}
	p, err := newPeerProcs(e, name)
	if err != nil {
		return nil, err
	}
	switch name {
	case "groupd":
		return &exclGroupd{labProcs: p.(labProcs), groupdProber: &groupdProber{client: e.l.Client, n: e.n}}, nil
	case "corosync":
		c := &exclCorosync{children: p.(*children), nodes: map[int]*coroNode{}}
		c.hook = func(i int, pr *proc) error {
			nd := &coroNode{p: pr, pid: pr.cmd.Process.Pid}
			c.cmu.Lock()
			c.nodes[i] = nd
			c.cmu.Unlock()
			go c.monitor(i, nd)
			return nil
		}
		return c, nil
	case "keepalived":
		base := e.l.Config().Subnet.Masked().Addr().As4()
		return &exclKeepalived{children: p.(*children), vip: netip.AddrFrom4([4]byte{base[0], base[1], base[2], 250})}, nil
	}
	return nil, fmt.Errorf("unknown peer %q", name)
}

// ---- groupd ----------------------------------------------------------------

type exclGroupd struct {
	labProcs
	*groupdProber
}

func (g *exclGroupd) leaderDef() string {
	return "leader AND primary (GET /v1/leader 200, or /v1/status leader && primary), --expect " + strconv.Itoa(g.n)
}
func (g *exclGroupd) ready(live []int, timeout time.Duration) error {
	_, _, err := g.l.WaitFor("converge", live, timeout, netlab.Converged(live))
	return err
}
func (g *exclGroupd) check() string { return "" }

// ---- corosync --------------------------------------------------------------

// exclCorosync is corosync with votequorum. Its "primary" is votequorum's
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
	*children
	cmu   sync.Mutex
	nodes map[int]*coroNode
}

type coroNode struct {
	p   *proc
	pid int
	mon *proc            // the running corosync-quorumtool -m
	q   quorumtoolStatus // its last complete block
	qOK bool
}

func (c *exclCorosync) leaderDef() string {
	return "Quorate (votequorum, corosync-quorumtool) AND the highest node ID of the node's quorate membership"
}
func (c *exclCorosync) source() string {
	return "corosync-quorumtool -m per node (its last status block), answered while corosync runs; -s cross-check after each round"
}
func (c *exclCorosync) ready([]int, time.Duration) error { return nil }

// monitor keeps `corosync-quorumtool -m` running for node i's corosync nd
// (it fails until corosync serves IPC, and ends with it) and mirrors its
// last complete block.
func (c *exclCorosync) monitor(i int, nd *coroNode) {
	d := filepath.Dir(c.e.file("corosync", i, "x"))
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
		c.cmu.Lock()
		nd.mon = &proc{cmd: cmd}
		c.cmu.Unlock()
		c.readBlocks(nd, out)
		_ = cmd.Wait()
		c.cmu.Lock()
		nd.qOK, nd.mon = false, nil
		c.cmu.Unlock()
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
			c.cmu.Lock()
			nd.q, nd.qOK = q, err == nil
			c.cmu.Unlock()
			inTable = false
		}
	}
}

func (c *exclCorosync) node(i int) (*coroNode, quorumtoolStatus, bool) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
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
	return exclTerm{Seq: s, ID: wire.NodeID(r)}
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

// check compares every running node's `corosync-quorumtool -s` with what
// its monitor said last.
func (c *exclCorosync) check() string {
	var bad, good []string
	for i := 1; i <= c.e.n; i++ {
		nd, q, ok := c.node(i)
		if nd == nil || procRunning(nd.pid) != nil {
			continue
		}
		out, err := c.e.nsOutput("corosync", i, "quorumtool-s.txt", "corosync-quorumtool", "-s")
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
	c.cmu.Lock()
	for _, nd := range c.nodes {
		if nd.mon != nil {
			_ = nd.mon.cmd.Process.Kill()
		}
	}
	c.nodes = map[int]*coroNode{}
	c.cmu.Unlock()
	return c.children.stopAll()
}

// ---- keepalived ------------------------------------------------------------

// exclKeepalived is keepalived. Its primary leader is a node whose
// namespace holds the VIP (MASTER): keepalived has no quorum, so every
// MASTER is one. A poll is answered while the node's keepalived processes
// exist (a frozen MASTER's kernel still holds, and serves, the VIP); a
// dead keepalived does not answer, although kill -9 leaves its VIP in the
// kernel until the next start removes it (the round records that).
type exclKeepalived struct {
	*children
	vip netip.Addr
}

func (k *exclKeepalived) leaderDef() string {
	return "MASTER: the node's namespace holds the VIP " + k.vip.String() + " (no quorum: every MASTER counts)"
}
func (k *exclKeepalived) source() string {
	return "keepalived: VIP on the node's interfaces (netlink dump in its namespace), answered while its keepalived processes exist"
}
func (k *exclKeepalived) ready([]int, time.Duration) error { return nil }

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
