package group

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
)

// TestDocNamesOnlyExported checks what `go doc -all` shows of package group
// (and group/memnet): the package doc, and the doc comments of exported
// identifiers and of exported struct fields. A reader of those cannot open
// an unexported function or a file, so the comments must not send them to
// one: no package-level unexported identifier written in camelCase (a
// plain word such as "loop" cannot be told from English) and no file name.
func TestDocNamesOnlyExported(t *testing.T) {
	for _, dir := range []string{".", "memnet"} {
		t.Run(dir, func(t *testing.T) {
			for _, p := range docProblems(t, dir) {
				t.Error(p)
			}
		})
	}
}

// fileName matches a Go file's name in prose.
var fileName = regexp.MustCompile(`\b[A-Za-z0-9_]+\.go\b`)

// docProblems returns one line per reference to an unexported name or a
// file in the exported documentation of the package in dir.
func docProblems(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for name, p := range pkgs {
		if strings.HasSuffix(name, "_test") {
			continue
		}
		for fn, f := range p.Files {
			if !strings.HasSuffix(fn, "_test.go") {
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	// Every unexported name declared at package level, and every method
	// and struct field, whatever its receiver or type.
	hidden := map[string]bool{}
	note := func(id *ast.Ident) {
		if id != nil && !id.IsExported() && id.Name != "_" && camel(id.Name) {
			hidden[id.Name] = true
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch d := n.(type) {
			case *ast.FuncDecl:
				note(d.Name)
			case *ast.TypeSpec:
				note(d.Name)
			case *ast.ValueSpec:
				for _, id := range d.Names {
					note(id)
				}
			case *ast.Field:
				for _, id := range d.Names {
					note(id)
				}
			}
			return true
		})
	}

	p, err := doc.NewFromFiles(fset, files, "github.com/groupd/groupd/group/"+dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	check := func(where, text string) {
		for _, w := range fileName.FindAllString(text, -1) {
			out = append(out, where+": names the file "+w)
		}
		for _, w := range strings.FieldsFunc(text, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
		}) {
			if hidden[w] {
				out = append(out, where+": names the unexported "+w)
			}
		}
	}
	check("package doc", p.Doc)
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			check(strings.Join(v.Names, ", "), v.Doc)
			for _, s := range v.Decl.Specs {
				vs := s.(*ast.ValueSpec)
				if len(vs.Names) > 0 && vs.Names[0].IsExported() {
					check(vs.Names[0].Name, vs.Doc.Text()+vs.Comment.Text())
				}
			}
		}
	}
	funcs := func(prefix string, fs []*doc.Func) {
		for _, f := range fs {
			check(prefix+f.Name, f.Doc)
		}
	}
	values(p.Consts)
	values(p.Vars)
	funcs("", p.Funcs)
	for _, ty := range p.Types {
		check(ty.Name, ty.Doc)
		values(ty.Consts)
		values(ty.Vars)
		funcs("", ty.Funcs)
		funcs(ty.Name+".", ty.Methods)
		for _, s := range ty.Decl.Specs {
			ts, ok := s.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				continue
			}
			var fields *ast.FieldList
			switch tt := ts.Type.(type) {
			case *ast.StructType:
				fields = tt.Fields
			case *ast.InterfaceType:
				fields = tt.Methods
			}
			if fields == nil {
				continue
			}
			for _, fld := range fields.List {
				if len(fld.Names) > 0 && !fld.Names[0].IsExported() {
					continue // go doc hides it
				}
				name := ty.Name
				if len(fld.Names) > 0 {
					name += "." + fld.Names[0].Name
				}
				check(name, fld.Doc.Text()+fld.Comment.Text())
			}
		}
	}
	return out
}

// camel reports whether an identifier has an upper-case letter, a digit
// or an underscore after its first letter: a name no prose word is.
func camel(s string) bool {
	for i, r := range s {
		if i > 0 && (unicode.IsUpper(r) || unicode.IsDigit(r) || r == '_') {
			return true
		}
	}
	return false
}

// TestDocFigures pins figures that doc comments state to the code that
// makes them true.
func TestDocFigures(t *testing.T) {
	// MaxNameLen's doc: the tags' room in the 512-byte meta.
	if maxTagBytes != 424 || metaMax != 512 {
		t.Errorf("the doc of MaxNameLen says tags get 424 bytes of a 512-byte meta; the code gives %d of %d", maxTagBytes, metaMax)
	}
	// Config.Join's doc: failed seeds are retried 1 s, then 2, 4 ... up
	// to ResolveInterval apart; DefaultResolveInterval's: 10 s, fast 2 s.
	if seedRetryMin != time.Second {
		t.Errorf("Config.Join's doc says seeds are retried from 1 s on; the code: %v", seedRetryMin)
	}
	if l, f := DefaultLANConfig().ResolveInterval, DefaultFastConfig().ResolveInterval; l != 10*time.Second || f != 2*time.Second {
		t.Errorf("DefaultResolveInterval's doc says 10 s (fast 2 s); the configs: %v, %v", l, f)
	}
	// OnNewLeader's and NameOf's docs: a missing name is waited for up
	// to BeaconInterval + AliveInterval.
	for _, cfg := range []Config{DefaultLANConfig(), DefaultFastConfig()} {
		a := &Agent{cfg: cfg}
		if want := cfg.Timing.BeaconInterval + cfg.Timing.AliveInterval; a.nameWait() != want {
			t.Errorf("%s: nameWait %v, the docs say BeaconInterval + AliveInterval = %v", cfg.Profile, a.nameWait(), want)
		}
	}
	// docs/hooks.md: a hook waits up to 1.25 s on lan for a name.
	if a := (&Agent{cfg: DefaultLANConfig()}); a.nameWait() != 1250*time.Millisecond {
		t.Errorf("docs/hooks.md says a hook waits up to 1.25 s on lan for a name; nameWait is %v", a.nameWait())
	}
}
