package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	timelineEvents = "../../timeline/testdata/small.ndjson"
	timelineFaults = "../../timeline/testdata/small-faults.ndjson"
)

func TestTimeline(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"file first", []string{timelineEvents, "-o", filepath.Join(dir, "a.svg"), "--faults", timelineFaults}},
		{"flags first", []string{"--output", filepath.Join(dir, "b.svg"), "--title", "lab run", timelineEvents}},
		{"flags with =", []string{timelineEvents, "--output=" + filepath.Join(dir, "c.svg"), "--width=800"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"timeline"}, tc.args...)...)
			if code != exitOK || out != "" || errOut != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
	for _, name := range []string{"a.svg", "b.svg", "c.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), "<svg") || !strings.HasSuffix(strings.TrimSpace(string(b)), "</svg>") {
			t.Errorf("%s is not an SVG document", name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "b.svg")); !strings.Contains(string(b), "lab run") {
		t.Error("--title is not in the picture")
	}

	code, out, _ := runCLI(t, "timeline", timelineEvents, "-o", "-")
	if code != exitOK || !strings.HasPrefix(out, "<svg") {
		t.Errorf("-o -: exit %d, stdout starts %.40q", code, out)
	}
}

func TestTimelineErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.ndjson")
	if err := os.WriteFile(empty, []byte("not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.svg")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no output", []string{timelineEvents}, exitConfig, "timeline needs -o OUT.svg"},
		{"no file", []string{"-o", out}, exitConfig, "timeline takes one EVENTS.ndjson file"},
		{"two files", []string{timelineEvents, timelineEvents, "-o", out}, exitConfig, "got 2 arguments"},
		{"missing events", []string{filepath.Join(dir, "nope.ndjson"), "-o", out}, exitConfig, "no such file or directory"},
		{"missing faults", []string{timelineEvents, "-o", out, "--faults", filepath.Join(dir, "nope")}, exitConfig, "no such file"},
		{"bad output dir", []string{timelineEvents, "-o", filepath.Join(dir, "nodir", "x.svg")}, exitConfig, "--output"},
		{"narrow", []string{timelineEvents, "-o", out, "--width", "10"}, exitConfig, "--width 10"},
		{"no valid event", []string{empty, "-o", out}, exitFailure, "no valid event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, append([]string{"timeline"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			wantLastLine(t, errOut, tc.want)
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed render left %s behind (%v)", out, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".out.svg.*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

func TestPermuteTimelineArgs(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"groupd", "status", "x", "--json"}, []string{"groupd", "status", "x", "--json"}},
		{[]string{"groupd", "timeline", "e.ndjson", "-o", "t.svg"}, []string{"groupd", "timeline", "-o", "t.svg", "--", "e.ndjson"}},
		{[]string{"groupd", "timeline", "-o", "t.svg", "e.ndjson", "--title", "a b"},
			[]string{"groupd", "timeline", "-o", "t.svg", "--title", "a b", "--", "e.ndjson"}},
		{[]string{"groupd", "timeline", "--output=t.svg", "-"}, []string{"groupd", "timeline", "--output=t.svg", "--", "-"}},
		{[]string{"groupd", "timeline", "e", "--help"}, []string{"groupd", "timeline", "--help", "--", "e"}},
		{[]string{"groupd", "timeline", "--", "-o"}, []string{"groupd", "timeline", "--", "-o"}},
		{[]string{"groupd", "timeline", "e", "--title", "t", "-o"}, []string{"groupd", "timeline", "--title", "t", "-o"}},
	} {
		if got := permuteTimelineArgs(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("permuteTimelineArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
