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
// GROUPD_LAB_DIR, GROUPD_LAB_PREFIX, GROUPD_LAB_SUBNET, GROUPD_LAB_BRIDGE, GROUPD_BIN,
// GROUPD_PROFILE, GROUPD_FAULTS; GROUPD_LAB_REPO is the repository to build
// groupd from (the scripts set it). Exit status: 0 done, 1 failed, 2 bad
// usage, 3 (degrade) nothing could be applied.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

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
		// The lab's errors start with "lab: "; the script's name is enough.
		fmt.Fprintf(os.Stderr, "%s: %s\n", c.prog, strings.TrimPrefix(err.Error(), "lab: "))
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

// readEnv reads the lab's environment (scripts/netem/README.md).
func readEnv() (lab.Env, error) { return lab.FromEnv(lab.DefaultPrefix, lab.DefaultSubnet) }

func needRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("must run as root (network namespaces need CAP_NET_ADMIN); try: sudo " + strings.Join(os.Args, " "))
	}
	return nil
}

// open returns the lab that is up in the run dir.
func (c *cli) open(e lab.Env) (*lab.Lab, error) {
	if err := needRoot(); err != nil {
		return nil, err
	}
	return lab.Open(e.Dir, c.labLog)
}

// labLog passes on the lab's warnings; what it did, the commands say
// themselves.
func (c *cli) labLog(format string, args ...any) {
	if s := fmt.Sprintf(format, args...); strings.HasPrefix(s, "warning: ") {
		fmt.Fprintf(os.Stderr, "%s: %s\n", c.prog, s)
	}
}

// openFaults returns the lab that is up, for a fault command: iptables
// must be there.
func (c *cli) openFaults() (*lab.Lab, error) {
	e, err := readEnv()
	if err != nil {
		return nil, err
	}
	if err := lab.HaveIptables(); err != nil {
		return nil, err
	}
	return c.open(e)
}

// config is the lab configuration for `up` from the environment: its
// daemons outlive the command, recorded by a background `lab record`.
func (c *cli) config(e lab.Env, n int) (lab.Config, error) {
	cfg, err := e.Config(n)
	if err != nil {
		return cfg, err
	}
	self, err := os.Executable()
	if err != nil {
		return cfg, fmt.Errorf("finding this command for the recorder: %w", err)
	}
	cfg.Bin, cfg.Detach, cfg.Recorder = "", true, []string{self, "lab", "record"}
	return cfg, nil
}

// groupdBin returns the binary to run: GROUPD_BIN, or ./cmd/groupd of the
// repository built into the run dir.
func (c *cli) groupdBin(e lab.Env) (string, error) {
	if e.Bin == "" {
		c.say("building %s from %s", filepath.Join(e.Dir, "groupd"), e.Repo)
	}
	return e.GroupdBin(filepath.Join(e.Dir, "groupd"))
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
