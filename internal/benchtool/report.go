//go:build linux

package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
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
	"time"

	"github.com/groupd/groupd/internal/simbench"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// quantile is simbench.Quantile, or NaN (printed as a gap) for no samples.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return simbench.Quantile(xs, q)
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

// report is what a suite's results directory holds, grouped for the
// tables: gf/gh the lab's failover and heal trials by implementation and
// N, gsf/gsh the simulator's.
type report struct {
	dir                string
	gf, gh, gsf, gsh   []group
	samples, labScaleS []Sample
	scale              []ScaleResult
	labScale           []Result
	bully              []BullyResult
	notes              []Note
	rt                 rtt
}

func cmdReport(args []string) error {
	for _, a := range args {
		if a == "--benchmarks" || a == "-benchmarks" || strings.HasPrefix(a, "--benchmarks=") || strings.HasPrefix(a, "-benchmarks=") {
			return cmdReportMD(args)
		}
	}
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	dir := fs.String("dir", "", "results directory written by benchtool suite (scripts/bench/run.sh)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--dir is required")
	}
	r, err := readReport(*dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# groupd benchmark results\n\nGenerated by `benchtool report --dir %s` at %s from the raw files in that directory.\n\n",
		*dir, time.Now().UTC().Format(time.RFC3339))
	if env, err := os.ReadFile(r.path("env.txt")); err == nil {
		fmt.Fprintf(&b, "## Machine and run\n\n```\n%s```\n\n", env)
	}
	for _, section := range []func(*strings.Builder){r.failover, r.failoverSim, r.heal, r.messages, r.bullyRing, r.steady, r.simScale, r.labScaleSection, r.notesSection} {
		section(&b)
	}
	if err := r.plots(); err != nil {
		return err
	}
	if err := os.WriteFile(r.path("summary.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	say("report: wrote %s and %s", r.path("summary.md"), r.path("plots/"))
	return nil
}

func (r *report) path(name string) string { return filepath.Join(r.dir, name) }

// readReport reads a results directory.
func readReport(dir string) (*report, error) {
	r := &report{dir: dir}
	var fo, he, sm []Result
	errs := []error{}
	read := func(err error) { errs = append(errs, err) }
	var err error
	fo, err = readNDJSON[Result](r.path("failover.ndjson"), "failover")
	read(err)
	he, err = readNDJSON[Result](r.path("heal.ndjson"), "heal")
	read(err)
	sm, err = readNDJSON[Result](r.path("sim.ndjson"), "failover", "heal")
	read(err)
	r.samples, err = readNDJSON[Sample](r.path("steady.ndjson"), "sample")
	read(err)
	r.scale, err = readNDJSON[ScaleResult](r.path("sim-scale.ndjson"), "sim-scale")
	read(err)
	r.labScale, err = readNDJSON[Result](r.path("lab-scale.ndjson"), "converge", "heal", "failover")
	read(err)
	r.labScaleS, err = readNDJSON[Sample](r.path("lab-scale.ndjson"), "sample")
	read(err)
	r.bully, err = readNDJSON[BullyResult](r.path("bully.ndjson"), "bully")
	read(err)
	for _, f := range []string{"failover.ndjson", "heal.ndjson", "lab-scale.ndjson", "steady.ndjson", "notes.ndjson"} {
		ns, err := readNDJSON[Note](r.path(f), "note")
		read(err)
		r.notes = append(r.notes, ns...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if b, err := os.ReadFile(r.path("rtt.json")); err == nil {
		_ = json.Unmarshal(b, &r.rt)
	}
	var simFo, simHe []Result
	for _, x := range sm {
		if x.Kind == "failover" {
			simFo = append(simFo, x)
		} else {
			simHe = append(simHe, x)
		}
	}
	r.gf, r.gh, r.gsf, r.gsh = groupBy(fo), groupBy(he), groupBy(simFo), groupBy(simHe)
	return r, nil
}

// tableHead writes the head of a Markdown table.
func tableHead(b *strings.Builder, cols ...string) {
	fmt.Fprintf(b, "| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
}

// failover is the lab's failover table, the target, and the failover
// against the detection bound.
func (r *report) failover(b *strings.Builder) {
	if len(r.gf) == 0 {
		return
	}
	b.WriteString("## Failover (lab)\n\nkill -9 of the coordinator (groupd) or of the MASTER's keepalived processes; time until every survivor is Normal in one group whose coordinator is a survivor, listing every survivor (groupd: invariant L2 on the lab's recorded history, the survivors' own event times; keepalived: the first survivor's change to MASTER in its log). Raw: `failover.ndjson`.\n\n")
	tableHead(b, "N", "impl", "runs", "p50 (s)", "p95 (s)", "min", "max", "mean", "p50 ÷ keepalived p50", "p95 ÷ keepalived p95", "new coordinator = highest survivor", "load1")
	for _, g := range r.gf {
		xs := g.secs()
		ka := find(r.gf, "keepalived", g.n)
		r50, r95 := math.NaN(), math.NaN()
		if ka != nil && g.impl != "keepalived" {
			r50, r95 = quantile(xs, .5)/quantile(ka.secs(), .5), quantile(xs, .95)/quantile(ka.secs(), .95)
		}
		hi := 0
		for _, x := range g.rs {
			if x.Highest {
				hi++
			}
		}
		fmt.Fprintf(b, "| %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %d/%d | %s |\n", g.n, g.impl, len(xs), ff(quantile(xs, .5)), ff(quantile(xs, .95)),
			ff(slices.Min(xs)), ff(slices.Max(xs)), ff(mean(xs)), fr(r50), fr(r95), hi, len(g.rs), g.loadRange())
	}
	b.WriteString("\nTarget (issue 6): groupd lan p50 ≤ 1.0 s and under a third of keepalived's p50.\n\n")
	for _, g := range r.gf {
		if g.impl != "groupd-lan" {
			continue
		}
		p50, third := quantile(g.secs(), .5), "no keepalived run"
		if ka := find(r.gf, "keepalived", g.n); ka != nil {
			k := quantile(ka.secs(), .5)
			third = fmt.Sprintf("%s ÷ %s = %.2f: %s", ff(p50), ff(k), p50/k, yesNo(p50 < k/3))
		}
		fmt.Fprintf(b, "- N=%d: p50 %s s ≤ 1.0 s: %s; under a third of keepalived: %s\n", g.n, ff(p50), yesNo(p50 <= 1.0), third)
	}
	fmt.Fprintf(b, "\n### Failover against the detection bound\n\nBound = AliveTimeout + AnswerTimeout + one RTT (RTT measured with ping in the lab: min/avg/max %.3f/%.3f/%.3f ms over %d pings; the avg is used). A ratio below 1 is possible: a participant's timer runs from its last Yes, which came up to one AliveInterval before the crash.\n\n",
		r.rt.MinMs, r.rt.AvgMs, r.rt.MaxMs, r.rt.Count)
	tableHead(b, "N", "impl", "bound", "bound (s)", "p50 ÷ bound", "p95 ÷ bound", "min ÷ bound", "first reaction p50 (s)")
	for _, g := range r.gf {
		if g.impl == "keepalived" {
			continue
		}
		bd, desc := detectBound(g.impl, r.rt.AvgMs)
		xs := g.secs()
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", g.n, g.impl, desc, ff(bd), fr(quantile(xs, .5)/bd), fr(quantile(xs, .95)/bd), fr(slices.Min(xs)/bd),
			ff(quantile(g.field(func(x Result) float64 { return x.DetectS }), .5)))
	}
	b.WriteString("\n")
}

// failoverSim is the simulator's failover table.
func (r *report) failoverSim(b *strings.Builder) {
	if len(r.gsf) == 0 {
		return
	}
	b.WriteString("### Failover in the simulator (virtual time)\n\nSame definition (invariant L2's condition, polled every 10 ms of virtual time), coordinator crash after a random phase. Raw: `sim.ndjson`.\n\n")
	tableHead(b, "N", "profile", "seeds", "p50 (s)", "p95 (s)", "max (s)")
	for _, g := range r.gsf {
		xs := g.secs()
		fmt.Fprintf(b, "| %d | %s | %d | %s | %s | %s |\n", g.n, g.impl, len(xs), ff(quantile(xs, .5)), ff(quantile(xs, .95)), ff(slices.Max(xs)))
	}
	b.WriteString("\n")
}

// heal is the lab's heal table, its target, and the simulator's heals.
func (r *report) heal(b *strings.Builder) {
	if len(r.gh) > 0 {
		b.WriteString("## Heal (lab)\n\nPartition `1..N/2 | N/2+1..N` (iptables), hold 10 s from the moment every cut was in place, heal the partition; time from the end of the heal (every link up) until all N nodes are Normal in one group coordinated by node N listing all N (invariant L1 on the lab's recorded history). Raw: `heal.ndjson`.\n\n")
		tableHead(b, "N", "runs", "p50 (s)", "p95 (s)", "min", "max", "p50 from the heal's start", "heal took (p50)", "partition took (p50)", "sides formed after partition (p50)", "sim p50 / p95 (virtual)", "load1")
		for _, g := range r.gh {
			xs, sim := g.secs(), "–"
			if sg := find(r.gsh, "sim-lan", g.n); sg != nil {
				sim = ff(quantile(sg.secs(), .5)) + " / " + ff(quantile(sg.secs(), .95))
			}
			p50 := func(f func(Result) float64) float64 { return quantile(g.field(f), .5) }
			fmt.Fprintf(b, "| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", g.n, len(xs), ff(quantile(xs, .5)), ff(quantile(xs, .95)), ff(slices.Min(xs)), ff(slices.Max(xs)),
				ff(p50(func(x Result) float64 { return x.FromCmdS })), ff(p50(func(x Result) float64 { return x.CmdS })),
				ffSet(p50(func(x Result) float64 { return x.PartCmdS })), ff(p50(func(x Result) float64 { return x.SplitS })), sim, g.loadRange())
		}
		if g := find(r.gh, "groupd-lan", 32); g != nil {
			p50 := quantile(g.secs(), .5)
			fmt.Fprintf(b, "\nTarget: p50 ≤ 2 s at N=32 on lan defaults: %s s, %s.\n", ff(p50), yesNo(p50 <= 2))
		} else {
			b.WriteString("\nTarget: p50 ≤ 2 s at N=32 on lan defaults: no N=32 run in this directory.\n")
		}
		b.WriteString("\nDocumented anchors (not measured here): JGroups MERGE3 takes about 48 s to merge with its stock udp.xml; serf's reconnect loop retries failed members every 30 s.\n\n")
	}
	if len(r.gsh) > 0 {
		b.WriteString("### Heal in the simulator (virtual time)\n\n")
		tableHead(b, "N", "seeds", "p50 (s)", "p95 (s)", "max (s)")
		for _, g := range r.gsh {
			xs := g.secs()
			fmt.Fprintf(b, "| %d | %d | %s | %s | %s |\n", g.n, len(xs), ff(quantile(xs, .5)), ff(quantile(xs, .95)), ff(slices.Max(xs)))
		}
		b.WriteString("\n")
	}
}

// messages are the messages per failover and per merge, by type.
func (r *report) messages(b *strings.Builder) {
	var mf []group
	for _, g := range r.gf {
		if g.impl != "keepalived" {
			mf = append(mf, g)
		}
	}
	mf = append(mf, r.gsf...)
	sortGroups(mf)
	if len(mf) > 0 {
		b.WriteString("## Messages per failover, by type\n\nMean per failover, sent by all survivors from the kill until the condition held (lab: diff of `groupd_messages_sent_total{type}` scraped from every survivor just before the kill and right after; sim: `Counts().Sent` over the same span). A multicast datagram counts once. Beacon, AreYouThere, Yes and AreYouCoordinator are periodic traffic that falls into the window; the failover's own messages are Election, Answer, Invitation, Accept, Ready and ReadyAck (the winner's Invitation plays bully's Coordinator message).\n\n")
		msgTable(b, mf, true)
		b.WriteString("\n")
	}
	mh := append(append([]group{}, r.gh...), r.gsh...)
	sortGroups(mh)
	if len(mh) > 0 {
		b.WriteString("## Messages per merge (heal), by type\n\nMean per heal, all nodes, from just before the heal until one group.\n\n")
		msgTable(b, mh, false)
		b.WriteString("\n")
	}
}

// bullyRing are the standalone bully's counts and the ring tests.
func (r *report) bullyRing(b *strings.Builder) {
	if len(r.bully) > 0 {
		b.WriteString("### Standalone bully (simbench.BullyRun) against the seed's formulas\n\n`001_bb998ca24edd6aed.txt`: n(n−1) messages when the lowest process starts, n−1 when the highest does. BullyRun runs bully.Machine alone (textbook mode: Announce, AutoStart) on a reliable network. Raw: `bully.ndjson`.\n\n")
		tableHead(b, "n", "case", "Election", "Answer", "Coordinator", "total", "Election+Answer", "seed formula")
		for _, x := range r.bully {
			fmt.Fprintf(b, "| %d | %s (starter %d) | %d | %d | %d | %d | %d | %d |\n", x.N, x.Case, x.Starter, x.Election, x.Answer, x.Coordinator, x.Total, x.Election+x.Answer, x.SeedFormula)
		}
		b.WriteString("\n")
	}
	if rb, err := os.ReadFile(r.path("ring-test.txt")); err == nil {
		fmt.Fprintf(b, "### Ring (ring package tests)\n\n`004_f935ed0ac374f6d1.txt`: 3n−1 messages when the would-be leader's successor starts, 2n when the would-be leader starts. `go test ./ring -run 'TestSeedFormulas|TestGroupdMode' -v`:\n\n```\n%s```\n\n", rb)
	}
}

// steady is the steady state: traffic per window, groupd's wire messages
// by type, and the footprint of each process set.
func (r *report) steady(b *strings.Builder) {
	if len(r.samples) == 0 {
		return
	}
	b.WriteString("## Steady state and footprint\n\nRaw: `steady.ndjson`. groupd wire = groupd's own protocol (from /metrics); veth = everything the node's namespace sent (groupd wire + memberlist gossip + ARP/VRRP), from the root-side veth's rx counters.\n\n")
	tableHead(b, "window", "label", "N", "s", "groupd wire msgs/node/s", "groupd wire B/node/s", "veth pkts/s (node N)", "veth B/s (node N)", "veth pkts/s (mean of others)", "veth B/s (mean of others)", "load1")
	for _, s := range r.samples {
		top, others := s.Veth[s.N], Rate{}
		for i, v := range s.Veth {
			if i != s.N {
				others.PktsS += v.PktsS / float64(len(s.Veth)-1)
				others.BytesS += v.BytesS / float64(len(s.Veth)-1)
			}
		}
		wire, wireB := "–", "–"
		if s.MsgsPerNodeS != nil {
			wire, wireB = fmt.Sprintf("%.2f", sum(s.MsgsPerNodeS)), fmt.Sprintf("%.0f", sum(s.BytesPerNodeS))
		}
		fmt.Fprintf(b, "| %s | %s | %d | %.0f | %s | %s | %.2f | %.0f | %.2f | %.0f | %.2f |\n", s.Start.UTC().Format("15:04:05"), s.Label, s.N, s.WindowS,
			wire, wireB, top.PktsS, top.BytesS, others.PktsS, others.BytesS, s.Load[0])
	}
	var typs []string
	for _, t := range wire.Types() {
		for _, s := range r.samples {
			if s.MsgsPerNodeS[t.String()] != 0 && !slices.Contains(typs, t.String()) {
				typs = append(typs, t.String())
			}
		}
	}
	b.WriteString("\ngroupd wire messages per node per second, by type:\n\n")
	tableHead(b, append([]string{"label"}, typs...)...)
	for _, s := range r.samples {
		if s.MsgsPerNodeS == nil {
			continue
		}
		fmt.Fprintf(b, "| %s |", s.Label)
		for _, t := range typs {
			fmt.Fprintf(b, " %.2f (%.0f B) |", s.MsgsPerNodeS[t], s.BytesPerNodeS[t])
		}
		b.WriteString("\n")
	}
	b.WriteString("\nFootprint (CPU% = Δ(utime+stime) ÷ window, RSS = mean of 1 s samples of VmRSS, summed over a set's processes):\n\n")
	tableHead(b, "window", "label", "process set", "pids", "CPU %", "RSS KiB (mean)", "RSS KiB (max)", "PSS KiB", "threads")
	for _, s := range r.samples {
		for _, k := range slices.Sorted(maps.Keys(s.Procs)) {
			ps := s.Procs[k]
			fmt.Fprintf(b, "| %s | %s | %s | %v | %.3f | %.0f | %.0f | %.0f | %d |\n", s.Start.UTC().Format("15:04:05"), s.Label, k, ps.Pids, ps.CPUPct, ps.RSSKiB, ps.RSSMax, ps.PssKiB, ps.Threads)
		}
	}
	b.WriteString("\n")
}

// simScale is the simulator at scale.
func (r *report) simScale(b *strings.Builder) {
	if len(r.scale) == 0 {
		return
	}
	b.WriteString("## Scale: simulator\n\nOne seed per N; nodes start within 1 s, converge, split into halves 1..N/2 | rest for 10 s, heal. Virtual times; wall = this machine's time to simulate it. Raw: `sim-scale.ndjson`.\n\n")
	tableHead(b, "N", "status", "phase at end, groups, largest", "converge (virtual s)", "converge wall s", "heal (virtual s)", "heal wall s", "total wall s", "simulated s", "events", "msgs/node (whole run)", "peak RSS GiB", "load1")
	for _, x := range r.scale {
		st := x.Status
		if x.Error != "" {
			st += ": " + x.Error
		}
		fmt.Fprintf(b, "| %d | %s | %s, %d, %d | %.3f | %.1f | %.3f | %.1f | %.1f | %.1f | %d | %.0f | %.1f | %.2f |\n", x.N, st, x.Phase, x.Groups, x.Largest,
			x.ConvergeS, x.ConvWallS, x.HealS, x.HealWallS, x.WallS, x.SimulatedS, x.Events, x.MsgsPerNode, x.RSSGiB, x.Load[0])
	}
	b.WriteString("\n")
}

// labScaleSection is the lab at scale.
func (r *report) labScaleSection(b *strings.Builder) {
	if len(r.labScale) == 0 && len(r.labScaleS) == 0 {
		return
	}
	b.WriteString("## Scale: lab\n\nRaw: `lab-scale.ndjson`. converge = from the moment every daemon was started at once until the recorded events show one group.\n\n")
	tableHead(b, "N", "measure", "impl", "s", "detail", "load1")
	for _, x := range r.labScale {
		d := fmt.Sprintf("group %s, coordinator %d", x.Group, x.Coordinator)
		if x.Kind == "heal" {
			d += fmt.Sprintf("; heal took %.3f s; sides formed %.3f s after the partition; %d msgs", x.CmdS, x.SplitS, int(sum(x.Msgs)))
		}
		if x.Note != "" {
			d += "; " + x.Note
		}
		fmt.Fprintf(b, "| %d | %s | %s | %.3f | %s | %.2f |\n", x.N, x.Kind, x.Impl, x.Seconds, d, x.Load[0])
	}
	for _, s := range r.labScaleS {
		for k, ps := range s.Procs {
			fmt.Fprintf(b, "| %d | steady %0.fs | %s | – | %s: CPU %.1f%% of one core, RSS %.0f MiB in all | %.2f |\n", s.N, s.WindowS, s.Label, k, ps.CPUPct, ps.RSSKiB/1024, s.Load[0])
		}
	}
	b.WriteString("\n")
}

// notesSection lists what was not measured or failed.
func (r *report) notesSection(b *strings.Builder) {
	if len(r.notes) == 0 {
		return
	}
	b.WriteString("## Not measured / failed\n\n")
	for _, n := range r.notes {
		fmt.Fprintf(b, "- %s (N=%d): %s\n", n.What, n.N, n.Note)
	}
	b.WriteString("\n")
}

// plots writes plots/failover.svg and plots/heal.svg.
func (r *report) plots() error {
	if err := os.MkdirAll(r.path("plots"), 0o755); err != nil {
		return err
	}
	if len(r.gf) > 0 {
		c := Chart{Title: "Failover time vs N (lab, kill -9 of the coordinator)", Subtitle: "groupd: survivors agree on a new group; keepalived: a BACKUP's log says MASTER",
			YLabel: "seconds", XLabel: "N (nodes before the kill; log scale)", HLines: map[float64]string{1.0: "target: groupd lan p50 ≤ 1.0 s"}, YClip: 5}
		for _, impl := range []string{"groupd-lan", "groupd-fast", "groupd-ring", "keepalived"} {
			c.add(seriesOf(r.gf, impl, impl), false, "")
		}
		c.add(seriesOf(r.gsf, "sim-lan", "sim bully (virtual time)"), true, "")
		c.add(seriesOf(r.gsf, "sim-ring", "sim ring (virtual time)"), true, palette[5])
		if err := os.WriteFile(r.path("plots/failover.svg"), []byte(c.SVG()), 0o644); err != nil {
			return err
		}
	}
	if len(r.gh) == 0 {
		return nil
	}
	c := Chart{Title: "Heal time vs N (lab, halves for 10 s, then heal)", Subtitle: "from the end of the heal until one group coordinated by the highest node",
		YLabel: "seconds", XLabel: "N (log scale)", HLines: map[float64]string{2.0: "target: p50 ≤ 2 s at N=32"}, YClip: 5}
	c.add(seriesOf(r.gh, "groupd-lan", "groupd-lan (lab)"), false, "")
	var ls []Result
	for _, x := range r.labScale {
		if x.Kind == "heal" {
			ls = append(ls, x)
		}
	}
	c.add(seriesOf(groupBy(ls), "groupd-lan", "lab scale runs (2 each)"), false, palette[4])
	c.add(seriesOf(r.gsh, "sim-lan", "sim-lan (virtual time)"), true, palette[2])
	return os.WriteFile(r.path("plots/heal.svg"), []byte(c.SVG()), 0o644)
}

// add adds a series that has points, dashed and in color if given.
func (c *Chart) add(s Series, dashed bool, color string) {
	if len(s.Points) == 0 {
		return
	}
	s.Dashed = dashed
	if color != "" {
		s.Color = color
	}
	c.Series = append(c.Series, s)
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
