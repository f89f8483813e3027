package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
)

// runCLI runs the groupd command line in-process and returns its exit code,
// stdout and stderr.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIContext(t, context.Background(), args...)
}

func runCLIContext(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(ctx, append([]string{"groupd"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// wantOneLine checks that stderr is exactly one line "groupd: ..." containing
// want.
func wantOneLine(t *testing.T, stderr, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Fatalf("stderr is not one line:\n%s", stderr)
	}
	if !strings.HasPrefix(lines[0], "groupd: ") {
		t.Fatalf("stderr %q does not start with %q", lines[0], "groupd: ")
	}
	if !strings.Contains(lines[0], want) {
		t.Fatalf("stderr %q does not contain %q", lines[0], want)
	}
}

func TestVersion(t *testing.T) {
	code, out, errOut := runCLI(t, "version")
	if code != exitOK || errOut != "" {
		t.Fatalf("version: exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "groupd "+release ||
		!strings.HasPrefix(lines[1], "commit: ") || !strings.HasPrefix(lines[2], "go: go") {
		t.Fatalf("version output:\n%s", out)
	}
	code, flagOut, errOut := runCLI(t, "--version")
	if code != exitOK || errOut != "" || flagOut != out {
		t.Errorf("--version: exit %d, stderr %q, printed\n%s\nwant what version prints\n%s", code, errOut, flagOut, out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"frob"}, `unknown command "frob"`},
		{nil, []string{"--frob"}, "groupd: unknown flag --frob (see groupd --help)"},
		{nil, []string{"-x"}, "groupd: unknown flag -x (see groupd --help)"},
		{nil, []string{"status", "--frob"}, "groupd: unknown flag --frob (see groupd status --help)"},
		{nil, []string{"status", "---json"}, `groupd: "---json" is not a flag (see groupd status --help)`},
		{nil, []string{"status", "extra"}, `status takes no arguments, got "extra"`},
		{nil, []string{"members", "--json=maybe"}, `groupd: --json: invalid value "maybe": want true or false`},
		{nil, []string{"watch", "--api", "nope"}, `--api "nope": want HOST:PORT or unix:/path`},
		{nil, []string{"watch", "--api"}, "groupd: --api needs a value (see groupd watch --help)"},
		{nil, []string{"status", "--api", "unix:"}, `no socket path after unix:`},
		{nil, []string{"status", "--api", "127.0.0.1:99999"}, `port "99999" is not in 1-65535`},
		{nil, []string{"version", "now"}, `version takes no arguments`},
		{nil, []string{"timeline", "x.ndjson", "-o"}, "groupd: -o needs a value (see groupd timeline --help)"},
		{nil, []string{"timeline", "x.ndjson", "-o", "x.svg", "--width", "wide"}, `groupd: --width: invalid value "wide": want a whole number`},
		// Every kind of value, on the command line and from the
		// environment.
		{nil, []string{"run", "--port", "abc"}, `groupd: --port: invalid value "abc": want a whole number`},
		{nil, []string{"run", "--port", "99999999999999999999"}, `groupd: --port: invalid value "99999999999999999999": out of range`},
		{nil, []string{"run", "--id=-3"}, `groupd: --id: invalid value "-3": want a whole number, 1 or more`},
		{map[string]string{"GROUPD_ID": "abc"}, []string{"run", "--frob"}, `groupd: --id (from GROUPD_ID): invalid value "abc": want a whole number, 1 or more`},
		{nil, []string{"run", "--priority", "high"}, `groupd: --priority: invalid value "high": want a whole number, 0 or more`},
		{nil, []string{"run", "--hook-timeout", "5"}, `groupd: --hook-timeout: invalid value "5": want a duration such as 250ms`},
		{nil, []string{"run", "--bind", "127.0.0.1", "--alive-timeout"}, "groupd: --alive-timeout needs a value (see groupd run --help)"},
		{map[string]string{"GROUPD_PORT": "abc"}, []string{"run"},
			`groupd: --port (from GROUPD_PORT): invalid value "abc": want a whole number`},
		{map[string]string{"GROUPD_MIN_COUNTER": "-1"}, []string{"run"},
			`groupd: --min-counter (from GROUPD_MIN_COUNTER): invalid value "-1": want a whole number, 0 or more`},
		{map[string]string{"GROUPD_BEACON_INTERVAL": "1"}, []string{"run", "--port", "1"},
			`groupd: --beacon-interval (from GROUPD_BEACON_INTERVAL): invalid value "1": want a duration`},
		// The environment is read before the command line.
		{map[string]string{"GROUPD_EXPECT": "three"}, []string{"run", "--frob"},
			`groupd: --expect (from GROUPD_EXPECT): invalid value "three": want a whole number`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, errOut := runCLI(t, tc.args...)
			if code != exitConfig {
				t.Errorf("exit %d, want %d", code, exitConfig)
			}
			wantOneLine(t, errOut, tc.want)
			// urfave/cli's and the flag package's own words must not
			// reach the user.
			for _, raw := range []string{"could not parse", "provided but not defined", "strconv", "for flag", "parse error"} {
				if strings.Contains(errOut, raw) {
					t.Errorf("stderr %q has %q", errOut, raw)
				}
			}
		})
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := runCLI(t, "run", "--help")
	if code != exitOK {
		t.Fatalf("run --help: exit %d", code)
	}
	for _, want := range []string{"SIGHUP is ignored", "GROUPD_DATA_DIR", "--member-timeout", "250ms (lan), 50ms (fast)"} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help lacks %q", want)
		}
	}
	// No command is a usage error, as for the go command: the help on
	// stderr, exit 2.
	code, out, errOut := runCLI(t)
	_, help, _ := runCLI(t, "--help")
	if code != exitConfig || out != "" || errOut != help || !strings.Contains(help, "status") {
		t.Fatalf("no command: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and the help on stderr:\n%s", code, out, errOut, help)
	}
}

// TestHelpCommand: `groupd help` prints what `groupd --help` does, and
// `groupd help CMD` what `groupd CMD --help` does, for every command.
func TestHelpCommand(t *testing.T) {
	cases := [][2][]string{{{"help"}, {"--help"}}, {{"help"}, {"-h"}}, {{"help", "--help"}, {"help", "help"}}}
	for _, c := range newApp([]string{"groupd"}, nil, nil).Commands {
		cases = append(cases, [2][]string{{"help", c.Name}, {c.Name, "--help"}})
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc[0], " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, tc[0]...)
			_, want, _ := runCLI(t, tc[1]...)
			if code != exitOK || errOut != "" || out != want || !strings.HasPrefix(out, "NAME:") {
				t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant what %q prints:\n%s", code, errOut, out, tc[1], want)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "frob"}, `groupd: help: unknown command "frob" (see groupd help)`},
		{[]string{"help", "run", "status"}, `groupd: help takes one command, got ["run" "status"]`},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitConfig || out != "" {
			t.Errorf("%q: exit %d, stdout %q", tc.args, code, out)
		}
		wantOneLine(t, errOut, tc.want)
	}
}

// TestVersionRelease: the release is 0.1.0 unless -ldflags -X main.version
// overrides it; a commit built from a modified tree is marked +dirty.
func TestVersionRelease(t *testing.T) {
	if release != "0.1.0" {
		t.Errorf("release = %q, want 0.1.0", release)
	}
	old := version
	defer func() { version = old }()
	version = "0.1.0-deb1"
	if _, out, _ := runCLI(t, "version"); !strings.HasPrefix(out, "groupd 0.1.0-deb1\n") {
		t.Errorf("with -X main.version=0.1.0-deb1, version printed:\n%s", out)
	}
	for _, tc := range []struct {
		bi   buildInfo
		want string
	}{
		{buildInfo{Commit: "2664401abc", Modified: true}, "2664401abc+dirty"},
		{buildInfo{Commit: "2664401abc"}, "2664401abc"},
	} {
		if got := commitLine(tc.bi); got != tc.want {
			t.Errorf("commitLine(%+v) = %q, want %q", tc.bi, got, tc.want)
		}
	}
}

// TestVersionCommit: a commit stamped with -ldflags -X main.commit is
// printed as it is; without one (the test binary has no VCS stamp, like a
// build with GOFLAGS=-buildvcs=false or in a git worktree), version falls
// back to git describe of the source tree and says so, or says how to
// stamp it.
func TestVersionCommit(t *testing.T) {
	old := commit
	defer func() { commit = old }()

	commit = "0123abc-dirty"
	_, out, _ := runCLI(t, "version")
	if !strings.Contains(out, "\ncommit: 0123abc-dirty\n") {
		t.Errorf("with a stamped commit, version printed:\n%s", out)
	}

	commit = ""
	_, out, _ = runCLI(t, "version")
	want := "commit: unknown (no commit stamped in this binary: " + noStampHint + ")"
	if desc, err := exec.Command("git", "-C", "../..", "describe", "--always", "--dirty").Output(); err == nil {
		want = "commit: " + strings.TrimSpace(string(desc)) + " (no commit stamped in this binary: git describe of its source, "
	}
	if !strings.Contains(out, want) {
		t.Errorf("without a stamp, version printed:\n%s\nwant a line starting %q", out, want)
	}
}
