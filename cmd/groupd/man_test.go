package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite docs/man from the command line's definition (TestManPages)")

// TestManPages: docs/man holds exactly the pages the command line's
// definition gives now, so that the man pages cannot drift from --help.
// go generate ./cmd/groupd (go test -run ^TestManPages$ . -args -rewrite)
// rewrites them.
func TestManPages(t *testing.T) {
	pages, err := manPages()
	if err != nil {
		t.Fatal(err)
	}
	if *rewrite {
		old, _ := filepath.Glob(filepath.Join(manDir, "*.1"))
		for _, p := range old {
			if _, ok := pages[filepath.Base(p)]; !ok {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		}
		for name, b := range pages {
			if err := os.WriteFile(filepath.Join(manDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	have, err := filepath.Glob(filepath.Join(manDir, "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range have {
		have[i] = filepath.Base(p)
	}
	if want := sortedPageNames(pages); !slices.Equal(have, want) {
		t.Errorf("docs/man has %q, the definition gives %q; run go generate ./cmd/groupd", have, want)
	}
	for _, name := range sortedPageNames(pages) {
		b, err := os.ReadFile(filepath.Join(manDir, name))
		if err != nil {
			continue // reported above
		}
		if !bytes.Equal(b, pages[name]) {
			t.Errorf("docs/man/%s differs from what the definition gives; run go generate ./cmd/groupd", name)
		}
	}
}

// helpFlag finds a flag's names in a help line: "   --port PORT  ..." or
// "   --output FILE, -o FILE" (urfave/cli) or "   --help, -h".
var helpFlag = regexp.MustCompile(`^   (-{1,2}[a-z][a-z0-9-]*)((?:, -{1,2}[a-z][a-z0-9-]*)*)`)

// TestManPagesFlags: every flag the help of a command lists is in that
// command's page, and every page names its command's usage line.
func TestManPagesFlags(t *testing.T) {
	pages, err := manPages()
	if err != nil {
		t.Fatal(err)
	}
	helps := map[string][]string{"groupd.1": {"--help"}}
	for _, c := range newApp([]string{"groupd"}, nil, nil).Commands {
		helps["groupd-"+c.Name+".1"] = []string{c.Name, "--help"}
	}
	if len(helps) != len(pages) {
		t.Errorf("%d helps, %d pages", len(helps), len(pages))
	}
	for name, args := range helps {
		_, out, _ := runCLI(t, args...)
		page := manPlain(string(pages[name]))
		n := 0
		for _, line := range strings.Split(out, "\n") {
			m := helpFlag.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			for _, f := range append([]string{m[1]}, strings.Split(strings.TrimPrefix(m[2], ", "), ", ")...) {
				if f == "" {
					continue
				}
				n++
				if !regexp.MustCompile(`(^|[^a-z-])` + regexp.QuoteMeta(f) + `([^a-z-]|$)`).MatchString(page) {
					t.Errorf("%s lacks %s, which %q lists", name, f, args)
				}
			}
		}
		if n == 0 {
			t.Errorf("found no flag in the help of %q", args)
		}
	}
}

// manPlain strips roff's font changes and escapes from a page, enough to
// search it for flags.
func manPlain(s string) string {
	s = regexp.MustCompile(`\\f[BIRP]`).ReplaceAllString(s, "")
	return strings.NewReplacer(`\-`, "-", `\&`, "", `\\`, `\`).Replace(s)
}

// TestManRenders renders every page with groff where it is installed, and
// checks it gives no warning. (man ./docs/man/groupd.1 shows a page.)
func TestManRenders(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff is missing (apt-get install -y groff): the pages are not rendered")
	}
	pages, err := manPages()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sortedPageNames(pages) {
		cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
		cmd.Stdin = bytes.NewReader(pages[name])
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("groff %s: %v\n%s", name, err, out)
		}
	}
}
