package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/groupd/groupd/client"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/procfs"
)

// Sample is a window of steady state.
type Sample struct {
	Kind    string     `json:"kind"` // "sample"
	Label   string     `json:"label"`
	N       int        `json:"n"`
	WindowS float64    `json:"window_s"`
	Load    [3]float64 `json:"load"`
	Start   time.Time  `json:"start"`

	// From groupd's /metrics, summed over the nodes, per node per second.
	MsgsPerNodeS  map[string]float64 `json:"msgs_per_node_s,omitempty"`
	BytesPerNodeS map[string]float64 `json:"bytes_per_node_s,omitempty"`
	// From the root-side veth of each node (what the namespace sent, every
	// protocol: groupd's wire messages, memberlist, VRRP, ARP...).
	Veth map[int]Rate `json:"veth,omitempty"`

	Procs map[string]ProcStat `json:"procs,omitempty"`
}

// Rate is packets and bytes per second.
type Rate struct {
	PktsS  float64 `json:"pkts_s"`
	BytesS float64 `json:"bytes_s"`
}

// ProcStat is the footprint of a set of processes over the window.
type ProcStat struct {
	Pids    []int   `json:"pids"`
	CPUPct  float64 `json:"cpu_pct"` // (utime+stime) delta / window, all pids
	RSSKiB  float64 `json:"rss_kib"` // VmRSS summed over the pids, mean of the samples
	RSSMax  float64 `json:"rss_kib_max"`
	PssKiB  float64 `json:"pss_kib"` // Pss (smaps_rollup) summed, at the end
	Threads int     `json:"threads"`
}

type procFlag []string

func (p *procFlag) String() string     { return strings.Join(*p, " ") }
func (p *procFlag) Set(v string) error { *p = append(*p, v); return nil }

// procReader reads the footprint of processes and the counters of network
// interfaces from /proc through prometheus/procfs, which knows the field
// layouts (a command name with spaces or parentheses in /proc/PID/stat,
// units in /proc/PID/status, the header of /proc/net/dev) that the
// hand-written parsing had to guess.
type procReader struct{ fs procfs.FS }

func newProcReader() (procReader, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return procReader{}, fmt.Errorf("sample: %w", err)
	}
	return procReader{fs: fs}, nil
}

// cpuSeconds is the user plus system CPU time pid has used. procfs
// converts clock ticks with USER_HZ = 100, the value the kernel exports
// to user space on every architecture groupd runs on.
func (r procReader) cpuSeconds(pid int) (float64, error) {
	p, err := r.fs.Proc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return st.CPUTime(), nil
}

// rssKiB is pid's resident set (VmRSS), in KiB; 0 if it cannot be read.
func (r procReader) rssKiB(pid int) float64 {
	p, err := r.fs.Proc(pid)
	if err != nil {
		return 0
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0
	}
	return float64(st.VmRSS) / 1024
}

// selfMemKiB returns this process's resident set (VmRSS) and its peak
// (VmHWM), in KiB; zeros if they cannot be read.
func selfMemKiB() (rss, peak float64) {
	p, err := procfs.Self()
	if err != nil {
		return 0, 0
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0, 0
	}
	return float64(st.VmRSS) / 1024, float64(st.VmHWM) / 1024
}

// selfPeakKiB is selfMemKiB's peak.
func selfPeakKiB() float64 {
	_, peak := selfMemKiB()
	return peak
}

// pssKiB is pid's proportional set size (smaps_rollup), in KiB, and its
// thread count; zeros if they cannot be read.
func (r procReader) pssKiB(pid int) (pss float64, threads int) {
	p, err := r.fs.Proc(pid)
	if err != nil {
		return 0, 0
	}
	if sm, err := p.ProcSMapsRollup(); err == nil {
		pss = float64(sm.Pss) / 1024
	}
	if st, err := p.Stat(); err == nil {
		threads = st.NumThreads
	}
	return pss, threads
}

// received returns the packets and bytes each named interface has
// received (/proc/net/dev, this process's network namespace); an
// interface that does not exist is missing from the map.
func (r procReader) received(names []string) (map[string][2]float64, error) {
	dev, err := r.fs.NetDev()
	if err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	out := map[string][2]float64{}
	for _, n := range names {
		if l, ok := dev[n]; ok {
			out[n] = [2]float64{float64(l.RxPackets), float64(l.RxBytes)}
		}
	}
	return out, nil
}

func cmdSample(args []string) error {
	fs := flag.NewFlagSet("sample", flag.ExitOnError)
	run := fs.String("run", "", "lab run dir: scrape groupd metrics of nodes 1..N (empty: no metrics)")
	n := fs.Int("nodes", 0, "node count")
	label := fs.String("label", "", "what runs")
	window := fs.Duration("window", 60*time.Second, "sampling window")
	veth := fs.String("veth", "gd-v", "root-side veth prefix (gd-vI); empty: none")
	var procs procFlag
	fs.Var(&procs, "proc", "LABEL=PID[,PID...]: a process set to measure (repeatable)")
	fs.Parse(args)
	nodes := rangeInts(1, *n)
	sets := map[string][]int{}
	for _, p := range procs {
		name, list, ok := strings.Cut(p, "=")
		if !ok {
			return fmt.Errorf("--proc %q: want LABEL=PID[,PID]", p)
		}
		for _, s := range strings.Split(list, ",") {
			pid, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return fmt.Errorf("--proc %q: %v", p, err)
			}
			sets[name] = append(sets[name], pid)
		}
	}
	pr, err := newProcReader()
	if err != nil {
		return err
	}
	// The root-side veth of node i is VETH<i>; its rx counters are what
	// the node's namespace sent.
	veths := map[int]string{}
	var vethNames []string
	if *veth != "" {
		for _, i := range nodes {
			veths[i] = fmt.Sprintf("%s%d", *veth, i)
			vethNames = append(vethNames, veths[i])
		}
	}
	vethRead := func() (map[string][2]float64, error) {
		if len(vethNames) == 0 {
			return nil, nil
		}
		got, err := pr.received(vethNames)
		for _, name := range vethNames {
			if _, ok := got[name]; !ok && err == nil {
				say("sample: no interface %s", name)
			}
		}
		return got, err
	}
	cpuRead := func() map[string]float64 {
		out := map[string]float64{}
		for name, pids := range sets {
			for _, pid := range pids {
				v, err := pr.cpuSeconds(pid)
				if err != nil {
					say("sample: pid %d (%s): %v", pid, name, err)
				}
				out[name] += v
			}
		}
		return out
	}
	l := lab{run: *run}
	var before, after sent
	if *run != "" {
		if before, err = sentByType(context.Background(), l, nodes); err != nil {
			return err
		}
	}
	v0, err := vethRead()
	if err != nil {
		return err
	}
	c0, t0 := cpuRead(), time.Now()
	rss := map[string][]float64{}
	end := t0.Add(*window)
	for time.Now().Before(end) {
		for name, pids := range sets {
			var s float64
			for _, pid := range pids {
				s += pr.rssKiB(pid)
			}
			rss[name] = append(rss[name], s)
		}
		time.Sleep(min(time.Second, time.Until(end)))
	}
	v1, err := vethRead()
	if err != nil {
		return err
	}
	c1, t1 := cpuRead(), time.Now()
	if *run != "" {
		if after, err = sentByType(context.Background(), l, nodes); err != nil {
			return err
		}
	}
	w := t1.Sub(t0).Seconds()
	s := Sample{Kind: "sample", Label: *label, N: *n, WindowS: w, Load: load(), Start: t0}
	if *run != "" {
		per := float64(*n) * w
		s.MsgsPerNodeS = perSecond(before.msgs, after.msgs, per)
		s.BytesPerNodeS = perSecond(before.bytes, after.bytes, per)
	}
	if *veth != "" {
		s.Veth = map[int]Rate{}
		for i, name := range veths {
			s.Veth[i] = Rate{PktsS: (v1[name][0] - v0[name][0]) / w, BytesS: (v1[name][1] - v0[name][1]) / w}
		}
	}
	if len(sets) > 0 {
		s.Procs = map[string]ProcStat{}
		for name, pids := range sets {
			ps := ProcStat{Pids: pids, CPUPct: (c1[name] - c0[name]) / w * 100}
			var tot float64
			for _, v := range rss[name] {
				tot += v
				ps.RSSMax = max(ps.RSSMax, v)
			}
			if len(rss[name]) > 0 {
				ps.RSSKiB = tot / float64(len(rss[name]))
			}
			for _, pid := range pids {
				pss, threads := pr.pssKiB(pid)
				ps.PssKiB += pss
				ps.Threads += threads
			}
			s.Procs[name] = ps
		}
	}
	var mt, bt float64
	for _, v := range s.MsgsPerNodeS {
		mt += v
	}
	for _, v := range s.BytesPerNodeS {
		bt += v
	}
	var vp, vb float64
	for _, r := range s.Veth {
		vp += r.PktsS
		vb += r.BytesS
	}
	if len(s.Veth) > 0 {
		vp, vb = vp/float64(len(s.Veth)), vb/float64(len(s.Veth))
	}
	say("sample   %-24s %.0fs: groupd wire %.2f msgs/node/s %.0f B/node/s; veth %.2f pkts/node/s %.0f B/node/s",
		*label, w, mt, bt, vp, vb)
	for name, ps := range s.Procs {
		say("         %-24s cpu %.3f%% rss %.0f KiB (max %.0f) pss %.0f KiB pids %v", name, ps.CPUPct, ps.RSSKiB, ps.RSSMax, ps.PssKiB, ps.Pids)
	}
	return emit(s)
}

// sent is what a set of nodes has sent, summed over the nodes, by message
// type.
type sent struct{ msgs, bytes map[string]float64 }

// sentByType reads groupd_messages_sent_total and groupd_bytes_sent_total
// from each node's /metrics (its API socket in the lab's run dir), parsed
// by package client with prometheus/common's expfmt rather than by
// splitting lines, so that labels with spaces or escapes, exemplars and
// timestamps cannot be misread.
func sentByType(ctx context.Context, l lab, nodes []int) (sent, error) {
	s := sent{msgs: map[string]float64{}, bytes: map[string]float64{}}
	for _, i := range nodes {
		c, err := client.New("unix:" + l.sock(i))
		if err != nil {
			return sent{}, fmt.Errorf("node %d: %w", i, err)
		}
		fams, err := c.Metrics(ctx)
		c.Close()
		if err != nil {
			return sent{}, fmt.Errorf("node %d: %w", i, err)
		}
		addByLabel(s.msgs, fams["groupd_messages_sent_total"], "type")
		addByLabel(s.bytes, fams["groupd_bytes_sent_total"], "type")
	}
	return s, nil
}

// addByLabel adds each counter of fam (nil: none) to sum, keyed by the
// value of its label.
func addByLabel(sum map[string]float64, fam *dto.MetricFamily, label string) {
	for _, m := range fam.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				sum[lp.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
}

// perSecond returns (after - before) / per for every key that changed.
func perSecond(before, after map[string]float64, per float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d / per
		}
	}
	return out
}
