package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/groupd/groupd/internal/lab"
)

// up creates the lab (lab.sh up N), or repairs it.
func (c *cli) up(e lab.Env, args []string) error {
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
	if old, err := lab.Open(e.Dir, nil); err == nil {
		oc := old.Config()
		cfg.Bin, cfg.Args = oc.Bin, oc.Args
	}
	// A new run (no lab is up): the previous one's history is kept for
	// lab.sh ui.
	if id, err := lab.ArchiveRun(e.Dir); err != nil {
		return err
	} else if id != "" {
		c.say("kept the previous run's history as %s/%s/%s/%s (the newest %d are kept)", e.Dir, lab.PastRunsDir, id, lab.HistoryFile, lab.MaxPastRuns)
	}
	cfg.Logf = func(string, ...any) {}
	l, err := lab.Up(context.Background(), cfg)
	if err != nil {
		return err
	}
	c.hostFirewallCheck(l.Bridge())
	c.say("up: %d node(s) %s..%s on %s, addresses %v..%v/%d, run dir %s", n, l.NS(1), l.NS(n), l.Bridge(), l.Addr(1), l.Addr(n), cfg.Subnet.Bits(), e.Dir)
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

func (c *cli) down(e lab.Env) error {
	if err := needRoot(); err != nil {
		return err
	}
	logf := c.labLog
	l, err := lab.Open(e.Dir, logf)
	n, br := 0, e.Bridge
	if br == "" {
		br = e.Prefix + "-br0"
	}
	if err == nil {
		n, br = l.N(), l.Bridge()
		err = l.Down()
	} else {
		err = lab.Remove(e.Dir, e.Prefix, e.Bridge, logf)
	}
	if err != nil {
		return err
	}
	c.say("down: removed %d namespace(s) with their veths and bridge %s (logs kept in %s)", n, br, e.Dir)
	return nil
}
