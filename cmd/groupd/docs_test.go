package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocsCommands: docs/commands.md, the manual's page on the command
// line, names every command, lists groupd run's flag groups in the order
// groupd run --help prints them, and names every flag of those groups but
// the protocol intervals (it says there is one flag per interval).
func TestDocsCommands(t *testing.T) {
	b, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	app := newApp([]string{"groupd"}, io.Discard, io.Discard)
	app.Setup()
	for _, c := range app.VisibleCommands() {
		if !strings.Contains(page, "`groupd "+c.Name) {
			t.Errorf("docs/commands.md does not name groupd %s", c.Name)
		}
	}
	run := app.Command("run")
	if run == nil {
		t.Fatal("no run command")
	}
	var want []string
	for _, cat := range run.VisibleFlagCategories() {
		if cat.Name() == "" {
			continue // --help
		}
		want = append(want, cat.Name())
		if cat.Name() == "Protocol timing" {
			continue
		}
		for _, f := range cat.Flags() {
			if name := "`--" + f.Names()[0]; !strings.Contains(page, name) {
				t.Errorf("docs/commands.md does not name %s`, a flag of groupd run's %s group",
					name[1:], cat.Name())
			}
		}
	}
	i := strings.Index(page, "`groupd run --help` lists every flag")
	if i < 0 {
		t.Fatal("docs/commands.md lacks the paragraph on groupd run --help's groups")
	}
	para, _, _ := strings.Cut(page[i:], "\n\n")
	var got []string
	bold := regexp.MustCompile(`\*\*([^*]+)\*\*`)
	for _, m := range bold.FindAllStringSubmatch(strings.Join(strings.Fields(para), " "), -1) {
		got = append(got, m[1])
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("docs/commands.md lists groupd run's flag groups as\n  %s\ngroupd run --help prints\n  %s",
			strings.Join(got, ", "), strings.Join(want, ", "))
	}
}
