package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/urfave/cli/v2"
)

// Man pages: groupd(1), and groupd-COMMAND(1) for every command, written
// from the command line's definition (names, usages, descriptions, flags
// with their categories, defaults and variables, as the help prints them)
// as markdown and rendered to roff by go-md2man, the renderer urfave/cli's
// own App.ToMan uses. ToMan itself writes one page for the whole program,
// lists flags without their categories or variables, and its synopsis
// repeats every flag of every command; so the pages are made here.
//
// docs/man holds them. TestManPages fails when they differ from what the
// definition gives now; regenerate them with
//
//go:generate go test -run ^TestManPages$ . -args -rewrite

// manDir is where the pages are, from this package's directory.
const manDir = "../../docs/man"

// manPages returns every page by file name (groupd.1, groupd-run.1, ...).
func manPages() (map[string][]byte, error) {
	app := newApp([]string{"groupd"}, io.Discard, io.Discard)
	app.Setup()
	pages := map[string][]byte{}
	var cmds []*cli.Command
	for _, c := range app.Commands {
		if !c.Hidden {
			cmds = append(cmds, c)
		}
	}
	seeAlso := func(except string) string {
		var refs []string
		for _, n := range append([]string{"groupd"}, commandPages(cmds)...) {
			if n != except {
				refs = append(refs, "**"+n+"**(1)")
			}
		}
		return strings.Join(refs, ", ")
	}

	var b strings.Builder
	manHeader(&b, "groupd", app.Usage)
	fmt.Fprintf(&b, "# SYNOPSIS\n\n**groupd** *command* [*options*] [*arguments*]\n\n**groupd** **--version** | **--help**\n\n")
	fmt.Fprintf(&b, "# DESCRIPTION\n\n%s\n\n", manText(app.Description))
	fmt.Fprintf(&b, "# COMMANDS\n\n")
	for _, cat := range app.VisibleCategories() {
		if cat.Name() != "" {
			fmt.Fprintf(&b, "### %s\n\n", manEscape(cat.Name()))
		}
		for _, c := range cat.VisibleCommands() {
			fmt.Fprintf(&b, "**groupd %s** %s\n:   %s. See **groupd-%s**(1).\n\n", c.Name, manEscape(strings.TrimSpace(c.ArgsUsage)), manEscape(c.Usage), c.Name)
		}
	}
	fmt.Fprintf(&b, "# OPTIONS\n\n")
	manFlags(&b, app.VisibleFlagCategories(), app.VisibleFlags())
	fmt.Fprintf(&b, "# SEE ALSO\n\n%s\n", seeAlso("groupd"))
	pages["groupd.1"] = manRoff(md2man.Render([]byte(b.String())))

	for _, c := range cmds {
		if !c.HideHelp {
			if l := lookupFlag(c.Flags, "help"); l == nil {
				c.Flags = append(c.Flags, cli.HelpFlag)
			}
		}
		name := "groupd-" + c.Name
		var b strings.Builder
		manHeader(&b, name, c.Usage)
		args := strings.TrimSpace(c.ArgsUsage)
		if args != "" {
			args = " " + manEscape(args)
		}
		fmt.Fprintf(&b, "# SYNOPSIS\n\n**groupd %s** [*options*]%s\n\n", c.Name, args)
		if c.Description != "" {
			fmt.Fprintf(&b, "# DESCRIPTION\n\n%s\n\n", manText(c.Description))
		}
		fmt.Fprintf(&b, "# OPTIONS\n\n")
		manFlags(&b, c.VisibleFlagCategories(), c.VisibleFlags())
		fmt.Fprintf(&b, "# SEE ALSO\n\n%s\n", seeAlso(name))
		pages[name+".1"] = manRoff(md2man.Render([]byte(b.String())))
	}
	return pages, nil
}

// manRoff finishes go-md2man's roff: hyphens in the text become \-, the
// minus sign, so that a flag copied from the page is --port on any
// terminal (groff may print a bare - as a Unicode hyphen); and hyphenation
// is turned off after .TH, which turns it back on, and for the paragraphs
// to come (HY; go-md2man's .nh comes before .TH: groupd-sta-tus(1) was
// broken across lines).
func manRoff(roff []byte) []byte {
	lines := strings.Split(string(roff), "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, ".TH "):
			lines[i] = l + "\n.nr HY 0\n.nh"
		case strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'"):
		default:
			lines[i] = escapeHyphens(l)
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// escapeHyphens writes every hyphen of a text line that no backslash
// escapes as \-.
func escapeHyphens(l string) string {
	var b strings.Builder
	for i := 0; i < len(l); i++ {
		switch {
		case l[i] == '\\' && i+1 < len(l):
			b.WriteString(l[i : i+2]) // an escape: \-, \fB, \\ ...
			i++
		case l[i] == '-':
			b.WriteString(`\-`)
		default:
			b.WriteByte(l[i])
		}
	}
	return b.String()
}

// commandPages names the pages of cmds: groupd-run, ...
func commandPages(cmds []*cli.Command) []string {
	var names []string
	for _, c := range cmds {
		names = append(names, "groupd-"+c.Name)
	}
	return names
}

// manHeader writes the title line (go-md2man's .TH: name, section, date,
// source, manual; no date, so that a page changes only with its text) and
// NAME.
func manHeader(b *strings.Builder, name, usage string) {
	title := fmt.Sprintf("%s 1 \"\" \"groupd %s\" \"groupd manual\"", name, release)
	fmt.Fprintf(b, "%s\n%s\n\n# NAME\n\n%s - %s\n\n", title, strings.Repeat("=", len(title)), name, manEscape(usage))
}

// manFlags writes the options as the help lists them: by category (by
// name), or in order when there are none; each with its names, its
// placeholder, its usage, default and variable (flagParts, as the help).
func manFlags(b *strings.Builder, cats []cli.VisibleFlagCategory, flags []cli.Flag) {
	write := func(f cli.Flag) {
		names, placeholder, words := flagParts(f)
		var ns []string
		for _, n := range names {
			ns = append(ns, "**"+n+"**")
		}
		term := strings.Join(ns, ", ")
		if placeholder != "" {
			term += " *" + manEscape(placeholder) + "*"
		}
		fmt.Fprintf(b, "%s\n:   %s\n\n", term, manEscape(strings.Join(words, " ")))
	}
	if len(cats) == 0 {
		for _, f := range flags {
			write(f)
		}
		return
	}
	for _, cat := range cats {
		if cat.Name() != "" {
			fmt.Fprintf(b, "### %s\n\n", manEscape(cat.Name()))
		}
		for _, f := range cat.Flags() {
			write(f)
		}
	}
}

// manText turns a help description into markdown paragraphs: lines
// joined into paragraphs (the pager wraps them), and a paragraph whose
// lines are all indented (commands to type) kept as it is, as code.
func manText(s string) string {
	var out []string
	for _, para := range regexp.MustCompile(`\n[ \t]*\n`).Split(strings.TrimSpace(s), -1) {
		lines := strings.Split(para, "\n")
		indented := true
		for _, l := range lines {
			indented = indented && strings.HasPrefix(l, " ")
		}
		if indented {
			for i, l := range lines {
				lines[i] = "    " + strings.TrimLeft(l, " ")
			}
			out = append(out, strings.Join(lines, "\n"))
			continue
		}
		for i, l := range lines {
			lines[i] = manEscape(strings.TrimSpace(l))
		}
		out = append(out, strings.Join(lines, "\n"))
	}
	return strings.Join(out, "\n\n")
}

// manEscape escapes what markdown would read as markup in help text: *,
// _, <, >, [, ], #, \ (backquotes stay: they mark code in descriptions).
func manEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\*_<>[]#`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sortedPageNames returns the names of pages, sorted.
func sortedPageNames(pages map[string][]byte) []string {
	names := make([]string, 0, len(pages))
	for n := range pages {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
