package timeline

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/groupd/groupd/wire"
)

var update = flag.Bool("update", false, "rewrite the golden SVG files in testdata/")

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// wellFormed fails the test unless s parses as XML.
func wellFormed(t *testing.T, s string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name, events, faults, golden string
		opts                         Options
	}{
		{"small", "small.ndjson", "small-faults.ndjson", "small.svg", Options{Title: "small: partition 1,2|3, heal, kill 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var faults io.Reader
			if tc.faults != "" {
				faults = open(t, tc.faults)
			}
			var buf bytes.Buffer
			if err := Render(&buf, open(t, tc.events), faults, tc.opts); err != nil {
				t.Fatal(err)
			}
			wellFormed(t, buf.String())
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./timeline -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				got := path + ".got"
				_ = os.WriteFile(got, buf.Bytes(), 0o644)
				t.Fatalf("SVG differs from %s (wrote %s; run with -update if the change is intended)", path, got)
			}
		})
	}
}

func TestContent(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, open(t, "small.ndjson"), open(t, "small-faults.ndjson"), Options{}); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{
		`data-node="1"`, `data-node="2"`, `data-node="3"`, // one row per node
		"group 1.1", "group 2.3", "group 3.2", "group 4.3", // legend
		"★", // coordinator mark
		`data-state="election"`, `data-state="reorganization"`,
		`class="down"`,                                     // node 1 after the kill
		`data-kind="partition"`, "partition 1,2|3", "heal", // fault window and label
		"kill 1", ">0s<", ">10s<", // ticks
	} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// The partition window ends at the heal (8 s of 12 s + margin).
	if strings.Count(s, `data-kind="partition"`) != 1 {
		t.Errorf("want one partition window")
	}
}

func TestMalformed(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "small.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(good)), "\n")
	bad := []string{
		`not json`,
		`{"time":"yesterday","node":1,"new":{"group":"1.1"}}`,
		`{"node":1,"new":{"group":"1.1"}}`,               // no time
		`{"time":"2026-11-21T10:00:00Z","node":1}`,       // no new status
		`{"time":"2026-11-21T10:00:00Z","new":{"id":0}}`, // no node
		`[1,2,3]`, // not an object
		`{"time":"2026-11-21T10:00:00Z","node":1,"new":{"`, // truncated
		strings.Repeat("x", maxLine+10),                    // too long
	}
	in := strings.Join(lines[:5], "\n") + "\n" + strings.Join(bad, "\n") + "\n\n  \n" + strings.Join(lines[5:], "\n") // no final newline
	faults := "garbage\n" + `{"time":"2026-11-21T10:00:04Z","kind":"partition","spec":"1,2|3"}` + "\n" + `{"kind":"heal"}` + "\n"

	var warnings []string
	var buf bytes.Buffer
	err = Render(&buf, strings.NewReader(in), strings.NewReader(faults), Options{Warn: func(m string) { warnings = append(warnings, m) }})
	if err != nil {
		t.Fatalf("malformed lines among good ones must not fail: %v", err)
	}
	wellFormed(t, buf.String())
	want := []string{"timeline: skipped 8 malformed event lines", "timeline: skipped 2 malformed fault lines"}
	if strings.Join(warnings, "|") != strings.Join(want, "|") {
		t.Errorf("warnings = %q, want %q", warnings, want)
	}
	if !strings.Contains(buf.String(), "skipped 8 malformed event lines and 2 malformed fault lines") {
		t.Errorf("SVG lacks the skipped-lines note")
	}

	evs, skipped, err := ReadEvents(strings.NewReader(in))
	if err != nil || skipped != 8 || len(evs) != len(lines) {
		t.Errorf("ReadEvents: %d events, %d skipped, %v; want %d, 8, nil", len(evs), skipped, err, len(lines))
	}
}

func TestEmpty(t *testing.T) {
	for name, in := range map[string]string{
		"empty":         "",
		"blank":         "\n\n   \n",
		"all malformed": "nope\n{}\n{\"time\":\"2026-11-21T10:00:00Z\"}\n",
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Render(&buf, strings.NewReader(in), nil, Options{})
			if !errors.Is(err, ErrNoEvents) {
				t.Fatalf("err = %v, want ErrNoEvents", err)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes on error", buf.Len())
			}
		})
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestReadError(t *testing.T) {
	err := Render(io.Discard, failingReader{}, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v, want the reader's error", err)
	}
}

func TestManyGroupsDistinctColours(t *testing.T) {
	seen := map[string]int{}
	for i := 0; i < 40; i++ {
		c := groupColour(i)
		if j, dup := seen[c]; dup {
			t.Fatalf("groups %d and %d share colour %s", j, i, c)
		}
		if c == "#c8c8c8" || c == "#e0e0e0" {
			t.Fatalf("group %d got a grey reserved for election/no group", i)
		}
		seen[c] = i
	}
}

func TestGroupOrder(t *testing.T) {
	gs := []wire.GroupNumber{{Seq: 10, ID: 2}, {Seq: 2, ID: 7}, {Seq: 2, ID: 3}, {Seq: 1, ID: 9}}
	want := []wire.GroupNumber{{Seq: 1, ID: 9}, {Seq: 2, ID: 3}, {Seq: 2, ID: 7}, {Seq: 10, ID: 2}}
	sort.Slice(gs, func(i, j int) bool { return groupLess(gs[i], gs[j]) })
	if !reflect.DeepEqual(gs, want) {
		t.Fatalf("order %v, want %v", gs, want)
	}
}
