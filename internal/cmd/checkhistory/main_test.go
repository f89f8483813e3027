package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groupd/groupd/internal/history"
)

func TestCheckHistory(t *testing.T) {
	dir := t.TempDir()
	ev := func(ms int, node, seq, coord int, members string) string {
		role := "participant"
		if node == coord {
			role = "coordinator"
		}
		return `{"time":"2026-11-21T10:00:00.` + pad(ms) + `Z","node":` + itoa(node) + `,"reason":"merge","old":null,"new":{"id":` + itoa(node) +
			`,"priority":100,"state":"normal","role":"` + role + `","group":"` + itoa(seq) + "." + itoa(coord) + `","coordinator":` + itoa(coord) +
			`,"members":[` + members + `],"version":1,"since":"2026-11-21T10:00:00Z","counter":` + itoa(seq) + `,"incarnation":7,"persist_error":"","time":"2026-11-21T10:00:00Z"}}`
	}
	good := strings.Join([]string{ev(100, 1, 1, 1, "1"), ev(100, 2, 1, 2, "2"), ev(300, 2, 2, 2, "1,2"), ev(310, 1, 2, 2, "1,2")}, "\n")
	faults := `{"time":"2026-11-21T10:00:00.200Z","kind":"heal","spec":"all"}` + "\n" +
		`{"time":"2026-11-21T10:00:00.500Z","kind":"quiet","spec":"round 1"}` + "\n"
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	e, f := write("events.ndjson", good), write("faults.ndjson", faults)
	var out, errOut bytes.Buffer
	if code := run([]string{"-events", e, "-faults", f}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "1 of 1 held") {
		t.Fatalf("clean history: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run([]string{"-json", "-events", e, "-faults", f}, &out, &errOut); code != 0 {
		t.Fatalf("-json: exit %d", code)
	}
	var rep history.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || !rep.OK || rep.Checks != 1 || rep.GroupsCreated != 3 {
		t.Fatalf("-json: %+v, %v\n%s", rep, err, out.String())
	}
	// One file holding both kinds of line, as the lab's history.ndjson.
	out.Reset()
	if code := run([]string{"-history", write("history.ndjson", good+"\n"+faults)}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "1 of 1 held") {
		t.Fatalf("-history: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	// Node 2 creates 2.2 twice (a restart that reuses it).
	bad := good + "\n" + strings.Replace(ev(400, 2, 2, 2, "2"), `"incarnation":7`, `"incarnation":8`, 1)
	out.Reset()
	if code := run([]string{"-events", write("bad.ndjson", bad)}, &out, &errOut); code != 1 || !strings.Contains(out.String(), "created twice") {
		t.Fatalf("bad history: exit %d\n%s", code, out.String())
	}
	if code := run(nil, &out, &errOut); code != 2 {
		t.Fatalf("no -events: exit %d", code)
	}
	if code := run([]string{"-events", filepath.Join(dir, "missing")}, &out, &errOut); code != 2 {
		t.Fatalf("missing file: exit %d", code)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func pad(ms int) string {
	s := itoa(ms)
	for len(s) < 3 {
		s = "0" + s
	}
	return s
}
