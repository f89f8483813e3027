package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/schema"
)

// Window is when a fault (or a kill) was applied: from just before it
// started to when it was in place everywhere. Durations measured from
// Start err on the long side; check points go after End, when the network
// is in the state the check assumes.
type Window struct{ Start, End time.Time }

// Degradation is loss (and delay, where the kernel can) on the packets
// some nodes send.
type Degradation struct {
	// LossPct is the share of packets dropped, in (0, 100]; 0 for none.
	LossPct float64 `json:"loss_pct,omitempty"`
	// Delay and Jitter need sch_netem; without it they are not applied
	// (and Degrade says so): tbf and htb shape rates, they do not delay.
	Delay  time.Duration `json:"delay,omitempty"`
	Jitter time.Duration `json:"jitter,omitempty"`
	// Nodes are the senders; nil for every node.
	Nodes []int `json:"nodes,omitempty"`
}

// faultState is the faults in place, kept in lab.json: every command
// rewrites a node's chains from it, so a fault is applied the same way
// whoever applies it.
type faultState struct {
	Sides   [][]int      `json:"partition,omitempty"` // a symmetric partition
	Cuts    [][2]int     `json:"cuts,omitempty"`      // one-way cuts: from, to
	Degrade *Degradation `json:"degrade,omitempty"`
	NetemOn []int        `json:"netem_on,omitempty"` // nodes with a netem qdisc on eth0
}

// trim drops what concerns nodes above n.
func (f faultState) trim(n int) faultState {
	out := faultState{Degrade: f.Degrade}
	for _, side := range f.Sides {
		var s []int
		for _, i := range side {
			if i <= n {
				s = append(s, i)
			}
		}
		if len(s) > 0 {
			out.Sides = append(out.Sides, s)
		}
	}
	if len(out.Sides) < 2 {
		out.Sides = nil
	}
	for _, c := range f.Cuts {
		if c[0] <= n && c[1] <= n {
			out.Cuts = append(out.Cuts, c)
		}
	}
	for _, i := range f.NetemOn {
		if i <= n {
			out.NetemOn = append(out.NetemOn, i)
		}
	}
	return out
}

// HaveIptables returns nil when iptables, iptables-restore and
// ip6tables-restore (IPv6 labs; the same package) are there, else what to
// install.
func HaveIptables() error {
	for _, c := range []string{"iptables", "iptables-restore", "ip6tables-restore"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("lab: %s is missing: install it with 'apt-get install -y iptables' (partitions, cuts and the loss fallback need it)", c)
		}
	}
	return nil
}

// Mechanism says how loss and delay are applied: "tc netem" or "iptables
// (no sch_netem in this kernel)" (or "iptables (GROUPD_FAULTS=iptables)").
// Partitions and one-way cuts are always iptables. The first call probes
// the kernel (a netem qdisc on a veth in a throwaway namespace) and the
// answer is kept in lab.json.
func (l *Lab) Mechanism() (string, error) {
	ok, err := l.netemOK()
	switch {
	case err != nil:
		return "", err
	case ok:
		return "tc netem", nil
	case l.cfg.Faults == FaultsIptables:
		return "iptables (GROUPD_FAULTS=iptables)", nil
	}
	return "iptables (no sch_netem in this kernel)", nil
}

// netemOK says whether loss and delay go through netem.
func (l *Lab) netemOK() (bool, error) {
	if l.cfg.Faults == FaultsIptables {
		return false, nil
	}
	l.mu.Lock()
	known := l.netem
	l.mu.Unlock()
	if known == nil {
		ok := probeNetem(l.cfg.Prefix)
		l.mu.Lock()
		l.netem = &ok
		l.mu.Unlock()
		if err := l.save(); err != nil {
			return false, err
		}
		known = &ok
	}
	if !*known && l.cfg.Faults == FaultsNetem {
		return false, errors.New("lab: GROUPD_FAULTS=netem, but this kernel has no sch_netem")
	}
	return *known, nil
}

// probeNetem adds a netem qdisc to a veth inside a throwaway namespace.
func probeNetem(prefix string) bool {
	ns := prefix + "-probe-" + strconv.Itoa(os.Getpid())
	ctx := context.Background()
	if ipBatch(ctx, "", false, []string{"netns add " + ns}) != nil {
		return false
	}
	defer ipBatch(ctx, "", true, []string{"netns del " + ns})
	if ipBatch(ctx, ns, false, []string{"link add p0 type veth peer name p1", "link set p0 up"}) != nil {
		return false
	}
	return exec.Command("tc", "-n", ns, "qdisc", "add", "dev", "p0", "root", "netem", "delay", "1ms").Run() == nil
}

// rules computes node i's fault chains from the faults in place: DROP
// rules matching the source address on INPUT of the receiver. Matching the
// source on INPUT catches multicast from a cut peer as well as unicast,
// and the drop is silent, as on a broken link (an OUTPUT rule would give
// the sender EPERM).
func (l *Lab) rules(f faultState, i int, netem bool, plan addrPlan) map[string][]string {
	p := l.cfg.Prefix
	out := map[string][]string{}
	for _, c := range chains(p) {
		out[c] = nil
	}
	addr := func(j int) string { return hostAddr(plan.subnet, j).String() + plan.host }
	drop := func(j int) string { return "-s " + addr(j) + " -j DROP" }
	if l.cfg.NoMulticast {
		out[chain(p, "MCAST")] = []string{"-p udp -d " + plan.multicast + " -j DROP"}
	}
	for k, side := range f.Sides {
		if !slices.Contains(side, i) {
			continue
		}
		for m, other := range f.Sides {
			if m != k {
				for _, j := range other {
					out[chain(p, "PART")] = append(out[chain(p, "PART")], drop(j))
				}
			}
		}
	}
	for _, c := range f.Cuts {
		if c[1] == i {
			out[chain(p, "CUT")] = append(out[chain(p, "CUT")], drop(c[0]))
		}
	}
	if d := f.Degrade; d != nil && d.LossPct > 0 && !netem {
		stat := fmt.Sprintf("-m statistic --mode random --probability %.4f -j DROP", d.LossPct/100)
		if d.Nodes == nil {
			out[chain(p, "LOSS")] = []string{"-i eth0 " + stat}
		}
		for _, j := range d.Nodes {
			if j != i {
				out[chain(p, "LOSS")] = append(out[chain(p, "LOSS")], "-i eth0 -s "+addr(j)+" "+stat)
			}
		}
	}
	return out
}

// applyChains rewrites the fault chains of nodes ids from the faults in
// place, one iptables-restore per namespace, all at once (a fault applied
// one namespace after another would reach the last node of a big lab a
// second after the first). full replaces the namespace's whole filter
// table (the lab's own: set up at Up) including the INPUT jumps; otherwise
// only the chains are flushed and refilled.
func (l *Lab) applyChains(ctx context.Context, ids []int, full bool) error {
	l.mu.Lock()
	f := l.faults
	l.mu.Unlock()
	netem := false
	if f.Degrade != nil {
		var err error
		if netem, err = l.netemOK(); err != nil {
			return err
		}
	}
	names := chains(l.cfg.Prefix)
	return eachNode(ids, func(i int) error {
		for _, plan := range l.cfg.plans() {
			if err := l.restoreChains(ctx, i, f, netem, plan, names, full); err != nil {
				return err
			}
		}
		return nil
	})
}

// restoreChains rewrites node i's fault chains of one address family.
func (l *Lab) restoreChains(ctx context.Context, i int, f faultState, netem bool, plan addrPlan, names []string, full bool) error {
	{
		var b strings.Builder
		b.WriteString("*filter\n")
		if full {
			b.WriteString(":INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n")
		}
		for _, c := range names {
			b.WriteString(":" + c + " - [0:0]\n") // declaring a chain flushes it
		}
		if full {
			for _, c := range names {
				b.WriteString("-A INPUT -j " + c + "\n")
			}
		}
		rs := l.rules(f, i, netem, plan)
		for _, c := range names {
			for _, r := range rs[c] {
				b.WriteString("-A " + c + " " + r + "\n")
			}
		}
		b.WriteString("COMMIT\n")
		args := []string{"-w"}
		if !full {
			args = append(args, "--noflush")
		}
		_, err := l.runIn(ctx, i, b.String(), plan.restore, args...)
		return err
	}
}

// apply changes the faults in place with f and rewrites the chains of
// nodes ids from them.
func (l *Lab) apply(ids []int, f func(*faultState)) (Window, error) {
	if err := HaveIptables(); err != nil {
		return Window{}, err
	}
	l.mu.Lock()
	f(&l.faults)
	l.mu.Unlock()
	w := Window{Start: time.Now()}
	err := l.applyChains(context.Background(), ids, false)
	w.End = time.Now()
	if err != nil {
		return w, fmt.Errorf("lab: a fault was not applied everywhere (heal to undo): %w", err)
	}
	return w, l.save()
}

// applied marks a fault applied in w.
func (l *Lab) applied(kind, spec string, w Window) (Window, error) {
	if _, err := l.Mark(kind, spec, "", w.Start); err != nil {
		return w, err
	}
	l.logf("%s %s (applied in %.0f ms)", kind, spec, float64(w.End.Sub(w.Start).Microseconds())/1000)
	return w, nil
}

// Partition cuts the lab into sides: nodes on different sides exchange no
// packets at all (unicast, gossip, multicast). It replaces the previous
// partition; nodes on no side keep reaching everyone.
func (l *Lab) Partition(sides ...[]int) (Window, error) {
	seen := map[int]bool{}
	var spec []string
	for _, side := range sides {
		if len(side) == 0 {
			return Window{}, errors.New("lab: a partition side is empty")
		}
		for _, i := range side {
			if _, err := l.node(i); err != nil {
				return Window{}, err
			}
			if seen[i] {
				return Window{}, fmt.Errorf("lab: node %d is on two sides", i)
			}
			seen[i] = true
		}
		spec = append(spec, joinInts(side))
	}
	if len(sides) < 2 {
		return Window{}, errors.New("lab: a partition needs at least two sides")
	}
	w, err := l.apply(l.all(), func(f *faultState) {
		f.Sides = make([][]int, len(sides))
		for k, s := range sides {
			f.Sides[k] = slices.Clone(s)
		}
	})
	if err != nil {
		return w, err
	}
	return l.applied(schema.KindPartition, strings.Join(spec, "|"), w)
}

// Cut drops every packet from node from to each node of to; the reverse
// direction still flows. Cuts add up until a heal.
func (l *Lab) Cut(from int, to ...int) (Window, error) {
	if len(to) == 0 {
		return Window{}, errors.New("lab: a one-way cut needs a receiver")
	}
	pairs := make([][2]int, len(to))
	for k, i := range to {
		pairs[k] = [2]int{from, i}
	}
	return l.Cuts(pairs...)
}

// Cuts applies several one-way cuts (from, to) at once: each receiver's
// chains are rewritten once, all receivers in parallel, and the history
// gets one mark ("1->5,2->5"). Cut is Cuts from one sender; a node that
// hears nobody is Cuts from every other node to it.
func (l *Lab) Cuts(pairs ...[2]int) (Window, error) {
	if len(pairs) == 0 {
		return Window{}, errors.New("lab: a one-way cut needs a sender and a receiver")
	}
	var spec []string
	var to []int
	for _, c := range pairs {
		for _, i := range c {
			if _, err := l.node(i); err != nil {
				return Window{}, err
			}
		}
		if c[0] == c[1] {
			return Window{}, errors.New("lab: a one-way cut needs two different nodes")
		}
		spec = append(spec, fmt.Sprintf("%d->%d", c[0], c[1]))
		if !slices.Contains(to, c[1]) {
			to = append(to, c[1])
		}
	}
	w, err := l.apply(to, func(f *faultState) {
		for _, c := range pairs {
			if !slices.Contains(f.Cuts, c) {
				f.Cuts = append(f.Cuts, c)
			}
		}
	})
	if err != nil {
		return w, err
	}
	return l.applied(schema.KindOneway, strings.Join(spec, ","), w)
}

// Degrade replaces the loss and delay in place by d. With sch_netem, each
// sender's eth0 gets a netem qdisc; without it, loss is an iptables
// statistic match on INPUT of every receiver, for the selected senders,
// and delay is not applied: the notes say what was not, and the error is
// set when nothing was.
func (l *Lab) Degrade(d Degradation) (Window, []string, error) {
	if d.LossPct < 0 || d.LossPct > 100 || d.Delay < 0 || d.Jitter < 0 || (d.Jitter > 0 && d.Delay == 0) {
		return Window{}, nil, fmt.Errorf("lab: degradation %+v: want loss in [0, 100] %%, jitter only with a delay", d)
	}
	if d.LossPct == 0 && d.Delay == 0 {
		return Window{}, nil, errors.New("lab: nothing to degrade: give a loss or a delay")
	}
	for _, i := range d.Nodes {
		if _, err := l.node(i); err != nil {
			return Window{}, nil, err
		}
	}
	netem, err := l.netemOK()
	if err != nil {
		return Window{}, nil, err
	}
	from := ""
	if d.Nodes != nil {
		from = " from " + joinInts(d.Nodes)
	}
	var notes []string
	if !netem && d.Delay > 0 {
		notes = append(notes, "delay: unsupported without sch_netem; not applied")
		d.Delay, d.Jitter = 0, 0
		if d.LossPct == 0 {
			return Window{}, notes, errors.New("lab: nothing could be applied (delay needs sch_netem)")
		}
	}
	var w Window
	if netem {
		w.Start = time.Now()
		err = l.setNetem(d)
		l.mu.Lock()
		l.faults.Degrade = &d
		l.mu.Unlock()
		w.End = time.Now()
		err = errors.Join(err, l.save())
	} else {
		w, err = l.apply(l.all(), func(f *faultState) { f.Degrade = &d })
	}
	if err != nil {
		return w, notes, err
	}
	if d.LossPct > 0 {
		if _, err := l.applied(schema.KindLoss, strconv.FormatFloat(d.LossPct, 'f', -1, 64)+"%"+from, w); err != nil {
			return w, notes, err
		}
	}
	if d.Delay > 0 {
		spec := d.Delay.String()
		if d.Jitter > 0 {
			spec += "±" + d.Jitter.String()
		}
		if _, err := l.applied(schema.KindDelay, spec+from, w); err != nil {
			return w, notes, err
		}
	}
	return w, notes, nil
}

// setNetem puts d on the selected senders' eth0 and takes netem off the
// others.
func (l *Lab) setNetem(d Degradation) error {
	var args []string
	if d.LossPct > 0 {
		args = append(args, "loss", strconv.FormatFloat(d.LossPct, 'f', -1, 64)+"%")
	}
	// tc reads "50000us"; Go would write "50ms", or "50µs", which tc
	// does not know.
	us := func(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) + "us" }
	if d.Delay > 0 {
		args = append(args, "delay", us(d.Delay))
		if d.Jitter > 0 {
			args = append(args, us(d.Jitter))
		}
	}
	l.mu.Lock()
	had := slices.Clone(l.faults.NetemOn)
	l.mu.Unlock()
	var on []int
	err := eachNode(l.all(), func(i int) error {
		switch {
		case d.Nodes == nil || slices.Contains(d.Nodes, i):
			_, err := l.runIn(context.Background(), i, "", "tc", append([]string{"qdisc", "replace", "dev", "eth0", "root", "netem"}, args...)...)
			return err
		case slices.Contains(had, i):
			_, err := l.runIn(context.Background(), i, "", "tc", "qdisc", "del", "dev", "eth0", "root")
			return err
		}
		return nil
	})
	for i := 1; i <= l.cfg.Nodes; i++ {
		if d.Nodes == nil || slices.Contains(d.Nodes, i) {
			on = append(on, i)
		}
	}
	l.mu.Lock()
	l.faults.NetemOn = on
	l.mu.Unlock()
	return err
}

// Heal removes every partition, one-way cut, loss and delay (only the
// partitions and cuts with partitionsOnly), on every node at once; the
// network is connected from the returned End on.
func (l *Lab) Heal(partitionsOnly bool) (Window, error) {
	spec := "all"
	if partitionsOnly {
		spec = "partitions"
	}
	var had []int
	w, err := l.apply(l.all(), func(f *faultState) {
		f.Sides, f.Cuts = nil, nil
		if !partitionsOnly {
			had = f.NetemOn
			f.Degrade, f.NetemOn = nil, nil
		}
	})
	if err == nil && len(had) > 0 {
		err = eachNode(had, func(i int) error {
			_, err := l.runIn(context.Background(), i, "", "tc", "qdisc", "del", "dev", "eth0", "root")
			return err
		})
		w.End = time.Now()
	}
	if err != nil {
		return w, fmt.Errorf("lab: heal: %w", err)
	}
	return l.applied(schema.KindHeal, spec, w)
}

// FaultRules counts the rules in node i's fault chains (lab.sh status),
// in every address family of the lab.
func (l *Lab) FaultRules(i int) (int, error) {
	n := 0
	for _, plan := range l.cfg.plans() {
		out, err := l.runIn(context.Background(), i, "", strings.TrimSuffix(plan.restore, "-restore"), "-w", "-S")
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(out, "\n") {
			for _, k := range faultKinds {
				if strings.HasPrefix(line, "-A "+chain(l.cfg.Prefix, k)+" ") {
					n++
				}
			}
		}
	}
	return n, nil
}

func joinInts(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}
