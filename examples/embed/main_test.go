package main

import (
	"context"
	"log"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/internal/testkit"
)

// TestDemo runs the program's demo: alpha leads, beta takes the lead and
// alpha names it, beta is killed, alpha takes over within a couple of
// seconds, and the nodes say when their channels end.
func TestDemo(t *testing.T) {
	var out testkit.SyncBuffer // safe for the log package and the test
	log.SetOutput(&out)
	log.SetFlags(0)
	defer log.SetOutput(os.Stderr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := demo(ctx); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Logf("output:\n%s", got)
	// In this order (other lines may come between).
	want := []string{
		`^alpha: leading \(term \d+\.\d+\)$`,
		`^killing beta, the leader$`,
		`^alpha: leading \(term \d+\.\d+\)$`,
		`^alpha took over (\d+ms|[\d.]+s) after the kill$`,
		`^alpha: no longer leading$`,
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	i := 0
	for _, l := range lines {
		if i < len(want) && regexp.MustCompile(want[i]).MatchString(l) {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("the output lacks a line matching %s, in order, after the lines before it", want[i])
	}
	// Before or after the kill: alpha may hear of beta's lead late.
	for _, w := range []string{`(?m)^beta: leading \(term \d+\.\d+\)$`, `(?m)^alpha: beta \(node \d+\) leads$`} {
		if !regexp.MustCompile(w).MatchString(got) {
			t.Errorf("the output lacks a line matching %s", w)
		}
	}
	m := regexp.MustCompile(`alpha took over (.*) after the kill`).FindStringSubmatch(got)
	if m != nil {
		if d, err := time.ParseDuration(m[1]); err != nil || d > 2*time.Second {
			t.Errorf("alpha took over %s after the kill (fast profile: T_failover 0.4 s)", m[1])
		}
	}
}

// TestDocs: docs/embedding.md's example is this program's code, word for
// word: each of its Go blocks is in main.go.
func TestDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/embedding.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(string(doc))
	if len(blocks) == 0 {
		t.Fatal("docs/embedding.md has no Go block")
	}
	for _, b := range blocks {
		if !strings.Contains(string(src), b) {
			t.Errorf("docs/embedding.md's Go block is not in examples/embed/main.go as written:\n%s", b)
		}
	}
}

// TestREADME: the README's short embedding sample is main.go's node,
// shortened: its lines, indentation aside, are lines of main.go in the same
// order, but for lines starting "// ..." that stand for code left out.
func TestREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(string(readme))
	if len(blocks) != 1 {
		t.Fatalf("README.md has %d Go blocks; want the one embedding sample", len(blocks))
	}
	lines := strings.Split(string(src), "\n")
	next := 0
	for _, l := range strings.Split(strings.TrimSuffix(blocks[0], "\n"), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "// ...") {
			continue
		}
		found := false
		for ; next < len(lines); next++ {
			if strings.TrimSpace(lines[next]) == l {
				found, next = true, next+1
				break
			}
		}
		if !found {
			t.Errorf("README.md's embedding sample line is not in examples/embed/main.go, "+
				"in that order: %q", l)
			return
		}
	}
}

// goBlocks returns the contents of a markdown text's Go blocks.
func goBlocks(md string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return out
}
