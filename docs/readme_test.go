package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The README is what a newcomer meets first: it must fit a few screens
// and start with what groupd is and how to build, run and test it.
const (
	readmeMaxLines   = 200
	readmeFirstLines = 30  // the newcomer commands sit within these
	readmeMaxColumns = 100 // every line: prose, code and tables alike
)

// newcomerCommands are the README's first commands, exactly as written:
// .ci/run runs the same go test ./..., so the README's command is CI's.
var newcomerCommands = []string{
	"go build -o groupd ./cmd/groupd",
	"./groupd run",
	"go test ./...",
}

func readme(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestREADMEShort: README.md has at most 200 lines, and the newcomer
// commands are lines of a code block within its first 30, each at the
// start of its line.
func TestREADMEShort(t *testing.T) {
	lines := readme(t)
	if len(lines) > readmeMaxLines {
		t.Errorf("README.md has %d lines; at most %d (move the text into docs/)",
			len(lines), readmeMaxLines)
	}
	head := lines[:min(len(lines), readmeFirstLines)]
	for _, cmd := range newcomerCommands {
		found := false
		for _, l := range head {
			if l == cmd || strings.HasPrefix(l, cmd+" ") {
				found = true
			}
		}
		if !found {
			t.Errorf("README.md's first %d lines lack the command %q at the start of a line",
				readmeFirstLines, cmd)
		}
	}
}

// TestREADMEWidth: no line of README.md is wider than 100 columns, code
// blocks and tables included: GitHub scrolls wider code sideways, and a
// terminal's less wraps it. Columns are runes, a tab counting 8.
func TestREADMEWidth(t *testing.T) {
	wide := 0
	for i, l := range readme(t) {
		if w := columns(l); w > readmeMaxColumns {
			wide++
			if wide <= 10 {
				t.Errorf("README.md:%d is %d columns wide; at most %d", i+1, w, readmeMaxColumns)
			}
		}
	}
	if wide > 10 {
		t.Errorf("... %d lines wider than %d columns in all", wide, readmeMaxColumns)
	}
}

// columns is the width of a line, a tab moving to the next multiple of 8.
func columns(l string) int {
	w := 0
	for _, r := range l {
		if r == '\t' {
			w += 8 - w%8
		} else {
			w++
		}
	}
	return w
}

// manualFiles are the markdown files whose links TestLinks checks: the
// README, CHANGES.md and the manual in docs/ (docs/man/README.md too).
func manualFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"../README.md", "../CHANGES.md"}
	for _, pat := range []string{"*.md", "*/*.md"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

var (
	fence      = regexp.MustCompile("(?ms)^```.*?^```[^\n]*$")
	codeSpan   = regexp.MustCompile("`[^`\n]*`")
	inlineLink = regexp.MustCompile(`\]\(([^()\s]*)(?:\s+"[^"]*")?\)`)
	heading    = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	linkText   = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// TestLinks: every relative link in README.md, CHANGES.md and docs/ names
// a file or directory that exists, and a #fragment into a markdown file
// (or the same file) names one of its headings, by GitHub's rules.
func TestLinks(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		a := headingAnchors(string(b))
		anchors[path] = a
		return a
	}
	checked := 0
	for _, file := range manualFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := fence.ReplaceAllString(string(b), "")
		text = codeSpan.ReplaceAllString(text, "")
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, frag, _ := strings.Cut(target, "#")
			full := file
			if path != "" {
				full = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(full); err != nil {
					t.Errorf("%s: link %q: no such file", file, target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(full, ".md") {
				continue
			}
			if !anchorsOf(full)[frag] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", file, target, full, frag)
			}
		}
	}
	if checked == 0 {
		t.Error("found no relative links: the parser is broken")
	}
}

// headingAnchors returns the anchors GitHub gives a markdown text's
// headings: the text as rendered (code spans' text, links' text), lower
// case, without punctuation but hyphens and underscores, spaces as hyphens;
// a repeated anchor gets -1, -2, ...
func headingAnchors(md string) map[string]bool {
	out := map[string]bool{}
	md = fence.ReplaceAllString(md, "")
	for _, m := range heading.FindAllStringSubmatch(md, -1) {
		a := slug(m[1])
		base, n := a, 0
		for out[a] {
			n++
			a = base + "-" + itoa(n)
		}
		out[a] = true
	}
	return out
}

func slug(h string) string {
	h = linkText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r),
			unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func itoa(n int) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			break
		}
	}
	return string(buf[i:])
}

// TestSlug pins the GitHub anchor rules TestLinks relies on.
func TestSlug(t *testing.T) {
	for _, c := range [][2]string{
		{"5. Defaults (the `lan` profile; every value is a flag)",
			"5-defaults-the-lan-profile-every-value-is-a-flag"},
		{"3.2 A node without a group (boot window)", "32-a-node-without-a-group-boot-window"},
		{"`groupd run`'s flags", "groupd-runs-flags"},
		{"My nodes don't see each other", "my-nodes-dont-see-each-other"},
		{"One leader at a time: `--expect`, the lease", "one-leader-at-a-time---expect-the-lease"},
		{"Bully vs ring among a failed coordinator's survivors",
			"bully-vs-ring-among-a-failed-coordinators-survivors"},
		{"[scripts](x.md) and more", "scripts-and-more"},
	} {
		if got := slug(c[0]); got != c[1] {
			t.Errorf("slug(%q) = %q, want %q", c[0], got, c[1])
		}
	}
	if utf8.RuneCountInString("…") != columns("…") {
		t.Error("columns counts bytes, not runes")
	}
}

// TestManualReachable: every page of the manual in docs/ is linked from
// README.md.
func TestManualReachable(t *testing.T) {
	text := strings.Join(readme(t), "\n")
	pages, err := filepath.Glob("*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in docs/: %v", err)
	}
	for _, p := range pages {
		if !strings.Contains(text, "](docs/"+p+")") && !strings.Contains(text, "](docs/"+p+"#") {
			t.Errorf("README.md does not link docs/%s", p)
		}
	}
}

// TestCIRunsREADMECommand: .ci/run runs the README's test command as
// written, so what a newcomer runs is what CI runs.
func TestCIRunsREADMECommand(t *testing.T) {
	b, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "go test ./..." {
			return
		}
	}
	t.Error(`.ci/run has no line "go test ./...", the README's test command`)
}

// TestCompareBlock: README.md's comparison is one plain markdown table
// between <!-- compare:begin --> and <!-- compare:end -->, a row for
// groupd and each peer, and its caption, so that benchtool report can
// regenerate the block.
func TestCompareBlock(t *testing.T) {
	text := strings.Join(readme(t), "\n")
	const begin, end = "<!-- compare:begin -->\n", "\n<!-- compare:end -->"
	if strings.Count(text, begin) != 1 || strings.Count(text, end) != 1 {
		t.Fatal("README.md needs exactly one compare:begin and one compare:end line")
	}
	_, rest, _ := strings.Cut(text, begin)
	block, _, _ := strings.Cut(rest, end)
	// The table, then (after a blank line) the caption that says which
	// run it is from.
	table, _, _ := strings.Cut(block, "\n\n")
	rows := strings.Split(table, "\n")
	if len(rows) != 7 {
		t.Fatalf("the compare block has %d lines; want a header, a separator and 5 rows:\n%s",
			len(rows), block)
	}
	cols := strings.Count(rows[0], "|")
	for i, r := range rows {
		if !strings.HasPrefix(r, "|") || !strings.HasSuffix(r, "|") || strings.Count(r, "|") != cols {
			t.Errorf("compare block line %d is not a row of the table: %q", i+1, r)
		}
	}
	if !regexp.MustCompile(`^\|(---\|)+$`).MatchString(rows[1]) {
		t.Errorf("compare block line 2 is not a separator: %q", rows[1])
	}
	for i, peer := range []string{"groupd", "corosync", "keepalived", "serf", "JGroups"} {
		if !strings.HasPrefix(rows[2+i], "| "+peer) {
			t.Errorf("compare block row %d is not %s's: %q", i+1, peer, rows[2+i])
		}
	}
	if h := strings.ToLower(rows[0]); !strings.Contains(h, "p50") || !strings.Contains(h, "| failover |") {
		t.Errorf("the compare table has no failover p50 column: %q", rows[0])
	}
}
