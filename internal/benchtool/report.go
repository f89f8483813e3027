package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// quantile is the nearest-rank q-quantile, as simbench.Dist.Quantile.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// readNDJSON decodes every line of path into a T, skipping lines whose
// "kind" is not one of kinds (all when kinds is empty).
func readNDJSON[T any](path string, kinds ...string) ([]T, error) {
	// PATH, or PATH.gz (large files are kept compressed in the repository).
	var r io.Reader
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		f, err = os.Open(path + ".gz")
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err == nil {
			defer f.Close()
			zr, zerr := gzip.NewReader(f)
			if zerr != nil {
				return nil, fmt.Errorf("%s.gz: %w", path, zerr)
			}
			r = zr
		}
	} else if err == nil {
		defer f.Close()
		r = f
	}
	if err != nil {
		return nil, err
	}
	var out []T
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		if len(kinds) > 0 {
			var k struct {
				Kind string `json:"kind"`
			}
			if json.Unmarshal(line, &k) != nil || !slices.Contains(kinds, k.Kind) {
				continue
			}
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			continue
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

type rtt struct {
	MinMs float64 `json:"min_ms"`
	AvgMs float64 `json:"avg_ms"`
	MaxMs float64 `json:"max_ms"`
	Count int     `json:"count"`
}

// detectBound is the brief's lower bound of a failover: AliveTimeout +
// AnswerTimeout + one RTT.
func detectBound(impl string, rttMs float64) (float64, string) {
	t := invitation.DefaultTiming()
	if strings.Contains(impl, "fast") {
		t = invitation.FastTiming()
	}
	d := t.AliveTimeout + t.AnswerTimeout
	return d.Seconds() + rttMs/1000, fmt.Sprintf("%v + %v + %.3f ms", t.AliveTimeout, t.AnswerTimeout, rttMs)
}

type group struct {
	impl string
	n    int
	rs   []Result
}

func (g group) secs() []float64 {
	var out []float64
	for _, r := range g.rs {
		out = append(out, r.Seconds)
	}
	return out
}

func (g group) field(f func(Result) float64) []float64 {
	var out []float64
	for _, r := range g.rs {
		out = append(out, f(r))
	}
	return out
}

func (g group) loadRange() string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range g.rs {
		lo, hi = math.Min(lo, r.Load[0]), math.Max(hi, r.Load[0])
	}
	if len(g.rs) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f–%.2f", lo, hi)
}

func groupBy(rs []Result) []group {
	idx := map[string]int{}
	var out []group
	for _, r := range rs {
		k := fmt.Sprintf("%s/%d", r.Impl, r.N)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, group{impl: r.Impl, n: r.N})
		}
		out[i].rs = append(out[i].rs, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n < out[j].n
		}
		return implOrder(out[i].impl) < implOrder(out[j].impl)
	})
	return out
}

func implOrder(s string) int {
	for i, p := range []string{"groupd-lan", "groupd-fast", "groupd-ring", "keepalived", "sim-lan", "sim-fast", "sim-ring"} {
		if s == p {
			return i
		}
	}
	return 99
}

func find(gs []group, impl string, n int) *group {
	for i := range gs {
		if gs[i].impl == impl && gs[i].n == n {
			return &gs[i]
		}
	}
	return nil
}

func ff(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.3f", v)
}

// ffSet is ff for a field older result files lack (zero there).
func ffSet(v float64) string {
	if v == 0 {
		return "–"
	}
	return ff(v)
}

func fr(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

// typeCols lists the message types with a non-zero mean in any group, in
// wire order.
func typeCols(gs []group) []string {
	used := map[string]bool{}
	for _, g := range gs {
		for _, r := range g.rs {
			for k, v := range r.Msgs {
				if v != 0 {
					used[k] = true
				}
			}
		}
	}
	var out []string
	for _, t := range wire.Types() {
		if used[t.String()] {
			out = append(out, t.String())
		}
	}
	return out
}

func meanType(g group, typ string, bytes bool) float64 {
	var xs []float64
	for _, r := range g.rs {
		m := r.Msgs
		if bytes {
			m = r.Bytes
		}
		xs = append(xs, m[typ])
	}
	return mean(xs)
}

func msgTable(b *strings.Builder, gs []group, withSeed bool) {
	cols := typeCols(gs)
	fmt.Fprintf(b, "| N | source | runs |")
	for _, c := range cols {
		fmt.Fprintf(b, " %s |", c)
	}
	fmt.Fprintf(b, " total msgs | total bytes |")
	if withSeed {
		fmt.Fprintf(b, " Election+Answer | seed bully, n = N−1: worst n(n−1) / best n−1 |")
	}
	fmt.Fprintf(b, "\n|---|---|---|")
	for range cols {
		fmt.Fprintf(b, "---|")
	}
	fmt.Fprintf(b, "---|---|")
	if withSeed {
		fmt.Fprintf(b, "---|---|")
	}
	fmt.Fprintln(b)
	for _, g := range gs {
		fmt.Fprintf(b, "| %d | %s | %d |", g.n, g.impl, len(g.rs))
		for _, c := range cols {
			fmt.Fprintf(b, " %.1f |", meanType(g, c, false))
		}
		fmt.Fprintf(b, " %.1f | %.0f |", mean(g.field(func(r Result) float64 { return sum(r.Msgs) })), mean(g.field(func(r Result) float64 { return sum(r.Bytes) })))
		if withSeed {
			n := g.n - 1
			fmt.Fprintf(b, " %.1f | %d / %d |", meanType(g, "Election", false)+meanType(g, "Answer", false), n*(n-1), n-1)
		}
		fmt.Fprintln(b)
	}
}

func cmdReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	dir := fs.String("dir", "", "results directory written by scripts/bench/run.sh")
	fs.Parse(args)
	if *dir == "" {
		return errors.New("--dir is required")
	}
	p := func(name string) string { return filepath.Join(*dir, name) }
	fo, err := readNDJSON[Result](p("failover.ndjson"), "failover")
	if err != nil {
		return err
	}
	he, err := readNDJSON[Result](p("heal.ndjson"), "heal")
	if err != nil {
		return err
	}
	sm, err := readNDJSON[Result](p("sim.ndjson"), "failover", "heal")
	if err != nil {
		return err
	}
	samples, err := readNDJSON[Sample](p("steady.ndjson"), "sample")
	if err != nil {
		return err
	}
	scale, err := readNDJSON[ScaleResult](p("sim-scale.ndjson"), "sim-scale")
	if err != nil {
		return err
	}
	labScale, err := readNDJSON[Result](p("lab-scale.ndjson"), "converge", "heal", "failover")
	if err != nil {
		return err
	}
	labScaleS, err := readNDJSON[Sample](p("lab-scale.ndjson"), "sample")
	if err != nil {
		return err
	}
	bully, err := readNDJSON[BullyResult](p("bully.ndjson"), "bully")
	if err != nil {
		return err
	}
	var notes []Note
	for _, f := range []string{"failover.ndjson", "heal.ndjson", "lab-scale.ndjson", "steady.ndjson", "notes.ndjson"} {
		ns, err := readNDJSON[Note](p(f), "note")
		if err != nil {
			return err
		}
		notes = append(notes, ns...)
	}
	var rt rtt
	if b, err := os.ReadFile(p("rtt.json")); err == nil {
		_ = json.Unmarshal(b, &rt)
	}
	var simFo, simHe []Result
	for _, r := range sm {
		if r.Kind == "failover" {
			simFo = append(simFo, r)
		} else {
			simHe = append(simHe, r)
		}
	}
	gf, gh, gsf, gsh := groupBy(fo), groupBy(he), groupBy(simFo), groupBy(simHe)

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# groupd benchmark results\n\nGenerated by `benchtool report --dir %s` at %s from the raw files in that directory.\n\n",
		*dir, time.Now().UTC().Format(time.RFC3339))
	if env, err := os.ReadFile(p("env.txt")); err == nil {
		w("## Machine and run\n\n```\n%s```\n\n", env)
	}

	// ---- failover
	if len(gf) > 0 {
		w("## Failover (lab)\n\nkill -9 of the coordinator (groupd) or of the MASTER's keepalived processes; time until every survivor is Normal in one group whose coordinator is a survivor, listing every survivor (groupd: the latest of the survivors' event times, from `/v1/events`; keepalived: the new MASTER's notify timestamp). Raw: `failover.ndjson`.\n\n")
		w("| N | impl | runs | p50 (s) | p95 (s) | min | max | mean | p50 ÷ keepalived p50 | p95 ÷ keepalived p95 | new coordinator = highest survivor | load1 |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, g := range gf {
			xs := g.secs()
			ka := find(gf, "keepalived", g.n)
			r50, r95 := math.NaN(), math.NaN()
			if ka != nil && g.impl != "keepalived" {
				r50 = quantile(xs, .5) / quantile(ka.secs(), .5)
				r95 = quantile(xs, .95) / quantile(ka.secs(), .95)
			}
			hi := 0
			for _, r := range g.rs {
				if r.Highest {
					hi++
				}
			}
			w("| %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %d/%d | %s |\n", g.n, g.impl, len(xs), ff(quantile(xs, .5)), ff(quantile(xs, .95)),
				ff(slices.Min(xs)), ff(slices.Max(xs)), ff(mean(xs)), fr(r50), fr(r95), hi, len(g.rs), g.loadRange())
		}
		w("\nTarget (issue 6): groupd lan p50 ≤ 1.0 s and under a third of keepalived's p50.\n\n")
		for _, g := range gf {
			if g.impl != "groupd-lan" {
				continue
			}
			p50 := quantile(g.secs(), .5)
			ka := find(gf, "keepalived", g.n)
			third := "no keepalived run"
			if ka != nil {
				k := quantile(ka.secs(), .5)
				third = fmt.Sprintf("%s ÷ %s = %.2f: %s", ff(p50), ff(k), p50/k, yesNo(p50 < k/3))
			}
			w("- N=%d: p50 %s s ≤ 1.0 s: %s; under a third of keepalived: %s\n", g.n, ff(p50), yesNo(p50 <= 1.0), third)
		}
		w("\n")
		// Lower bound.
		w("### Failover against the detection bound\n\nBound = AliveTimeout + AnswerTimeout + one RTT (RTT measured with ping in the lab: min/avg/max %.3f/%.3f/%.3f ms over %d pings; the avg is used). A ratio below 1 is possible: a participant's timer runs from its last Yes, which came up to one AliveInterval before the crash.\n\n",
			rt.MinMs, rt.AvgMs, rt.MaxMs, rt.Count)
		w("| N | impl | bound | bound (s) | p50 ÷ bound | p95 ÷ bound | min ÷ bound | first reaction p50 (s) |\n|---|---|---|---|---|---|---|---|\n")
		for _, g := range gf {
			if g.impl == "keepalived" {
				continue
			}
			bd, desc := detectBound(g.impl, rt.AvgMs)
			xs := g.secs()
			w("| %d | %s | %s | %s | %s | %s | %s | %s |\n", g.n, g.impl, desc, ff(bd), fr(quantile(xs, .5)/bd), fr(quantile(xs, .95)/bd), fr(slices.Min(xs)/bd),
				ff(quantile(g.field(func(r Result) float64 { return r.DetectS }), .5)))
		}
		w("\n")
	}
	if len(gsf) > 0 {
		w("### Failover in the simulator (virtual time)\n\nSame definition (invariant L2's condition, polled every 10 ms of virtual time), coordinator crash after a random phase. Raw: `sim.ndjson`.\n\n")
		w("| N | profile | seeds | p50 (s) | p95 (s) | max (s) |\n|---|---|---|---|---|---|\n")
		for _, g := range gsf {
			xs := g.secs()
			w("| %d | %s | %d | %s | %s | %s |\n", g.n, g.impl, len(xs), ff(quantile(xs, .5)), ff(quantile(xs, .95)), ff(slices.Max(xs)))
		}
		w("\n")
	}

	// ---- heal
	if len(gh) > 0 {
		w("## Heal (lab)\n\nPartition `1..N/2 | N/2+1..N` (iptables, partition.sh), hold 10 s from the moment partition.sh returned, heal (heal.sh --partitions); time from the end of heal.sh (every link up) until all N nodes are Normal in one group coordinated by node N listing all N (the latest of their event times). Raw: `heal.ndjson`.\n\n")
		w("| N | runs | p50 (s) | p95 (s) | min | max | p50 from heal.sh start | heal.sh ran (p50) | partition.sh ran (p50) | sides formed after partition (p50) | sim p50 / p95 (virtual) | load1 |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, g := range gh {
			xs := g.secs()
			sim := "–"
			if sg := find(gsh, "sim-lan", g.n); sg != nil {
				sim = ff(quantile(sg.secs(), .5)) + " / " + ff(quantile(sg.secs(), .95))
			}
			w("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", g.n, len(xs), ff(quantile(xs, .5)), ff(quantile(xs, .95)), ff(slices.Min(xs)), ff(slices.Max(xs)),
				ff(quantile(g.field(func(r Result) float64 { return r.FromCmdS }), .5)),
				ff(quantile(g.field(func(r Result) float64 { return r.CmdS }), .5)),
				ffSet(quantile(g.field(func(r Result) float64 { return r.PartCmdS }), .5)),
				ff(quantile(g.field(func(r Result) float64 { return r.SplitS }), .5)), sim, g.loadRange())
		}
		if g := find(gh, "groupd-lan", 32); g != nil {
			p50 := quantile(g.secs(), .5)
			w("\nTarget: p50 ≤ 2 s at N=32 on lan defaults: %s s, %s.\n", ff(p50), yesNo(p50 <= 2))
		} else {
			w("\nTarget: p50 ≤ 2 s at N=32 on lan defaults: no N=32 run in this directory.\n")
		}
		w("\nDocumented anchors (not measured here): JGroups MERGE3 takes about 48 s to merge with its stock udp.xml; serf's reconnect loop retries failed members every 30 s.\n\n")
	}
	if len(gsh) > 0 {
		w("### Heal in the simulator (virtual time)\n\n| N | seeds | p50 (s) | p95 (s) | max (s) |\n|---|---|---|---|---|\n")
		for _, g := range gsh {
			xs := g.secs()
			w("| %d | %d | %s | %s | %s |\n", g.n, len(xs), ff(quantile(xs, .5)), ff(quantile(xs, .95)), ff(slices.Max(xs)))
		}
		w("\n")
	}

	// ---- messages
	var mf []group
	for _, g := range gf {
		if g.impl != "keepalived" {
			mf = append(mf, g)
		}
	}
	mf = append(mf, gsf...)
	sortGroups(mf)
	if len(mf) > 0 {
		w("## Messages per failover, by type\n\nMean per failover, sent by all survivors from the kill until the condition held (lab: diff of `groupd_messages_sent_total{type}` scraped from every survivor just before the kill and right after; sim: `Counts().Sent` over the same span). A multicast datagram counts once. Beacon, AreYouThere, Yes and AreYouCoordinator are periodic traffic that falls into the window; the failover's own messages are Election, Answer, Invitation, Accept, Ready and ReadyAck (the winner's Invitation plays bully's Coordinator message).\n\n")
		msgTable(&b, mf, true)
		w("\n")
	}
	mh := append(append([]group{}, gh...), gsh...)
	sortGroups(mh)
	if len(mh) > 0 {
		w("## Messages per merge (heal), by type\n\nMean per heal, all nodes, from just before heal.sh until one group.\n\n")
		msgTable(&b, mh, false)
		w("\n")
	}
	if len(bully) > 0 {
		w("### Standalone bully (simbench.BullyRun) against the seed's formulas\n\n`001_bb998ca24edd6aed.txt`: n(n−1) messages when the lowest process starts, n−1 when the highest does. BullyRun runs bully.Machine alone (textbook mode: Announce, AutoStart) on a reliable network. Raw: `bully.ndjson`.\n\n")
		w("| n | case | Election | Answer | Coordinator | total | Election+Answer | seed formula |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range bully {
			w("| %d | %s (starter %d) | %d | %d | %d | %d | %d | %d |\n", r.N, r.Case, r.Starter, r.Election, r.Answer, r.Coordinator, r.Total, r.Election+r.Answer, r.SeedFormula)
		}
		w("\n")
	}
	if rb, err := os.ReadFile(p("ring-test.txt")); err == nil {
		w("### Ring (ring package tests)\n\n`004_f935ed0ac374f6d1.txt`: 3n−1 messages when the would-be leader's successor starts, 2n when the would-be leader starts. `go test ./ring -run 'TestSeedFormulas|TestGroupdMode' -v`:\n\n```\n%s```\n\n", rb)
	}

	// ---- steady state and footprint
	if len(samples) > 0 {
		w("## Steady state and footprint\n\nRaw: `steady.ndjson`. groupd wire = groupd's own protocol (from /metrics); veth = everything the node's namespace sent (groupd wire + memberlist gossip + ARP/VRRP), from the root-side veth's rx counters.\n\n")
		w("| window | label | N | s | groupd wire msgs/node/s | groupd wire B/node/s | veth pkts/s (node N) | veth B/s (node N) | veth pkts/s (mean of others) | veth B/s (mean of others) | load1 |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range samples {
			var mt, bt float64
			for _, v := range s.MsgsPerNodeS {
				mt += v
			}
			for _, v := range s.BytesPerNodeS {
				bt += v
			}
			top := s.Veth[s.N]
			var op, ob float64
			k := 0
			for i, r := range s.Veth {
				if i != s.N {
					op += r.PktsS
					ob += r.BytesS
					k++
				}
			}
			if k > 0 {
				op, ob = op/float64(k), ob/float64(k)
			}
			wire := "–"
			wireB := "–"
			if s.MsgsPerNodeS != nil {
				wire, wireB = fmt.Sprintf("%.2f", mt), fmt.Sprintf("%.0f", bt)
			}
			w("| %s | %s | %d | %.0f | %s | %s | %.2f | %.0f | %.2f | %.0f | %.2f |\n", s.Start.UTC().Format("15:04:05"), s.Label, s.N, s.WindowS, wire, wireB, top.PktsS, top.BytesS, op, ob, s.Load[0])
		}
		w("\ngroupd wire messages per node per second, by type:\n\n| label | ")
		var typs []string
		for _, t := range wire.Types() {
			for _, s := range samples {
				if s.MsgsPerNodeS[t.String()] != 0 && !slices.Contains(typs, t.String()) {
					typs = append(typs, t.String())
				}
			}
		}
		for _, t := range typs {
			w("%s | ", t)
		}
		w("\n|---|")
		for range typs {
			w("---|")
		}
		w("\n")
		for _, s := range samples {
			if s.MsgsPerNodeS == nil {
				continue
			}
			w("| %s | ", s.Label)
			for _, t := range typs {
				w("%.2f (%.0f B) | ", s.MsgsPerNodeS[t], s.BytesPerNodeS[t])
			}
			w("\n")
		}
		w("\nFootprint (CPU%% = Δ(utime+stime) ÷ window, RSS = mean of 1 s samples of VmRSS, summed over a set's processes):\n\n| window | label | process set | pids | CPU %% | RSS KiB (mean) | RSS KiB (max) | PSS KiB | threads |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range samples {
			var names []string
			for k := range s.Procs {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				ps := s.Procs[k]
				w("| %s | %s | %s | %v | %.3f | %.0f | %.0f | %.0f | %d |\n", s.Start.UTC().Format("15:04:05"), s.Label, k, ps.Pids, ps.CPUPct, ps.RSSKiB, ps.RSSMax, ps.PssKiB, ps.Threads)
			}
		}
		w("\n")
	}

	// ---- scale
	if len(scale) > 0 {
		w("## Scale: simulator\n\nOne seed per N; nodes start within 1 s, converge, split into halves 1..N/2 | rest for 10 s, heal. Virtual times; wall = this machine's time to simulate it. Raw: `sim-scale.ndjson`.\n\n| N | status | phase at end, groups, largest | converge (virtual s) | converge wall s | heal (virtual s) | heal wall s | total wall s | simulated s | events | msgs/node (whole run) | peak RSS GiB | load1 |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range scale {
			st := r.Status
			if r.Error != "" {
				st += ": " + r.Error
			}
			w("| %d | %s | %s, %d, %d | %.3f | %.1f | %.3f | %.1f | %.1f | %.1f | %d | %.0f | %.1f | %.2f |\n", r.N, st, r.Phase, r.Groups, r.Largest, r.ConvergeS, r.ConvWallS, r.HealS, r.HealWallS, r.WallS, r.SimulatedS, r.Events, r.MsgsPerNode, r.RSSGiB, r.Load[0])
		}
		w("\n")
	}
	if len(labScale) > 0 || len(labScaleS) > 0 {
		w("## Scale: lab\n\nRaw: `lab-scale.ndjson`. converge = from the moment `lab.sh start` was called (it starts every daemon at once) until the recorded events show one group.\n\n| N | measure | impl | s | detail | load1 |\n|---|---|---|---|---|---|\n")
		for _, r := range labScale {
			d := fmt.Sprintf("group %s, coordinator %d", r.Group, r.Coordinator)
			if r.Kind == "heal" {
				d += fmt.Sprintf("; heal.sh ran %.3f s; sides formed %.3f s after the partition; %d msgs", r.CmdS, r.SplitS, int(sum(r.Msgs)))
			}
			if r.Note != "" {
				d += "; " + r.Note
			}
			w("| %d | %s | %s | %.3f | %s | %.2f |\n", r.N, r.Kind, r.Impl, r.Seconds, d, r.Load[0])
		}
		for _, s := range labScaleS {
			for k, ps := range s.Procs {
				w("| %d | steady %0.fs | %s | – | %s: CPU %.1f%% of one core, RSS %.0f MiB in all | %.2f |\n", s.N, s.WindowS, s.Label, k, ps.CPUPct, ps.RSSKiB/1024, s.Load[0])
			}
		}
		w("\n")
	}
	if len(notes) > 0 {
		w("## Not measured / failed\n\n")
		for _, n := range notes {
			w("- %s (N=%d): %s\n", n.What, n.N, n.Note)
		}
		w("\n")
	}

	// ---- plots
	if err := os.MkdirAll(p("plots"), 0o755); err != nil {
		return err
	}
	if len(gf) > 0 {
		c := Chart{Title: "Failover time vs N (lab, kill -9 of the coordinator)", Subtitle: "groupd: survivors agree on a new group; keepalived: a BACKUP's notify says MASTER",
			YLabel: "seconds", XLabel: "N (nodes before the kill; log scale)", HLines: map[float64]string{1.0: "target: groupd lan p50 ≤ 1.0 s"}, YClip: 5}
		for _, impl := range []string{"groupd-lan", "groupd-fast", "groupd-ring", "keepalived"} {
			s := seriesOf(gf, impl, impl)
			if len(s.Points) > 0 {
				c.Series = append(c.Series, s)
			}
		}
		if s := seriesOf(gsf, "sim-lan", "sim bully (virtual time)"); len(s.Points) > 0 {
			s.Dashed = true
			c.Series = append(c.Series, s)
		}
		if s := seriesOf(gsf, "sim-ring", "sim ring (virtual time)"); len(s.Points) > 0 {
			s.Dashed = true
			s.Color = palette[5]
			c.Series = append(c.Series, s)
		}
		if err := os.WriteFile(p("plots/failover.svg"), []byte(c.SVG()), 0o644); err != nil {
			return err
		}
	}
	if len(gh) > 0 {
		c := Chart{Title: "Heal time vs N (lab, halves for 10 s, then heal)", Subtitle: "from the end of heal.sh until one group coordinated by the highest node",
			YLabel: "seconds", XLabel: "N (log scale)", HLines: map[float64]string{2.0: "target: p50 ≤ 2 s at N=32"}, YClip: 5}
		if s := seriesOf(gh, "groupd-lan", "groupd-lan (lab)"); len(s.Points) > 0 {
			c.Series = append(c.Series, s)
		}
		var ls []Result
		for _, r := range labScale {
			if r.Kind == "heal" {
				ls = append(ls, r)
			}
		}
		if s := seriesOf(groupBy(ls), "groupd-lan", "lab scale runs (2 each)"); len(s.Points) > 0 {
			s.Color = palette[4]
			c.Series = append(c.Series, s)
		}
		if s := seriesOf(gsh, "sim-lan", "sim-lan (virtual time)"); len(s.Points) > 0 {
			s.Dashed = true
			s.Color = palette[2]
			c.Series = append(c.Series, s)
		}
		if err := os.WriteFile(p("plots/heal.svg"), []byte(c.SVG()), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(p("summary.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	say("report: wrote %s and %s", p("summary.md"), p("plots/"))
	return nil
}

func sortGroups(gs []group) {
	sort.SliceStable(gs, func(i, j int) bool {
		if gs[i].n != gs[j].n {
			return gs[i].n < gs[j].n
		}
		return implOrder(gs[i].impl) < implOrder(gs[j].impl)
	})
}

func seriesOf(gs []group, impl, name string) Series {
	s := Series{Name: name}
	for i, k := range []string{"groupd-lan", "groupd-fast", "groupd-ring", "keepalived", "sim-lan"} {
		if k == impl {
			s.Color = palette[i%len(palette)]
		}
	}
	for _, g := range gs {
		if g.impl != impl {
			continue
		}
		xs := g.secs()
		s.Points = append(s.Points, Point{X: float64(g.n), P50: quantile(xs, .5), P95: quantile(xs, .95), Count: len(xs)})
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "**met**"
	}
	return "**not met**"
}
