//go:build linux

package main

// The processes of groupd and its peers on the lab's namespaces, one set
// per node, each started by this harness (and dying with it:
// parent-death signal), with its configuration rendered from the
// templates of scripts/bench/peers and its files in DIR/PEER/nI/...:
//
//	corosync    corosync.conf, corosync.log (its own, timestamp: hires), stdout.log, pid; DIR/corosync/started.pids
//	serf        agent.log (its output, each line stamped as it is read), events.log (serf-event.sh), pid
//	jgroups     view.log (PeersViewPrinter), java.log, pid; DIR/jgroups/classes
//	keepalived  keepalived.conf, keepalived.log (stamped), keepalived.pid, vrrp.pid, notify.log
//
// groupd's are the lab's own daemons.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	netlab "github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/schema"
)

// peerProcs are the processes of one implementation on nodes 1..N.
type peerProcs interface {
	name() string
	// startAll starts every node at once; start(i) node i (again).
	startAll() error
	start(i int) error
	alive(i int) bool
	// pids are node i's processes, in the order a signal hits them.
	pids(i int) ([]int, error)
	// kill sends SIGKILL to node i's processes, marked in the lab's
	// history, waits until they are gone and returns the instant just
	// before the signal.
	kill(i int) (time.Time, error)
	stopAll() error
}

// peerEnv is what every peer's processes need.
type peerEnv struct {
	l   *netlab.Lab
	n   int
	dir string // DIR/PEER/nI/...
	src string // scripts/bench/peers: the templates, serf's handler, the JGroups printer
	ctx context.Context
}

// peerEnv is the environment of peers' processes on lab l: their files in
// the lab's run dir, their templates in the repository's
// scripts/bench/peers.
func (b *bench) peerEnv(ctx context.Context, l *netlab.Lab) *peerEnv {
	return &peerEnv{l: l, n: l.N(), dir: filepath.Join(l.Dir(), "peers"), src: filepath.Join(b.env.Repo, "scripts", "bench", "peers"), ctx: ctx}
}

// file is node i's file name of peer, its directory made.
func (e *peerEnv) file(peer string, i int, name string) string {
	d := filepath.Join(e.dir, peer, "n"+strconv.Itoa(i))
	_ = os.MkdirAll(d, 0o755)
	return filepath.Join(d, name)
}

// render writes node i's configuration file of peer from template tmpl
// of src, every @KEY@ replaced.
func (e *peerEnv) render(peer string, i int, tmpl, out string, vars map[string]string) error {
	b, err := os.ReadFile(filepath.Join(e.src, tmpl))
	if err != nil {
		return fmt.Errorf("%s: template: %w", peer, err)
	}
	s := string(b)
	for k, v := range vars {
		s = strings.ReplaceAll(s, "@"+k+"@", v)
	}
	if k := strings.Index(s, "@"); k >= 0 {
		if end := strings.Index(s[k+1:], "@"); end >= 0 && !strings.ContainsAny(s[k+1:k+1+end], " \n\t") {
			return fmt.Errorf("%s: template %s: %s is not filled in", peer, tmpl, s[k:k+2+end])
		}
	}
	return os.WriteFile(e.file(peer, i, out), []byte(s), 0o644)
}

// proc is a process this harness started.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it has ended
}

// launch starts name with args in node i's namespace (ip netns exec, as
// an operator would) with its output appended to logPath (stderr too,
// unless stderr is set); with stamp, each line is stamped with the time it
// was read ("EPOCH.MICROS line"), for a peer whose log has no times.
func (e *peerEnv) launch(i int, logPath string, stamp bool, stderr *os.File, name string, args ...string) (*proc, error) {
	cmd, err := e.l.Command(i, name, args...)
	if err != nil {
		return nil, err
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", i, err)
	}
	var pr *os.File
	out := lf
	if stamp {
		var pw *os.File
		if pr, pw, err = os.Pipe(); err != nil {
			lf.Close()
			return nil, err
		}
		out = pw
		defer pw.Close()
	}
	cmd.Stdout = out
	if cmd.Stderr == nil {
		cmd.Stderr = out
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		if pr != nil {
			pr.Close()
		}
		return nil, fmt.Errorf("node %d: starting %s: %w", i, name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		defer lf.Close()
		if pr == nil {
			return
		}
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			t := time.Now()
			fmt.Fprintf(lf, "%d.%06d %s\n", t.Unix(), t.Nanosecond()/1000, sc.Text())
		}
	}()
	go func() {
		_ = cmd.Wait()
		<-copied
		close(p.done)
	}()
	if err := os.WriteFile(filepath.Join(filepath.Dir(logPath), "pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return p, err
	}
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

// children are the processes of a peer that this harness runs itself.
type children struct {
	e    *peerEnv
	peer string
	run  func(i int) (*proc, error) // starts node i
	pidf func(i int) ([]int, error) // node i's processes; nil: the one started
	stop time.Duration              // SIGTERM to SIGKILL
	post func()                     // after a stop (corosync: its shared memory)
	hook func(i int, p *proc) error // after a start (corosync: the exclusive harness's monitor)

	mu    sync.Mutex
	procs map[int]*proc
}

func newChildren(e *peerEnv, peer string, run func(int) (*proc, error)) *children {
	return &children{e: e, peer: peer, run: run, stop: 5 * time.Second, procs: map[int]*proc{}}
}

func (c *children) name() string { return c.peer }

func (c *children) startAll() error {
	for i := 1; i <= c.e.n; i++ {
		if err := c.start(i); err != nil {
			return err
		}
	}
	return nil
}

func (c *children) start(i int) error {
	p, err := c.run(i)
	if err != nil {
		return fmt.Errorf("%s: %w", c.peer, err)
	}
	c.mu.Lock()
	c.procs[i] = p
	c.mu.Unlock()
	if c.hook != nil {
		return c.hook(i, p)
	}
	return nil
}

func (c *children) proc(i int) *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[i]
}

func (c *children) alive(i int) bool {
	p := c.proc(i)
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (c *children) pids(i int) ([]int, error) {
	if c.pidf != nil {
		return c.pidf(i)
	}
	if p := c.proc(i); p != nil {
		return []int{p.cmd.Process.Pid}, nil
	}
	return nil, fmt.Errorf("%s node %d not started", c.peer, i)
}

func (c *children) kill(i int) (time.Time, error) {
	pids, err := c.pids(i)
	if err != nil {
		return time.Time{}, err
	}
	t := time.Now()
	if _, err := c.e.l.Mark(schema.KindKill, strconv.Itoa(i), "", t); err != nil {
		return t, err
	}
	if err := signalAll(pids, syscall.SIGKILL); err != nil {
		return t, fmt.Errorf("%s of node %d: %w", c.peer, i, err)
	}
	if p := c.proc(i); p != nil {
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			return t, fmt.Errorf("%s of node %d still there 5 s after SIGKILL", c.peer, i)
		}
	}
	return t, nil
}

func (c *children) stopAll() error {
	c.mu.Lock()
	var ps []*proc
	for _, p := range c.procs {
		ps = append(ps, p)
	}
	c.procs = map[int]*proc{}
	c.mu.Unlock()
	stopProcs(ps, c.stop)
	if c.post != nil {
		c.post()
	}
	return nil
}

// labProcs are groupd's: the lab's daemons.
type labProcs struct{ l *netlab.Lab }

func (g labProcs) name() string    { return "groupd" }
func (g labProcs) startAll() error { _, err := g.l.Start(netlab.Span(1, g.l.N())...); return err }
func (g labProcs) start(i int) error {
	_, err := g.l.Start(i)
	return err
}
func (g labProcs) alive(i int) bool { return g.l.Alive(i) }
func (g labProcs) pids(i int) ([]int, error) {
	pid, err := g.l.PID(i)
	return []int{pid}, err
}
func (g labProcs) kill(i int) (time.Time, error) {
	w, err := g.l.Kill(i)
	return w.Start, err
}
func (g labProcs) stopAll() error { return g.l.Stop(netlab.Span(1, g.l.N())...) }

// newPeerProcs sets up the processes of peer on the lab.
func newPeerProcs(e *peerEnv, peer string) (peerProcs, error) {
	base := e.l.Config().Subnet.Masked().Addr().As4()
	switch peer {
	case "groupd":
		return labProcs{e.l}, nil
	case "corosync":
		// The lab's own multicast group: 239.192.B.1, B the subnet's
		// second octet.
		return newCorosync(e, fmt.Sprintf("239.192.%d.1", base[1]), 5405)
	case "serf":
		return newSerf(e), nil
	case "jgroups":
		return newJGroups(e)
	case "keepalived":
		return newKeepalived(e)
	}
	return nil, fmt.Errorf("unknown peer %q", peer)
}

// newCorosync runs corosync 3 (corosync.conf.in): transport udp on mcast,
// votequorum, a nodelist of the lab's addresses.
func newCorosync(e *peerEnv, mcast string, port int) (*children, error) {
	var nl []string
	for j := 1; j <= e.n; j++ {
		nl = append(nl, fmt.Sprintf("\tnode {\n\t\tname: n%d\n\t\tnodeid: %d\n\t\tring0_addr: %s\n\t}", j, j, e.l.Addr(j)))
	}
	dir := filepath.Join(e.dir, "corosync")
	for i := 1; i <= e.n; i++ {
		d := filepath.Dir(e.file("corosync", i, "x"))
		for _, sub := range []string{"run", "state"} {
			if err := os.MkdirAll(filepath.Join(d, sub), 0o755); err != nil {
				return nil, err
			}
		}
		if err := e.render("corosync", i, "corosync.conf.in", "corosync.conf", map[string]string{"NODELIST": strings.Join(nl, "\n"),
			"MCAST": mcast, "PORT": strconv.Itoa(port), "DIR": d, "I": strconv.Itoa(i), "N": strconv.Itoa(e.n)}); err != nil {
			return nil, err
		}
	}
	c := newChildren(e, "corosync", func(i int) (*proc, error) {
		corosyncCleanShm(dir)
		d := filepath.Dir(e.file("corosync", i, "x"))
		// corosync locks /run/corosync.pid, one per host: each node gets
		// its own /run, bind-mounted in the private mount namespace that
		// ip netns exec gives every command.
		p, err := e.launch(i, filepath.Join(d, "stdout.log"), false, nil, "sh", "-c", `mount --bind "$1" /run && exec corosync -f -c "$2"`, "sh",
			filepath.Join(d, "run"), filepath.Join(d, "corosync.conf"))
		if err == nil {
			err = appendLine(filepath.Join(dir, "started.pids"), strconv.Itoa(p.cmd.Process.Pid))
		}
		return p, err
	})
	c.post = func() { corosyncCleanShm(dir) }
	return c, nil
}

// corosyncCleanShm removes what the corosyncs listed in DIR/started.pids
// left in /dev/shm once they are gone (kill -9 leaves its blackbox, and
// the IPC directories of the clients connected when it died:
// qb-SERVERPID-CLIENTPID-*).
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
		blackbox, _ := filepath.Glob("/dev/shm/qb-corosync-" + f + "-*")
		ipc, _ := filepath.Glob("/dev/shm/qb-" + f + "-*")
		for _, g := range append(blackbox, ipc...) {
			_ = os.RemoveAll(g)
		}
	}
}

// newSerf runs serf's defaults (profile lan), discovery by mDNS on the
// lab's eth0 (no seed addresses, as groupd's beacons), RPC on the
// namespace's own loopback, and serf-event.sh for member events.
func newSerf(e *peerEnv) *children {
	return newChildren(e, "serf", func(i int) (*proc, error) {
		d := filepath.Dir(e.file("serf", i, "x"))
		_ = appendLine(filepath.Join(d, "events.log"), fmt.Sprintf("%d.%06d agent-start -", time.Now().Unix(), time.Now().Nanosecond()/1000))
		return e.launch(i, filepath.Join(d, "agent.log"), true, nil, "serf", "agent", "-node=n"+strconv.Itoa(i), "-bind="+e.l.Addr(i).String()+":7946",
			"-iface=eth0", "-rpc-addr=127.0.0.1:7373", "-discover=groupd-peers", "-log-level=info",
			"-event-handler=member-join,member-leave,member-failed,member-update,member-reap="+
				filepath.Join(e.src, "serf-event.sh")+" "+filepath.Join(d, "events.log"))
	})
}

// jgroupsJar is Debian's libjgroups-java.
const jgroupsJar = "/usr/share/java/jgroups.jar"

// newJGroups runs PeersViewPrinter (compiled here once) on the packaged
// udp.xml, bound to the lab's address; the JVM's defaults otherwise.
func newJGroups(e *peerEnv) (*children, error) {
	classes := filepath.Join(e.dir, "jgroups", "classes")
	if !fileExists(filepath.Join(classes, "PeersViewPrinter.class")) {
		if err := os.MkdirAll(classes, 0o755); err != nil {
			return nil, err
		}
		if out, err := exec.Command("javac", "-nowarn", "-cp", jgroupsJar, "-d", classes, filepath.Join(e.src, "PeersViewPrinter.java")).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("javac PeersViewPrinter: %v: %s", err, out)
		}
	}
	c := newChildren(e, "jgroups", func(i int) (*proc, error) {
		// Its views on stdout, its complaints in java.log.
		jl, err := os.OpenFile(e.file("jgroups", i, "java.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer jl.Close()
		return e.launch(i, e.file("jgroups", i, "view.log"), false, jl, "java", "-Djava.net.preferIPv4Stack=true",
			"-Djgroups.bind_addr="+e.l.Addr(i).String(), "-cp", jgroupsJar+":"+classes, "PeersViewPrinter", "n"+strconv.Itoa(i), "groupd-peers")
	})
	c.stop = 8 * time.Second
	return c, nil
}

// newKeepalived runs keepalived (keepalived.conf.in): VRRP v2 on eth0,
// advert_int 1 s, priority 100 + I (node N is MASTER), preemption on,
// VRRP router id the subnet's second octet, the VIP its .250, and a
// notify script that logs every state change (kept for people: the
// figures read keepalived's own log).
func newKeepalived(e *peerEnv) (*children, error) {
	base := e.l.Config().Subnet.Masked().Addr().As4()
	if base[1] == 0 {
		return nil, fmt.Errorf("keepalived: subnet %v: its second octet is the VRRP router id, and 0 is none", e.l.Config().Subnet)
	}
	vip := fmt.Sprintf("%d.%d.%d.250", base[0], base[1], base[2])
	nd := notifyDir(e.l.Config().Prefix)
	if err := os.MkdirAll(nd, 0o700); err != nil {
		return nil, fmt.Errorf("keepalived: %w", err)
	}
	for i := 1; i <= e.n; i++ {
		notify := filepath.Join(nd, fmt.Sprintf("notify-%d.sh", i))
		script := fmt.Sprintf("#!/bin/bash\n# keepalived notify for lab node %d: $1=INSTANCE $2=name $3=state $4=priority\necho \"$EPOCHREALTIME $3 $4\" >>%s\n",
			i, e.file("keepalived", i, "notify.log"))
		if err := os.WriteFile(notify, []byte(script), 0o755); err != nil {
			return nil, fmt.Errorf("keepalived: %w", err)
		}
		if err := e.render("keepalived", i, "keepalived.conf.in", "keepalived.conf", map[string]string{"PREFIX": e.l.Config().Prefix,
			"I": strconv.Itoa(i), "VRID": strconv.Itoa(int(base[1])), "PRIO": strconv.Itoa(100 + i), "VIP": vip, "NOTIFY": notify}); err != nil {
			return nil, err
		}
	}
	c := newChildren(e, "keepalived", nil)
	// The VRRP child first, then its parent, microseconds apart: neither
	// can send a priority-0 advert or respawn the other.
	c.pidf = func(i int) ([]int, error) {
		var pids []int
		for _, f := range []string{"vrrp.pid", "keepalived.pid"} {
			pid, err := readPid(e.file("keepalived", i, f))
			if err != nil {
				return nil, fmt.Errorf("keepalived: %w", err)
			}
			pids = append(pids, pid)
		}
		return pids, nil
	}
	c.run = func(i int) (*proc, error) {
		pidf, vrrpf := e.file("keepalived", i, "keepalived.pid"), e.file("keepalived", i, "vrrp.pid")
		_ = os.Remove(pidf)
		_ = os.Remove(vrrpf)
		// Its console log (-l), stamped as it comes: the VRRP process
		// writes "Entering MASTER STATE" as it changes state, in order.
		log := e.file("keepalived", i, "keepalived.log")
		p, err := e.launch(i, log, true, nil, "keepalived", "-n", "-l", "-D", "-P", "-f", e.file("keepalived", i, "keepalived.conf"), "-p", pidf, "-r", vrrpf)
		if err != nil {
			return nil, err
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if pids, err := c.pidf(i); err == nil && procAliveOrStopped(pids[0]) == nil {
				return p, nil
			}
			select {
			case <-p.done:
				return nil, fmt.Errorf("node %d exited at start; see %s", i, log)
			default:
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("node %d: no VRRP process within 10 s; see %s", i, log)
			}
		}
	}
	return c, nil
}
