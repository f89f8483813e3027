package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/internal/lab"
)

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
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		return usage
	}
	l, err := c.openFaults()
	if err != nil {
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
	l, err := c.openFaults()
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
	l, err := c.openFaults()
	if err != nil {
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
