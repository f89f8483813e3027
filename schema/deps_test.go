package schema

import (
	"os/exec"
	"strings"
	"testing"
)

// The point of this package: a program that reads a status, an event
// stream or a recorded history links the records, not the daemon. These
// are the readers, and what they must not link (the agent's runtime: its
// gossip, metrics and logging libraries, and package group itself).
var (
	readers = []string{
		"github.com/groupd/groupd/client",
		"github.com/groupd/groupd/timeline",
		"github.com/groupd/groupd/internal/history",
	}
	runtimeDeps = []string{
		"github.com/groupd/groupd/group",
		"github.com/hashicorp/memberlist",
		"github.com/prometheus/client_golang",
		"github.com/rs/zerolog",
	}
)

// nonStdDeps returns the packages outside the standard library that pkg
// depends on, itself included, as `go list -deps` reports them.
func nonStdDeps(t *testing.T, pkg string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the dependencies with: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

func TestReadersDoNotLinkTheRuntime(t *testing.T) {
	for _, pkg := range readers {
		t.Run(pkg[strings.LastIndex(pkg, "/")+1:], func(t *testing.T) {
			deps := nonStdDeps(t, pkg)
			if len(deps) == 0 {
				t.Fatalf("go list -deps %s listed nothing", pkg)
			}
			for _, d := range deps {
				for _, bad := range runtimeDeps {
					if d == bad || strings.HasPrefix(d, bad+"/") {
						t.Errorf("%s depends on %s: read the records from package schema, not from the agent", pkg, d)
					}
				}
			}
		})
	}
}

func TestSchemaDependsOnWireOnly(t *testing.T) {
	for _, d := range nonStdDeps(t, "github.com/groupd/groupd/schema") {
		if d != "github.com/groupd/groupd/schema" && d != "github.com/groupd/groupd/wire" {
			t.Errorf("schema depends on %s; it may use the standard library and wire only", d)
		}
	}
}
