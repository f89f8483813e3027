//go:build linux

package main

import (
	"fmt"
	"time"

	"github.com/prometheus/procfs"

	netlab "github.com/groupd/groupd/internal/lab"
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

// window measures a steady window of d on lab l: per process set of
// sets, CPU % of one core (utime+stime), RSS (mean and max of one sample
// a second) and, at its end, PSS and threads; per node, what its
// namespace sent (the rx counters of its root-side veth: every protocol);
// with metrics, groupd's wire messages and bytes sent by type, per node
// per second, from the nodes' /metrics.
func window(l *netlab.Lab, label string, d time.Duration, sets map[string][]int, metrics bool) (Sample, error) {
	pr, err := newProcReader()
	if err != nil {
		return Sample{}, err
	}
	nodes := netlab.Span(1, l.N())
	var before, after sent
	if metrics {
		if before, err = sentByType(l, nodes); err != nil {
			return Sample{}, err
		}
	}
	v0, c0, t0 := pr.veths(l), pr.cpu(sets), time.Now()
	rss := map[string][]float64{}
	for end := t0.Add(d); time.Now().Before(end); time.Sleep(min(time.Second, time.Until(end))) {
		for name, pids := range sets {
			var s float64
			for _, pid := range pids {
				s += pr.rssKiB(pid)
			}
			rss[name] = append(rss[name], s)
		}
	}
	v1, c1, t1 := pr.veths(l), pr.cpu(sets), time.Now()
	if metrics {
		if after, err = sentByType(l, nodes); err != nil {
			return Sample{}, err
		}
	}
	w := t1.Sub(t0).Seconds()
	s := Sample{Kind: "sample", Label: label, N: l.N(), WindowS: w, Load: load(), Start: t0, Veth: map[int]Rate{}, Procs: map[string]ProcStat{}}
	if metrics {
		s.MsgsPerNodeS = perSecond(before.msgs, after.msgs, float64(l.N())*w)
		s.BytesPerNodeS = perSecond(before.bytes, after.bytes, float64(l.N())*w)
	}
	for i, a := range v1 {
		s.Veth[i] = Rate{PktsS: (a[0] - v0[i][0]) / w, BytesS: (a[1] - v0[i][1]) / w}
	}
	for name, pids := range sets {
		ps := ProcStat{Pids: pids, CPUPct: (c1[name] - c0[name]) / w * 100, RSSKiB: meanOf(rss[name])}
		for _, v := range rss[name] {
			ps.RSSMax = max(ps.RSSMax, v)
		}
		for _, pid := range pids {
			pss, threads := pr.pssKiB(pid)
			ps.PssKiB += pss
			ps.Threads += threads
		}
		s.Procs[name] = ps
	}
	s.say()
	return s, nil
}

// say prints a window's figures.
func (s Sample) say() {
	var vp, vb float64
	for _, r := range s.Veth {
		vp, vb = vp+r.PktsS/float64(len(s.Veth)), vb+r.BytesS/float64(len(s.Veth))
	}
	say("sample   %-24s %.0fs: groupd wire %.2f msgs/node/s %.0f B/node/s; veth %.2f pkts/node/s %.0f B/node/s",
		s.Label, s.WindowS, sum(s.MsgsPerNodeS), sum(s.BytesPerNodeS), vp, vb)
	for name, ps := range s.Procs {
		say("         %-24s cpu %.3f%% rss %.0f KiB (max %.0f) pss %.0f KiB pids %v", name, ps.CPUPct, ps.RSSKiB, ps.RSSMax, ps.PssKiB, ps.Pids)
	}
}

// cpu is the CPU seconds of each process set.
func (r procReader) cpu(sets map[string][]int) map[string]float64 {
	out := map[string]float64{}
	for name, pids := range sets {
		for _, pid := range pids {
			v, err := r.cpuSeconds(pid)
			if err != nil {
				say("sample: pid %d (%s): %v", pid, name, err)
			}
			out[name] += v
		}
	}
	return out
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

// veths are the packets and bytes each node's namespace sent: the rx
// counters of its root-side veth.
func (r procReader) veths(l *netlab.Lab) map[int][2]float64 {
	var names []string
	for i := 1; i <= l.N(); i++ {
		names = append(names, l.Veth(i))
	}
	got, err := r.received(names)
	out := map[int][2]float64{}
	for i, name := range names {
		if v, ok := got[name]; ok {
			out[i+1] = v
		} else {
			say("sample: no interface %s (%v)", name, err)
		}
	}
	return out
}

// sent is what a set of nodes has sent, summed over the nodes, by message
// type.
type sent struct{ msgs, bytes map[string]float64 }

// sentByType reads groupd_messages_sent_total and groupd_bytes_sent_total
// from each node's /metrics (its API socket in the lab's run dir).
func sentByType(l *netlab.Lab, nodes []int) (sent, error) {
	fams, err := metricsOf(l, nodes)
	if err != nil {
		return sent{}, err
	}
	return sent{
		msgs:  sumByLabel(fams, "groupd_messages_sent_total", "type"),
		bytes: sumByLabel(fams, "groupd_bytes_sent_total", "type"),
	}, nil
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
