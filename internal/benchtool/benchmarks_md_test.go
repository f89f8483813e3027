//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The repository's root, from this package's directory.
const repoRoot = "../.."

// TestBenchmarksGenerated: every generated block of BENCHMARKS.md is what
// `benchtool report --benchmarks BENCHMARKS.md` writes from the results
// it names, now (issue 34).
func TestBenchmarksGenerated(t *testing.T) {
	old, err := os.ReadFile(filepath.Join(repoRoot, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	text, names, err := rewriteGenerated(string(old), repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("BENCHMARKS.md has no generated block")
	}
	if text != string(old) {
		a, b := strings.Split(string(old), "\n"), strings.Split(text, "\n")
		for i := 0; i < max(len(a), len(b)); i++ {
			var x, y string
			if i < len(a) {
				x = a[i]
			}
			if i < len(b) {
				y = b[i]
			}
			if x != y {
				t.Fatalf("BENCHMARKS.md line %d is not what its results give:\n  file:      %s\n  generated: %s\n"+
					"(go run ./internal/benchtool report --benchmarks BENCHMARKS.md rewrites the blocks)", i+1, x, y)
			}
		}
	}
}

// TestBenchmarksShape: the report answers first (issue 34).
func TestBenchmarksShape(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 300 {
		t.Errorf("BENCHMARKS.md has %d lines, more than 300", len(lines))
	}
	first := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "|") {
			first = i
			break
		}
	}
	if first < 0 || first >= 40 {
		t.Errorf("BENCHMARKS.md's first table starts at line %d, not within the first 40", first+1)
	}
	blocks, err := genBlocks(lines)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 || blocks[0].args[0] != "compare" || blocks[0].begin > first {
		t.Error("BENCHMARKS.md's first table is not the generated compare table")
	}
}

// TestBenchmarksProseFigures: a figure written in BENCHMARKS.md's prose
// (a number with a unit, or a ratio ×r) is one of the section's
// generated figures, or is in a results file the section names.
func TestBenchmarksProseFigures(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range checkProseFigures(string(b), repoRoot) {
		t.Error(bad)
	}
}

// TestProseFigureCheck: the checker itself catches a changed figure.
func TestProseFigureCheck(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "scripts/bench/results/D")
	if err := os.MkdirAll(res, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(res, "x.ndjson"), []byte(`{"kind":"x","seconds":0.7349,"rss_kib":18800}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(res, "y.txt"), []byte("gone after 3.7 ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "# B\n\n## Q\n\nResults: `scripts/bench/results/D/x.ndjson`, scripts/bench/results/D/y.txt.\n\n" +
		"Failover took 0.73 s (735 ms), RSS 18.4 MiB; exec's child went in 3.7 ms; `--hold 20s` is a flag.\n"
	if bad := checkProseFigures(doc, dir); len(bad) != 0 {
		t.Errorf("good figures refused: %v", bad)
	}
	for _, wrong := range []string{"0.74 s", "736 ms", "18.5 MiB", "3.8 ms"} {
		d := strings.Replace(doc, map[string]string{"0.74 s": "0.73 s", "736 ms": "735 ms", "18.5 MiB": "18.4 MiB", "3.8 ms": "3.7 ms"}[wrong], wrong, 1)
		if bad := checkProseFigures(d, dir); len(bad) != 1 {
			t.Errorf("%s: want one figure refused, got %v", wrong, bad)
		}
	}
	// A table's ratio does not vouch for a time, nor a time for a ratio.
	tab := "# B\n\n<!-- generated:t begin x -->\n| a | 0.56 | 1.65 ×2.95 |\n<!-- generated:t end -->\n\n"
	for _, c := range []struct {
		text string
		bad  int
	}{{"It took 0.56 s, ×2.95.", 0}, {"It took 2.95 s.", 1}, {"JGroups ×1.65.", 1}} {
		if bad := checkProseFigures(tab+c.text+"\n", dir); len(bad) != c.bad {
			t.Errorf("%q: want %d refused, got %v", c.text, c.bad, bad)
		}
	}
	// A section without named results has no figures to cite.
	if bad := checkProseFigures("# B\n\n## Q\n\nIt took 2.5 s.\n", dir); len(bad) != 1 {
		t.Errorf("a figure without results: want it refused, got %v", bad)
	}
}

var (
	// A figure: a number with a unit, or a ratio.
	figureRE = regexp.MustCompile(`(×\s?(\d+(?:\.\d+)?))|(?:^|[^\w.–-])(\d+(?:\.\d+)?)\s?(ms|s|MiB|KiB|%|pkts/s|packets/s|lapses)(?:[^\w/]|$)`)
	resultRE = regexp.MustCompile(`scripts/bench/results/[A-Za-z0-9_./-]*[A-Za-z0-9_/]`)
	numberRE = regexp.MustCompile(`\d+(?:\.\d+)?`)
	ratioRE  = regexp.MustCompile(`×\s?(\d+(?:\.\d+)?)`)
	codeRE   = regexp.MustCompile("`[^`]*`")
	linkRE   = regexp.MustCompile(`\]\([^)]*\)`)
)

// checkProseFigures lists every prose figure of doc that is neither in
// a generated block of its section nor in a results file the section
// names (paths under root).
func checkProseFigures(doc, root string) []string {
	lines := strings.Split(doc, "\n")
	blocks, err := genBlocks(lines)
	if err != nil {
		return []string{err.Error()}
	}
	inBlock := make([]bool, len(lines))
	for _, bl := range blocks {
		for i := bl.begin; i <= bl.end; i++ {
			inBlock[i] = true
		}
	}
	// Sections: from one "## " heading to the next; the text before the
	// first is a section too.
	var starts []int
	starts = append(starts, 0)
	for i, l := range lines {
		if strings.HasPrefix(l, "## ") && !inBlock[i] {
			starts = append(starts, i)
		}
	}
	starts = append(starts, len(lines))
	var bad []string
	for s := 0; s+1 < len(starts); s++ {
		sec := lines[starts[s]:starts[s+1]]
		// Figures as written in the generated blocks and named text
		// files; a ratio (×r) of a table only stands for a ratio, and
		// a ratio in the text is only one of the tables' ratios.
		var known, ratios []string
		var values []float64
		for k, l := range sec {
			i := starts[s] + k
			for _, p := range resultRE.FindAllString(l, -1) {
				ts, vs := resultFigures(filepath.Join(root, p))
				known, values = append(known, ts...), append(values, vs...)
			}
			if inBlock[i] {
				for _, m := range ratioRE.FindAllStringSubmatch(l, -1) {
					ratios = append(ratios, m[1])
				}
				known = append(known, numberRE.FindAllString(ratioRE.ReplaceAllString(l, ""), -1)...)
			}
		}
		fence := false
		for k, l := range sec {
			i := starts[s] + k
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				fence = !fence
				continue
			}
			if inBlock[i] || fence {
				continue
			}
			prose := linkRE.ReplaceAllString(codeRE.ReplaceAllString(l, ""), "")
			for _, m := range figureRE.FindAllStringSubmatch(prose, -1) {
				num, unit := m[2], ""
				ok := false
				if num == "" {
					num, unit = m[3], m[4]
					ok = figureKnown(num, unit, known, values)
				} else {
					ok = figureKnown(num, "", ratios, nil)
				}
				if !ok {
					bad = append(bad, fmt.Sprintf("BENCHMARKS.md line %d: %q is not in the section's generated tables or the results it names", i+1, strings.TrimSpace(m[0])))
				}
			}
		}
	}
	return bad
}

// figureKnown: num (as written, with its unit) is one of known, or one of
// values rounded to num's decimals (seconds also as ms, KiB also as MiB).
func figureKnown(num, unit string, known []string, values []float64) bool {
	x, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return false
	}
	for _, k := range known {
		if k == num {
			return true
		}
		if y, err := strconv.ParseFloat(k, 64); err == nil && y == x {
			return true
		}
	}
	dec := 0
	if _, frac, ok := strings.Cut(num, "."); ok {
		dec = len(frac)
	}
	p := math.Pow(10, float64(dec))
	scales := []float64{1}
	switch unit {
	case "ms":
		scales = append(scales, 1000)
	case "MiB":
		scales = append(scales, 1.0/1024)
	}
	for _, v := range values {
		for _, sc := range scales {
			if math.Round(v*sc*p) == math.Round(x*p) {
				return true
			}
		}
	}
	return false
}

// resultFigures reads a results file (or every file of a folder): its
// numbers as written (text) and, for NDJSON, every number of its objects.
func resultFigures(path string) (texts []string, values []float64) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil
	}
	if st.IsDir() {
		es, _ := os.ReadDir(path)
		for _, e := range es {
			if !e.IsDir() {
				ts, vs := resultFigures(filepath.Join(path, e.Name()))
				texts, values = append(texts, ts...), append(values, vs...)
			}
		}
		return texts, values
	}
	if strings.HasSuffix(path, ".gz") {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	nd := strings.HasSuffix(path, ".ndjson")
	for sc.Scan() {
		l := sc.Text()
		if nd {
			var v any
			if json.Unmarshal([]byte(l), &v) == nil {
				values = appendNumbers(values, v)
				continue
			}
		}
		texts = append(texts, numberRE.FindAllString(l, -1)...)
	}
	return texts, values
}

func appendNumbers(out []float64, v any) []float64 {
	switch x := v.(type) {
	case float64:
		out = append(out, x)
	case []any:
		for _, e := range x {
			out = appendNumbers(out, e)
		}
	case map[string]any:
		for _, e := range x {
			out = appendNumbers(out, e)
		}
	}
	return out
}

// TestReadmeCompareBlock: README's compare block gets the five-row table
// from BENCHMARKS.md's compare sources; a README without markers is left
// alone.
func TestReadmeCompareBlock(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := "# r\n\n" + readmeBegin + "\nold\n" + readmeEnd + "\n\nrest\n"
	got, ok, err := rewriteReadme(readme, string(b), repoRoot)
	if err != nil || !ok {
		t.Fatalf("rewriteReadme: ok %v, %v", ok, err)
	}
	var rows []string
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| N =") {
			rows = append(rows, strings.SplitN(l, " |", 2)[0][2:])
		}
	}
	if want := []string{"groupd", "corosync", "keepalived", "serf", "JGroups"}; strings.Join(rows, ",") != strings.Join(want, ",") {
		t.Errorf("rows %v, want %v", rows, want)
	}
	if !strings.HasSuffix(got, readmeEnd+"\n\nrest\n") || strings.Contains(got, "old") {
		t.Errorf("the block is not replaced in place:\n%s", got)
	}
	same, ok, err := rewriteReadme("# r\nno markers\n", string(b), repoRoot)
	if err != nil || ok || same != "# r\nno markers\n" {
		t.Errorf("a README without markers: ok %v, err %v, %q", ok, err, same)
	}
}
