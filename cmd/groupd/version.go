package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// release is groupd's version: the one place it is written. A release
// commit sets it and is tagged v<release>; `groupd version` prints it, and
// -ldflags "-X main.version=..." overrides it (main.go).
const release = "0.1.0"

// commit is the source's commit, set at link time with
// -ldflags "-X main.commit=$(git describe --always --dirty)" where the go
// command cannot stamp it: GOFLAGS=-buildvcs=false, a git worktree (whose
// .git is a file, which the go command does not recognise), a copy of the
// source without .git.
var commit = ""

// noStampHint says how to stamp a binary that carries no commit.
const noStampHint = `build with -ldflags "-X main.commit=$(git describe --always --dirty)"`

// sourceDescribe returns `git describe --always --dirty` of the tree this
// binary was compiled from, if it is still where the compiler saw it (a
// build without -trimpath records the path) and git answers within a
// second; else "". It describes the tree as it is now, which may have
// moved on since the build: printVersion says so.
func sourceDescribe() (desc, dir string) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", ""
	}
	dir = filepath.Dir(filepath.Dir(filepath.Dir(file))) // cmd/groupd/version.go -> the module root
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "describe", "--always", "--dirty").Output()
	if err != nil {
		return "", ""
	}
	return strings.TrimSpace(string(out)), dir
}

// commitID is the commit the binary was built from, "+dirty" when the
// tree had uncommitted changes (as the go command marks a pseudo-version),
// or "" when none was stamped.
func (bi buildInfo) commitID() string {
	if bi.Commit != "" && bi.Modified {
		return bi.Commit + "+dirty"
	}
	return bi.Commit
}

// commitLine is what `groupd version` prints after "commit: ".
func commitLine(bi buildInfo) string {
	if id := bi.commitID(); id != "" {
		return id
	}
	if desc, dir := sourceDescribe(); desc != "" {
		return desc + " (no commit stamped in this binary: git describe of its source, " + dir + ", now; " + noStampHint + ")"
	}
	return "unknown (no commit stamped in this binary: " + noStampHint + ")"
}
