package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCompletionWords: what groupd answers to --generate-bash-completion,
// which the bash and zsh scripts ask at every TAB.
func TestCompletionWords(t *testing.T) {
	for _, tc := range []struct {
		args      []string // before --generate-bash-completion
		want, not []string
	}{
		{nil, []string{"run", "status", "members", "watch", "exec", "ui", "version", "timeline", "completion", "help"}, []string{"--help"}},
		{[]string{"--v"}, []string{"--version"}, []string{"run"}},
		{[]string{"run", "--ex"}, []string{"--expect"}, []string{"--id"}},
		{[]string{"run", "--log"}, []string{"--log-level", "--log-format"}, []string{"--expect"}},
		{[]string{"run"}, []string{"--id", "--join", "--member-timeout", "--help"}, []string{"--generate-bash-completion", "run"}},
		{[]string{"run", "--api"}, nil, []string{"--api", "--id"}}, // a value comes next: files
		{[]string{"status", "-"}, []string{"--api", "--json", "--help", "-h"}, nil},
		{[]string{"status", "-j"}, []string{"--json"}, []string{"--api"}},
		{[]string{"timeline", "-o"}, []string{"--output"}, nil},
		{[]string{"help"}, []string{"run", "status", "completion"}, nil},
		{[]string{"completion"}, []string{"bash", "zsh", "fish"}, nil},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, append(tc.args, "--generate-bash-completion")...)
			if code != exitOK || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			words := strings.Fields(out)
			for _, w := range tc.want {
				if !slices.Contains(words, w) {
					t.Errorf("lacks %s: %q", w, words)
				}
			}
			for _, w := range tc.not {
				if slices.Contains(words, w) {
					t.Errorf("has %s: %q", w, words)
				}
			}
		})
	}
}

func TestCompletionScripts(t *testing.T) {
	for sh, want := range map[string]string{
		"bash": "complete -o default -F _groupd_complete groupd",
		"zsh":  "#compdef groupd",
		"fish": "complete -c groupd -n '__fish_seen_subcommand_from run' -f -l expect -r",
	} {
		code, out, errOut := runCLI(t, "completion", sh)
		if code != exitOK || errOut != "" || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, stderr %q, lacks %q:\n%s", sh, code, errOut, want, out)
		}
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		code, _, errOut := runCLI(t, args...)
		if code != exitConfig {
			t.Errorf("%q: exit %d, want %d", args, code, exitConfig)
		}
		wantOneLine(t, errOut, "completion")
	}
}

// TestBashCompletion runs the bash script as bash runs it on a TAB: with
// COMP_WORDS and COMP_CWORD set, against a built groupd on the PATH.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if testing.Short() {
		t.Skip("builds groupd")
	}
	bin := buildGroupd(t)
	script := filepath.Join(t.TempDir(), "groupd.bash")
	if err := os.WriteFile(script, []byte(bashCompletion), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string // the words typed, the last one being completed
		want []string
	}{
		{"groupd st", []string{"status"}},
		{"groupd run --ex", []string{"--expect"}},
		{"groupd run --log-", []string{"--log-format", "--log-level"}},
		{"groupd members --", []string{"--api", "--help", "--json"}},
		{"groupd completion f", []string{"fish"}},
		{"groupd help wa", []string{"watch"}},
	} {
		words := strings.Fields(tc.line)
		cmd := exec.Command(bash, "--norc", "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($#-1)); _groupd_complete; printf '%s\n' "${COMPREPLY[@]}"`,
			"bash", script)
		cmd.Args = append(cmd.Args, words...)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q<TAB>: %q, want %q", tc.line, got, tc.want)
		}
	}
}
