package lab

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/schema"
)

// uiTestLab is a lab of n nodes in a temporary run dir, with nothing up:
// what the view's handlers need without root.
func uiTestLab(t *testing.T, n int) *Lab {
	t.Helper()
	dir := t.TempDir()
	l := newLab(Config{Nodes: n, Prefix: "hl", Subnet: netip.MustParsePrefix("10.81.0.0/24"), Dir: dir, Profile: "lan"})
	t.Cleanup(func() {
		for _, nd := range l.nodes[1:] {
			nd.client.Close()
		}
	})
	return l
}

// fakeNode serves h on node i's API socket.
func fakeNode(t *testing.T, l *Lab, i int, h http.Handler) {
	t.Helper()
	if err := os.MkdirAll(l.NodeDir(i), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", l.Sock(i))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// uiGet asks the view's handler for target.
func uiGet(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	return w
}

func TestUIStatusMembers(t *testing.T) {
	l := uiTestLab(t, 2)
	// A member field this package does not know (a newer daemon's) must
	// reach the page unchanged.
	members := `[{"id":1,"name":"hl-1","priority":100,"addr":"10.81.0.1:7950","gossip":"alive","in_group":true,"group":"","state":"normal","leader":true,"degraded":false,"tags":null,"reach":{"2":"cut"}}]`
	fakeNode(t, l, 1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/status":
			w.Write([]byte(`{"id":1,"name":"hl-1","state":"normal"}`))
		case "/v1/members":
			w.Write([]byte(members + "\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	w := uiGet(t, l.UIHandler(), "/lab/status")
	if w.Code != http.StatusOK {
		t.Fatalf("/lab/status: %d %s", w.Code, w.Body)
	}
	var got []map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || len(got) != 2 {
		t.Fatalf("/lab/status: %v: %s", err, w.Body)
	}
	if string(got[0]["node"]) != "1" || string(got[0]["members"]) != members || got[0]["error"] != nil || got[0]["members_error"] != nil {
		t.Errorf("node 1's entry is %s; want its members unchanged and no error", w.Body)
	}
	if !strings.Contains(string(got[0]["status"]), `"name":"hl-1"`) {
		t.Errorf("node 1's status is %s", got[0]["status"])
	}
	if string(got[1]["node"]) != "2" || string(got[1]["status"]) != "null" || string(got[1]["members"]) != "null" ||
		got[1]["error"] == nil || got[1]["members_error"] == nil {
		t.Errorf("node 2 (no daemon) is %s; want status and members null with their errors", w.Body)
	}
}

func TestLinksNow(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	mk := func(s int, kind, spec string) schema.Mark { return schema.Mark{Time: at(s), Kind: kind, Spec: spec} }
	c := func(from, to int, kind string, s int) LinkCut {
		return LinkCut{From: from, To: to, Kind: kind, Since: at(s)}
	}
	d := func(kind, spec string, from []int, s int) LinkDegradation {
		return LinkDegradation{Kind: kind, Spec: spec, From: from, Since: at(s)}
	}
	for _, tc := range []struct {
		name     string
		marks    []schema.Mark
		cuts     []LinkCut
		degraded []LinkDegradation
	}{
		{"nothing", nil, nil, nil},
		{"no faults", []schema.Mark{mk(1, schema.KindStart, "1-3"), mk(2, schema.KindKill, "2"), mk(3, schema.KindCheck, "L1")}, nil, nil},
		{"partition both ways", []schema.Mark{mk(1, schema.KindPartition, "1,2|3")},
			[]LinkCut{c(1, 3, "partition", 1), c(2, 3, "partition", 1), c(3, 1, "partition", 1), c(3, 2, "partition", 1)}, nil},
		{"three sides, ranges", []schema.Mark{mk(1, schema.KindPartition, "1|2|3-3")},
			[]LinkCut{c(1, 2, "partition", 1), c(1, 3, "partition", 1), c(2, 1, "partition", 1), c(2, 3, "partition", 1), c(3, 1, "partition", 1), c(3, 2, "partition", 1)}, nil},
		{"a partition replaces the previous one", []schema.Mark{mk(1, schema.KindPartition, "1|2,3"), mk(2, schema.KindPartition, "1,2|3")},
			[]LinkCut{c(1, 3, "partition", 2), c(2, 3, "partition", 2), c(3, 1, "partition", 2), c(3, 2, "partition", 2)}, nil},
		{"oneway", []schema.Mark{mk(1, schema.KindOneway, "1->3")}, []LinkCut{c(1, 3, "oneway", 1)}, nil},
		{"oneway cuts add up, the first keeps its time", []schema.Mark{mk(1, schema.KindOneway, "1->3"), mk(2, schema.KindOneway, "1->3,2->3")},
			[]LinkCut{c(1, 3, "oneway", 1), c(2, 3, "oneway", 2)}, nil},
		{"partition and oneway on one pair", []schema.Mark{mk(1, schema.KindOneway, "1->2"), mk(2, schema.KindPartition, "1|2")},
			[]LinkCut{c(1, 2, "oneway", 1), c(1, 2, "partition", 2), c(2, 1, "partition", 2)}, nil},
		{"marks out of order", []schema.Mark{mk(2, schema.KindHeal, "all"), mk(1, schema.KindPartition, "1|2"), mk(3, schema.KindOneway, "2->1")},
			[]LinkCut{c(2, 1, "oneway", 3)}, nil},
		{"heal partitions keeps loss", []schema.Mark{mk(1, schema.KindPartition, "1|2"), mk(2, schema.KindOneway, "2->3"), mk(3, schema.KindLoss, "20%"), mk(4, schema.KindHeal, "partitions")},
			nil, []LinkDegradation{d("loss", "20%", nil, 3)}},
		{"heal all", []schema.Mark{mk(1, schema.KindPartition, "1|2"), mk(3, schema.KindLoss, "20%"), mk(4, schema.KindHeal, "all")}, nil, nil},
		{"end of the run", []schema.Mark{mk(1, schema.KindPartition, "1|2"), mk(3, schema.KindDelay, "50ms"), mk(4, schema.KindEnd, "teardown")}, nil, nil},
		{"loss and delay of one degrade", []schema.Mark{mk(1, schema.KindLoss, "20% from 1,2"), mk(1, schema.KindDelay, "50ms±10ms from 1,2")},
			nil, []LinkDegradation{d("loss", "20%", []int{1, 2}, 1), d("delay", "50ms±10ms", []int{1, 2}, 1)}},
		{"a new degrade replaces loss and delay", []schema.Mark{mk(1, schema.KindLoss, "20%"), mk(1, schema.KindDelay, "50ms"), mk(2, schema.KindLoss, "5% from 3")},
			nil, []LinkDegradation{d("loss", "5%", []int{3}, 2)}},
		{"bad specs are skipped", []schema.Mark{mk(1, schema.KindPartition, "1,2"), mk(2, schema.KindPartition, "1|1"), mk(3, schema.KindOneway, "1-3"),
			mk(4, schema.KindOneway, "2->2"), mk(5, schema.KindLoss, "20% from x"), mk(6, schema.KindOneway, "3->1")},
			[]LinkCut{c(3, 1, "oneway", 6)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cuts, degraded := LinksNow(tc.marks)
			if !reflect.DeepEqual(cuts, tc.cuts) {
				t.Errorf("cuts\n  %+v\nwant\n  %+v", cuts, tc.cuts)
			}
			if !reflect.DeepEqual(degraded, tc.degraded) {
				t.Errorf("degraded\n  %+v\nwant\n  %+v", degraded, tc.degraded)
			}
		})
	}
}

// TestUILinks reads /lab/links as marks are appended, and after the
// history was replaced.
func TestUILinks(t *testing.T) {
	l := uiTestLab(t, 3)
	h := l.UIHandler()
	get := func() Links {
		t.Helper()
		w := uiGet(t, h, "/lab/links")
		if w.Code != http.StatusOK {
			t.Fatalf("/lab/links: %d %s", w.Code, w.Body)
		}
		if !strings.Contains(w.Body.String(), `"cuts":[`) || !strings.Contains(w.Body.String(), `"degraded":[`) {
			t.Errorf("/lab/links is %s: want both lists, [] when empty", w.Body)
		}
		var ls Links
		if err := json.Unmarshal(w.Body.Bytes(), &ls); err != nil {
			t.Fatal(err)
		}
		return ls
	}
	if ls := get(); len(ls.Cuts)+len(ls.Degraded) != 0 || ls.Time.IsZero() {
		t.Errorf("no history: %+v", ls)
	}
	if _, err := l.Mark(schema.KindPartition, "1|2,3", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	l.appendHistory([]byte(`{"time":"2026-11-21T10:00:00Z","node":1,"reason":"x","old":{},"new":{}}`))
	if ls := get(); len(ls.Cuts) != 4 {
		t.Errorf("after a partition 1|2,3: %+v", ls)
	}
	l.Mark(schema.KindOneway, "2->3", "", time.Now())
	if ls := get(); len(ls.Cuts) != 5 {
		t.Errorf("after a one-way cut 2->3 too: %+v", ls)
	}
	// A new run: the history is replaced by a shorter one.
	l.mu.Lock()
	l.hfile.Close()
	l.hfile = nil
	l.mu.Unlock()
	if err := os.WriteFile(filepath.Join(l.Dir(), HistoryFile), []byte(`{"time":"2026-11-21T10:00:00Z","kind":"loss","spec":"1%"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ls := get(); len(ls.Cuts) != 0 || len(ls.Degraded) != 1 || ls.Degraded[0].Spec != "1%" || ls.Degraded[0].From != nil {
		t.Errorf("after the history was replaced: %+v", ls)
	}
	// Replaced by a longer one (renamed into place): another file.
	longer := filepath.Join(l.Dir(), "new.ndjson")
	b := []byte(strings.Repeat(`{"time":"2026-11-21T10:00:00Z","node":1,"reason":"padding","old":{},"new":{}}`+"\n", 3) +
		`{"time":"2026-11-21T10:00:01Z","kind":"oneway","spec":"3->1"}` + "\n")
	if err := os.WriteFile(longer, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(longer, filepath.Join(l.Dir(), HistoryFile)); err != nil {
		t.Fatal(err)
	}
	if ls := get(); len(ls.Cuts) != 1 || len(ls.Degraded) != 0 || ls.Cuts[0].From != 3 {
		t.Errorf("after the history was replaced by a longer one: %+v", ls)
	}
}
