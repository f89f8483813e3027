package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/groupd/groupd/internal/history"
	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/wire"
)

const labUsage = `usage: lab.sh COMMAND [ARGS]
  up N                      create namespaces P-1..P-N on bridge P-br0; idempotent
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
environment: GROUPD_LAB_DIR (run dir, default /tmp/groupd-lab), GROUPD_BIN (groupd binary; default:
  built from this repository into the run dir), GROUPD_PROFILE (lan|fast, default lan),
  GROUPD_LAB_PREFIX (P, default gd), GROUPD_LAB_SUBNET (default 10.77.0), GROUPD_FAULTS (netem|iptables)`

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

func (c *cli) up(e env, args []string) error {
	if len(args) != 1 {
		return usageError("usage: lab.sh up N")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 || n > lab.MaxNodes {
		return fmt.Errorf("up needs a node count 1..%d, got '%s'", lab.MaxNodes, args[0])
	}
	if err := needRoot(); err != nil {
		return err
	}
	cfg, err := c.config(e, n)
	if err != nil {
		return err
	}
	// Keep what start chose (binary, arguments): lab.sh up K grows a
	// running lab.
	if old, err := lab.Open(e.dir, nil); err == nil {
		oc := old.Config()
		cfg.Bin, cfg.Args = oc.Bin, oc.Args
	}
	cfg.Logf = func(string, ...any) {}
	l, err := lab.Up(context.Background(), cfg)
	if err != nil {
		return err
	}
	c.hostFirewallCheck(l.Bridge())
	c.say("up: %d node(s) %s..%s on %s, addresses %v..%v/%d, run dir %s", n, l.NS(1), l.NS(n), l.Bridge(), l.Addr(1), l.Addr(n), cfg.Subnet.Bits(), e.dir)
	return nil
}

// hostFirewallCheck warns when bridged lab traffic would meet a DROP
// policy in the host's FORWARD chain (br_netfilter and docker, typically):
// the lab turns netfilter off on its bridge, but the host-wide setting
// wins. The lab never changes the host's firewall itself.
func (c *cli) hostFirewallCheck(br string) {
	b, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables")
	if err != nil || strings.TrimSpace(string(b)) != "1" {
		return
	}
	out, err := exec.Command("iptables", "-w", "-S", "FORWARD").Output()
	if err == nil && strings.Contains(string(out), "-P FORWARD DROP") {
		c.warn("the host's FORWARD policy is DROP and bridge-nf-call-iptables=1: packets between lab nodes may be dropped; allow them with: iptables -I FORWARD -i %s -o %s -j ACCEPT", br, br)
	}
}

func (c *cli) down(e env) error {
	if err := needRoot(); err != nil {
		return err
	}
	logf := c.labLog
	l, err := lab.Open(e.dir, logf)
	n := 0
	if err == nil {
		n = l.N()
		err = l.Down()
	} else {
		err = lab.Remove(e.dir, e.prefix, logf)
	}
	if err != nil {
		return err
	}
	c.say("down: removed %d namespace(s) with their veths and bridge %s-br0 (logs kept in %s)", n, e.prefix, e.dir)
	return nil
}

func (c *cli) start(e env, l *lab.Lab, args []string) error {
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
	if err := l.Configure(bin, e.profile, runArgs); err != nil {
		return err
	}
	if _, err := l.Start(lab.Span(1, l.N())...); err != nil {
		return fmt.Errorf("some nodes failed to start: %w", err)
	}
	c.say("started %d node(s) (profile %s); logs and data in %s/nodeI/, events in %s", l.N(), e.profile, e.dir, filepath.Join(e.dir, lab.HistoryFile))
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

func (c *cli) wait(e env, args []string) error {
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

func (c *cli) status(e env) error {
	l, err := c.open(e)
	if errors.Is(err, fs.ErrNotExist) || (err != nil && strings.Contains(err.Error(), "no lab is up")) {
		fmt.Printf("lab: not up (run dir %s)\n", e.dir)
		return nil
	}
	if err != nil {
		return err
	}
	cfg := l.Config()
	fmt.Printf("lab: %d node(s), run dir %s, binary %s, profile %s\n", l.N(), e.dir, cfg.Bin, cfg.Profile)
	br := l.Bridge()
	if b, err := os.ReadFile("/sys/class/net/" + br + "/bridge/multicast_snooping"); err == nil {
		state, _ := os.ReadFile("/sys/class/net/" + br + "/operstate")
		fmt.Printf("bridge %s: %s, multicast snooping %s\n", br, strings.TrimSpace(string(state)), strings.TrimSpace(string(b)))
	} else {
		fmt.Printf("bridge %s: missing (run lab.sh up %d)\n", br, l.N())
	}
	if m, err := l.Mechanism(); err == nil {
		fmt.Printf("faults: loss/delay with %s; partitions and cuts with iptables\n", m)
	}
	ids := lab.Span(1, l.N())
	sts, _ := l.Views(ids)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "node\tns\taddress\tdaemon\tfaults\tview (state group coordinator members)")
	for _, i := range ids {
		daemon, view := "stopped", "-"
		if pid, err := l.PID(i); err == nil {
			daemon = "pid " + strconv.Itoa(pid)
			view = "down"
			if s, ok := sts[i]; ok {
				view = fmt.Sprintf("%s %s %d %s", s.State, s.Group, s.Coordinator, joinIDs(s.Members))
			}
		}
		rules := "?"
		if n, err := l.FaultRules(i); err == nil {
			rules = strconv.Itoa(n)
		}
		fmt.Fprintf(w, "%d\t%s\t%v/%d\t%s\t%s\t%s\n", i, l.NS(i), l.Addr(i), cfg.Subnet.Bits(), daemon, rules, view)
	}
	return w.Flush()
}

// export writes the history as the two files `groupd timeline` reads.
func (c *cli) export(e env, dir string) error {
	h, err := lab.ReadHistory(e.dir)
	if err != nil {
		return err
	}
	if err := writeHistory(h, dir, time.Time{}); err != nil {
		return err
	}
	c.say("wrote %s and %s", filepath.Join(dir, "events.ndjson"), filepath.Join(dir, "faults.ndjson"))
	return nil
}

// writeHistory writes h's events before until (zero: all) to
// dir/events.ndjson and its faults (the marks `groupd timeline --faults`
// draws: not the lab's starts, stops and checks) to dir/faults.ndjson.
func writeHistory(h *history.History, dir string, until time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ev, err := os.Create(filepath.Join(dir, "events.ndjson"))
	if err != nil {
		return err
	}
	err = h.WriteEvents(ev, until)
	if cerr := ev.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, m := range h.Marks() {
		switch m.Kind {
		case history.KindStart, history.KindStop, history.KindCheck, history.KindEnd, history.KindWipe:
			continue
		}
		if !until.IsZero() && m.Time.After(until) {
			continue
		}
		fmt.Fprintf(&b, `{"time":%q,"kind":%q,"spec":%q}`+"\n", m.Time.UTC().Format(time.RFC3339Nano), m.Kind, m.Spec)
	}
	return os.WriteFile(filepath.Join(dir, "faults.ndjson"), []byte(b.String()), 0o644)
}

func joinIDs(ids []wire.NodeID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(uint64(id), 10)
	}
	return strings.Join(s, ",")
}
