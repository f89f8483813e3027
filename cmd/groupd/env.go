package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// Every flag of a command also reads a variable (GROUPD_DATA_DIR for
// --data-dir). This file makes the command line win over the environment,
// names the variable in a message about a value that came from it, and
// finds the GROUPD_* variables that no flag reads: misspelt settings.

// commandLineFlags returns the names (and aliases) of the flags given in
// args, a command's arguments after its name, walked as the flag package
// walks them: flags until the first argument that is not one, or "--". A
// flag it cannot make sense of ends the walk; the parse that follows
// reports it.
func commandLineFlags(flags []cli.Flag, args []string) map[string]bool {
	given := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || a == "--" {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := lookupFlag(flags, name)
		if f == nil {
			break
		}
		for _, n := range f.Names() {
			given[n] = true
		}
		if df, ok := f.(cli.DocGenerationFlag); ok && df.TakesValue() && !hasValue {
			i++ // its value
		}
	}
	return given
}

// preferCommandLine drops the variables of the flags that args give, so
// that a flag on the command line wins over its variable even when the
// variable holds a value that does not parse: urfave/cli reads the
// environment before the command line, and would refuse it
// (GROUPD_ID=abc groupd run --id 7). It also drops the variables that are
// set but empty: an empty variable counts as unset, for every flag
// (urfave/cli ignores an empty number or duration, but takes an empty
// string, so GROUPD_DATA_DIR= was "--data-dir is empty"). A command line
// asking for help keeps them all: the help lists them.
func preferCommandLine(cmd *cli.Command, args []string) {
	given := commandLineFlags(cmd.Flags, args)
	if given["help"] {
		return
	}
	for _, f := range cmd.Flags {
		df, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		var keep []string
		if !given[f.Names()[0]] {
			for _, env := range df.GetEnvVars() {
				if v, set := os.LookupEnv(env); !set || v != "" {
					keep = append(keep, env)
				}
			}
		}
		if len(keep) == len(df.GetEnvVars()) {
			continue
		}
		switch f := f.(type) {
		case *cli.StringFlag:
			f.EnvVars = keep
		case *cli.StringSliceFlag:
			f.EnvVars = keep
		case *cli.IntFlag:
			f.EnvVars = keep
		case *cli.UintFlag:
			f.EnvVars = keep
		case *cli.Uint64Flag:
			f.EnvVars = keep
		case *cli.DurationFlag:
			f.EnvVars = keep
		case *cli.BoolFlag:
			f.EnvVars = keep
		}
	}
}

// envOf returns the variable a flag of c's command took its value from, or
// "": the flag is not on the command line, and its variable is set and not
// empty (urfave/cli ignores an empty one).
func envOf(c *cli.Context, name string) string {
	f := lookupFlag(c.Command.Flags, name)
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return ""
	}
	if commandLineFlags(c.Command.Flags, commandArgs(c))[name] {
		return ""
	}
	for _, env := range df.GetEnvVars() {
		if v, set := os.LookupEnv(env); set && v != "" {
			return env
		}
	}
	return ""
}

// commandArgs returns the command line from c's command on, without its
// name (the root context holds it).
func commandArgs(c *cli.Context) []string {
	if l := c.Lineage(); len(l) > 1 {
		return l[1].Args().Tail()
	}
	return nil
}

// flagToken finds a flag's name in a message: "--profile" followed by the
// end, a space or punctuation (not "--port+1").
var flagToken = regexp.MustCompile(`--([a-z][a-z0-9-]*)([ :,;)"]|$)`)

// withSources names, in an error of c's command, the variable of every
// flag the message mentions whose value came from the environment:
// `--profile "turbo": want lan or fast` becomes `--profile (from
// GROUPD_PROFILE) "turbo": want lan or fast`. Messages that name it
// already are left alone.
func withSources(c *cli.Context, err error) error {
	var ec cli.ExitCoder
	if err == nil || !errors.As(err, &ec) {
		return err
	}
	msg := err.Error()
	done := map[string]bool{}
	out := flagToken.ReplaceAllStringFunc(msg, func(tok string) string {
		m := flagToken.FindStringSubmatch(tok)
		name := m[1]
		env := envOf(c, name)
		if env == "" || done[name] || strings.Contains(msg, "(from "+env+")") {
			return tok
		}
		done[name] = true
		return "--" + name + " (from " + env + ")" + m[2]
	})
	if out == msg {
		return err
	}
	return cli.Exit(out, ec.ExitCode())
}

// otherEnv are GROUPD_* variables that are not settings of groupd run: the
// hook's environment, and the variables of the network lab, the tests and
// the benchmarks, which the lab passes on to its daemons. Prefixes end
// with "_" or are whole names.
var otherEnv = []string{
	// --on-change hooks (package group, hookEnv); GROUPD_ID and
	// GROUPD_NAME are flags' too.
	"GROUPD_EVENT", "GROUPD_STATE", "GROUPD_ROLE", "GROUPD_OLD_ROLE", "GROUPD_GROUP", "GROUPD_OLD_GROUP",
	"GROUPD_COORDINATOR", "GROUPD_COORDINATOR_NAME", "GROUPD_MEMBERS", "GROUPD_PRIMARY", "GROUPD_LEADER",
	"GROUPD_TERM", "GROUPD_OLD_TERM", "GROUPD_DEGRADED",
	// scripts/netem and internal/lab, e2e, tests, benchmarks.
	"GROUPD_LAB_", "GROUPD_LABCTL", "GROUPD_BIN", "GROUPD_FAULTS", "GROUPD_NO_INSTALL",
	"GROUPD_E2E", "GROUPD_E2E_", "GROUPD_CHAOS_", "GROUPD_FUZZ_", "GROUPD_SIM_", "GROUPD_TEST_",
	"GROUPD_STORE_", "GROUPD_BENCH_",
}

// isOtherEnv reports whether name is one of otherEnv.
func isOtherEnv(name string) bool {
	for _, o := range otherEnv {
		if name == o || strings.HasSuffix(o, "_") && strings.HasPrefix(name, o) {
			return true
		}
	}
	return false
}

// unknownEnv returns, sorted, the GROUPD_* variables of environ that no
// flag of flags reads (GROUPD_<FLAG>, even when preferCommandLine dropped
// it) and that are not otherEnv, each with the flag variable it most
// likely misspells ("" when none is close).
func unknownEnv(flags []cli.Flag, environ []string) [][2]string {
	known := map[string]bool{}
	var names []string
	for _, f := range flags {
		vars := []string{envName(f.Names()[0])}
		if df, ok := f.(cli.DocGenerationFlag); ok {
			vars = append(vars, df.GetEnvVars()...)
		}
		for _, e := range vars {
			if !known[e] {
				known[e] = true
				names = append(names, e)
			}
		}
	}
	var out [][2]string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "GROUPD_") || known[name] || isOtherEnv(name) {
			continue
		}
		out = append(out, [2]string{name, closest(name, names)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// closest returns the name of names that name most likely misspells: the
// same without underscores (GROUPD_DATADIR, GROUPD_DATA_DIR), else the
// nearest within two edits, else "".
func closest(name string, names []string) string {
	squash := func(s string) string { return strings.ReplaceAll(s, "_", "") }
	best, bestD := "", 3
	for _, n := range names {
		if squash(n) == squash(name) {
			return n
		}
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// unknownEnvMessage is the warning for one unknown variable.
func unknownEnvMessage(name, suggestion string) string {
	msg := fmt.Sprintf("%s is not a setting of groupd run: ignored", name)
	if suggestion != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", suggestion)
	}
	return msg
}
