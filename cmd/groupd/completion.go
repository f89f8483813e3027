package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// Shell completion. urfave/cli answers `groupd WORDS... --generate-bash-completion`
// (App.EnableBashCompletion) with the words that may follow WORDS, one a
// line; the bash and zsh scripts below ask it at every TAB, so they
// always match the binary. fish gets urfave/cli's static script
// (App.ToFishCompletion).
//
// The completers are groupd's own: urfave/cli's read os.Args, where run's
// arguments are what counts (and what the tests pass).

// bashCompletion is `groupd completion bash`. It needs no bash-completion
// package; -o default falls back to file names where groupd suggests
// nothing (a flag's value, exec's command, timeline's file).
const bashCompletion = `# bash completion for groupd. Load it in this shell:
#   source <(groupd completion bash)
# or for every shell: groupd completion bash > /etc/bash_completion.d/groupd
_groupd_complete() {
	local cur=${COMP_WORDS[COMP_CWORD]} out
	local -a words=("${COMP_WORDS[@]:0:COMP_CWORD}")
	if [[ $cur == -* ]]; then
		# "--" alone would end the flags: ask with "-".
		out=$("${words[@]}" "${cur/#--/-}" --generate-bash-completion 2>/dev/null)
	else
		out=$("${words[@]}" --generate-bash-completion 2>/dev/null)
	fi
	local IFS=$'\n'
	COMPREPLY=($(compgen -W "$out" -- "$cur"))
}
complete -o default -F _groupd_complete groupd
`

// zshCompletion is `groupd completion zsh`.
const zshCompletion = `#compdef groupd
# zsh completion for groupd. Load it in this shell (after compinit):
#   source <(groupd completion zsh)
# or for every shell: groupd completion zsh > "${fpath[1]}/_groupd"
_groupd() {
	local cur=${words[CURRENT]}
	local -a opts
	if [[ $cur == -* ]]; then
		# "--" alone would end the flags: ask with "-".
		opts=("${(@f)$(${words[1,CURRENT-1]} ${cur/#--/-} --generate-bash-completion 2>/dev/null)}")
	else
		opts=("${(@f)$(${words[1,CURRENT-1]} --generate-bash-completion 2>/dev/null)}")
	fi
	if [[ -n ${opts[1]} ]]; then
		compadd -a opts
	else
		_files
	fi
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
	_groupd "$@"
else
	compdef _groupd groupd
fi
`

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Category:  catTools,
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "SHELL",
		Description: "Prints a script that completes groupd's commands and flags as you type. To load\n" +
			"it in the current shell:\n\n" +
			"   bash: source <(groupd completion bash)\n" +
			"   zsh:  source <(groupd completion zsh)\n" +
			"   fish: groupd completion fish | source\n\n" +
			"and for every new shell, save it where the shell looks: bash in\n" +
			"/etc/bash_completion.d/groupd, zsh as _groupd in a directory of $fpath, fish in\n" +
			"~/.config/fish/completions/groupd.fish. The bash and zsh scripts ask the groupd you\n" +
			"typed for the words that may come next, so they follow its version.",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return badConfig("completion takes one shell: bash, zsh or fish")
			}
			switch sh := c.Args().First(); sh {
			case "bash":
				_, err := io.WriteString(c.App.Writer, bashCompletion)
				return err
			case "zsh":
				_, err := io.WriteString(c.App.Writer, zshCompletion)
				return err
			case "fish":
				script, err := c.App.ToFishCompletion()
				if err != nil {
					return failure("fish completion: %v", err)
				}
				_, err = io.WriteString(c.App.Writer, tidyFish(script))
				return err
			default:
				return badConfig("completion %q: want bash, zsh or fish", sh)
			}
		},
	}
}

// tidyFish drops from urfave/cli's fish script the backquotes that mark a
// flag's placeholder in its usage, and the complete lines it
// repeats (--help, which it adds to flags that list it already).
func tidyFish(script string) string {
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(script, "`", ""), "\n") {
		if strings.HasPrefix(line, "complete ") {
			if seen[line] {
				continue
			}
			seen[line] = true
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// setCompleters gives app and its commands groupd's completers. args is
// the command line being run; with --generate-bash-completion last, the
// word before it is the one being completed, or the last complete word.
func setCompleters(app *cli.App, args []string) {
	prev := ""
	if n := len(args); n > 2 {
		prev = args[n-2]
	}
	commandNames := func(w io.Writer) {
		for _, c := range app.Commands {
			if !c.Hidden {
				fmt.Fprintln(w, c.Name)
			}
		}
	}
	app.BashComplete = func(c *cli.Context) {
		if strings.HasPrefix(prev, "-") {
			completeFlags(c.App.Writer, app.Flags, prev)
			return
		}
		commandNames(c.App.Writer)
	}
	for _, cmd := range app.Commands {
		cmd.BashComplete = func(c *cli.Context) {
			w := c.App.Writer
			switch {
			case strings.HasPrefix(prev, "-"):
				completeFlags(w, cmd.Flags, prev)
			case cmd.Name == "help" && prev == "help":
				commandNames(w)
			case cmd.Name == "completion" && prev == "completion":
				fmt.Fprintln(w, "bash\nzsh\nfish")
			case strings.TrimSpace(cmd.ArgsUsage) == "":
				// No arguments: only flags can follow.
				completeFlags(w, cmd.Flags, "--")
			}
		}
	}
}

// completeFlags prints the flags of flags that word ("-", "--l", "--log")
// is the beginning of: the long names after "--", all names after "-".
func completeFlags(w io.Writer, flags []cli.Flag, word string) {
	long := strings.HasPrefix(word, "--")
	prefix := strings.TrimLeft(word, "-")
	for _, f := range flags {
		if f == cli.BashCompletionFlag {
			continue
		}
		for _, n := range f.Names() {
			if long && len(n) == 1 || !strings.HasPrefix(n, prefix) {
				continue
			}
			if d := dashed(n); d != word {
				fmt.Fprintln(w, d)
			}
		}
	}
}
