package lab

import (
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRunArgs checks the daemons' `groupd run` arguments: each is named
// after its namespace, also with another node's ID, and the lab's and the
// node's own arguments come after the lab's (so they may override them).
func TestRunArgs(t *testing.T) {
	dir := t.TempDir()
	l := newLab(Config{Nodes: 3, Prefix: "hl", Subnet: netip.MustParsePrefix("10.81.0.0/24"), Dir: dir, Profile: "lan", Args: []string{"--log-level", "debug"}})
	flag := func(args []string, name string) string {
		i := slices.Index(args, name)
		if i < 0 || i+1 >= len(args) {
			t.Fatalf("no %s in %q", name, args)
		}
		return args[i+1]
	}
	args := l.nodes[3].runArgs()
	want := "run --id 3 --name hl-3 --bind 10.81.0.3 --interface eth0 --data-dir " + filepath.Join(dir, "node3", "data") +
		" --api unix:" + filepath.Join(dir, "node3", "api.sock") + " --profile lan --log-level debug"
	if got := strings.Join(args, " "); got != want {
		t.Errorf("node 3 runs\n  %s\nwant\n  %s", got, want)
	}
	if err := l.SetOptions(Options{ID: 1, Args: []string{"--priority", "7"}}, 2); err != nil {
		t.Fatal(err)
	}
	args = l.nodes[2].runArgs()
	if flag(args, "--id") != "1" || flag(args, "--name") != "hl-2" || flag(args, "--priority") != "7" {
		t.Errorf("node 2 with node 1's ID runs %q: want --id 1, --name hl-2 (its namespace), --priority 7", args)
	}
	if slices.Index(args, "--name") > slices.Index(args, "--log-level") {
		t.Errorf("--name comes after Config.Args in %q: an operator's --name would not win", args)
	}
}
