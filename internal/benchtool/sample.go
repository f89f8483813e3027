package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/groupd/groupd/client"
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

func clkTck() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
			return v
		}
	}
	return 100
}

// cpuTicks is utime+stime of pid, in clock ticks.
func cpuTicks(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	k := strings.LastIndexByte(s, ')')
	if k < 0 {
		return 0, errors.New("bad stat")
	}
	f := strings.Fields(s[k+1:])
	// after ")": state(0) ppid(1) ... utime is field 14 of stat, index 11 here.
	if len(f) < 13 {
		return 0, errors.New("short stat")
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return u + st, nil
}

// statusKiB reads a "Name:   123 kB" field of /proc/PID/status (or another
// file with that layout).
func statusKiB(path, field string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line[len(field)+1:])
			if len(f) > 0 {
				v, _ := strconv.ParseFloat(f[0], 64)
				return v
			}
		}
	}
	return 0
}

func readCounter(path string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	return v
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
	tck := clkTck()
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
	vethRead := func() map[int][2]float64 {
		out := map[int][2]float64{}
		if *veth == "" {
			return out
		}
		for _, i := range nodes {
			d := fmt.Sprintf("/sys/class/net/%s%d/statistics/", *veth, i)
			out[i] = [2]float64{readCounter(d + "rx_packets"), readCounter(d + "rx_bytes")}
		}
		return out
	}
	cpuRead := func() map[string]float64 {
		out := map[string]float64{}
		for name, pids := range sets {
			for _, pid := range pids {
				v, err := cpuTicks(pid)
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
	var err error
	if *run != "" {
		if before, err = sentByType(context.Background(), l, nodes); err != nil {
			return err
		}
	}
	v0, c0, t0 := vethRead(), cpuRead(), time.Now()
	rss := map[string][]float64{}
	end := t0.Add(*window)
	for time.Now().Before(end) {
		for name, pids := range sets {
			var s float64
			for _, pid := range pids {
				s += statusKiB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS")
			}
			rss[name] = append(rss[name], s)
		}
		time.Sleep(min(time.Second, time.Until(end)))
	}
	v1, c1, t1 := vethRead(), cpuRead(), time.Now()
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
		for _, i := range nodes {
			s.Veth[i] = Rate{PktsS: (v1[i][0] - v0[i][0]) / w, BytesS: (v1[i][1] - v0[i][1]) / w}
		}
	}
	if len(sets) > 0 {
		s.Procs = map[string]ProcStat{}
		for name, pids := range sets {
			ps := ProcStat{Pids: pids, CPUPct: (c1[name] - c0[name]) / tck / w * 100}
			var tot float64
			for _, v := range rss[name] {
				tot += v
				ps.RSSMax = max(ps.RSSMax, v)
			}
			if len(rss[name]) > 0 {
				ps.RSSKiB = tot / float64(len(rss[name]))
			}
			for _, pid := range pids {
				ps.PssKiB += statusKiB(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss")
				ps.Threads += int(statusKiB(fmt.Sprintf("/proc/%d/status", pid), "Threads"))
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
