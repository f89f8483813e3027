package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// DefaultPrefix and DefaultSubnet name the lab of scripts/netem when the
// environment does not; every suite of scripts/bench has its own pair.
const (
	DefaultPrefix = "gd"
	DefaultSubnet = "10.77.0"
)

// RunDir is the run dir of a lab of prefix when GROUPD_LAB_DIR does not
// name one: /tmp/groupd-lab for DefaultPrefix, /tmp/groupd-lab-PREFIX for
// any other. It is the one place this rule is written.
func RunDir(prefix string) string {
	if prefix == DefaultPrefix {
		return "/tmp/groupd-lab"
	}
	return "/tmp/groupd-lab-" + prefix
}

// Env is a lab's settings from the environment of the scripts
// (scripts/netem/README.md): GROUPD_LAB_PREFIX, GROUPD_LAB_SUBNET,
// GROUPD_LAB_DIR, GROUPD_LAB_BRIDGE, GROUPD_BIN, GROUPD_PROFILE,
// GROUPD_FAULTS, and GROUPD_LAB_REPO, the repository to build groupd from.
type Env struct {
	Prefix, Subnet, Dir, Bridge string
	Bin, Profile, Faults, Repo  string
}

// FromEnv reads Env; prefix and subnet are the defaults of the caller's
// lab (DefaultPrefix and DefaultSubnet for scripts/netem).
func FromEnv(prefix, subnet string) (Env, error) {
	or := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	e := Env{Prefix: or("GROUPD_LAB_PREFIX", prefix), Subnet: or("GROUPD_LAB_SUBNET", subnet), Bridge: os.Getenv("GROUPD_LAB_BRIDGE"),
		Bin: os.Getenv("GROUPD_BIN"), Profile: or("GROUPD_PROFILE", "lan"), Faults: os.Getenv("GROUPD_FAULTS"), Repo: os.Getenv("GROUPD_LAB_REPO")}
	e.Dir = or("GROUPD_LAB_DIR", RunDir(e.Prefix))
	if e.Faults != FaultsAuto && e.Faults != FaultsNetem && e.Faults != FaultsIptables {
		return e, fmt.Errorf("GROUPD_FAULTS must be netem or iptables, not %q", e.Faults)
	}
	if !filepath.IsAbs(e.Dir) || filepath.Clean(e.Dir) == "/" {
		return e, fmt.Errorf("GROUPD_LAB_DIR must be an absolute path other than /, not %q", e.Dir)
	}
	return e, nil
}

// Config is the configuration of a lab of n nodes in this environment.
// The daemons inherit the environment (an operator's GROUPD_LOG_LEVEL, or
// GROUPD_EXPECT, reaches them).
func (e Env) Config(n int) (Config, error) {
	subnet, err := ParseSubnet(e.Subnet)
	if err != nil {
		return Config{}, err
	}
	return Config{Nodes: n, Prefix: e.Prefix, Subnet: subnet, Bridge: e.Bridge, Dir: e.Dir, Bin: e.Bin, Profile: e.Profile,
		Faults: e.Faults, InheritEnv: true}, nil
}

// GroupdBin returns the groupd binary to run: GROUPD_BIN, or ./cmd/groupd
// of GROUPD_LAB_REPO built into out.
func (e Env) GroupdBin(out string) (string, error) {
	if e.Bin != "" {
		if fi, err := os.Stat(e.Bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("GROUPD_BIN=%s is not an executable", e.Bin)
		}
		return e.Bin, nil
	}
	if e.Repo == "" {
		return "", errors.New("no groupd binary: set GROUPD_BIN, or GROUPD_LAB_REPO to the repository to build it from")
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/groupd")
	cmd.Dir = e.Repo
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/groupd failed (set GROUPD_BIN to use another binary): %v\n%s", err, b)
	}
	return out, nil
}
