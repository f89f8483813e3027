package group

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
	"time"
)

// funcDoc returns the doc comment of the function name in file.
func funcDoc(t *testing.T, file, name string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name {
			return strings.Join(strings.Fields(fd.Doc.Text()), " ")
		}
	}
	t.Fatalf("%s: no func %s", file, name)
	return ""
}

// secs writes d as the doc comments do: "9 s", "10.2 s", "200 ms".
func secs(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + " ms"
	}
	return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + " s"
}

// TestMemberlistTimingFigures pins the failure-detection figures that the
// doc comments of DefaultLANConfig and memberlistConfig state for the lan
// profile to the memberlist.Config the agent actually builds. When the
// tuning changes, this says which sentence to rewrite.
func TestMemberlistTimingFigures(t *testing.T) {
	lan := DefaultLANConfig().Timing
	mc := memberlistConfig(lan)
	if mc.SuspicionMaxTimeoutMult != 1 {
		t.Fatalf("SuspicionMaxTimeoutMult = %d: memberlistDeadAfter assumes 1 (confirmations do not shorten the suspicion)", mc.SuspicionMaxTimeoutMult)
	}
	want := map[string][]string{
		"DefaultLANConfig": {
			"AliveInterval + AliveTimeout, " + secs(lan.AliveInterval+lan.AliveTimeout) + " in this profile",
			"SuspicionMult = " + strconv.Itoa(mc.SuspicionMult),
			"ProbeInterval = MemberTimeout/5 (" + secs(mc.ProbeInterval) + " here)",
			secs(memberlistDeadAfter(mc, 9)) + " below 10 nodes",
			secs(memberlistDeadAfter(mc, 16)) + " at 16",
			secs(memberlistDeadAfter(mc, 64)) + " at 64",
			"with 3 nodes, " + secs(memberlistDeadAfter(mc, 3)) + " to " + secs(memberlistDeadAfter(mc, 3)+2*mc.ProbeInterval) + " after the stop",
			"Timing.MemberLossBound (" + secs(lan.MemberLossBound(false)) + " here)",
		},
		"memberlistConfig": {
			"(lan " + secs(mc.ProbeInterval) + ";",
			"(lan " + secs(mc.ProbeTimeout) + ";",
			"SuspicionMult = " + strconv.Itoa(mc.SuspicionMult),
			"(lan " + secs(memberlistDeadAfter(mc, 9)-mc.ProbeInterval) + " below 10 nodes, " +
				secs(memberlistDeadAfter(mc, 16)-mc.ProbeInterval) + " at 16, " +
				secs(memberlistDeadAfter(mc, 64)-mc.ProbeInterval) + " at 64)",
			"reported " + secs(memberlistDeadAfter(mc, 9)) + " after the first probe it misses below 10 nodes and " +
				secs(memberlistDeadAfter(mc, 64)) + " at 64",
			"MemberTimeout (" + secs(lan.MemberTimeout) + ")",
		},
	}
	for fn, phrases := range want {
		doc := funcDoc(t, "config.go", fn)
		for _, p := range phrases {
			if !strings.Contains(doc, p) {
				t.Errorf("the doc of %s does not say %q, which is what the code gives", fn, p)
			}
		}
	}
	// The formula: below 10 nodes the suspicion lasts SuspicionMult probe
	// intervals, at 100 nodes twice as long (log10 100 = 2).
	pi, k := mc.ProbeInterval, time.Duration(mc.SuspicionMult)
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{1, pi + k*pi}, {9, pi + k*pi}, {10, pi + k*pi}, {100, pi + 2*k*pi}} {
		if got := memberlistDeadAfter(mc, c.n); got != c.want {
			t.Errorf("memberlistDeadAfter(lan, %d) = %v, want %v", c.n, got, c.want)
		}
	}
}
