package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// usageError explains, as an exit-2 cli.Exit, why urfave/cli refused the
// command line args of cmd (its flags and arguments, without the command
// names).
//
// urfave/cli and the flag package report a refused value as a sentence of
// their own ("could not parse "abc" as int value from environment variable
// "GROUPD_PORT" for flag port: strconv.ParseInt: ..."), with no error
// value to inspect. Rather than rewrite those sentences, the problem is
// found again from cmd's flags, which know their names, types and
// variables: first a variable that does not parse (urfave/cli applies the
// environment before it parses the command line), then the command line,
// walked as the flag package walks it. Only a problem this does not
// foresee is reported in urfave/cli's words.
func usageError(cmd *cli.Command, args []string, err error) error {
	msg := envProblem(cmd.Flags)
	if msg == "" {
		msg = argProblem(cmd, args)
	}
	if msg == "" {
		return cli.Exit(err, exitConfig)
	}
	return cli.Exit(msg, exitConfig)
}

// envProblem returns "--port (from GROUPD_PORT): invalid value ..." for the
// first flag whose environment variable does not parse, or "".
func envProblem(flags []cli.Flag) string {
	for _, f := range flags {
		df, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		// urfave/cli reads the first variable that is set, and
		// ignores an empty one.
		for _, env := range df.GetEnvVars() {
			v, set := os.LookupEnv(env)
			if !set {
				continue
			}
			if p := valueProblem(f, v); v != "" && p != "" {
				return fmt.Sprintf("%s (from %s): invalid value %q: %s", dashed(f.Names()[0]), env, v, p)
			}
			break
		}
	}
	return ""
}

// argProblem walks args as the flag package does (flags until the first
// argument that is not one, or "--") and returns what is wrong with the
// first flag it refuses, or "".
func argProblem(cmd *cli.Command, args []string) string {
	seeHelp := fmt.Sprintf(" (see %s --help)", cmd.HelpName)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || a == "--" {
			return ""
		}
		name := strings.TrimPrefix(a[1:], "-")
		if name == "" || name[0] == '-' || name[0] == '=' {
			return fmt.Sprintf("%q is not a flag%s", a, seeHelp)
		}
		name, value, hasValue := strings.Cut(name, "=")
		f := lookupFlag(cmd.Flags, name)
		if f == nil {
			return "unknown flag " + dashed(name) + seeHelp
		}
		df, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		if !df.TakesValue() { // a bool: --json, or --json=false
			if hasValue {
				if p := valueProblem(f, value); p != "" {
					return fmt.Sprintf("%s: invalid value %q: %s", dashed(name), value, p)
				}
			}
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return fmt.Sprintf("%s needs a value%s", dashed(name), seeHelp)
			}
			i++
			value = args[i]
		}
		if p := valueProblem(f, value); p != "" {
			return fmt.Sprintf("%s: invalid value %q: %s", dashed(name), value, p)
		}
	}
	return ""
}

// lookupFlag returns the flag of flags called name (or aliased so), or nil.
func lookupFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// valueProblem says, in plain words, why v is not a value of f, or returns
// "". It parses as urfave/cli and the flag package do for f's type.
func valueProblem(f cli.Flag, v string) string {
	var err error
	want := ""
	switch f.(type) {
	case *cli.IntFlag:
		_, err = strconv.ParseInt(v, 0, strconv.IntSize)
		want = "want a whole number"
	case *cli.UintFlag, *cli.Uint64Flag:
		_, err = strconv.ParseUint(v, 0, 64)
		want = "want a whole number, 0 or more"
		if f.Names()[0] == "id" {
			want = "want a whole number, 1 or more" // 0 is no node's ID
		}
	case *cli.DurationFlag:
		_, err = time.ParseDuration(v)
		want = "want a duration such as 250ms, 2s or 1m30s"
	case *cli.BoolFlag:
		_, err = strconv.ParseBool(v)
		want = "want true or false"
	}
	switch {
	case err == nil:
		return ""
	case errors.Is(err, strconv.ErrRange):
		return "out of range"
	}
	return want
}

// dashed writes a flag name as the help text does: -o, --output.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
