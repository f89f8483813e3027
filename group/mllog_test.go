package group

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestParseMemberlistLine(t *testing.T) {
	for _, tc := range []struct {
		line  string
		level zerolog.Level
		msg   string
	}{
		{"[DEBUG] memberlist: Initiating push/pull sync with: 2 127.0.0.1:7951", zerolog.DebugLevel, "Initiating push/pull sync with: 2 127.0.0.1:7951"},
		{"[INFO] memberlist: Suspect 3 has failed, no acks received", zerolog.InfoLevel, "Suspect 3 has failed, no acks received"},
		{"[WARN] memberlist: Refuting a suspect message (from: 3)", zerolog.WarnLevel, "Refuting a suspect message (from: 3)"},
		{"[ERR] memberlist: Conflicting address for 3.", zerolog.ErrorLevel, "Conflicting address for 3."},
		{"[ERROR] something", zerolog.ErrorLevel, "something"},
		{"[TRACE] memberlist: x", zerolog.TraceLevel, "x"},
		{"[ERR] Failed to shutdown transport: boom", zerolog.ErrorLevel, "Failed to shutdown transport: boom"},
		{"no level at all", zerolog.InfoLevel, "no level at all"},
		{"[NOTALEVEL] memberlist: x", zerolog.InfoLevel, "[NOTALEVEL] memberlist: x"},
		{"[", zerolog.InfoLevel, "["},
		{"", zerolog.InfoLevel, ""},
	} {
		level, msg := parseMemberlistLine(tc.line)
		if level != tc.level || msg != tc.msg {
			t.Errorf("%q: got %v %q, want %v %q", tc.line, level, msg, tc.level, tc.msg)
		}
	}
}

func TestMemberlistLogger(t *testing.T) {
	var buf bytes.Buffer
	l := newStdLogger(zerolog.New(&buf).Level(zerolog.InfoLevel).With().Str("component", "memberlist").Logger())
	l.Printf("[DEBUG] memberlist: hidden")
	l.Printf("[WARN] memberlist: Was able to connect to %s over TCP but UDP probes failed", "2")
	l.Printf("[ERR] memberlist: two\n[INFO] memberlist: lines")
	var got []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]string
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, m)
	}
	want := []map[string]string{
		{"level": "warn", "component": "memberlist", "message": "Was able to connect to 2 over TCP but UDP probes failed"},
		{"level": "error", "component": "memberlist", "message": "two"},
		{"level": "info", "component": "memberlist", "message": "lines"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		for k, v := range want[i] {
			if got[i][k] != v {
				t.Errorf("line %d: %s = %q, want %q", i, k, got[i][k], v)
			}
		}
	}
}

// TestMemberlistLogClosedSocket: memberlist's complaint about a socket
// this process closed (a clean shutdown) is debug, not an error; other
// send failures stay errors. So is its complaint about a node name (ID)
// at two addresses, which groupd logs itself.
func TestMemberlistLogClosedSocket(t *testing.T) {
	for _, tc := range []struct {
		line, level string // level "": not logged at info
	}{
		{"[ERR] memberlist: Failed to send gossip to 127.0.0.1:17921: write udp 127.0.0.1:17911->127.0.0.1:17921: use of closed network connection", ""},
		{"[WARN] memberlist: Failed to send ping: write udp 127.0.0.1:1->127.0.0.1:2: use of closed network connection", ""},
		{"[ERR] memberlist: Failed to send gossip to 127.0.0.1:17921: write udp 127.0.0.1:17911->127.0.0.1:17921: sendto: network is unreachable", "error"},
		// A duplicate ID: the conflict delegate and the wire protocol
		// log it (one error, design §3.6).
		{"[ERR] memberlist: Conflicting address for 5. Mine: 10.78.1.6:7951 Theirs: 10.78.1.5:7951 Old state: 0", ""},
	} {
		for _, min := range []zerolog.Level{zerolog.InfoLevel, zerolog.DebugLevel} {
			var buf bytes.Buffer
			newStdLogger(zerolog.New(&buf).Level(min)).Print(tc.line)
			want := tc.level
			if want == "" && min == zerolog.DebugLevel {
				want = "debug"
			}
			var got struct{ Level string }
			if buf.Len() > 0 {
				if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
					t.Fatal(err)
				}
			}
			if got.Level != want {
				t.Errorf("%q at %v: logged at %q, want %q", tc.line, min, got.Level, want)
			}
		}
	}
}
