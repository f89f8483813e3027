package main

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/procfs"
)

// PeerIdle is the cost of one peer's N nodes over a quiet window.
type PeerIdle struct {
	Kind    string     `json:"kind"` // "idle"
	Peer    string     `json:"peer"`
	N       int        `json:"n"`
	WindowS float64    `json:"window_s"`
	Start   time.Time  `json:"start"`
	Load    [3]float64 `json:"load"`
	Leader  int        `json:"leader,omitempty"` // 0: the peer has none
	View    string     `json:"view,omitempty"`

	Nodes map[int]NodeCost `json:"nodes"`
	// Over the nodes: the median and the maximum of each figure
	// separately, and the leader's own figures.
	Median    NodeCost  `json:"median"`
	Max       NodeCost  `json:"max"`
	LeaderOwn *NodeCost `json:"leader_own,omitempty"`
	Note      string    `json:"note,omitempty"`
}

// NodeCost is one node's cost over the window.
type NodeCost struct {
	TxPktsS  float64 `json:"tx_pkts_s"`  // eth0 of the node's namespace, every protocol
	TxBytesS float64 `json:"tx_bytes_s"` //
	CPUPct   float64 `json:"cpu_pct"`    // of one core, all of the node's processes
	RSSKiB   float64 `json:"rss_kib"`    // summed over them, mean of one sample a second
	Pids     []int   `json:"pids,omitempty"`
}

// nodeProcs reads what the window needs of one node's processes.
type nodeProcs struct {
	procs []procfs.Proc
}

// cpuSeconds is utime+stime of all the node's processes.
func (n nodeProcs) cpuSeconds() (float64, error) {
	var s float64
	for _, p := range n.procs {
		st, err := p.Stat()
		if err != nil {
			return 0, err
		}
		s += st.CPUTime()
	}
	return s, nil
}

func (n nodeProcs) rssKiB() (float64, error) {
	var s float64
	for _, p := range n.procs {
		st, err := p.Stat()
		if err != nil {
			return 0, err
		}
		s += float64(st.ResidentMemory()) / 1024
	}
	return s, nil
}

// tx is the transmit counters of eth0 in the namespace of the node's first
// process (/proc/PID/net/dev shows the process's network namespace).
func (n nodeProcs) tx() (pkts, bytes float64, err error) {
	if len(n.procs) == 0 {
		return 0, 0, errors.New("no process")
	}
	nd, err := n.procs[0].NetDev()
	if err != nil {
		return 0, 0, err
	}
	l, ok := nd["eth0"]
	if !ok {
		return 0, 0, errors.New("no eth0 in the process's namespace")
	}
	return float64(l.TxPackets), float64(l.TxBytes), nil
}

func cmdPeersIdle(args []string) error {
	p := newPeersFlags("idle", 60*time.Second)
	window := p.fs.Duration("window", 30*time.Second, "the quiet window")
	spec, err := p.parse(args)
	if err != nil {
		return err
	}
	all := rangeInts(1, p.n)
	t := p.trackers(spec)[0]
	v0, err := t.waitAgreed(all, time.Time{}, time.Now().Add(p.timeout))
	if err != nil {
		return fmt.Errorf("before the window: %w", err)
	}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return err
	}
	nodes := map[int]nodeProcs{}
	pidsOf := map[int][]int{}
	for _, i := range all {
		pids, err := readPids(spec.pidFiles(&p.cfg, i))
		if err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
		var np nodeProcs
		for _, pid := range pids {
			pr, err := fs.Proc(pid)
			if err != nil {
				return fmt.Errorf("node %d: pid %d: %w", i, pid, err)
			}
			np.procs = append(np.procs, pr)
		}
		nodes[i], pidsOf[i] = np, pids
	}
	type counters struct{ cpu, pkts, bytes float64 }
	read := func() (map[int]counters, error) {
		out := map[int]counters{}
		for i, np := range nodes {
			cpu, err := np.cpuSeconds()
			if err != nil {
				return nil, fmt.Errorf("node %d: %w", i, err)
			}
			pk, by, err := np.tx()
			if err != nil {
				return nil, fmt.Errorf("node %d: %w", i, err)
			}
			out[i] = counters{cpu, pk, by}
		}
		return out, nil
	}
	c0, err := read()
	if err != nil {
		return err
	}
	t0 := time.Now()
	end := t0.Add(*window)
	rss := map[int][]float64{}
	for time.Now().Before(end) {
		for i, np := range nodes {
			if v, err := np.rssKiB(); err == nil {
				rss[i] = append(rss[i], v)
			}
		}
		time.Sleep(min(time.Second, time.Until(end)))
	}
	c1, err := read()
	if err != nil {
		return fmt.Errorf("at the end of the window (a process died?): %w", err)
	}
	w := time.Since(t0).Seconds()
	r := PeerIdle{Kind: "idle", Peer: spec.name, N: p.n, WindowS: w, Start: t0, Load: load(),
		Leader: v0.Leader, View: v0.String(), Nodes: map[int]NodeCost{}}
	for _, i := range all {
		nc := NodeCost{
			TxPktsS:  (c1[i].pkts - c0[i].pkts) / w,
			TxBytesS: (c1[i].bytes - c0[i].bytes) / w,
			CPUPct:   (c1[i].cpu - c0[i].cpu) / w * 100,
			RSSKiB:   meanOf(rss[i]),
			Pids:     pidsOf[i],
		}
		r.Nodes[i] = nc
	}
	r.Median, r.Max = summarizeCosts(r.Nodes)
	if lc, ok := r.Nodes[v0.Leader]; ok && v0.Leader != 0 {
		r.LeaderOwn = &lc
	}
	// The window is quiet only if the views did not change during it.
	if err := t.poll(); err != nil {
		return err
	}
	if v1, ok := t.agreed(all, time.Time{}); !ok || !v1.same(v0) {
		r.Note = fmt.Sprintf("the views changed during the window: before %s, after %s", v0, t.describe())
	}
	peersSay("%-10s N=%-3d idle %.0fs: tx %.2f pkts/s per node (median; max %.2f), cpu %.3f%% (max %.3f%%), rss %.1f MiB (max %.1f)%s",
		spec.name, p.n, w, r.Median.TxPktsS, r.Max.TxPktsS, r.Median.CPUPct, r.Max.CPUPct,
		r.Median.RSSKiB/1024, r.Max.RSSKiB/1024, leaderSay(r.LeaderOwn, r.Leader))
	return emit(r)
}

func leaderSay(c *NodeCost, leader int) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf("; leader %d: tx %.2f pkts/s, cpu %.3f%%, rss %.1f MiB", leader, c.TxPktsS, c.CPUPct, c.RSSKiB/1024)
}

func meanOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// medianOf is the median (the mean of the two middle values for an even
// count); 0 for nothing.
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// summarizeCosts is the median and the maximum over the nodes, of each
// figure separately.
func summarizeCosts(nodes map[int]NodeCost) (med, mx NodeCost) {
	var pk, by, cpu, rss []float64
	for _, c := range nodes {
		pk, by, cpu, rss = append(pk, c.TxPktsS), append(by, c.TxBytesS), append(cpu, c.CPUPct), append(rss, c.RSSKiB)
	}
	med = NodeCost{TxPktsS: medianOf(pk), TxBytesS: medianOf(by), CPUPct: medianOf(cpu), RSSKiB: medianOf(rss)}
	mx = NodeCost{TxPktsS: slices.Max(append(pk, 0)), TxBytesS: slices.Max(append(by, 0)),
		CPUPct: slices.Max(append(cpu, 0)), RSSKiB: slices.Max(append(rss, 0))}
	return med, mx
}
