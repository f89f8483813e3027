package main

import (
	"os"
	"regexp"
	"testing"
)

// TestContribEnv checks that contrib/groupd.env documents the variable of
// every `groupd run` flag, and names no variable that is not one.
func TestContribEnv(t *testing.T) {
	b, err := os.ReadFile("../../contrib/groupd.env")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#?(GROUPD_[A-Z_]+)=`).FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = true
	}
	flags := map[string]bool{}
	for _, f := range runCommand().Flags {
		name := f.Names()[0]
		if name == "help" {
			continue
		}
		flags[envName(name)] = true
		if !documented[envName(name)] {
			t.Errorf("contrib/groupd.env does not document %s (--%s)", envName(name), name)
		}
	}
	for v := range documented {
		if !flags[v] {
			t.Errorf("contrib/groupd.env sets %s, which is no flag's variable", v)
		}
	}
}
