//go:build linux

package main

// The generated blocks of BENCHMARKS.md (issue 34): every table of the
// report is written by benchtool from the raw results it names, between
//
//	<!-- generated:NAME begin GENERATOR ARGS... -->
//	...
//	<!-- generated:NAME end -->
//
// where GENERATOR ARGS are one of the generators of genBlock, with paths
// relative to the repository's root. `benchtool report --benchmarks
// BENCHMARKS.md` rewrites every block in place; with --readme README.md it
// also rewrites README's block between <!-- compare:begin --> and
// <!-- compare:end --> (the five-row comparison) from the sources of
// BENCHMARKS.md's compare block, when README has those markers.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

var (
	genBeginRE = regexp.MustCompile(`^<!-- generated:([A-Za-z0-9_.-]+) begin (.*?)\s*-->$`)
	genEndRE   = regexp.MustCompile(`^<!-- generated:([A-Za-z0-9_.-]+) end -->$`)
)

const (
	readmeBegin = "<!-- compare:begin -->"
	readmeEnd   = "<!-- compare:end -->"
)

// cmdReportMD rewrites the generated blocks of a Markdown file in place.
func cmdReportMD(args []string) error {
	fs := flag.NewFlagSet("report --benchmarks", flag.ContinueOnError)
	bench := fs.String("benchmarks", "", "the Markdown file whose generated blocks are rewritten (BENCHMARKS.md)")
	readme := fs.String("readme", "", "also rewrite this file's <!-- compare:begin --> block, if it has one (README.md)")
	root := fs.String("root", ".", "the repository's root: the blocks' paths are relative to it")
	check := fs.Bool("check", false, "rewrite nothing: fail if a block differs from what would be generated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bench == "" {
		return errors.New("--benchmarks is needed")
	}
	old, err := os.ReadFile(*bench)
	if err != nil {
		return err
	}
	text, names, err := rewriteGenerated(string(old), *root)
	if err != nil {
		return fmt.Errorf("%s: %w", *bench, err)
	}
	if err := writeOrCheck(*bench, string(old), text, *check); err != nil {
		return err
	}
	say("report: %s: %d generated blocks (%s)", *bench, len(names), strings.Join(names, ", "))
	if *readme == "" {
		return nil
	}
	rold, err := os.ReadFile(*readme)
	if err != nil {
		return err
	}
	rtext, ok, err := rewriteReadme(string(rold), text, *root)
	if err != nil {
		return fmt.Errorf("%s: %w", *readme, err)
	}
	if !ok {
		say("report: %s has no %s … %s block: left alone", *readme, readmeBegin, readmeEnd)
		return nil
	}
	if err := writeOrCheck(*readme, string(rold), rtext, *check); err != nil {
		return err
	}
	say("report: %s: compare block", *readme)
	return nil
}

func writeOrCheck(path, old, text string, check bool) error {
	if check {
		if old != text {
			return fmt.Errorf("%s: generated blocks are not current: run benchtool report --benchmarks", path)
		}
		return nil
	}
	if old == text {
		return nil
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// genBlockSpec is one generated block of a file.
type genBlockSpec struct {
	name       string
	args       []string
	begin, end int // line indexes of the markers
}

// genBlocks finds the generated blocks of text's lines.
func genBlocks(lines []string) ([]genBlockSpec, error) {
	var out []genBlockSpec
	var open *genBlockSpec
	for i, l := range lines {
		if m := genBeginRE.FindStringSubmatch(l); m != nil {
			if open != nil {
				return nil, fmt.Errorf("line %d: block %s begins inside block %s", i+1, m[1], open.name)
			}
			open = &genBlockSpec{name: m[1], args: strings.Fields(m[2]), begin: i}
			continue
		}
		if m := genEndRE.FindStringSubmatch(l); m != nil {
			if open == nil || open.name != m[1] {
				return nil, fmt.Errorf("line %d: end of block %s, which is not open", i+1, m[1])
			}
			open.end = i
			out = append(out, *open)
			open = nil
		}
	}
	if open != nil {
		return nil, fmt.Errorf("block %s has no end marker", open.name)
	}
	return out, nil
}

// rewriteGenerated replaces every generated block of text with what its
// generator writes now.
func rewriteGenerated(text, root string) (string, []string, error) {
	lines := strings.Split(text, "\n")
	blocks, err := genBlocks(lines)
	if err != nil {
		return "", nil, err
	}
	var out []string
	var names []string
	prev := 0
	for _, bl := range blocks {
		body, err := genBlock(root, bl.args)
		if err != nil {
			return "", nil, fmt.Errorf("block %s: %w", bl.name, err)
		}
		out = append(out, lines[prev:bl.begin+1]...)
		out = append(out, strings.Split(strings.TrimRight(body, "\n"), "\n")...)
		prev = bl.end
		names = append(names, bl.name)
	}
	out = append(out, lines[prev:]...)
	return strings.Join(out, "\n"), names, nil
}

// rewriteReadme writes the five-row comparison between README's compare
// markers, from the sources of bench's compare block. ok is false when
// README has no such block.
func rewriteReadme(readme, bench, root string) (string, bool, error) {
	bi := strings.Index(readme, readmeBegin)
	ei := strings.Index(readme, readmeEnd)
	if bi < 0 || ei < 0 || ei < bi {
		return readme, false, nil
	}
	blocks, err := genBlocks(strings.Split(bench, "\n"))
	if err != nil {
		return "", false, err
	}
	for _, bl := range blocks {
		if len(bl.args) > 0 && bl.args[0] == "compare" {
			args := append(slices.Clone(bl.args[1:]), "--short")
			body, err := genCompare(root, args)
			if err != nil {
				return "", false, err
			}
			return readme[:bi+len(readmeBegin)] + "\n" + strings.TrimRight(body, "\n") + "\n" + readme[ei:], true, nil
		}
	}
	return "", false, errors.New("BENCHMARKS.md has no generated block of the compare generator")
}

// genBlock runs one generator: args[0] names it.
func genBlock(root string, args []string) (string, error) {
	if len(args) == 0 {
		return "", errors.New("no generator named")
	}
	switch args[0] {
	case "compare":
		return genCompare(root, args[1:])
	case "peers":
		return genPeers(root, args[1:])
	case "exclusive":
		return genExclusive(root, args[1:])
	case "labscale":
		return genLabScale(root, args[1:])
	case "suite":
		return genSuite(root, args[1:])
	}
	return "", fmt.Errorf("unknown generator %q (compare, peers, exclusive, labscale, suite)", args[0])
}

func rootPath(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

func readPeersFile(root, p string) (peersData, error) {
	b, err := os.ReadFile(rootPath(root, p))
	if err != nil {
		return peersData{}, err
	}
	d, err := readPeersNDJSON(bytes.NewReader(b))
	if err != nil {
		return d, fmt.Errorf("%s: %w", p, err)
	}
	return d, nil
}

func readExclFiles(root, list string) ([]ExclRound, []ExclNote, []ExclEnv, error) {
	var rounds []ExclRound
	var notes []ExclNote
	var envs []ExclEnv
	for _, p := range strings.Split(list, ",") {
		path := rootPath(root, p)
		rs, err := readNDJSON[ExclRound](path, "exclusive")
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		ns, err := readNDJSON[ExclNote](path, "note")
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		es, err := readNDJSON[ExclEnv](path, "env")
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(rs)+len(ns)+len(es) == 0 {
			return nil, nil, nil, fmt.Errorf("%s: no results", p)
		}
		rounds, notes, envs = append(rounds, rs...), append(notes, ns...), append(envs, es...)
	}
	return rounds, notes, envs, nil
}

// genPeers: peers --in FILE [--n N]: the peers tables of one run
// (benchtool peers report), headings one level down.
func genPeers(root string, args []string) (string, error) {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	in := fs.String("in", "", "peers NDJSON")
	brief := fs.Bool("brief", false, "the tables and notes only, without the paragraphs that say what a column is")
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	d, err := readPeersFile(root, *in)
	if err != nil {
		return "", err
	}
	md := peersMarkdown(d)
	var out []string
	for i, l := range strings.Split(md, "\n") {
		if i == 0 && strings.HasPrefix(l, "# ") {
			continue
		}
		if *brief && (strings.HasPrefix(l, "Every figure is read") || strings.HasPrefix(l, "Seconds. Cold start") ||
			strings.HasPrefix(l, "Per node, over a quiet window")) {
			continue
		}
		if *brief && l == "" && len(out) > 0 && out[len(out)-1] == "" {
			continue
		}
		if strings.HasPrefix(l, "#") {
			l = "#" + l
		}
		out = append(out, l)
	}
	return strings.TrimLeft(strings.Join(out, "\n"), "\n"), nil
}

// genExclusive: exclusive --in FILE[,FILE] [--faults LIST]: the tables of
// benchtool exclusive report, for some faults only if asked.
func genExclusive(root string, args []string) (string, error) {
	fs := flag.NewFlagSet("exclusive", flag.ContinueOnError)
	in := fs.String("in", "", "exclusive NDJSON files, comma-separated")
	faults := fs.String("faults", "", "only these faults")
	noGap := fs.Bool("no-gap-table", false, "without the table of the least gap between primary leaders")
	brief := fs.Bool("brief", false, "without the paragraphs that define a lapse and the resolution (scripts/bench/README.md does)")
	compact := fs.Bool("compact", false, "one table for every fault (without the faults' descriptions: scripts/bench/README.md has them)")
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	rounds, notes, envs, err := readExclFiles(root, *in)
	if err != nil {
		return "", err
	}
	if *faults != "" {
		keep := strings.Split(*faults, ",")
		rounds = slices.DeleteFunc(rounds, func(r ExclRound) bool { return !slices.Contains(keep, r.Fault) })
		notes = slices.DeleteFunc(notes, func(n ExclNote) bool { return n.Fault != "" && !slices.Contains(keep, n.Fault) })
	}
	md := exclMarkdown(rounds, notes, envs)
	if *compact && !slices.ContainsFunc(rounds, func(r ExclRound) bool { return r.Fault == "loss" }) {
		md = exclCompact(rounds, notes, envs)
	}
	if *noGap {
		if g := exclGapTable(rounds); g != "" {
			md = strings.Replace(md, g, "", 1)
		}
	}
	if *brief {
		var out []string
		for _, l := range strings.Split(md, "\n") {
			if strings.HasPrefix(l, "A lapse: ") || strings.HasPrefix(l, "Resolution ±") {
				continue
			}
			if l == "" && len(out) > 0 && out[len(out)-1] == "" {
				continue
			}
			out = append(out, l)
		}
		md = strings.Join(out, "\n")
	}
	return md, nil
}

// exclCompact is exclMarkdown with one table for every fault, a row per
// fault and implementation.
func exclCompact(rounds []ExclRound, notes []ExclNote, envs []ExclEnv) string {
	full := exclMarkdown(rounds, notes, envs)
	var b strings.Builder
	b.WriteString("| fault | implementation | rounds | overlap ms, p50 (min–max) | rounds with overlap > 1 poll | step-down s, p50 (min–max) | takeover s, p50 (min–max) | gap between primary leaders ms, p50 (min–max) | term order broken | load (1 min) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, fault := range exclAllFaults {
		for _, peer := range exclPeers {
			var rs []ExclRound
			for _, r := range rounds {
				if r.Peer == peer && r.Fault == fault {
					rs = append(rs, r)
				}
			}
			if len(rs) > 0 {
				fmt.Fprintf(&b, "| %s %s\n", fault, exclRow(peer, rs))
			}
		}
	}
	b.WriteString("\n")
	// The rest (gap table, notes, runs) as exclMarkdown writes it.
	if g := exclGapTable(rounds); g != "" {
		if i := strings.Index(full, g); i >= 0 {
			b.WriteString(full[i:])
			return b.String()
		}
	}
	if i := strings.Index(full, "Notes of the runs:"); i >= 0 {
		b.WriteString(full[i:])
		return b.String()
	}
	if i := strings.Index(full, "Run of "); i >= 0 {
		b.WriteString(full[i:])
	}
	return b.String()
}

// genLabScale: labscale --in FILE: the lab-scale table of a scale run.
func genLabScale(root string, args []string) (string, error) {
	fs := flag.NewFlagSet("labscale", flag.ContinueOnError)
	in := fs.String("in", "", "scale NDJSON")
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	path := rootPath(root, *in)
	r := &report{}
	var err error
	if r.labScale, err = readNDJSON[Result](path, "converge", "heal", "failover"); err != nil {
		return "", err
	}
	if r.labScaleS, err = readNDJSON[Sample](path, "sample"); err != nil {
		return "", err
	}
	if len(r.labScale)+len(r.labScaleS) == 0 {
		return "", fmt.Errorf("%s: no results", *in)
	}
	var b strings.Builder
	r.labScaleSection(&b)
	s := strings.Replace(b.String(), "## Scale: lab\n\nRaw: `lab-scale.ndjson`. ", "", 1)
	return s, nil
}

// genSuite: suite --dir DIR --sections LIST: sections of benchtool
// report's summary.md (failover, failover-sim, heal, messages, bully,
// steady, sim-scale), headings one level down, without the plots.
func genSuite(root string, args []string) (string, error) {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	dir := fs.String("dir", "", "a results directory of benchtool suite")
	sections := fs.String("sections", "", "comma-separated")
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	r, err := readReport(rootPath(root, *dir))
	if err != nil {
		return "", err
	}
	all := map[string]func(*strings.Builder){
		"failover": r.failover, "failover-sim": r.failoverSim, "heal": r.heal, "messages": r.messages,
		"bully": r.bullyRing, "steady": r.steady, "sim-scale": r.simScale,
	}
	var b strings.Builder
	for _, s := range strings.Split(*sections, ",") {
		f := all[s]
		if f == nil {
			return "", fmt.Errorf("no section %q", s)
		}
		f(&b)
	}
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "#") {
			l = "#" + l
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n"), nil
}

// compareCols are the first table's columns, in order.
var compareCols = []struct{ peer, title string }{
	{"groupd", "groupd"}, {"corosync", "corosync"}, {"keepalived", "keepalived"}, {"serf", "serf"}, {"jgroups", "JGroups"},
}

// genCompare: compare --peers FILE --env FILE [--safe FILE,FILE] [--short]:
// the first table: every peer on every measure, p50 (min–max) and the
// ratio to groupd's p50. Times from the peers run; idle cost over the
// nodes of its idle window; safe failover from exclusive runs' kill
// rounds (takeover), for the peers that have a quorum.
func genCompare(root string, args []string) (string, error) {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	in := fs.String("peers", "", "peers NDJSON (benchtool peers run)")
	env := fs.String("env", "", "the env.txt of that run")
	safe := fs.String("safe", "", "exclusive NDJSON files with kill rounds, comma-separated")
	short := fs.Bool("short", false, "README's five-row table")
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	d, err := readPeersFile(root, *in)
	if err != nil {
		return "", err
	}
	envText := ""
	if *env != "" {
		b, err := os.ReadFile(rootPath(root, *env))
		if err != nil {
			return "", err
		}
		envText = string(b)
	}
	n := 0
	for _, r := range d.results {
		n = max(n, r.N)
	}
	times := func(peer, kind string, split bool) []float64 {
		var xs []float64
		for _, r := range d.results {
			if r.N != n || r.Peer != peer || r.Kind != kind {
				continue
			}
			if split {
				if r.SplitS != nil {
					xs = append(xs, *r.SplitS)
				}
				continue
			}
			xs = append(xs, r.Seconds)
		}
		return xs
	}
	idle := func(peer string, f func(NodeCost) float64) []float64 {
		var last *PeerIdle
		for i := range d.idle {
			if d.idle[i].N == n && d.idle[i].Peer == peer {
				last = &d.idle[i]
			}
		}
		if last == nil {
			return nil
		}
		var xs []float64
		for _, c := range last.Nodes {
			xs = append(xs, f(c))
		}
		return xs
	}
	safeBy := map[string][]float64{}
	var safeSay []string
	if *safe != "" {
		for _, p := range strings.Split(*safe, ",") {
			rounds, _, envs, err := readExclFiles(root, p)
			if err != nil {
				return "", err
			}
			count := map[string]int{}
			var loads [][3]float64
			for _, r := range rounds {
				// Only the peers with a quorum: keepalived's kill rounds
				// are its plain failover (row 1).
				if r.Fault == "kill" && r.N == n && r.TakeoverS != nil && (r.Peer == "groupd" || r.Peer == "corosync") {
					safeBy[r.Peer] = append(safeBy[r.Peer], *r.TakeoverS)
					count[r.Peer]++
					loads = append(loads, r.Load)
				}
			}
			var who []string
			for _, c := range compareCols {
				if count[c.peer] > 0 {
					who = append(who, fmt.Sprintf("%s %d", c.title, count[c.peer]))
				}
			}
			if len(who) > 0 {
				safeSay = append(safeSay, fmt.Sprintf("%s kill rounds of %s, 1-min load %s",
					strings.Join(who, " and "), exclSourceSay(p, envs), loadSpan(loads)))
			}
		}
	}
	type row struct {
		title string
		unit  func(float64) string
		vals  func(peer string) []float64
		dash  map[string]string // peer -> footnote mark when it has no figure
	}
	secs := func(v float64) string { return fsec(v) }
	rows := []row{
		{"failover, s ¹", secs, func(p string) []float64 { return times(p, "failover", false) }, nil},
		{"safe failover, s ²", secs, func(p string) []float64 { return safeBy[p] }, map[string]string{"keepalived": "³", "serf": "³", "jgroups": "³"}},
		{"split detection, s", secs, func(p string) []float64 { return times(p, "heal", true) }, nil},
		{"heal, s", secs, func(p string) []float64 { return times(p, "heal", false) }, nil},
		{"cold start, s", secs, func(p string) []float64 { return times(p, "cold", false) }, nil},
		{"idle packets/s per node", func(v float64) string { return fmt.Sprintf("%.2f", v) }, func(p string) []float64 { return idle(p, func(c NodeCost) float64 { return c.TxPktsS }) }, nil},
		{"idle CPU % of one core per node", func(v float64) string { return fmt.Sprintf("%.3f", v) }, func(p string) []float64 { return idle(p, func(c NodeCost) float64 { return c.CPUPct }) }, nil},
		{"RSS MiB per node", func(v float64) string { return fmt.Sprintf("%.1f", v) }, func(p string) []float64 { return idle(p, func(c NodeCost) float64 { return c.RSSKiB / 1024 }) }, nil},
	}
	cell := func(peer string, xs []float64, g []float64, f func(float64) string, withRange bool) string {
		if len(xs) == 0 {
			return ""
		}
		m := medianOf(xs)
		s := f(m)
		if withRange {
			s += fmt.Sprintf(" (%s–%s)", f(slices.Min(xs)), f(slices.Max(xs)))
		}
		if len(g) > 0 && peer != "groupd" {
			s += " " + ratio(m, medianOf(g))
		}
		return s
	}
	var b strings.Builder
	if *short {
		// README: one row per implementation.
		b.WriteString(fmt.Sprintf("| N = %d, p50 | failover | heal | idle packets/s per node | RSS MiB |\n|---|---|---|---|---|\n", n))
		for _, c := range compareCols {
			var cells []string
			for _, k := range []int{0, 3, 5, 7} {
				r := rows[k]
				s := cell(c.peer, r.vals(c.peer), r.vals("groupd"), r.unit, false)
				if s == "" {
					s = "—"
				}
				cells = append(cells, s)
			}
			fmt.Fprintf(&b, "| %s | %s |\n", c.title, strings.Join(cells, " | "))
		}
		// The README keeps its lines within 100 columns (docs' TestREADMEWidth).
		caption := fmt.Sprintf("Seconds unless named; ×: against groupd. %s; details in [BENCHMARKS.md](BENCHMARKS.md).", envSay(envText, d))
		b.WriteString("\n" + wrapWords(caption, 100) + "\n")
		return b.String(), nil
	}
	fmt.Fprintf(&b, "| N = %d: p50 (min–max) × groupd |", n)
	for _, c := range compareCols {
		fmt.Fprintf(&b, " %s |", c.title)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(compareCols)) + "\n")
	unmeasured := false
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s |", r.title)
		g := r.vals("groupd")
		for _, c := range compareCols {
			s := cell(c.peer, r.vals(c.peer), g, r.unit, true)
			if s == "" {
				mark := r.dash[c.peer]
				if mark == "" {
					mark, unmeasured = "⁴", true
				}
				s = "— " + mark
			}
			fmt.Fprintf(&b, " %s |", s)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	counts := map[string]int{}
	for _, r := range d.results {
		if r.N == n {
			counts[r.Peer+" "+r.Kind]++
		}
	}
	fmt.Fprintf(&b, "%s. Trials per peer: %s. Idle: one %s window, the cell's range is over the %d nodes.\n\n",
		envSay(envText, d), trialsSay(counts), idleWindowSay(d, n), n)
	b.WriteString("¹ serf has no leader: its failover kills node N and times membership convergence " +
		"(every survivor's alive members are exactly the survivors).\n")
	fmt.Fprintf(&b, "² Safe failover: kill -9 of the primary leader until another node answers primary leader, with a quorum "+
		"(groupd `--expect %d`, corosync votequorum): %s.\n", n, strings.Join(safeSay, "; "))
	b.WriteString("³ No quorum to wait for: keepalived's failover (row 1) is all it has; serf has no leader; " +
		"JGroups' packaged udp.xml has no quorum.\n")
	if unmeasured {
		b.WriteString("⁴ Not measured in this run.\n")
	}
	var noted []string
	for _, c := range compareCols {
		for _, x := range d.notes {
			if x.Peer == c.peer && (x.N == n || x.N == 0) {
				noted = append(noted, c.title)
				break
			}
		}
	}
	if len(noted) > 0 {
		fmt.Fprintf(&b, "The run's notes (failed trials, and what followed) on %s are under the run's full tables.\n", strings.Join(noted, ", "))
	}
	return b.String(), nil
}

// envSay is the run's date, groupd's commit and the load, from env.txt
// and the trials' load figures.
func envSay(env string, d peersData) string {
	get := func(key string) string {
		for _, l := range strings.Split(env, "\n") {
			if v, ok := strings.CutPrefix(l, key+":"); ok {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	started := get("started")
	commit := strings.Fields(get("groupd") + " ?")[0]
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range d.results {
		lo, hi = math.Min(lo, r.Load[0]), math.Max(hi, r.Load[0])
	}
	for _, r := range d.idle {
		lo, hi = math.Min(lo, r.Load[0]), math.Max(hi, r.Load[0])
	}
	date := started
	if len(started) >= 16 {
		date = started[:10] + " " + started[11:16] + " UTC"
	}
	return fmt.Sprintf("Run of %s, groupd at `%s`, 2 cores shared with other work: 1-min load %.2f–%.2f over the run (each peer's in the full tables)", date, commit, lo, hi)
}

func trialsSay(counts map[string]int) string {
	var parts []string
	for _, c := range compareCols {
		parts = append(parts, fmt.Sprintf("%s %d/%d/%d", c.title, counts[c.peer+" failover"], counts[c.peer+" heal"], counts[c.peer+" cold"]))
	}
	return strings.Join(parts, ", ") + " (failover/heal/cold)"
}

func idleWindowSay(d peersData, n int) string {
	for _, x := range d.idle {
		if x.N == n {
			return fmt.Sprintf("%.0f s", x.WindowS)
		}
	}
	return "—"
}

// exclSourceSay names an exclusive run: its file, date and groupd commit.
func exclSourceSay(path string, envs []ExclEnv) string {
	s := "`" + filepath.Base(filepath.Dir(path)) + "/" + filepath.Base(path) + "`"
	for _, e := range envs {
		commit := ""
		if f := strings.Fields(e.Versions["groupd"]); len(f) > 0 {
			commit = f[0]
		} else if _, after, ok := strings.Cut(e.Command, "--commit "); ok {
			commit = strings.Fields(after)[0]
		}
		s += fmt.Sprintf(" (%s", e.Started.UTC().Format("2006-01-02 15:04 UTC"))
		if commit != "" {
			s += ", groupd at `" + commit + "`"
		}
		s += ")"
		break
	}
	return s
}

// wrapWords breaks text into lines of at most width characters, between
// words (a longer word gets a line of its own).
func wrapWords(text string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
