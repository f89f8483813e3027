package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

// TestHelpWidth renders the help of groupd and of every command, and checks
// that no line is wider than helpWidth and that every flag is listed.
func TestHelpWidth(t *testing.T) {
	helps := [][]string{{"--help"}}
	for _, c := range newApp([]string{"groupd"}, nil, nil).Commands {
		helps = append(helps, []string{c.Name, "--help"})
	}
	if len(helps) < 7 {
		t.Fatalf("only %d helps to check", len(helps))
	}
	for _, args := range helps {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, args...)
			if code != exitOK || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			for i, line := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(line); n > helpWidth {
					t.Errorf("line %d is %d wide:\n%s", i+1, n, line)
				}
			}
			if !strings.Contains(out, "--help, -h") {
				t.Errorf("--help is not listed:\n%s", out)
			}
		})
	}
}

// TestRunHelpCategories checks that every flag of `groupd run` is in a
// category and listed under it, wrapped lines included.
func TestRunHelpCategories(t *testing.T) {
	_, out, _ := runCLI(t, "run", "--help")
	sections := map[string]string{} // category -> its part of the help
	var cat string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "   ") && !strings.HasPrefix(line, "    ") && !strings.HasPrefix(strings.TrimSpace(line), "-") {
			cat = strings.TrimSpace(line)
			continue
		}
		sections[cat] += line + "\n"
	}
	for _, f := range runCommand().Flags {
		cf, ok := f.(cli.CategorizableFlag)
		if !ok {
			t.Fatalf("--%s cannot have a category", f.Names()[0])
		}
		if f == cli.HelpFlag {
			continue
		}
		name := "--" + f.Names()[0] + " "
		switch c := cf.GetCategory(); {
		case c == "":
			t.Errorf("%s has no category", name)
		case !strings.Contains(sections[c], "\n   "+name):
			t.Errorf("%s is not listed under %q:\n%s", name, c, sections[c])
		}
		if env := envName(f.Names()[0]); !strings.Contains(out, "[$"+env+"]") {
			t.Errorf("%s's variable %s is not in the help", name, env)
		}
	}
	for _, c := range []string{"Identity", "Addresses", "Discovery", "Data", "API", "Protocol timing",
		"Election and quorum", "Hooks", "Security", "Logging"} {
		if sections[c] == "" {
			t.Errorf("no category %q in run --help", c)
		}
	}
}

func TestWrapWords(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"a", "bb", "cc", "d"}, "a bb|cc d"},
		{[]string{"abcdefgh", "a"}, "abcdefgh|a"},
		{[]string{"a", "(default: x y)"}, "a|(default: x y)"},
		{nil, ""},
	} {
		if got := strings.Join(wrapWords(tc.words, 5), "|"); got != tc.want {
			t.Errorf("wrapWords(%q, 5) = %q, want %q", tc.words, got, tc.want)
		}
	}
}
