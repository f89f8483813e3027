// Command lab is the network lab's command line: scripts/netem's lab.sh,
// partition.sh, heal.sh, degrade.sh and experiment.sh are thin wrappers
// that build it once into the run dir and call it, so that the lab exists
// once, as package internal/lab, for the scripts and the tests alike.
//
//	lab lab up N | down | status | start [-- RUN-ARGS] | stop | kill I | restart I
//	        | exec I CMD... | wait [--timeout S] [LIST] | export DIR
//	lab partition 'A|B' | --oneway FROM TO
//	lab heal [--partitions]
//	lab degrade --loss P% [--delay D [--jitter J]] [--nodes LIST]
//	lab experiment SCENARIO [options] [-- RUN-ARGS]
//
// The first word is the script it serves, and the name its messages
// start with. The environment is scripts/netem's (README.md there):
// GROUPD_LAB_DIR, GROUPD_LAB_PREFIX, GROUPD_LAB_SUBNET, GROUPD_BIN,
// GROUPD_PROFILE, GROUPD_FAULTS; GROUPD_LAB_REPO is the repository to build
// groupd from (the scripts set it). Exit status: 0 done, 1 failed, 2 bad
// usage, 3 (degrade) nothing could be applied.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/groupd/groupd/internal/lab"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: lab {lab|partition|heal|degrade|experiment} ARGS (see scripts/netem/README.md)")
		os.Exit(2)
	}
	c := &cli{prog: os.Args[1]}
	cmds := map[string]func([]string) error{
		"lab": c.lab, "partition": c.partition, "heal": c.heal, "degrade": c.degrade, "experiment": c.experiment,
	}
	f, ok := cmds[c.prog]
	if !ok {
		fmt.Fprintf(os.Stderr, "lab: unknown command %q (lab, partition, heal, degrade, experiment)\n", c.prog)
		os.Exit(2)
	}
	if err := f(os.Args[2:]); err != nil {
		var ex exitError
		if errors.As(err, &ex) {
			if ex.msg != "" {
				fmt.Fprintf(os.Stderr, "%s: %s\n", c.prog, ex.msg)
			}
			os.Exit(ex.code)
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.prog, err)
		os.Exit(1)
	}
}

// exitError ends the command with a status other than 1.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func usageError(format string, args ...any) error {
	return exitError{code: 2, msg: fmt.Sprintf(format, args...)}
}

// cli holds what every subcommand needs.
type cli struct {
	prog string
}

func (c *cli) say(format string, args ...any) {
	fmt.Printf("%s: %s\n", c.prog, fmt.Sprintf(format, args...))
}

func (c *cli) warn(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s: warning: %s\n", c.prog, fmt.Sprintf(format, args...))
}

// env is the lab's environment (scripts/netem/README.md).
type env struct {
	prefix, dir, bin, profile, faults, repo string
	subnet                                  string
}

func readEnv() (env, error) {
	e := env{
		prefix: os.Getenv("GROUPD_LAB_PREFIX"), subnet: os.Getenv("GROUPD_LAB_SUBNET"), dir: os.Getenv("GROUPD_LAB_DIR"),
		bin: os.Getenv("GROUPD_BIN"), profile: os.Getenv("GROUPD_PROFILE"), faults: os.Getenv("GROUPD_FAULTS"), repo: os.Getenv("GROUPD_LAB_REPO"),
	}
	if e.prefix == "" {
		e.prefix = "gd"
	}
	if e.subnet == "" {
		e.subnet = "10.77.0"
	}
	if e.dir == "" {
		e.dir = "/tmp/groupd-lab"
		if e.prefix != "gd" {
			e.dir += "-" + e.prefix
		}
	}
	if e.profile == "" {
		e.profile = "lan"
	}
	if e.faults != lab.FaultsAuto && e.faults != lab.FaultsNetem && e.faults != lab.FaultsIptables {
		return e, fmt.Errorf("GROUPD_FAULTS must be netem or iptables, not %q", e.faults)
	}
	if !filepath.IsAbs(e.dir) || filepath.Clean(e.dir) == "/" {
		return e, fmt.Errorf("GROUPD_LAB_DIR must be an absolute path other than /, not %q", e.dir)
	}
	return e, nil
}

func needRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("must run as root (network namespaces need CAP_NET_ADMIN); try: sudo " + strings.Join(os.Args, " "))
	}
	return nil
}

// open returns the lab that is up in the run dir.
func (c *cli) open(e env) (*lab.Lab, error) {
	if err := needRoot(); err != nil {
		return nil, err
	}
	return lab.Open(e.dir, c.labLog)
}

// labLog passes on the lab's warnings; what it did, the commands say
// themselves.
func (c *cli) labLog(format string, args ...any) {
	if s := fmt.Sprintf(format, args...); strings.HasPrefix(s, "warning: ") {
		fmt.Fprintf(os.Stderr, "%s: %s\n", c.prog, s)
	}
}

// config is the lab configuration for `up` from the environment.
func (c *cli) config(e env, n int) (lab.Config, error) {
	subnet, err := lab.ParseSubnet(e.subnet)
	if err != nil {
		return lab.Config{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return lab.Config{}, fmt.Errorf("finding this command for the recorder: %w", err)
	}
	return lab.Config{Nodes: n, Prefix: e.prefix, Subnet: subnet, Dir: e.dir, Profile: e.profile, Faults: e.faults,
		InheritEnv: true, Detach: true, Recorder: []string{self, "lab", "record"}}, nil
}

// groupdBin returns the binary to run: GROUPD_BIN, or ./cmd/groupd of the
// repository built into the run dir.
func (c *cli) groupdBin(e env) (string, error) {
	if e.bin != "" {
		if fi, err := os.Stat(e.bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("GROUPD_BIN=%s is not an executable", e.bin)
		}
		return e.bin, nil
	}
	if e.repo == "" {
		return "", errors.New("no groupd binary: set GROUPD_BIN, or GROUPD_LAB_REPO to the repository to build it from")
	}
	out := filepath.Join(e.dir, "groupd")
	c.say("building %s from %s", out, e.repo)
	cmd := exec.Command("go", "build", "-o", out, "./cmd/groupd")
	cmd.Dir = e.repo
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/groupd failed (set GROUPD_BIN to use another binary): %v\n%s", err, b)
	}
	return out, nil
}

// nodeArg reads a node number of a lab of n nodes.
func nodeArg(s string, n int) (int, error) {
	i, err := strconv.Atoi(s)
	if err != nil || i < 1 || i > n {
		return 0, fmt.Errorf("need a node number 1..%d, got '%s'", n, s)
	}
	return i, nil
}

// signalContext is cancelled by SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// ---------------------------------------------------------------- faults

// mechanism prints which mechanism the faults use.
func (c *cli) mechanism(l *lab.Lab, what string) error {
	m, err := l.Mechanism()
	if err != nil {
		return err
	}
	switch {
	case m == "tc netem" && what == "loss":
		c.say("faults: using tc netem (sch_netem available)")
	case m == "tc netem":
		c.say("faults: using iptables for cuts (tc netem is used only for loss/delay)")
	default:
		c.say("faults: using %s", m)
	}
	return nil
}

func (c *cli) partition(args []string) error {
	usage := usageError("usage: partition.sh '1,2|3,4,5'   (a symmetric partition)\n       partition.sh --oneway FROM TO (drop every packet from FROM to TO)")
	e, err := readEnv()
	if err != nil {
		return err
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		return usage
	}
	l, err := c.open(e)
	if err != nil {
		return err
	}
	if err := lab.HaveIptables(); err != nil {
		return err
	}
	if args[0] == "--oneway" {
		if len(args) != 3 {
			return usage
		}
		from, err1 := strconv.Atoi(args[1])
		to, err2 := strconv.Atoi(args[2])
		if err1 != nil || err2 != nil || from < 1 || to < 1 || from > l.N() || to > l.N() {
			return fmt.Errorf("--oneway wants two node numbers 1..%d, e.g. --oneway 1 3", l.N())
		}
		if err := c.mechanism(l, "cut"); err != nil {
			return err
		}
		if _, err := l.Cut(from, to); err != nil {
			return err
		}
		c.say("one-way cut: packets from node %d to node %d are dropped (%d -> %d still flows)", from, to, to, from)
		return nil
	}
	if len(args) != 1 {
		return usage
	}
	spec := args[0]
	if !strings.Contains(spec, "|") {
		return errors.New("a partition needs at least two sides separated by '|', e.g. '1,2|3,4,5'")
	}
	var sides [][]int
	named := map[int]bool{}
	var norm []string
	for _, s := range strings.Split(spec, "|") {
		side, err := lab.ParseIDs(s, l.N())
		if err != nil {
			return fmt.Errorf("bad side '%s' in '%s' (want node numbers 1..%d, e.g. 1,2 or 3-5)", s, spec, l.N())
		}
		for _, i := range side {
			if named[i] {
				return fmt.Errorf("node %d is on two sides of '%s'", i, spec)
			}
			named[i] = true
		}
		sides = append(sides, side)
		norm = append(norm, joinInts(side, ","))
	}
	if err := c.mechanism(l, "cut"); err != nil {
		return err
	}
	if _, err := l.Partition(sides...); err != nil {
		return err
	}
	c.say("partition: %s (nodes on different sides exchange no packets)", strings.Join(norm, " | "))
	var unnamed []int
	for i := 1; i <= l.N(); i++ {
		if !named[i] {
			unnamed = append(unnamed, i)
		}
	}
	if len(unnamed) > 0 {
		c.say("note: node(s) %s are on no side and still reach every node", joinInts(unnamed, " "))
	}
	return nil
}

func (c *cli) heal(args []string) error {
	partitionsOnly := false
	switch {
	case len(args) == 0:
	case len(args) == 1 && args[0] == "--partitions":
		partitionsOnly = true
	case len(args) == 1 && (args[0] == "-h" || args[0] == "--help"):
		fmt.Println("usage: heal.sh                 remove everything: partitions, one-way cuts, loss and delay\n       heal.sh --partitions    only partitions and one-way cuts (loss/delay stay)")
		return nil
	default:
		return usageError("usage: heal.sh [--partitions]")
	}
	e, err := readEnv()
	if err != nil {
		return err
	}
	l, err := c.open(e)
	if err != nil {
		return err
	}
	if err := c.mechanism(l, "heal"); err != nil {
		return err
	}
	if _, err := l.Heal(partitionsOnly); err != nil {
		return err
	}
	if partitionsOnly {
		c.say("healed partitions and one-way cuts on %d node(s) (loss/delay kept)", l.N())
	} else {
		c.say("healed: no partitions, cuts, loss or delay on %d node(s)", l.N())
	}
	return nil
}

func (c *cli) degrade(args []string) error {
	usage := usageError("usage: degrade.sh --loss P%% [--delay D [--jitter J]] [--nodes LIST]")
	var loss, delay, jitter, nodes string
	for len(args) > 0 {
		if len(args) < 2 {
			return usage
		}
		switch args[0] {
		case "--loss":
			loss = args[1]
		case "--delay":
			delay = args[1]
		case "--jitter":
			jitter = args[1]
		case "--nodes":
			nodes = args[1]
		default:
			return usage
		}
		args = args[2:]
	}
	if loss == "" && delay == "" {
		return errors.New("nothing to do: give --loss P% and/or --delay D")
	}
	var d lab.Degradation
	if loss != "" {
		p, err := strconv.ParseFloat(strings.TrimSuffix(loss, "%"), 64)
		if err != nil || p <= 0 || p > 100 {
			return errors.New("--loss wants a percentage in (0, 100], e.g. 20%")
		}
		d.LossPct = p
	}
	for _, v := range []struct {
		s    string
		to   *time.Duration
		flag string
	}{{delay, &d.Delay, "--delay"}, {jitter, &d.Jitter, "--jitter"}} {
		if v.s == "" {
			continue
		}
		x, err := time.ParseDuration(v.s)
		if err != nil || x <= 0 {
			return fmt.Errorf("%s wants a duration like 50ms", v.flag)
		}
		*v.to = x
	}
	if d.Jitter > 0 && d.Delay == 0 {
		return errors.New("--jitter needs --delay")
	}
	e, err := readEnv()
	if err != nil {
		return err
	}
	l, err := c.open(e)
	if err != nil {
		return err
	}
	if err := lab.HaveIptables(); err != nil {
		return err
	}
	who := lab.Span(1, l.N())
	if nodes != "" {
		if d.Nodes, err = lab.ParseIDs(nodes, l.N()); err != nil {
			return fmt.Errorf("bad --nodes '%s' (want e.g. 1,2 or 3-5 within 1..%d)", nodes, l.N())
		}
		who = d.Nodes
	}
	if err := c.mechanism(l, "loss"); err != nil {
		return err
	}
	_, notes, err := l.Degrade(d)
	for _, n := range notes {
		c.say("%s", n)
	}
	if err != nil {
		if d.LossPct == 0 {
			return exitError{code: 3}
		}
		return err
	}
	if d.LossPct > 0 {
		c.say("loss: %v%% on packets sent by node(s) %s", d.LossPct, joinInts(who, ","))
	}
	if len(notes) == 0 && d.Delay > 0 {
		j := ""
		if d.Jitter > 0 {
			j = " ± " + d.Jitter.String()
		}
		c.say("delay: %v%s on packets sent by node(s) %s", d.Delay, j, joinInts(who, ","))
	}
	return nil
}

func joinInts(ids []int, sep string) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, sep)
}
