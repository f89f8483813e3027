//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// peersData is what a results directory's peers.ndjson holds.
type peersData struct {
	results []PeerResult
	idle    []PeerIdle
	notes   []PeerResult
}

func readPeersNDJSON(r io.Reader) (peersData, error) {
	var d peersData
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var k struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(b, &k); err != nil {
			return d, fmt.Errorf("line %d: %w", line, err)
		}
		switch k.Kind {
		case "idle":
			var x PeerIdle
			if err := json.Unmarshal(b, &x); err != nil {
				return d, fmt.Errorf("line %d: %w", line, err)
			}
			d.idle = append(d.idle, x)
		case "cold", "failover", "heal":
			var x PeerResult
			if err := json.Unmarshal(b, &x); err != nil {
				return d, fmt.Errorf("line %d: %w", line, err)
			}
			d.results = append(d.results, x)
		case "note":
			var x PeerResult
			if err := json.Unmarshal(b, &x); err != nil {
				return d, fmt.Errorf("line %d: %w", line, err)
			}
			d.notes = append(d.notes, x)
		}
	}
	return d, sc.Err()
}

func cmdPeersReport(args []string) error {
	fs := flag.NewFlagSet("peers report", flag.ContinueOnError)
	dir := fs.String("dir", "", "results directory (reads DIR/peers.ndjson)")
	out := fs.String("o", "", "write here instead of DIR/peers.md (- for stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("--dir is needed")
	}
	f, err := os.Open(filepath.Join(*dir, "peers.ndjson"))
	if err != nil {
		return err
	}
	defer f.Close()
	d, err := readPeersNDJSON(f)
	if err != nil {
		return fmt.Errorf("peers.ndjson: %w", err)
	}
	md := peersMarkdown(d)
	if *out == "-" {
		_, err = os.Stdout.WriteString(md)
		return err
	}
	path := *out
	if path == "" {
		path = filepath.Join(*dir, "peers.md")
	}
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		return err
	}
	say("peers: report: %s", path)
	return nil
}

// fig is the median of a set of trials, with its range and count.
type fig struct {
	med, lo, hi float64
	n           int
}

func figOf(xs []float64) fig {
	if len(xs) == 0 {
		return fig{med: math.NaN()}
	}
	return fig{med: medianOf(xs), lo: slices.Min(xs), hi: slices.Max(xs), n: len(xs)}
}

func (f fig) String() string {
	if f.n == 0 {
		return "—"
	}
	if f.n == 1 {
		return fmt.Sprintf("%s (1 trial)", fsec(f.med))
	}
	return fmt.Sprintf("%s (%s–%s, %d)", fsec(f.med), fsec(f.lo), fsec(f.hi), f.n)
}

func fsec(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// ratio is a/b as "×r", or "—".
func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "—"
	}
	r := a / b
	switch {
	case r < 0.1:
		return fmt.Sprintf("×%.3f", r)
	case r < 10:
		return fmt.Sprintf("×%.2f", r)
	case r < 100:
		return fmt.Sprintf("×%.1f", r)
	}
	return fmt.Sprintf("×%.0f", r)
}

func loadSpan(loads [][3]float64) string {
	if len(loads) == 0 {
		return "—"
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range loads {
		lo, hi = math.Min(lo, l[0]), math.Max(hi, l[0])
	}
	if lo == hi {
		return fmt.Sprintf("%.2f", lo)
	}
	return fmt.Sprintf("%.2f–%.2f", lo, hi)
}

// ranked are the peers of m in the report's order.
func ranked[T any](m map[string]T) []string {
	rank := func(p string) int {
		if k := slices.Index(peersOrder, p); k >= 0 {
			return k
		}
		return len(peersOrder)
	}
	return slices.SortedFunc(maps.Keys(m), func(a, b string) int { return rank(a) - rank(b) })
}

func peersMarkdown(d peersData) string {
	var b strings.Builder
	b.WriteString("# groupd and its peers\n\n")
	b.WriteString("Every figure is read from the nodes' own view output with the nodes' own times " +
		"(see scripts/bench/README.md, \"Peers\"). A cell is the median over the trials, " +
		"then (min–max, trials). × groupd is the peer's median over groupd's, same N, same run.\n")
	sizes := map[int]bool{}
	for _, r := range d.results {
		sizes[r.N] = true
	}
	for _, r := range d.idle {
		sizes[r.N] = true
	}
	var ns []int
	for n := range sizes {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	for _, n := range ns {
		peersTimesTable(&b, d, n)
		peersIdleTable(&b, d, n)
	}
	if len(d.notes) > 0 {
		b.WriteString("\n## Not measured, failed trials and other notes\n\n")
		for _, x := range d.notes {
			where := x.Peer
			if x.N > 0 {
				where += fmt.Sprintf(" N=%d", x.N)
			}
			if x.What != "" {
				where += " " + x.What
			}
			fmt.Fprintf(&b, "- **%s**: %s\n", strings.TrimSpace(where), x.Note)
		}
	}
	return b.String()
}

func peersTimesTable(b *strings.Builder, d peersData, n int) {
	figs := map[string]map[string]fig{} // peer -> kind -> fig
	alts := map[string]map[string][]float64{}
	loads := map[string][][3]float64{}
	leaders := map[string]string{}
	for _, r := range d.results {
		if r.N != n {
			continue
		}
		if figs[r.Peer] == nil {
			figs[r.Peer] = map[string]fig{}
			alts[r.Peer] = map[string][]float64{}
		}
		loads[r.Peer] = append(loads[r.Peer], r.Load)
		for src, v := range r.Alt {
			alts[r.Peer][r.Kind+" "+src] = append(alts[r.Peer][r.Kind+" "+src], v)
		}
	}
	for peer := range figs {
		for _, kind := range []string{"cold", "failover", "heal"} {
			var xs []float64
			for _, r := range d.results {
				if r.N == n && r.Peer == peer && r.Kind == kind {
					xs = append(xs, r.Seconds)
				}
			}
			figs[peer][kind] = figOf(xs)
		}
		if s := peerSpecs[peer]; s != nil {
			leaders[peer] = s.leaderCol
		}
	}
	if len(figs) == 0 {
		return
	}
	peers := ranked(figs)
	g := figs["groupd"]
	fmt.Fprintf(b, "\n## N = %d\n\n", n)
	b.WriteString("Seconds. Cold start: from the call that starts all N at once to one view. " +
		"Failover: from the kill -9 of the leader to the survivors' agreement on a new one. " +
		"Heal: from the return of heal.sh, after a 10 s partition into halves, to one view of all N.\n\n")
	b.WriteString("| peer | leader | cold start | × groupd | failover | × groupd | heal | × groupd | load (1 min) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range peers {
		f := figs[p]
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", p, leaders[p],
			f["cold"], ratio(f["cold"].med, g["cold"].med),
			f["failover"], ratio(f["failover"].med, g["failover"].med),
			f["heal"], ratio(f["heal"].med, g["heal"].med), loadSpan(loads[p]))
	}
	for _, p := range peers {
		if len(alts[p]) == 0 {
			continue
		}
		keys := make([]string, 0, len(alts[p]))
		for k := range alts[p] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %s s", k, figOf(alts[p][k])))
		}
		fmt.Fprintf(b, "\n%s, the same trials read from its other output: %s.\n", p, strings.Join(parts, "; "))
	}
	if _, ok := figs["serf"]; ok {
		b.WriteString("\nserf has no leader: its failover kills node N and times membership convergence " +
			"(every survivor's alive members are exactly the survivors).\n")
	}
}

func peersIdleTable(b *strings.Builder, d peersData, n int) {
	byPeer := map[string][]PeerIdle{}
	for _, x := range d.idle {
		if x.N == n {
			byPeer[x.Peer] = append(byPeer[x.Peer], x)
		}
	}
	if len(byPeer) == 0 {
		return
	}
	peers := ranked(byPeer)
	// With several windows for a peer, the last one counts.
	last := func(p string) PeerIdle { return byPeer[p][len(byPeer[p])-1] }
	var gm *PeerIdle
	if _, ok := byPeer["groupd"]; ok {
		x := last("groupd")
		gm = &x
	}
	fmt.Fprintf(b, "\n### Idle cost, N = %d\n\n", n)
	b.WriteString("Per node, over a quiet window: packets sent (eth0 of the node's namespace, every protocol), " +
		"CPU % of one core and RSS of the node's processes. Median / max over the nodes; the leader's own " +
		"figure where the peer has a leader; × groupd compares the medians.\n\n")
	b.WriteString("| peer | window | tx pkts/s median / max | leader | × groupd | CPU % median / max | leader | × groupd | RSS MiB median / max | leader | × groupd | load (1 min) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var notes []string
	for _, p := range peers {
		x := last(p)
		lt, lc, lr := "—", "—", "—"
		if x.LeaderOwn != nil {
			lt = fmt.Sprintf("%.2f (node %d)", x.LeaderOwn.TxPktsS, x.Leader)
			lc = fmt.Sprintf("%.3f", x.LeaderOwn.CPUPct)
			lr = fmt.Sprintf("%.1f", x.LeaderOwn.RSSKiB/1024)
		}
		rt, rc, rr := "—", "—", "—"
		if gm != nil {
			rt = ratio(x.Median.TxPktsS, gm.Median.TxPktsS)
			rc = ratio(x.Median.CPUPct, gm.Median.CPUPct)
			rr = ratio(x.Median.RSSKiB, gm.Median.RSSKiB)
		}
		fmt.Fprintf(b, "| %s | %.0f s | %.2f / %.2f | %s | %s | %.3f / %.3f | %s | %s | %.1f / %.1f | %s | %s | %.2f |\n",
			p, x.WindowS, x.Median.TxPktsS, x.Max.TxPktsS, lt, rt, x.Median.CPUPct, x.Max.CPUPct, lc, rc,
			x.Median.RSSKiB/1024, x.Max.RSSKiB/1024, lr, rr, x.Load[0])
		if x.Note != "" {
			notes = append(notes, fmt.Sprintf("- %s: %s\n", p, x.Note))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, s := range notes {
			b.WriteString(s)
		}
	}
}
