package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/groupd/groupd/timeline"
)

func timelineCommand() *cli.Command {
	return &cli.Command{
		Name:      "timeline",
		Category:  catTools,
		Usage:     "draw recorded events (and faults) as an SVG timeline",
		ArgsUsage: "EVENTS.ndjson",
		Description: "Reads newline-delimited JSON events, as printed by `groupd watch --json` (lines of\n" +
			"several nodes may be mixed; - reads stdin), and draws one row per node coloured by its\n" +
			"group, with the coordinator marked. --faults adds the network lab's fault windows.\n" +
			"Malformed lines are skipped with a warning. Exits 2 when a file cannot be opened,\n" +
			"1 when the events hold no valid event.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"},
				Usage: "write the SVG to `FILE` (- for stdout)"},
			&cli.StringFlag{Name: "faults", Usage: "newline-delimited JSON faults `FILE` of the network lab"},
			&cli.StringFlag{Name: "title", Usage: "`TITLE` at the top of the picture", DefaultText: "groupd timeline"},
			&cli.IntFlag{Name: "width", Usage: "picture width in `PIXELS`", DefaultText: "1000"},
		},
		Action: timelineAction,
	}
}

func timelineAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return badConfig("timeline takes one EVENTS.ndjson file (- for stdin), got %d arguments", c.NArg())
	}
	if c.String("output") == "" {
		return badConfig("timeline needs -o OUT.svg (- for stdout)")
	}
	events, closeEvents, err := openInput(c.Args().First(), os.Stdin)
	if err != nil {
		return err
	}
	defer closeEvents()
	var faults io.Reader
	if path := c.String("faults"); path != "" {
		f, closeFaults, err := openInput(path, nil)
		if err != nil {
			return err
		}
		defer closeFaults()
		faults = f
	}
	if w := c.Int("width"); c.IsSet("width") && w < 400 {
		return badConfig("--width %d: want at least 400 pixels", w)
	}
	opts := timeline.Options{
		Title: c.String("title"),
		Width: c.Int("width"),
		Warn:  func(msg string) { fmt.Fprintf(c.App.ErrWriter, "groupd: warning: %s\n", msg) },
	}

	out := c.String("output")
	if out == "-" {
		bw := bufio.NewWriter(c.App.Writer)
		if err := timeline.Render(bw, events, faults, opts); err != nil {
			return failure("%w", err)
		}
		return bw.Flush()
	}
	// Write next to the target and rename, so that a failed render never
	// leaves a truncated picture behind.
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return badConfig("--output %s: %v", out, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this fails harmlessly
	bw := bufio.NewWriter(tmp)
	if err := timeline.Render(bw, events, faults, opts); err != nil {
		tmp.Close()
		return failure("%w", err)
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return failure("writing %s: %w", out, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return failure("writing %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return failure("writing %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return failure("writing %s: %w", out, err)
	}
	return nil
}

// openInput opens path for reading; "-" means stdin when stdin is not nil.
func openInput(path string, stdin io.Reader) (io.Reader, func(), error) {
	if path == "-" && stdin != nil {
		return stdin, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, badConfig("%v", err)
	}
	return bufio.NewReader(f), func() { f.Close() }, nil
}

// permuteTimelineArgs moves the flags of a timeline command line that come
// after its file name in front of it, as GNU getopt does, so that the
// documented `groupd timeline EVENTS.ndjson -o OUT.svg` works: the flag
// package stops at the first non-flag argument. Other command lines are
// returned unchanged. Every timeline flag but --help takes a value.
func permuteTimelineArgs(args []string) []string {
	if len(args) < 2 || args[1] != "timeline" {
		return args
	}
	var flags, positional []string
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			positional = append(positional, rest[i+1:]...)
			i = len(rest)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && name != "h" && name != "help" {
				if i+1 == len(rest) {
					// A flag without its value: leave it last, with
					// nothing after it, so that it is reported as
					// such rather than take "--" for its value.
					return append([]string{args[0], args[1]}, flags...)
				}
				i++
				flags = append(flags, rest[i])
			}
		default:
			positional = append(positional, a)
		}
	}
	out := append([]string{args[0], args[1]}, flags...)
	if len(positional) > 0 {
		out = append(out, "--")
		out = append(out, positional...)
	}
	return out
}
