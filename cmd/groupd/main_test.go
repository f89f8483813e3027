package main

import (
	"bytes"
	"context"
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
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "groupd ") ||
		!strings.HasPrefix(lines[1], "commit: ") || !strings.HasPrefix(lines[2], "go: go") {
		t.Fatalf("version output:\n%s", out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frob"}, `unknown command "frob"`},
		{[]string{"--frob"}, "unknown flag --frob"},
		{[]string{"status", "--frob"}, "unknown flag --frob (see groupd status --help)"},
		{[]string{"status", "extra"}, `status takes no arguments, got "extra"`},
		{[]string{"members", "--json=maybe"}, `--json: invalid value "maybe"`},
		{[]string{"watch", "--api", "nope"}, `--api "nope": want HOST:PORT or unix:/path`},
		{[]string{"status", "--api", "unix:"}, `no socket path after unix:`},
		{[]string{"status", "--api", "127.0.0.1:99999"}, `port "99999" is not in 1-65535`},
		{[]string{"version", "now"}, `version takes no arguments`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			if code != exitConfig {
				t.Errorf("exit %d, want %d", code, exitConfig)
			}
			wantOneLine(t, errOut, tc.want)
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
	code, out, _ = runCLI(t)
	if code != exitOK || !strings.Contains(out, "status") {
		t.Fatalf("no command: exit %d, output:\n%s", code, out)
	}
}
