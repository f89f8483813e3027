//go:build linux

package main

// The harness every suite shares (suite, peers run, scale, loss,
// exclusive run): the results directory and its env.txt, loads.txt and
// notes, the lab it runs on, installing a missing program, and the lines
// it says. The scripts of scripts/bench only read their arguments and
// call it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	netlab "github.com/groupd/groupd/internal/lab"
)

// bench is one run of a suite.
type bench struct {
	name  string     // what its lines start with: "bench", "peers", "scale", ...
	out   string     // the results directory
	env   netlab.Env // the lab's names from the environment, with the suite's defaults
	bin   string     // groupd
	start time.Time
	lab   *netlab.Lab // the lab up now, if any
	// onSignal runs when SIGINT or SIGTERM ends the run (the lab and the
	// notify scripts go anyway).
	onSignal func()
	stop     func() // undoes the signal handler
	done     bool
}

// newBench prepares a run of suite name: a lab named by the environment
// (prefix and subnet its defaults), results in out (default
// /tmp/groupd-NAME-TIME), groupd built into out/bin unless GROUPD_BIN. No
// other run may use the lab's prefix: with force it takes a lab of that
// prefix down, otherwise it refuses. The caller defers finish.
func newBench(name, out, prefix, subnet string, force bool) (*bench, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("must run as root (network namespaces)")
	}
	e, err := netlab.FromEnv(prefix, subnet)
	if err != nil {
		return nil, err
	}
	if out == "" {
		out = fmt.Sprintf("/tmp/groupd-%s-%s", name, time.Now().UTC().Format("20060102-150405"))
	}
	if out, err = filepath.Abs(out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(out, "bin"), 0o755); err != nil {
		return nil, err
	}
	b := &bench{name: name, out: out, env: e, start: time.Now()}
	if b.env.Repo == "" {
		b.env.Repo, _ = os.Getwd()
	}
	if labUp(e.Prefix) {
		if !force {
			return nil, fmt.Errorf("a %s-* lab is already up (another run?); take it down (GROUPD_LAB_PREFIX=%s scripts/netem/lab.sh down), or pass --force",
				e.Prefix, e.Prefix)
		}
		b.say("a %s-* lab is up; --force: taking it down", e.Prefix)
		if err := cleanupLab(e.Dir, e.Prefix); err != nil {
			return nil, err
		}
	}
	b.stop = netlab.CloseOnSignal(func() {
		if b.onSignal != nil {
			b.onSignal()
		}
		_ = os.RemoveAll(notifyDir(e.Prefix))
	})
	b.say("building groupd")
	if b.bin, err = e.GroupdBin(filepath.Join(out, "bin", "groupd")); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

func (b *bench) say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", b.name, fmt.Sprintf(format, args...))
}

func (b *bench) path(name string) string { return filepath.Join(b.out, name) }

// section says what starts, with the time and the load, and keeps the
// load in loads.txt.
func (b *bench) section(format string, args ...any) {
	what, l := fmt.Sprintf(format, args...), loadString()
	b.say("== %s == %s load %s", what, time.Now().UTC().Format("15:04:05"), l)
	_ = appendLine(b.path("loads.txt"), fmt.Sprintf("%s %s load %s", time.Now().UTC().Format(time.RFC3339), what, l))
}

// emit appends v as one JSON line to the results file.
func (b *bench) emit(file string, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return appendLine(b.path(file), string(line))
}

// Note is a line about something that did not run or failed, in a
// results file beside the figures.
type Note struct {
	Kind  string     `json:"kind"` // "note"
	Peer  string     `json:"peer,omitempty"`
	What  string     `json:"what"`
	N     int        `json:"n"`
	Trial int        `json:"trial,omitempty"`
	Note  string     `json:"note"`
	Load  [3]float64 `json:"load"`
}

// note records a Note in file and says it.
func (b *bench) note(file string, n Note) {
	n.Kind, n.Load = "note", load()
	b.say("NOTE: %s %s N=%d: %s", n.Peer, n.What, n.N, n.Note)
	if err := b.emit(file, n); err != nil {
		b.say("writing a note: %v", err)
	}
}

// commit is the repository's commit and how many paths were not
// committed: what groupd was built from.
func (b *bench) commit() string {
	git := func(args ...string) string {
		out, _ := exec.Command("git", append([]string{"-C", b.env.Repo}, args...)...).Output()
		return strings.TrimSpace(string(out))
	}
	dirty := 0
	if s := git("status", "--porcelain"); s != "" {
		dirty = strings.Count(s, "\n") + 1
	}
	return fmt.Sprintf("%s (%d uncommitted paths)", git("rev-parse", "--short", "HEAD"), dirty)
}

// groupdVersion says which groupd the run uses: built from the tree (its
// commit at build time), or GROUPD_BIN, which the run did not build and
// whose source the tree's commit does not tell (a binary of an older
// commit, run for comparison).
func (b *bench) groupdVersion() string {
	if b.env.Bin != "" {
		return fmt.Sprintf("GROUPD_BIN %s (not built by this run; the tree was at %s)", b.bin, b.commit())
	}
	return fmt.Sprintf("%s at build time, %s", b.commit(), b.bin)
}

// writeEnv writes env.txt: the machine, the versions, the load; extra
// lines come after the lab line.
func (b *bench) writeEnv(extra ...string) error {
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	cpu, mem := "?", "?"
	if bs, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`(?m)^model name\s*: (.*)$`).FindSubmatch(bs); m != nil {
			cpu = string(m[1])
		}
	}
	if bs, err := os.ReadFile("/proc/meminfo"); err == nil {
		if m := regexp.MustCompile(`MemTotal:\s*(\d+) kB`).FindSubmatch(bs); m != nil {
			kib, _ := strconv.Atoi(string(m[1]))
			mem = strconv.Itoa(kib / 1024)
		}
	}
	lines := append([]string{
		"started:    " + b.start.UTC().Format(time.RFC3339),
		"command:    " + strings.Join(os.Args, " "),
		fmt.Sprintf("machine:    %d CPU (%s), %s MiB RAM", runtime.NumCPU(), cpu, mem),
		"kernel:     " + unix.ByteSliceToString(uts.Release[:]),
		"go:         " + runtime.Version(),
		"groupd:     " + b.groupdVersion(),
		fmt.Sprintf("lab:        prefix %s, subnet %s, run dir %s", b.env.Prefix, b.env.Subnet, b.env.Dir),
	}, extra...)
	lines = append(lines, "load:       "+loadString()+" at start (1, 5, 15 min)")
	text := strings.Join(lines, "\n") + "\n"
	fmt.Fprint(os.Stderr, text)
	return os.WriteFile(b.path("env.txt"), []byte(text), 0o644)
}

// closeLab takes the lab down, if one is up.
func (b *bench) closeLab() {
	if b.lab != nil {
		_ = b.lab.Close()
		b.lab = nil
	}
}

// finish closes the lab, removes the notify scripts and ends env.txt with
// the time the run took (once).
func (b *bench) finish() {
	if b.done {
		return
	}
	b.done = true
	b.closeLab()
	b.stop()
	_ = os.RemoveAll(notifyDir(b.env.Prefix))
	_ = appendLine(b.path("env.txt"), fmt.Sprintf("finished:   %s (%.0f s in all); load %s",
		time.Now().UTC().Format(time.RFC3339), time.Since(b.start).Seconds(), loadString()))
}

// labUp brings up a fresh lab of n nodes (the run dir's old nodes, history
// and peers' files removed first), running groupd with profile and args.
func (b *bench) labUp(n int, profile string, args ...string) (*netlab.Lab, error) {
	b.closeLab()
	if err := netlab.ClearRunDir(b.env.Dir, "peers"); err != nil {
		return nil, err
	}
	cfg, err := b.env.Config(n)
	if err != nil {
		return nil, err
	}
	cfg.Bin, cfg.Profile, cfg.Args = b.bin, profile, args
	cfg.Logf = func(format string, args ...any) {
		if s := fmt.Sprintf(format, args...); strings.HasPrefix(s, "warning") {
			b.say("lab: %s", s)
		}
	}
	if b.lab, err = netlab.Up(context.Background(), cfg); err != nil {
		return nil, err
	}
	return b.lab, nil
}

// install makes sure every program of progs is there, installing the
// packages pkgs with apt-get (the packages' own services kept from
// starting: a policy-rc.d for the time of the install, if there is
// none). What apt-get says goes to apt.log.
func (b *bench) install(progs, pkgs []string) error {
	if len(missing(progs)) == 0 {
		return nil
	}
	b.say("installing %s with apt-get install -y (for %s)", strings.Join(pkgs, " "), strings.Join(missing(progs), ", "))
	const policy = "/usr/sbin/policy-rc.d"
	if !fileExists(policy) {
		if err := os.WriteFile(policy, []byte("#!/bin/sh\n# benchtool: no service starts during its apt-get install\nexit 101\n"), 0o755); err == nil {
			defer os.Remove(policy)
		}
	}
	apt := func(args ...string) error {
		log, err := os.OpenFile(b.path("apt.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer log.Close()
		cmd := exec.Command("apt-get", append([]string{"-y", "-qq"}, args...)...)
		cmd.Env, cmd.Stdout, cmd.Stderr = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive"), log, log
		return cmd.Run()
	}
	if apt(append([]string{"install"}, pkgs...)...) != nil {
		_ = apt("update")
		if err := apt(append([]string{"install"}, pkgs...)...); err != nil {
			return fmt.Errorf("apt-get install -y %s failed; see %s", strings.Join(pkgs, " "), b.path("apt.log"))
		}
	}
	if m := missing(progs); len(m) > 0 {
		return fmt.Errorf("installed %s, but %s still missing", strings.Join(pkgs, " "), strings.Join(m, ", "))
	}
	return nil
}

// missing returns the programs of progs that are not there: not on PATH,
// or, given as an absolute path (a jar), not a file.
func missing(progs []string) []string {
	var m []string
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil && !(strings.HasPrefix(p, "/") && fileExists(p)) {
			m = append(m, p)
		}
	}
	return m
}

// runSelf runs this program with args, its output appended to file: the
// simulator's figures, each in a process of its own.
func (b *bench) runSelf(file string, args ...string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(b.path(file), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = f, os.Stderr
	return cmd.Run()
}

// seconds is a duration flag that also takes whole seconds ("20"), as
// the scripts always did.
type seconds struct{ d *time.Duration }

func (f seconds) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f seconds) Set(s string) error {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		*f.d = time.Duration(v * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	*f.d = d
	return err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// labUp reports whether namespaces of prefix exist.
func labUp(prefix string) bool {
	ents, _ := os.ReadDir("/run/netns")
	re := regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + `-[0-9]+$`)
	for _, e := range ents {
		if re.MatchString(e.Name()) {
			return true
		}
	}
	return false
}

// cleanupLab stops what a run with run dir dir left: the peers' processes
// whose pid files are in dir and whose command lines name dir, the groupd
// daemons and the network of prefix (lab.Remove), and the notify scripts.
func cleanupLab(dir, prefix string) error {
	var errs []error
	files, _ := filepath.Glob(filepath.Join(dir, "peers", "*", "n*", "*pid"))
	var pids []int
	for _, f := range files {
		pid, err := readPid(f)
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue // gone, or not ours (a recycled pid)
		}
		pids = append(pids, pid)
	}
	// A stopped process would not see SIGTERM.
	_ = signalAll(pids, syscall.SIGCONT)
	_ = signalAll(pids, syscall.SIGTERM)
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for procRunning(pid) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if procAliveOrStopped(pid) == nil {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				errs = append(errs, fmt.Errorf("kill -9 %d: %w", pid, err))
			}
		}
	}
	corosyncCleanShm(filepath.Join(dir, "peers", "corosync"))
	if err := netlab.Remove(dir, prefix, "", func(f string, a ...any) { say("lab: "+f, a...) }); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(notifyDir(prefix)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// notifyDir holds keepalived's notify scripts: its script security
// refuses scripts under a world-writable directory such as /tmp.
func notifyDir(prefix string) string { return "/run/groupd-" + prefix + "-notify" }

// readPid reads a pid file.
func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("%s: not a pid: %q", path, strings.TrimSpace(string(b)))
	}
	return pid, nil
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	return errors.Join(err, f.Close())
}
