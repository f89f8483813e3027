package lab

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
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

