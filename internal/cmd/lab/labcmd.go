package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/groupd/groupd/internal/lab"
)

const labUsage = `usage: lab.sh COMMAND [ARGS]
  up N                      create namespaces P-1..P-N on bridge P-br0 (or GROUPD_LAB_BRIDGE); idempotent;
                            a new run (after down) keeps the last history in RUN/runs/ (the newest 10)
  down                      stop everything and remove every P-* namespace, veth and the bridge
  status                    show the lab, the daemons and their views
  start [-- RUN-ARGS...]    start groupd in every namespace, and the recorder of their events
  stop                      stop all daemons (SIGTERM, SIGKILL after 3 s) and the recorder
  kill I                    kill -9 node I's daemon (recorded in the history)
  restart I                 stop node I and start it again with its data dir (recorded)
  exec I CMD...             run CMD inside node I's namespace
  wait [--timeout S] [LIST] wait until the nodes in LIST (default: all) are normal in one group
                            whose coordinator is the highest-ranked of them; exit 1 after S s (default 60)
  export DIR                write the history as DIR/events.ndjson and DIR/faults.ndjson (groupd timeline)
  ui [--listen ADDR]        serve a live view of every node, the lab's cuts and the past runs'
                            histories in a browser, on loopback (default 127.0.0.1 on a free port;
                            prints the URL), until Ctrl-C
environment: GROUPD_LAB_DIR (run dir, default /tmp/groupd-lab), GROUPD_BIN (groupd binary; default:
  built from this repository into the run dir), GROUPD_PROFILE (lan|fast, default lan),
  GROUPD_LAB_PREFIX (P, default gd), GROUPD_LAB_SUBNET (default 10.77.0), GROUPD_LAB_BRIDGE (default
  P-br0), GROUPD_FAULTS (netem|iptables)`

func (c *cli) lab(args []string) error {
	if len(args) == 0 {
		return usageError("%s", labUsage)
	}
	e, err := readEnv()
	if err != nil {
		return err
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "-h", "--help", "help":
		fmt.Println(labUsage)
		return nil
	case "up":
		return c.up(e, args)
	case "down":
		return c.down(e)
	case "status":
		return c.status(e)
	case "record":
		return c.record(args)
	case "wait":
		return c.wait(e, args)
	case "export":
		if len(args) != 1 {
			return usageError("usage: lab.sh export DIR")
		}
		return c.export(e, args[0])
	}
	l, err := c.open(e)
	if err != nil {
		return err
	}
	switch cmd {
	case "start":
		return c.start(e, l, args)
	case "ui":
		return c.ui(l, args)
	case "stop":
		n := 0
		for i := 1; i <= l.N(); i++ {
			if l.Alive(i) {
				n++
			}
		}
		err := errors.Join(l.Stop(lab.Span(1, l.N())...), l.StopRecording())
		c.say("stopped %d daemon(s)", n)
		return err
	case "kill", "restart":
		if len(args) != 1 {
			return usageError("usage: lab.sh %s I", cmd)
		}
		i, err := nodeArg(args[0], l.N())
		if err != nil {
			return err
		}
		if cmd == "kill" {
			if _, err := l.Kill(i); err != nil {
				return err
			}
			c.say("killed node %d (SIGKILL)", i)
			return nil
		}
		if _, err := l.Restart(i, false); err != nil {
			return fmt.Errorf("node %d failed to restart: %w", i, err)
		}
		c.say("restarted node %d", i)
		return nil
	case "exec":
		if len(args) < 2 {
			return usageError("usage: lab.sh exec I CMD...")
		}
		i, err := nodeArg(args[0], l.N())
		if err != nil {
			return err
		}
		x, err := l.Command(i, args[1], args[2:]...)
		if err != nil {
			return err
		}
		path, err := exec.LookPath(x.Path)
		if err != nil {
			return err
		}
		return syscall.Exec(path, x.Args, os.Environ())
	}
	return usageError("%s", labUsage)
}

func (c *cli) start(e lab.Env, l *lab.Lab, args []string) error {
	cfg := l.Config()
	runArgs := cfg.Args
	if len(args) > 0 {
		if args[0] != "--" {
			return errors.New("start: extra groupd run arguments go after --, e.g. lab.sh start -- --log-level debug")
		}
		runArgs = args[1:]
	}
	bin, err := c.groupdBin(e)
	if err != nil {
		return err
	}
	if err := l.Configure(bin, e.Profile, runArgs); err != nil {
		return err
	}
	if _, err := l.Start(lab.Span(1, l.N())...); err != nil {
		return fmt.Errorf("some nodes failed to start: %w", err)
	}
	c.say("started %d node(s) (profile %s); logs and data in %s/nodeI/, events in %s/%s", l.N(), e.Profile, e.Dir, e.Dir, lab.HistoryFile)
	return nil
}

// record is the background recorder that start launches: it follows every
// node's events into the history until SIGTERM.
func (c *cli) record(args []string) error {
	if len(args) != 1 {
		return usageError("usage: lab record RUN-DIR")
	}
	l, err := lab.Open(args[0], c.labLog)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	return l.Record(ctx)
}

func (c *cli) wait(e lab.Env, args []string) error {
	timeout := 60 * time.Second
	for len(args) > 0 && strings.HasPrefix(args[0], "--timeout") {
		v, ok := strings.CutPrefix(args[0], "--timeout=")
		if !ok {
			if len(args) < 2 {
				return errors.New("wait: --timeout wants whole seconds")
			}
			v, args = args[1], args[1:]
		}
		s, err := strconv.Atoi(v)
		if err != nil || s < 0 {
			return errors.New("wait: --timeout wants whole seconds")
		}
		timeout = time.Duration(s) * time.Second
		args = args[1:]
	}
	l, err := c.open(e)
	if err != nil {
		return err
	}
	ids := lab.Span(1, l.N())
	if len(args) > 0 {
		if ids, err = lab.ParseIDs(args[0], l.N()); err != nil {
			return fmt.Errorf("wait: bad node list '%s' (want e.g. 1,2,4-6 within 1..%d)", args[0], l.N())
		}
	}
	start := time.Now()
	sts, _, err := l.WaitFor("wait", ids, timeout, lab.Converged(ids))
	if err != nil {
		c.warn("nodes %s did not converge within %v; their views:\n%s", joinInts(ids, ","), timeout, lab.FormatViews(ids, sts, nil))
		return exitError{code: 1}
	}
	s := sts[ids[0]]
	c.say("converged: nodes %s in group %s coordinator %d after %.1fs", joinInts(ids, ","), s.Group, s.Coordinator, time.Since(start).Seconds())
	return nil
}
