// Command groupd keeps the machines of a LAN organised into groups, each
// with one coordinator, using Garcia-Molina's invitation algorithm.
//
//	groupd run                 the daemon (every flag also from GROUPD_* env vars)
//	groupd status [--json]     this node's view of its group, from the local API
//	groupd members [--json]    the nodes this node knows
//	groupd watch [--json]      a stream of group changes
//	groupd exec -- CMD [ARG...] run CMD only while this node leads (holds its lease with --expect)
//	groupd ui [--listen ADDR]  the URL of the live view in a browser (a proxy for a unix-socket API)
//	groupd version             version, commit and Go version (also groupd --version)
//	groupd timeline EVENTS.ndjson -o OUT.svg [--faults FAULTS.ndjson]
//	                           draw recorded events as an SVG timeline
//	groupd completion SHELL    a completion script for bash, zsh or fish
//	groupd help [CMD]          the help of groupd or of CMD (also groupd [CMD] --help)
//
// Exit codes: 0 success; 1 runtime failure or no daemon answering; 2 bad
// configuration or usage (one line "groupd: <problem>" on stderr; groupd
// without a command prints its help there, as go does); 3 from
// status when the daemon runs with --expect and the node is not in the
// primary partition.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

// Exit codes of the groupd command.
const (
	exitOK         = 0 // success
	exitFailure    = 1 // runtime failure, or no daemon answering
	exitConfig     = 2 // bad configuration or usage
	exitNotPrimary = 3 // status: --expect is set and this node is not in the primary partition
)

// version overrides release at link time: -ldflags "-X main.version=1.2.3"
// (a packager's own build). Empty: release.
var version = ""

// hupSignals delivers SIGHUP, which groupd ignores: it logs to stderr (the
// journal), so there are no log files to reopen, and a closed terminal must
// not stop the daemon. `groupd run` logs each one it receives. Nil in tests.
var hupSignals <-chan os.Signal

func main() {
	// Catching SIGHUP rather than signal.Ignore-ing it: an ignored signal
	// stays ignored in child processes, and --on-change hooks should start
	// with the default disposition.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	hupSignals = hup
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	zerolog.TimeFieldFormat = time.RFC3339Nano
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the groupd command line args (args[0] is the program name) and
// returns the process exit code. Errors are reported on stderr as one line
// "groupd: <problem>". ctx is cancelled on SIGINT or SIGTERM.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	args = permuteTimelineArgs(args)
	args = helpHelpArgs(args)
	err := newApp(args, stdout, stderr).RunContext(ctx, args)
	if err == nil {
		return exitOK
	}
	// Every error the commands return is a cli.Exit with its code; an
	// error of urfave/cli's own is a runtime failure.
	code := exitFailure
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	}
	if msg := oneLine(err.Error()); msg != "" { // "": the help said it
		fmt.Fprintf(stderr, "groupd: %s\n", msg)
	}
	return code
}

// newApp builds the command line application for one run of the command
// line args (args[0] is the program name), which it needs to explain a
// usage error. A fresh one is built for every run, because urfave/cli
// flags keep state once parsed.
func newApp(args []string, stdout, stderr io.Writer) *cli.App {
	var rootArgs []string
	if len(args) > 1 {
		rootArgs = args[1:]
	}
	app := &cli.App{
		Name:  "groupd",
		Usage: "keep the machines of a LAN organised into groups with one coordinator",
		Description: "groupd runs Garcia-Molina's invitation algorithm between the machines of a LAN:\n" +
			"they find each other by multicast (or --join seeds), merge into one group coordinated\n" +
			"by the highest-ranked node (priority, then id), and elect a new coordinator when it fails.\n\n" +
			"Exit codes: 0 ok, 1 runtime failure or no daemon answering, 2 bad configuration or usage,\n" +
			"3 status outside the primary partition (with --expect).",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideVersion:     true,
		HideHelpCommand: true,
		// groupd ... --generate-bash-completion prints the words that may
		// come next: the completion scripts (completion.go) ask it.
		EnableBashCompletion: true,
		// Errors are printed once by run, which also picks the exit code;
		// urfave/cli must neither print them nor call os.Exit.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageError(c.Command, rootArgs, err)
		},
		Commands: []*cli.Command{
			runCommand(),
			statusCommand(),
			membersCommand(),
			watchCommand(),
			execCommand(),
			uiCommand(),
			versionCommand(),
			timelineCommand(),
			completionCommand(),
			helpCommand(),
		},
		// urfave/cli's own --version prints "groupd version X" through
		// a package-level printer; this one prints what `groupd
		// version` does.
		// --help is listed because urfave/cli adds it only when there is
		// no command called help.
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "version", Usage: "print the version, commit and Go version, as groupd version does"},
			cli.HelpFlag,
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return badConfig("unknown command %q (see groupd --help)", c.Args().First())
			}
			if c.Bool("version") {
				return printVersion(c.App.Writer)
			}
			// No command: a usage error, as for the go command; `groupd
			// help` and `groupd --help` print the same on stdout.
			return showUsage(c)
		},
	}
	for _, cmd := range app.Commands {
		if len(args) > 1 && args[1] == cmd.Name {
			preferCommandLine(cmd, args[2:])
		}
		action := cmd.Action
		cmd.Action = func(c *cli.Context) error { return withSources(c, action(c)) }
		cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error {
			// The root's context holds the command line from the
			// command's name on.
			return usageError(c.Command, c.Lineage()[1].Args().Tail(), err)
		}
		cmd.HideHelpCommand = true
	}
	setCompleters(app, args)
	return app
}

// badConfig returns an error that exits with code 2.
func badConfig(format string, args ...any) error {
	return cli.Exit(fmt.Errorf(format, args...), exitConfig)
}

// failure returns an error that exits with code 1.
func failure(format string, args ...any) error {
	return cli.Exit(fmt.Errorf(format, args...), exitFailure)
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// noArgs rejects positional arguments for commands that take none.
func noArgs(c *cli.Context) error {
	if c.Args().Present() {
		return badConfig("%s takes no arguments, got %q", c.Command.Name, c.Args().First())
	}
	return nil
}

// buildInfo describes this binary.
type buildInfo struct {
	Version   string
	Commit    string // "" if unknown
	Modified  bool
	GoVersion string
}

// readBuildInfo returns the version (main.version, else release), the
// commit the go command stamped (vcs.revision and vcs.modified), else the
// one stamped with -ldflags (main.commit), and the Go version.
//
// The module version of the build info is not used: a go build in a
// checkout reports "(devel)" or a pseudo-version made from the last tag,
// neither of which is the release the source says it is.
func readBuildInfo() buildInfo {
	bi := buildInfo{Version: version, GoVersion: runtime.Version()}
	if bi.Version == "" {
		bi.Version = release
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		bi.Commit = commit
		return bi
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			bi.Commit = s.Value
		case "vcs.modified":
			bi.Modified = s.Value == "true"
		}
	}
	if bi.Commit == "" {
		bi.Commit = commit // stamped with -ldflags (version.go)
	}
	return bi
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:      "version",
		Category:  catTools,
		Usage:     "print the version, commit and Go version",
		ArgsUsage: " ",
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			return printVersion(c.App.Writer)
		},
	}
}

// printVersion prints the output of `groupd version` and `groupd
// --version`.
func printVersion(w io.Writer) error {
	bi := readBuildInfo()
	_, err := fmt.Fprintf(w, "groupd %s\ncommit: %s\ngo: %s\n", bi.Version, commitLine(bi), bi.GoVersion)
	return err
}
