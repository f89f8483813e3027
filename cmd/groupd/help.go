package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// Help layout. urfave/cli prints a flag as its names, a tab and its whole
// usage on one line (the run command's went up to 188 columns), and only
// wraps descriptions. flagHelp pads the names to one width, so that every
// category of flags has its usage column at flagColumn, and wraps the
// usage after it, so that no line is wider than helpWidth.
// TestHelpWidth renders every command's help and checks that.
const (
	helpWidth  = 100
	flagColumn = 33 // "   " + names + urfave/cli's two spaces of padding
	namesWidth = flagColumn - 3 - 2
)

// Command categories of `groupd --help` (urfave/cli sorts them by name).
const (
	catDaemon = "Daemon"
	catQuery  = "Query a running daemon"
	catTools  = "Tools"
)

// Every help goes through flagHelp. urfave/cli takes the flag printer as a
// package variable; this command is its only user.
func init() { cli.FlagStringer = flagHelp }

// flagHelp renders one flag for the help: names and placeholder, a tab,
// then the usage, the default and the environment variable, wrapped at
// helpWidth - flagColumn with each further line starting with a tab (the
// help's tabwriter lines them up under the usage).
func flagHelp(f cli.Flag) string {
	names, placeholder, words := flagParts(f)
	if names == nil {
		return ""
	}
	left := strings.Join(names, ", ")
	if placeholder != "" {
		left += " " + placeholder
	}
	// The default and the variable are kept whole on their line.
	return fmt.Sprintf("%-*s\t%s", namesWidth, left, strings.Join(wrapWords(words, helpWidth-flagColumn), "\n\t"))
}

// flagParts is what the help shows of a flag: its names (--output, -o),
// its placeholder (FILE, "" for a bool), and the words of its usage, its
// default and its variables.
func flagParts(f cli.Flag) (names []string, placeholder string, words []string) {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return nil, "", nil
	}
	placeholder, usage := flag.UnquoteUsage(&flag.Flag{Usage: df.GetUsage()})
	for _, n := range f.Names() {
		names = append(names, dashed(n))
	}
	if !df.TakesValue() {
		placeholder = ""
	}
	words = strings.Fields(usage)
	// A zero default says nothing a flag's usage does not (0: off).
	if d := df.GetDefaultText(); d != "" && d != "0" && d != "false" {
		words = append(words, "(default: "+d+")")
	}
	if env := df.GetEnvVars(); len(env) > 0 {
		words = append(words, "[$"+strings.Join(env, ", $")+"]")
	}
	return names, placeholder, words
}

// wrapWords joins words into lines of at most width bytes; a single
// longer word gets a line of its own.
func wrapWords(words []string, width int) []string {
	var lines []string
	line := ""
	for _, w := range words {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	return append(lines, line)
}

// helpCommand is `groupd help [COMMAND]`: what `groupd --help` and `groupd
// COMMAND --help` print, on stdout. urfave/cli's own help command is
// turned off (HideHelpCommand), so that an unknown command is a usage
// error like any other.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Category:  catTools,
		Usage:     "show the help of groupd, or of a command",
		ArgsUsage: "[COMMAND]",
		Action: func(c *cli.Context) error {
			root := c.Lineage()[1]
			switch c.NArg() {
			case 0:
				return cli.ShowAppHelp(root)
			case 1:
				name := c.Args().First()
				if cmd := c.App.Command(name); cmd == nil || cmd.Hidden {
					return badConfig("help: unknown command %q (see groupd help)", name)
				}
				return cli.ShowCommandHelp(root, name)
			}
			return badConfig("help takes one command, got %q", c.Args().Slice())
		},
	}
}

// helpHelpArgs turns `groupd help --help` (or -h) into `groupd help help`.
// urfave/cli answers --help on a command called help with the help of its
// parent, groupd's.
func helpHelpArgs(args []string) []string {
	if len(args) < 3 || args[1] != "help" {
		return args
	}
	for _, a := range args[2:] {
		if a == "--help" || a == "-h" {
			return []string{args[0], "help", "help"}
		}
	}
	return args
}

// showUsage prints groupd's help on stderr and returns the error of a
// usage error without a message: `groupd` alone, as `go` alone does.
func showUsage(c *cli.Context) error {
	w := c.App.Writer
	c.App.Writer = c.App.ErrWriter
	defer func() { c.App.Writer = w }()
	if err := cli.ShowAppHelp(c); err != nil {
		return err
	}
	return cli.Exit("", exitConfig)
}
