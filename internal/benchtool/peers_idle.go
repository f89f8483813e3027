//go:build linux

package main

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/groupd/groupd/internal/simbench"
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
	TxPktsS  float64 `json:"tx_pkts_s"`  // sent by the node's namespace, every protocol
	TxBytesS float64 `json:"tx_bytes_s"` //
	CPUPct   float64 `json:"cpu_pct"`    // of one core, all of the node's processes
	RSSKiB   float64 `json:"rss_kib"`    // summed over them, mean of one sample a second
	Pids     []int   `json:"pids,omitempty"`
}

// idleWindow measures the peer's idle cost over d: per node, what its
// namespace sent, and the CPU and RSS of its processes (window). The
// window is flagged if the views changed during it.
func (m *peerTrials) idleWindow(d time.Duration) (PeerIdle, error) {
	all := m.all()
	v0, err := m.wait(all, 60*time.Second)
	if err != nil {
		return PeerIdle{}, fmt.Errorf("before the window: %w", err)
	}
	sets := map[string][]int{}
	for _, i := range all {
		if sets[nodeSet(i)], err = m.procs.pids(i); err != nil {
			return PeerIdle{}, fmt.Errorf("node %d: %w", i, err)
		}
	}
	s, err := window(m.e.l, m.spec.name+" idle", d, sets, false)
	if err != nil {
		return PeerIdle{}, err
	}
	r := PeerIdle{Kind: "idle", Peer: m.spec.name, N: m.e.n, WindowS: s.WindowS, Start: s.Start, Load: s.Load,
		Leader: v0.Leader, View: v0.String(), Nodes: map[int]NodeCost{}}
	for _, i := range all {
		ps, v := s.Procs[nodeSet(i)], s.Veth[i]
		r.Nodes[i] = NodeCost{TxPktsS: v.PktsS, TxBytesS: v.BytesS, CPUPct: ps.CPUPct, RSSKiB: ps.RSSKiB, Pids: ps.Pids}
	}
	r.Median, r.Max = summarizeCosts(r.Nodes)
	if lc, ok := r.Nodes[v0.Leader]; ok {
		r.LeaderOwn = &lc
	}
	// The window is quiet only if the views did not change during it.
	if v1, err := m.wait(all, time.Second); err != nil || !v1.same(v0) {
		r.Note = fmt.Sprintf("the views changed during the window: before %s, after %s (%v)", v0, v1, err)
	}
	say("peers: %-10s N=%-3d idle %.0fs: tx %.2f pkts/s per node (median; max %.2f), cpu %.3f%% (max %.3f%%), rss %.1f MiB (max %.1f)%s",
		m.spec.name, m.e.n, r.WindowS, r.Median.TxPktsS, r.Max.TxPktsS, r.Median.CPUPct, r.Max.CPUPct,
		r.Median.RSSKiB/1024, r.Max.RSSKiB/1024, leaderSay(r.LeaderOwn, r.Leader))
	return r, nil
}

func nodeSet(i int) string { return "node " + strconv.Itoa(i) }

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

// medianOf is simbench.Quantile(xs, 0.5), the one median every figure
// uses (nearest rank: the lower middle of an even count); 0 for nothing.
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return simbench.Quantile(xs, 0.5)
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
