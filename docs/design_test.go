// Package docs holds the tests that keep the documentation true: design.md's
// package table (design_test.go), and the README's length, width and links
// (readme_test.go).
package docs

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/groupd/groupd/"

// imports maps every directory of the module with Go files other than
// tests to what they import from the module (directories relative to the
// module root, without a trailing slash).
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != ".." || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel("..", filepath.Dir(p))
		if _, ok := out[dir]; !ok {
			out[dir] = []string{}
		}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if rest, ok := strings.CutPrefix(path, module); ok && !slices.Contains(out[dir], rest) {
				out[dir] = append(out[dir], rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPackageTable: every package of the module has a row in the table of
// design.md §2, and a row's imports (the names in backquotes) are what its
// packages import from the module, no more, no less.
func TestPackageTable(t *testing.T) {
	b, err := os.ReadFile("design.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "| package | owns | imports |")
	if start < 0 {
		t.Fatal("design.md has no package table")
	}
	quoted := regexp.MustCompile("`([^`]+)`")
	names := func(cell string) []string {
		var out []string
		for _, m := range quoted.FindAllStringSubmatch(cell, -1) {
			out = append(out, strings.TrimSuffix(m[1], "/"))
		}
		return out
	}
	actual := imports(t)
	named := map[string]bool{}
	for _, line := range strings.Split(text[start:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			t.Errorf("row %q: want three cells", line)
			continue
		}
		var want []string
		for _, pkg := range names(cells[1]) {
			if fi, err := os.Stat(filepath.Join("..", pkg)); err != nil || !fi.IsDir() {
				t.Errorf("row %q names %s, which is no directory", cells[1], pkg)
			}
			named[pkg] = true
			for _, im := range actual[pkg] {
				if !slices.Contains(want, im) {
					want = append(want, im)
				}
			}
		}
		got := names(cells[3])
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("row %s: the table says it imports %v; its packages import %v", strings.TrimSpace(cells[1]), got, want)
		}
	}
	for dir := range actual {
		if !named[dir] {
			t.Errorf("package %s has no row in design.md's package table", dir)
		}
	}
}
