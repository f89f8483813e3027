package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The rules of design.md §2, as assertions: the algorithms are pure, only
// group/ touches the network, the clock and goroutines, and the product
// never imports the tooling.

// pure are the packages the daemon and the simulator share: the
// algorithms (deterministic state machines), the values they exchange,
// the loop body around them and the checker of their histories. None may
// read a clock, start a goroutine, open a socket, draw from the global
// rand, or log: times come in with the inputs.
var pure = []string{"wire", "bully", "ring", "invitation", "invitation/quorum", "driver", "invariant"}

// algorithms are the state machines themselves: not even a lock or the
// host (driver's input log writes a file under a lock; wire's replay
// window is shared by the receivers).
var algorithms = []string{"bully", "ring", "invitation", "invitation/quorum"}

// forbidden are the imports a pure package may not have, and why; the
// second set applies to the algorithms too.
var forbidden = map[string]string{
	"net": "sockets", "net/http": "sockets", "os/exec": "processes", "log": "logging",
	"log/slog": "logging", "github.com/rs/zerolog": "logging",
}
var forbiddenAlgorithm = map[string]string{
	"os": "the host", "sync": "locks and goroutines", "syscall": "the host", "golang.org/x/sys/unix": "the host",
	"math/rand": "randomness of its own (Config.Rand is the one source)", "math/rand/v2": "randomness of its own",
	"crypto/rand": "randomness of its own",
}

// seeded are the math/rand functions that make a seeded source; any other
// package-level call draws from the global one.
var seeded = []string{"New", "NewSource", "NewPCG", "NewChaCha8", "NewZipf"}

// clockCalls read the clock or wait on it.
var clockCalls = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}

func TestPurePackages(t *testing.T) {
	for _, pkg := range pure {
		files, _ := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		if len(files) == 0 {
			t.Errorf("pure package %s has no Go files: the list is stale", pkg)
		}
		for _, p := range files {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			timeName, randName := "", ""
			for _, im := range f.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				if why, bad := forbidden[path]; bad {
					t.Errorf("%s: the pure package %s imports %s (%s)", fset.Position(im.Pos()), pkg, path, why)
				}
				if why, bad := forbiddenAlgorithm[path]; bad && slices.Contains(algorithms, pkg) {
					t.Errorf("%s: the algorithm %s imports %s (%s)", fset.Position(im.Pos()), pkg, path, why)
				}
				if path == "math/rand" || path == "math/rand/v2" {
					randName = "rand"
					if im.Name != nil {
						randName = im.Name.Name
					}
				}
				if path == "time" {
					timeName = "time"
					if im.Name != nil {
						timeName = im.Name.Name
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: the pure package %s starts a goroutine", fset.Position(n.Pos()), pkg)
				case *ast.SelectorExpr:
					id, ok := n.X.(*ast.Ident)
					if ok && timeName != "" && id.Name == timeName && slices.Contains(clockCalls, n.Sel.Name) {
						t.Errorf("%s: the pure package %s reads the clock (time.%s): times come in with the inputs", fset.Position(n.Pos()), pkg, n.Sel.Name)
					}
					if ok && randName != "" && id.Name == randName && ast.IsExported(n.Sel.Name) && !slices.Contains(seeded, n.Sel.Name) &&
						!strings.HasPrefix(n.Sel.Name, "Source") && n.Sel.Name != "Rand" {
						t.Errorf("%s: the pure package %s draws from the global rand (rand.%s)", fset.Position(n.Pos()), pkg, n.Sel.Name)
					}
				}
				return true
			})
		}
	}
}

// tooling are the packages that test, measure and simulate the product.
var tooling = []string{"sim", "invariant", "e2e", "internal/lab", "internal/history", "internal/simbench", "internal/benchtool", "internal/cmd/"}

// TestProductImportsNoTooling: the daemon and the library are built from
// product packages only.
func TestProductImportsNoTooling(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../cmd/groupd", "../group/...", "../client", "../schema").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(dep, module)
		if !ok {
			continue
		}
		for _, tool := range tooling {
			if rest == tool || strings.HasSuffix(tool, "/") && strings.HasPrefix(rest, tool) || strings.HasPrefix(rest, tool+"/") {
				t.Errorf("the product imports the tooling package %s", dep)
			}
		}
	}
}

// TestLibraryIsNoDaemon: the library runs no command, serves no page and
// speaks no command line; those are groupd's (cmd/groupd and its daemon
// package). Neither group nor any package it is built from imports the
// UI, urfave/cli, os/exec or go-isatty, but for two third-party packages
// the library needs, which bring the last two into its build: memberlist's
// go-sockaddr (os/exec, for its interface probes) and zerolog's
// go-colorable (go-isatty).
func TestLibraryIsNoDaemon(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../group").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	banned := func(path string) bool {
		return path == module+"ui" || path == "github.com/urfave/cli" || strings.HasPrefix(path, "github.com/urfave/cli/")
	}
	via := map[string]string{"os/exec": "github.com/hashicorp/go-sockaddr", "github.com/mattn/go-isatty": "github.com/mattn/go-colorable"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if banned(f[0]) {
			t.Errorf("the library is built with %s", f[0])
		}
		for _, im := range f[1:] {
			if allowed, ok := via[im]; ok && f[0] != allowed {
				t.Errorf("%s imports %s (only %s, a dependency the library needs, may)", f[0], im, allowed)
			}
		}
	}
}
