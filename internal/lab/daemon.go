package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/schema"
)

// Options are a node's own launch settings, on top of the lab's; a node
// keeps them for its restarts.
type Options struct {
	// Args are more `groupd run` arguments (after the lab's).
	Args []string `json:"args,omitempty"`
	// Env is more environment (KEY=VALUE), e.g. GROUPD_KEY_FILE.
	Env []string `json:"env,omitempty"`
	// ID, when not 0 and not the node's number, is the --id the daemon
	// runs with: another node's, to play an operator's mistake (a copied
	// configuration). Such a daemon is expected to be refused, so Start
	// only launches it (it does not wait for its API, which may never
	// answer) and its events are not recorded: they would be the other
	// node's. Exited says how it ended.
	ID int `json:"id,omitempty"`
}

// borrowed reports whether o makes the daemon run with another node's ID.
func (o Options) borrowed(own int) bool { return o.ID != 0 && o.ID != own }

// node is one namespace and its daemon.
type node struct {
	l      *Lab
	id     int
	dir    string
	client *client.Client

	mu       sync.Mutex
	opts     Options
	pid      int              // the daemon this lab knows of; 0 if none
	done     chan struct{}    // closed when the daemon this Lab started exited; nil if started by another command
	exit     *os.ProcessState // how that daemon ended, once done is closed
	launched time.Time
	wake     chan struct{} // closed (and replaced) when a daemon starts: wakes the recorder
}

func (nd *node) options() Options {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.opts
}

// StartWith sets the options of nodes ids (kept for their restarts) and
// starts them.
func (l *Lab) StartWith(o Options, ids ...int) (time.Time, error) {
	if err := l.SetOptions(o, ids...); err != nil {
		return time.Time{}, err
	}
	return l.Start(ids...)
}

// SetOptions sets the options of nodes ids for their next starts, so that
// nodes of different options can be started at once.
func (l *Lab) SetOptions(o Options, ids ...int) error {
	for _, i := range ids {
		nd, err := l.node(i)
		if err != nil {
			return err
		}
		nd.mu.Lock()
		nd.opts = o
		nd.mu.Unlock()
	}
	return nil
}

// Start launches the daemons of ids, all at once as machines powering up
// together would, and waits until each answers /healthz and (when this
// process records) its recorder follows it. Nodes already running are
// left alone. It returns when all were up.
func (l *Lab) Start(ids ...int) (time.Time, error) {
	if l.cfg.Bin == "" {
		return time.Time{}, errors.New("lab: no groupd binary (Config.Bin)")
	}
	var todo []*node
	for _, i := range ids {
		nd, err := l.node(i)
		if err != nil {
			return time.Time{}, err
		}
		if nd.running() {
			l.logf("node %d is already running (pid %d)", i, nd.pidNow())
			continue
		}
		todo = append(todo, nd)
	}
	if len(todo) == 0 {
		return time.Now(), nil
	}
	var started, recorded []int
	for _, nd := range todo {
		started = append(started, nd.id)
		if o := nd.options(); o.borrowed(nd.id) {
			l.logf("node %d runs with node %d's ID: launched, not waited for, not recorded", nd.id, o.ID)
		} else {
			recorded = append(recorded, nd.id)
		}
	}
	if err := l.save(); err != nil {
		return time.Time{}, err
	}
	// The mark comes first: every event of the new processes is later.
	// A daemon with another node's ID is no node of the history.
	if len(recorded) > 0 {
		if err := l.markNodes(schema.KindStart, recorded, time.Now()); err != nil {
			return time.Time{}, err
		}
	}
	if err := eachNode(started, func(i int) error { return l.nodes[i].launch() }); err != nil {
		return time.Time{}, err
	}
	if len(recorded) == 0 {
		return time.Now(), nil
	}
	started = recorded
	todo = slices.DeleteFunc(todo, func(nd *node) bool { return !slices.Contains(recorded, nd.id) })
	if err := l.record(); err != nil {
		return time.Time{}, err
	}
	wait := 10*time.Second + time.Duration(len(started))*100*time.Millisecond
	if err := eachNode(started, func(i int) error { return l.nodes[i].waitHealthy(wait) }); err != nil {
		return time.Time{}, err
	}
	up := time.Now()
	if l.hist != nil {
		deadline := time.Now().Add(wait)
		for _, nd := range todo {
			for !l.hist.LastArrival(wireID(nd.id)).After(nd.launchedAt()) {
				if time.Now().After(deadline) {
					return up, fmt.Errorf("lab: node %d: the recorder got no event from the new daemon within %v; see %s", nd.id, wait, filepath.Join(l.cfg.Dir, recorderLog))
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	return up, nil
}

// launch starts node nd's daemon in its namespace.
func (nd *node) launch() error {
	l := nd.l
	nd.mu.Lock()
	defer nd.mu.Unlock()
	data, sock := filepath.Join(nd.dir, dataDir), filepath.Join(nd.dir, sockFile)
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	_ = os.Remove(sock)
	logf, err := os.OpenFile(filepath.Join(nd.dir, logFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, permFile)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	defer logf.Close() // the daemon has its own descriptor
	args := nd.runArgs()
	fmt.Fprintf(logf, "%s lab: starting in %s: %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), l.NS(nd.id), l.cfg.Bin, strings.Join(args, " "))
	cmd := exec.Command(l.cfg.Bin, args...)
	cmd.Env = daemonEnv(l.cfg.InheritEnv, l.cfg.Env, nd.opts.Env)
	cmd.Stdout, cmd.Stderr = logf, logf
	if l.cfg.Detach {
		// Its own session: a Ctrl-C in the operator's terminal reaches
		// the scripts, which stop the daemons in order.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		// Dies with this process, whatever kills it.
		cmd.SysProcAttr = withParent()
	}
	launched := time.Now() // before the process exists: its events all come later
	if err := inNetns(l.NS(nd.id), cmd.Start); err != nil {
		return fmt.Errorf("lab: starting node %d: %w", nd.id, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // reaps it, also in a long-lived command that detaches its daemons
		nd.mu.Lock()
		if nd.done == done {
			nd.exit = cmd.ProcessState
		}
		nd.mu.Unlock()
		close(done)
	}()
	nd.pid, nd.done, nd.exit, nd.launched = cmd.Process.Pid, done, nil, launched
	close(nd.wake)
	nd.wake = make(chan struct{})
	if err := os.WriteFile(filepath.Join(nd.dir, pidFile), []byte(strconv.Itoa(nd.pid)+"\n"), permFile); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}

// runArgs are the `groupd run` arguments of node nd's daemon: the lab's,
// then Config.Args, then the node's own Options.Args (a later flag wins).
// The daemon is named after its namespace (--name gd-3), also when it runs
// with another node's ID, and keeps that name through restarts.
func (nd *node) runArgs() []string {
	l := nd.l
	id := nd.id
	if nd.opts.borrowed(nd.id) {
		id = nd.opts.ID
	}
	args := []string{"run", "--id", strconv.Itoa(id), "--name", l.NS(nd.id), "--bind", l.Addr(nd.id).String(), "--interface", "eth0",
		"--data-dir", filepath.Join(nd.dir, dataDir), "--api", "unix:" + filepath.Join(nd.dir, sockFile), "--profile", l.cfg.Profile}
	return append(append(args, l.cfg.Args...), nd.opts.Args...)
}

// waitHealthy waits until node nd's daemon answers GET /healthz.
func (nd *node) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = nd.client.Healthy(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if !nd.running() {
			return fmt.Errorf("lab: node %d exited at start; last lines of %s:\n%s", nd.id, filepath.Join(nd.dir, logFile), nd.logTail(10))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lab: node %d: no answer on its API within %v (%v); see %s", nd.id, timeout, err, filepath.Join(nd.dir, logFile))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (nd *node) logTail(n int) string {
	b, _ := os.ReadFile(filepath.Join(nd.dir, logFile))
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// LogTail returns the last n lines of node i's daemon log.
func (l *Lab) LogTail(i, n int) string { return l.nodes[i].logTail(n) }

func (nd *node) launchedAt() time.Time {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.launched
}

// process returns node nd's daemon and a channel closed when it exits; 0
// when none runs. A daemon started by another command (lab.sh start) is
// known by its pid file, checked against its command line so that a
// recycled pid is never taken for it.
func (nd *node) process() (int, <-chan struct{}) {
	nd.mu.Lock()
	pid, done := nd.pid, nd.done
	nd.mu.Unlock()
	if done != nil {
		select {
		case <-done:
			return 0, nil
		default:
			return pid, done
		}
	}
	b, err := os.ReadFile(filepath.Join(nd.dir, pidFile))
	if err != nil {
		return 0, nil
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !procAlive(pid, filepath.Join(nd.dir, dataDir)) {
		return 0, nil
	}
	return pid, pollExit(pid)
}

// pollExit returns a channel closed when pid has exited (a process that is
// not our child cannot be waited for).
func pollExit(pid int) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		for procAlive(pid, "") {
			time.Sleep(100 * time.Millisecond)
		}
		close(c)
	}()
	return c
}

// procAlive says whether pid is a live process (a zombie counts as gone:
// in containers PID 1 may take seconds to reap what it inherited) whose
// command line contains mark ("" for any).
func procAlive(pid int, mark string) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
		return false
	}
	if mark == "" {
		return true
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && bytes.Contains(cmdline, []byte(mark))
}

func (nd *node) running() bool {
	pid, _ := nd.process()
	return pid != 0
}

func (nd *node) pidNow() int {
	pid, _ := nd.process()
	return pid
}

// PID returns node i's daemon's process ID, or an error when it does not
// run.
func (l *Lab) PID(i int) (int, error) {
	nd, err := l.node(i)
	if err != nil {
		return 0, err
	}
	if pid, _ := nd.process(); pid != 0 {
		return pid, nil
	}
	return 0, fmt.Errorf("lab: node %d is not running", i)
}

// Alive reports whether node i's daemon runs.
func (l *Lab) Alive(i int) bool {
	nd, err := l.node(i)
	return err == nil && nd.running()
}

// signal sends sig to node nd's daemon and waits until it is gone
// (SIGKILL after grace if it is still there). It returns when it was
// signalled and when it was gone.
func (nd *node) signal(sig syscall.Signal, grace time.Duration) (Window, error) {
	pid, done := nd.process()
	if pid == 0 {
		return Window{}, fmt.Errorf("lab: node %d is not running", nd.id)
	}
	w := Window{Start: time.Now()}
	if err := syscall.Kill(pid, sig); err != nil {
		return w, fmt.Errorf("lab: signalling node %d (pid %d): %w", nd.id, pid, err)
	}
	select {
	case <-done:
	case <-time.After(grace):
		if sig != syscall.SIGKILL {
			nd.l.logf("warning: node %d did not stop within %v of %v; sending SIGKILL", nd.id, grace, sig)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			return w, fmt.Errorf("lab: node %d (pid %d) is still there 5 s after SIGKILL", nd.id, pid)
		}
	}
	w.End = time.Now()
	_ = os.Remove(filepath.Join(nd.dir, pidFile))
	return w, nil
}

// Exited waits up to timeout for node i's daemon, one this Lab started, to
// end by itself, and returns its exit code (-1 if a signal ended it) and
// when the lab saw it go (a few milliseconds late at most).
func (l *Lab) Exited(i int, timeout time.Duration) (int, time.Time, error) {
	nd, err := l.node(i)
	if err != nil {
		return 0, time.Time{}, err
	}
	nd.mu.Lock()
	done := nd.done
	nd.mu.Unlock()
	if done == nil {
		return 0, time.Time{}, fmt.Errorf("lab: node %d: no daemon started by this process", i)
	}
	select {
	case <-done:
	case <-time.After(timeout):
		return 0, time.Time{}, fmt.Errorf("lab: node %d is still running %v later", i, timeout)
	}
	at := time.Now()
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.done != done || nd.exit == nil {
		return 0, at, fmt.Errorf("lab: node %d was started again meanwhile", i)
	}
	return nd.exit.ExitCode(), at, nil
}

// Kill sends SIGKILL to node i's daemon and waits until it is gone, and
// marks it ("kill"). Failover is measured from the returned Start (just
// before the signal), so the measurement errs on the long side.
func (l *Lab) Kill(i int) (Window, error) {
	nd, err := l.node(i)
	if err != nil {
		return Window{}, err
	}
	if !nd.running() {
		return Window{}, fmt.Errorf("lab: node %d is not running", i)
	}
	// The mark first, at the instant the node is about to die: what it
	// says from then on is not checked.
	t := time.Now()
	if err := l.markNodes(schema.KindKill, []int{i}, t); err != nil {
		return Window{}, err
	}
	w, err := nd.signal(syscall.SIGKILL, 5*time.Second)
	w.Start = t
	if err == nil {
		l.logf("killed node %d (SIGKILL)", i)
	}
	return w, err
}

// Stop sends SIGTERM to the daemons of ids that run, all at once, and
// SIGKILL to any still alive after 3 s (each leaves memberlist first).
func (l *Lab) Stop(ids ...int) error {
	var run []int
	for _, i := range ids {
		nd, err := l.node(i)
		if err != nil {
			return err
		}
		if nd.running() {
			run = append(run, i)
		}
	}
	if len(run) == 0 {
		return nil
	}
	if err := l.markNodes(schema.KindStop, run, time.Now()); err != nil {
		return err
	}
	return eachNode(run, func(i int) error {
		_, err := l.nodes[i].signal(syscall.SIGTERM, 3*time.Second)
		return err
	})
}

// Restart stops node i (SIGKILL when crash, else SIGTERM and SIGKILL after
// 3 s) and starts it again with the same data dir and options, marked
// "restart". It returns when the new daemon was launched: every later
// event of node i is the new process's.
func (l *Lab) Restart(i int, crash bool) (time.Time, error) {
	nd, err := l.node(i)
	if err != nil {
		return time.Time{}, err
	}
	// Marked also for a node that is down: to `groupd timeline`, a
	// restart ends the time the node was down.
	if err := l.markNodes(schema.KindRestart, []int{i}, time.Now()); err != nil {
		return time.Time{}, err
	}
	if nd.running() {
		sig := syscall.SIGTERM
		if crash {
			sig = syscall.SIGKILL
		}
		if _, err := nd.signal(sig, 3*time.Second); err != nil {
			return time.Time{}, err
		}
	}
	if _, err := l.Start(i); err != nil {
		return time.Time{}, err
	}
	return nd.launchedAt(), nil
}

// Wipe removes node i's data dir (its counter, its last group): the node
// must be stopped. It starts again as a new node would.
func (l *Lab) Wipe(i int) error {
	nd, err := l.node(i)
	if err != nil {
		return err
	}
	if nd.running() {
		return fmt.Errorf("lab: node %d runs: stop it before wiping its data dir", i)
	}
	if err := os.RemoveAll(filepath.Join(nd.dir, dataDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("lab: %w", err)
	}
	return l.markNodes(schema.KindWipe, []int{i}, time.Now())
}

// Backup copies node i's data dir (its state files; the daemon may run:
// they are replaced by rename, never written in place) to dst, for a later
// Restore: an operator's backup, or a VM snapshot.
func (l *Lab) Backup(i int, dst string) error {
	nd, err := l.node(i)
	if err != nil {
		return err
	}
	if err := copyFiles(filepath.Join(nd.dir, dataDir), dst); err != nil {
		return fmt.Errorf("lab: backing up node %d: %w", i, err)
	}
	return nil
}

// Restore replaces node i's data dir by the copy in src (Backup): the node
// starts again from that older state, as after restoring a backup. The
// node must be stopped.
func (l *Lab) Restore(i int, src string) error {
	nd, err := l.node(i)
	if err != nil {
		return err
	}
	if nd.running() {
		return fmt.Errorf("lab: node %d runs: stop it before restoring its data dir", i)
	}
	data := filepath.Join(nd.dir, dataDir)
	if err := os.RemoveAll(data); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	if err := copyFiles(src, data); err != nil {
		return fmt.Errorf("lab: restoring node %d: %w", i, err)
	}
	return l.markNodes(schema.KindRestore, []int{i}, time.Now())
}

// copyFiles copies the regular files of dir src into dir dst (made if
// missing).
func copyFiles(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// killAll sends SIGKILL to every daemon of the lab and waits for them (the
// run is over: no goodbyes).
func (l *Lab) killAll() {
	_ = eachNode(l.all(), func(i int) error {
		if l.nodes[i].running() {
			_, _ = l.nodes[i].signal(syscall.SIGKILL, 5*time.Second)
		}
		return nil
	})
}
