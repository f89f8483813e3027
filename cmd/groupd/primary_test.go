package main

import (
	"net/http"
	"strings"
	"testing"
)

// statusServer serves one canned /v1/status body.
type statusServer string

func (s statusServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(s))
}

func TestStatusPrimaryExitCode(t *testing.T) {
	body := func(primary string, expect string) string {
		return `{"id":1,"priority":100,"state":"normal","role":"participant","group":"4.2","coordinator":2,` +
			`"members":[1,2],"version":1,"since":"2026-11-21T10:00:00Z","counter":3,"incarnation":1,` +
			`"persist_error":"","time":"2026-11-21T10:00:01Z","primary":` + primary + `,"expect":` + expect + `}`
	}
	cases := []struct {
		name, primary, expect string
		code                  int
		line                  string
	}{
		{"mode off", "true", "0", exitOK, ""},
		{"mode off, electing", "false", "0", exitOK, ""},
		{"primary", "true", "3", exitOK, "primary:     yes (2 of --expect 3)"},
		{"minority", "false", "5", exitNotPrimary, "primary:     no (2 of --expect 5)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := serve(t, statusServer(body(tc.primary, tc.expect)))
			for _, args := range [][]string{{"status", "--api", addr}, {"status", "--json", "--api", addr}} {
				code, out, errOut := runCLI(t, args...)
				if code != tc.code {
					t.Fatalf("%v: exit %d, want %d (stderr %q)", args, code, tc.code, errOut)
				}
				if tc.code == exitNotPrimary && !strings.Contains(errOut, "not in the primary partition") {
					t.Errorf("%v: stderr %q does not say why", args, errOut)
				}
				if len(args) == 3 && tc.line != "" && !strings.Contains(out, tc.line) {
					t.Errorf("status printed\n%s\nwant a line %q", out, tc.line)
				}
			}
		})
	}
}

func TestElectionAndQuorumFlags(t *testing.T) {
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"--election", "raft"}, `--election "raft": want bully or ring`},
		{[]string{"--expect", "-1"}, "--expect must be >= 0"},
		{[]string{"--tie-breaker", "3"}, "--tie-breaker needs --expect"},
	}
	for _, tc := range cases {
		args := append([]string{"run", "--data-dir", t.TempDir()}, tc.args...)
		code, _, errOut := runCLI(t, args...)
		if code != exitConfig || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errOut, tc.msg)
		}
	}
}
