package api_test

import (
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the API files from the packages")

// public is every package users may import, and its API file.
var public = map[string]string{
	"github.com/groupd/groupd/group":        "group.txt",
	"github.com/groupd/groupd/group/memnet": "memnet.txt",
	"github.com/groupd/groupd/group/udp":    "udp.txt",
	"github.com/groupd/groupd/client":       "client.txt",
	"github.com/groupd/groupd/schema":       "schema.txt",
}

func TestAPI(t *testing.T) {
	imp := exportImporter(t)
	for path, file := range public {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("api: load %s: %v", path, err)
		}
		got := apiOf(pkg)
		if *update {
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("api: %v (go test ./api -update writes it)", err)
		}
		if got != string(want) {
			t.Errorf("api: %s's exported API differs from api/%s; if the change is meant, run go test ./api -update, "+
				"commit the file and say what changed in CHANGES.md:\n%s", path, file, diff(string(want), got))
		}
	}
}

// exportImporter imports packages from the export data the go command
// keeps in its build cache (go list -export): the type-checked API without
// type-checking every dependency from source again.
func exportImporter(t *testing.T) types.Importer {
	paths := slices.Sorted(maps.Keys(public))
	cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("api: go list -export: %v", err)
	}
	files := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(l, "\t"); ok && file != "" {
			files[path] = file
		}
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
}

// apiOf lists pkg's exported names, one per line, sorted: constants,
// variables, functions, types with their exported fields and methods.
func apiOf(pkg *types.Package) string {
	name := pkg.Name()
	q := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
	var lines []string
	add := func(format string, a ...any) { lines = append(lines, "pkg "+name+", "+fmt.Sprintf(format, a...)) }
	scope := pkg.Scope()
	for _, n := range scope.Names() {
		obj := scope.Lookup(n)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			add("const %s %s", n, types.TypeString(o.Type(), q))
		case *types.Var:
			add("var %s %s", n, types.TypeString(o.Type(), q))
		case *types.Func:
			add("func %s%s", n, strings.TrimPrefix(types.TypeString(o.Type(), q), "func"))
		case *types.TypeName:
			typeAPI(add, o, q)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

func typeAPI(add func(string, ...any), o *types.TypeName, q types.Qualifier) {
	n := o.Name()
	if o.IsAlias() {
		add("type %s = %s", n, types.TypeString(o.Type(), q))
		return
	}
	under := o.Type().Underlying()
	switch u := under.(type) {
	case *types.Struct:
		add("type %s struct", n)
		for i := 0; i < u.NumFields(); i++ {
			if f := u.Field(i); f.Exported() {
				add("type %s struct, %s %s", n, f.Name(), types.TypeString(f.Type(), q))
			}
		}
	case *types.Interface:
		add("type %s interface", n)
		for i := 0; i < u.NumExplicitMethods(); i++ {
			if m := u.ExplicitMethod(i); m.Exported() {
				add("type %s interface, %s%s", n, m.Name(), strings.TrimPrefix(types.TypeString(m.Type(), q), "func"))
			}
		}
	default:
		add("type %s %s", n, types.TypeString(under, q))
	}
	// Methods declared on T or *T; those promoted from an embedded
	// field are the field's type's API (the field is listed above).
	ms := types.NewMethodSet(types.NewPointer(o.Type()))
	for i := 0; i < ms.Len(); i++ {
		sel := ms.At(i)
		m := sel.Obj().(*types.Func)
		if !m.Exported() || len(sel.Index()) > 1 {
			continue
		}
		sig := m.Type().(*types.Signature)
		r := n
		if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
			r = "*" + n
		}
		add("method (%s) %s%s", r, m.Name(), strings.TrimPrefix(types.TypeString(sig, q), "func"))
	}
}

// diff lists the lines only one of a and b has.
func diff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range al {
		if l != "" && !slices.Contains(bl, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range bl {
		if l != "" && !slices.Contains(al, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
