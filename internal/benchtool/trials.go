package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	netlab "github.com/groupd/groupd/internal/lab"
)

// Result is one trial, lab or simulator. Times are seconds.
type Result struct {
	Kind   string `json:"kind"`   // failover | heal | converge
	Impl   string `json:"impl"`   // groupd-lan, groupd-fast, groupd-ring, keepalived, sim-lan, ...
	Source string `json:"source"` // lab | sim
	N      int    `json:"n"`
	Trial  int    `json:"trial"`

	Seconds float64 `json:"seconds"` // the figure: failover, heal or convergence time
	// Failover: the first reaction of any survivor (its first event after
	// the kill). Heal: the time the two sides took to form their own groups
	// after the partition.
	DetectS  float64 `json:"detect_s,omitempty"`
	SplitS   float64 `json:"split_s,omitempty"`
	FromCmdS float64 `json:"from_cmd_start_s,omitempty"` // heal: from the start of heal.sh
	CmdS     float64 `json:"cmd_s,omitempty"`            // heal: how long heal.sh ran
	PartCmdS float64 `json:"partition_cmd_s,omitempty"`  // heal: how long partition.sh ran
	PhaseS   float64 `json:"phase_s"`                    // random wait before the fault

	Victim      int    `json:"victim,omitempty"`
	Coordinator int    `json:"coordinator,omitempty"` // the new (or final) coordinator
	Highest     bool   `json:"highest"`               // it is the highest-ranked survivor
	Group       string `json:"group,omitempty"`

	// Messages and bytes sent by type, summed over the nodes, between just
	// before the fault (the heal) and the moment the condition held.
	Msgs    map[string]float64 `json:"msgs,omitempty"`
	Bytes   map[string]float64 `json:"bytes,omitempty"`
	WindowS float64            `json:"window_s,omitempty"` // the span those counts cover

	FaultTime time.Time  `json:"fault_time,omitzero"`
	Load      [3]float64 `json:"load"`
	WallS     float64    `json:"wall_s,omitempty"` // simulator: wall-clock time of the run
	Events    uint64     `json:"events,omitempty"` // simulator: events processed
	Note      string     `json:"note,omitempty"`
}

// ---- failover ----------------------------------------------------------------

func cmdFailover(args []string) error {
	fs := flag.NewFlagSet("failover", flag.ExitOnError)
	run := fs.String("run", "/tmp/groupd-lab", "lab run dir")
	n := fs.Int("nodes", 0, "node count (nodes 1..N)")
	victim := fs.Int("victim", 0, "node to kill (default: N, the coordinator)")
	impl := fs.String("impl", "groupd-lan", "label of what runs")
	trial := fs.Int("trial", 0, "trial number")
	phase := fs.Duration("phase", time.Second, "random wait in [0, phase) before the kill")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this")
	fs.Parse(args)
	if *n < 2 {
		return errors.New("--nodes must be >= 2")
	}
	if *victim == 0 {
		*victim = *n
	}
	l := lab{run: *run}
	all := rangeInts(1, *n)
	var survivors []int
	for _, i := range all {
		if i != *victim {
			survivors = append(survivors, i)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, t, err := l.watchConverged(ctx, all, time.Now().Add(*timeout))
	if err != nil {
		return fmt.Errorf("before the kill: %w", err)
	}
	pid, err := l.pid(*victim)
	if err != nil {
		return fmt.Errorf("victim %d: %w", *victim, err)
	}
	ph := phaseSleep(*phase)
	t.drain(ch)
	before, err := l.scrapeAll(survivors)
	if err != nil {
		return err
	}
	tBefore := time.Now()
	tKill := time.Now()
	t.setMark(tKill)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	if err := t.waitFor(ch, func() bool { return t.failedOver(survivors) }, tKill.Add(*timeout)); err != nil {
		return fmt.Errorf("survivors did not fail over: %w", err)
	}
	after, err := l.scrapeAll(survivors)
	if err != nil {
		return err
	}
	tAfter := time.Now()
	done := t.doneAt(survivors)
	st := t.views[survivors[0]].st
	r := Result{
		Kind: "failover", Impl: *impl, Source: "lab", N: *n, Trial: *trial,
		Seconds: secs(done.Sub(tKill)), DetectS: secs(t.firstAt.Sub(tKill)), PhaseS: secs(ph),
		Victim: *victim, Coordinator: int(st.Coordinator), Highest: int(st.Coordinator) == slices.Max(survivors),
		Group: st.Group.String(), FaultTime: tKill, Load: load(),
		Msgs:    byType("groupd_messages_sent_total", before, after),
		Bytes:   byType("groupd_bytes_sent_total", before, after),
		WindowS: secs(tAfter.Sub(tBefore)),
	}
	say("failover %-12s N=%-3d trial %-3d %.3fs (first reaction %.3fs) new coordinator %d group %s, %d msgs",
		r.Impl, r.N, r.Trial, r.Seconds, r.DetectS, r.Coordinator, r.Group, int(sum(r.Msgs)))
	return emit(r)
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// ---- heal ----------------------------------------------------------------------

func cmdHeal(args []string) error {
	fs := flag.NewFlagSet("heal", flag.ExitOnError)
	run := fs.String("run", "/tmp/groupd-lab", "lab run dir")
	netem := fs.String("netem", "scripts/netem", "directory of partition.sh and heal.sh")
	n := fs.Int("nodes", 0, "node count (nodes 1..N)")
	impl := fs.String("impl", "groupd-lan", "label of what runs")
	trial := fs.Int("trial", 0, "trial number")
	hold := fs.Duration("hold", 10*time.Second, "how long the partition lasts, from the moment partition.sh returned")
	phase := fs.Duration("phase", time.Second, "random wait in [0, phase) before the partition")
	timeout := fs.Duration("timeout", 60*time.Second, "give up waiting for a condition after this")
	fs.Parse(args)
	if *n < 2 {
		return errors.New("--nodes must be >= 2")
	}
	l := lab{run: *run}
	all := rangeInts(1, *n)
	k := *n / 2
	a, b := rangeInts(1, k), rangeInts(k+1, *n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, t, err := l.watchConverged(ctx, all, time.Now().Add(*timeout))
	if err != nil {
		return fmt.Errorf("before the partition: %w", err)
	}
	ph := phaseSleep(*phase)
	spec := fmt.Sprintf("1-%d|%d-%d", k, k+1, *n)
	if k == 1 {
		spec = fmt.Sprintf("1|%d-%d", k+1, *n)
	}
	tPart := time.Now()
	if out, err := exec.Command(filepath.Join(*netem, "partition.sh"), spec).CombinedOutput(); err != nil {
		return fmt.Errorf("partition.sh %s: %v: %s", spec, err, out)
	}
	tPartEnd := time.Now()
	split := func() bool { return t.converged(a) && t.converged(b) }
	if err := t.waitFor(ch, split, tPartEnd.Add(*hold+*timeout)); err != nil {
		return fmt.Errorf("the sides did not form their groups: %w", err)
	}
	splitS := secs(t.doneAt(all).Sub(tPartEnd))
	// The hold counts from the moment every cut is in place (partition.sh
	// returned): at N=64 partition.sh itself takes seconds.
	time.Sleep(time.Until(tPartEnd.Add(*hold)))
	t.drain(ch)
	before, err := l.scrapeAll(all)
	if err != nil {
		return err
	}
	tBefore := time.Now()
	t.setMark(tBefore)
	tHeal := time.Now()
	if out, err := exec.Command(filepath.Join(*netem, "heal.sh"), "--partitions").CombinedOutput(); err != nil {
		return fmt.Errorf("heal.sh: %v: %s", err, out)
	}
	tHealEnd := time.Now()
	if err := t.waitFor(ch, func() bool { return t.converged(all) }, tHealEnd.Add(*timeout)); err != nil {
		return fmt.Errorf("no single group after the heal: %w", err)
	}
	after, err := l.scrapeAll(all)
	if err != nil {
		return err
	}
	tAfter := time.Now()
	done := t.doneAt(all)
	st := t.views[*n].st
	r := Result{
		Kind: "heal", Impl: *impl, Source: "lab", N: *n, Trial: *trial,
		Seconds: secs(done.Sub(tHealEnd)), FromCmdS: secs(done.Sub(tHeal)), CmdS: secs(tHealEnd.Sub(tHeal)),
		SplitS: splitS, PartCmdS: secs(tPartEnd.Sub(tPart)), PhaseS: secs(ph), DetectS: secs(t.firstAt.Sub(tHealEnd)),
		Coordinator: int(st.Coordinator), Highest: int(st.Coordinator) == *n, Group: st.Group.String(),
		FaultTime: tHealEnd, Load: load(),
		Msgs:    byType("groupd_messages_sent_total", before, after),
		Bytes:   byType("groupd_bytes_sent_total", before, after),
		WindowS: secs(tAfter.Sub(tBefore)),
	}
	say("heal     %-12s N=%-3d trial %-3d %.3fs after heal.sh (%.3fs from its start; it ran %.3fs); split took %.3fs; %d msgs",
		r.Impl, r.N, r.Trial, r.Seconds, r.FromCmdS, r.CmdS, r.SplitS, int(sum(r.Msgs)))
	return emit(r)
}

// ---- keepalived ------------------------------------------------------------------

// kaNode is keepalived's files for lab node i under dir: nI/keepalived.pid,
// nI/vrrp.pid and nI/notify.log (lines "EPOCHREALTIME STATE PRIORITY"
// written by the notify script).
type kaNode struct{ dir string }

func (k kaNode) file(i int, name string) string {
	return filepath.Join(k.dir, fmt.Sprintf("n%d", i), name)
}

type notifyLine struct {
	at    time.Time
	state string
}

func (k kaNode) notify(i int) ([]notifyLine, error) {
	f, err := os.Open(k.file(i, "notify.log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []notifyLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 2 {
			continue
		}
		sec, err := strconv.ParseFloat(fl[0], 64)
		if err != nil {
			continue
		}
		whole := int64(sec)
		out = append(out, notifyLine{at: time.Unix(whole, int64((sec-float64(whole))*1e9)), state: fl[1]})
	}
	return out, sc.Err()
}

func (k kaNode) state(i int) string {
	ls, _ := k.notify(i)
	if len(ls) == 0 {
		return ""
	}
	return ls[len(ls)-1].state
}

func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func cmdVRRP(args []string) error {
	fs := flag.NewFlagSet("vrrp-failover", flag.ExitOnError)
	dir := fs.String("ka", "/tmp/groupd-lab/keepalived", "keepalived run dir (nI/...)")
	n := fs.Int("nodes", 0, "node count")
	victim := fs.Int("victim", 0, "node whose keepalived is killed (default: N, the MASTER)")
	trial := fs.Int("trial", 0, "trial number")
	phase := fs.Duration("phase", time.Second, "random wait in [0, phase) before the kill")
	timeout := fs.Duration("timeout", 20*time.Second, "give up after this")
	fs.Parse(args)
	if *victim == 0 {
		*victim = *n
	}
	k := kaNode{dir: *dir}
	var survivors []int
	for i := 1; i <= *n; i++ {
		if i != *victim {
			survivors = append(survivors, i)
		}
	}
	// The victim must be MASTER and everyone else BACKUP.
	deadline := time.Now().Add(*timeout)
	for {
		ok := k.state(*victim) == "MASTER"
		for _, i := range survivors {
			ok = ok && k.state(i) == "BACKUP"
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d is not the only MASTER", *victim)
		}
		time.Sleep(50 * time.Millisecond)
	}
	parent, err := readPid(k.file(*victim, "keepalived.pid"))
	if err != nil {
		return err
	}
	child, err := readPid(k.file(*victim, "vrrp.pid"))
	if err != nil {
		return err
	}
	counts := map[int]int{}
	for _, i := range survivors {
		ls, _ := k.notify(i)
		counts[i] = len(ls)
	}
	ph := phaseSleep(*phase)
	// SIGKILL to the VRRP child (the process that sends adverts) and then
	// to its parent, microseconds apart: neither can send a priority-0
	// advert or respawn the other.
	tKill := time.Now()
	if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill vrrp child %d: %w", child, err)
	}
	_ = syscall.Kill(parent, syscall.SIGKILL)
	var first notifyLine
	var who int
	for first.at.IsZero() {
		if time.Since(tKill) > *timeout {
			return errors.New("no BACKUP became MASTER")
		}
		time.Sleep(2 * time.Millisecond)
		for _, i := range survivors {
			ls, _ := k.notify(i)
			for _, l := range ls[min(counts[i], len(ls)):] {
				if l.state == "MASTER" && (first.at.IsZero() || l.at.Before(first.at)) {
					first, who = l, i
				}
			}
		}
	}
	r := Result{
		Kind: "failover", Impl: "keepalived", Source: "lab", N: *n, Trial: *trial,
		Seconds: secs(first.at.Sub(tKill)), PhaseS: secs(ph), Victim: *victim,
		Coordinator: who, Highest: who == slices.Max(survivors), FaultTime: tKill, Load: load(),
	}
	say("failover %-12s N=%-3d trial %-3d %.3fs new MASTER %d", r.Impl, r.N, r.Trial, r.Seconds, who)
	return emit(r)
}

// ---- converge ----------------------------------------------------------------------

// cmdConverge reads the events the lab's recorder wrote
// (RUN/history.ndjson), checks that the nodes' last views are one
// group, and reports when the last node reached its final view, from --since.
func cmdConverge(args []string) error {
	fs := flag.NewFlagSet("converge", flag.ExitOnError)
	run := fs.String("run", "/tmp/groupd-lab", "lab run dir")
	n := fs.Int("nodes", 0, "node count")
	impl := fs.String("impl", "groupd-lan", "label")
	since := fs.Float64("since", 0, "unix time (seconds, fractional) to measure from")
	note := fs.String("note", "", "free text stored with the result")
	fs.Parse(args)
	all := rangeInts(1, *n)
	t := newTracker()
	h, err := netlab.ReadHistory(*run)
	if err != nil {
		return err
	}
	for _, e := range h.Events(time.Time{}, time.Time{}) {
		if i := int(e.Node); i >= 1 && i <= *n {
			t.apply(nodeEvent{node: i, ev: e})
		}
	}
	if !t.converged(all) {
		return fmt.Errorf("the recorded views are not one group: %s", t.describe())
	}
	whole := int64(*since)
	from := time.Unix(whole, int64((*since-float64(whole))*1e9))
	done := t.doneAt(all)
	st := t.views[*n].st
	r := Result{Kind: "converge", Impl: *impl, Source: "lab", N: *n, Seconds: secs(done.Sub(from)),
		Coordinator: int(st.Coordinator), Highest: int(st.Coordinator) == *n, Group: st.Group.String(),
		FaultTime: from, Load: load(), Note: *note}
	say("converge %-12s N=%-3d %.3fs to one group %s", r.Impl, r.N, r.Seconds, r.Group)
	return emit(r)
}

// watchConverged follows the event streams of nodes until they are one
// group (lab.sh wait's condition) or the deadline passes, and returns the
// stream and the views for the trial that follows.
func (l lab) watchConverged(ctx context.Context, nodes []int, deadline time.Time) (<-chan nodeEvent, *tracker, error) {
	ch, err := l.watch(ctx, nodes)
	if err != nil {
		return nil, nil, err
	}
	t := newTracker()
	if err := t.waitFor(ch, func() bool { return t.converged(nodes) }, deadline); err != nil {
		return nil, nil, fmt.Errorf("not converged: %w", err)
	}
	return ch, t, nil
}

// cmdWait waits until nodes 1..N are one group (lab.sh wait's condition),
// from their event streams: lighter than polling `groupd status` on a
// loaded machine.
func cmdWait(args []string) error {
	fs := flag.NewFlagSet("wait", flag.ExitOnError)
	run := fs.String("run", "/tmp/groupd-lab", "lab run dir")
	n := fs.Int("nodes", 0, "node count")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this")
	fs.Parse(args)
	all := rangeInts(1, *n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	_, t, err := lab{run: *run}.watchConverged(ctx, all, start.Add(*timeout))
	if err != nil {
		return err
	}
	say("wait: nodes 1..%d in group %s (coordinator %d) after %.1fs", *n, t.views[*n].st.Group, t.views[*n].st.Coordinator, time.Since(start).Seconds())
	return nil
}
