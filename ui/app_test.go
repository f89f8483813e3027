package ui

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// appHarness runs assets/app.js under node with a stand-in for the DOM
// and for fetch (the API's answers come from argv), lets it poll once and
// render, and prints what it put in the summary and the groups' box.
const appHarness = `
const fs = require('fs'), vm = require('vm');
const elems = {};
const el = (id) => elems[id] ||= {id, textContent: '', innerHTML: '', dataset: {}, clientWidth: 1000, setAttribute() {}};
const api = JSON.parse(process.argv[3]);
const ctx = {
  console, setTimeout, clearTimeout, setInterval: () => 0, performance, TextDecoder, AbortController,
  document: {getElementById: el, title: ''},
  fetch: async (path) => path in api ?
    {ok: true, status: 200, json: async () => api[path], body: null} :
    {ok: false, status: 404, json: async () => null, body: null},
};
ctx.window = ctx;
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(process.argv[2], 'utf8'), ctx);
setTimeout(() => {
  console.log(JSON.stringify({summary: el('summary').textContent, groups: el('groups').innerHTML}));
  process.exit(0);
}, 300);
`

// TestAppDeadLeader: after a kill -9 of the leader (node 3), the view of
// node 1 must not count node 3 in the group or star it, whatever its last
// gossip meta says (the issue: "★ n3 … dead" under "3 nodes in 1 group").
func TestAppDeadLeader(t *testing.T) {
	nodeJS, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node (Node.js) is not installed: the live view's script is not run here")
	}
	dir := t.TempDir()
	harness := filepath.Join(dir, "harness.js")
	app := filepath.Join(dir, "app.js")
	src, err := fs.ReadFile(Assets(), "app.js")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(harness, []byte(appHarness), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(app, src, 0o600); err != nil {
		t.Fatal(err)
	}
	status := map[string]any{"id": 1, "name": "n1", "priority": 100, "state": "normal", "role": "participant",
		"group": "200.2", "coordinator": 2, "coordinator_name": "n2", "members": []int{1, 2},
		"leader": false, "primary": true, "time": "2026-11-26T10:00:02Z", "since": "2026-11-26T10:00:01Z"}
	members := []map[string]any{
		{"id": 1, "name": "n1", "priority": 100, "gossip": "alive", "in_group": true, "group": "200.2", "state": "normal", "leader": false},
		{"id": 2, "name": "n2", "priority": 100, "gossip": "alive", "in_group": true, "group": "200.2", "state": "normal", "leader": true},
		// What an older daemon serves: the dead node's last meta.
		{"id": 3, "name": "n3", "priority": 100, "gossip": "dead", "in_group": false, "group": "100.3", "state": "normal", "leader": true},
	}
	api, _ := json.Marshal(map[string]any{"/v1/status": status, "/v1/members": members})
	out, err := exec.Command(nodeJS, harness, app, string(api)).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct{ Summary, Groups string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("harness output %q: %v", out, err)
	}
	if want := "2 nodes in 1 group, 1 unreachable"; got.Summary != want {
		t.Errorf("summary %q, want %q", got.Summary, want)
	}
	row := func(id string) string {
		i := strings.Index(got.Groups, `<tr class="node" data-id="`+id+`"`)
		if i < 0 {
			t.Fatalf("no row for node %s in %s", id, got.Groups)
		}
		return got.Groups[i : i+strings.Index(got.Groups[i:], ">")]
	}
	if r := row("3"); !strings.Contains(r, `data-leader="false"`) || !strings.Contains(r, `data-reachable="false"`) {
		t.Errorf("the dead leader's row: %s", r)
	}
	if r := row("2"); !strings.Contains(r, `data-leader="true"`) {
		t.Errorf("the live leader's row: %s", r)
	}
}
