package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/groupd/groupd/group"
)

// noFlag are the fields of group.Config that groupd run sets without a
// flag of their own, or not at all.
var noFlag = map[string]bool{
	"TickInterval": true, "Logger": true, "Leader": true, "Transport": true,
	"GossipTransport": true, "InputLog": true, "OnEvent": true, "BeforeLeave": true, "WrapAPI": true,
}

// TestConfigFlags: every field of group.Config (Timing's and Quorum's one
// by one) maps to a flag of groupd run or is in noFlag, and every field
// that group's messages name maps to a flag, so that no error reaches the
// command line in the library's words.
func TestConfigFlags(t *testing.T) {
	flags := map[string]bool{}
	for _, f := range runCommand().Flags {
		flags[f.Names()[0]] = true
	}
	for field, flag := range configFlags {
		if !flags[flag] {
			t.Errorf("configFlags maps Config.%s to --%s, which groupd run does not have", field, flag)
		}
	}
	ct := reflect.TypeOf(group.Config{})
	for i := 0; i < ct.NumField(); i++ {
		f := ct.Field(i)
		names := []string{f.Name}
		if f.Name == "Timing" || f.Name == "Quorum" {
			names = nil
			for j := 0; j < f.Type.NumField(); j++ {
				names = append(names, f.Name+"."+f.Type.Field(j).Name)
			}
		}
		for _, n := range names {
			if _, ok := configFlags[n]; !ok && !noFlag[n] {
				t.Errorf("Config.%s has no flag in configFlags and is not in noFlag", n)
			}
		}
	}

	// The fields group's messages name: in every string literal of its
	// source.
	files, err := filepath.Glob("../../group/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("group's source: %v", err)
	}
	named := 0
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, m := range configField.FindAllString(s, -1) {
				named++
				field := strings.TrimPrefix(m, "Config.")
				if _, ok := configFlags[field]; !ok && field != "TickInterval" {
					t.Errorf("%s: %q names %s, which maps to no flag", fset.Position(lit.Pos()), s, m)
				}
			}
			return true
		})
	}
	if named < 20 {
		t.Errorf("found %d fields named in group's messages; the scan is broken", named)
	}
}

func TestFlagTerms(t *testing.T) {
	for in, want := range map[string]string{
		"Config.Port 7959: its gossip port 7960 (Config.Port+1; Config.GossipPort sets another): in use": "--port 7959: its gossip port 7960 (--port+1; --gossip-port sets another): in use",
		"Config.Timing.AliveTimeout (1ms) must be >= Config.Timing.AliveInterval":                        "--alive-timeout (1ms) must be >= --alive-interval",
		"Timing.LeaseMargin (1s) ... raise Timing.Lease":                                                 "--lease-margin (1s) ... raise --lease",
		"Quorum.TieBreaker needs Quorum.Expect":                                                          "--tie-breaker needs --expect",
		"Config.DataDir /tmp/x is not a directory":                                                       "--data-dir /tmp/x is not a directory",
		"Config.TickInterval must be > 0":                                                                "Config.TickInterval must be > 0",
		"NotConfig.Port":                                                                                 "NotConfig.Port",
	} {
		if got := flagTerms(in); got != want {
			t.Errorf("flagTerms(%q) = %q, want %q", in, got, want)
		}
	}
}
