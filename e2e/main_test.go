package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Set by TestMain.
var (
	// skipAll is why every test skips (not root, no ip, no namespaces,
	// -short, another run holds the lock); empty when the lab can run.
	skipAll string
	// noIptables is why the fault tests skip; empty when iptables works.
	noIptables string
	// buildErr is a failed `go build ./cmd/groupd`: every test fails
	// with it.
	buildErr error
	// groupdBin is the binary built for this run.
	groupdBin string
	// tag prefixes every name this process creates: "gde" + PID in base
	// 36 (see the package doc).
	tag = "gde" + strconv.FormatInt(int64(os.Getpid()), 36)
)

const lockPath = "/tmp/groupd-e2e.lock"

// lockWait is how long a run waits for another e2e run (another test
// binary of this package) to finish before skipping. Two runs at once
// would not collide (their names differ) but would share two cores, which
// the timing bounds do not allow for.
const lockWait = 4 * time.Minute

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	skipAll = preflight()
	if skipAll != "" {
		fmt.Fprintf(os.Stderr, "e2e: every test skips: %s\n", skipAll)
		return m.Run()
	}
	unlock, err := takeLock()
	if err != nil {
		skipAll = err.Error()
		fmt.Fprintf(os.Stderr, "e2e: every test skips: %s\n", skipAll)
		return m.Run()
	}
	defer unlock()
	if _, err := exec.LookPath("iptables"); err != nil {
		noIptables = "iptables is missing: install it with 'apt-get install -y iptables' (the fault tests need it)"
	} else if _, err := exec.LookPath("iptables-restore"); err != nil {
		noIptables = "iptables-restore is missing: install it with 'apt-get install -y iptables' (the fault tests need it)"
	}

	removeLeftovers(false)
	defer removeLeftovers(true)

	// Tear down on SIGINT/SIGTERM (t.Cleanup does not run then) and just
	// before the -timeout panic (which does not run it either). Both call
	// teardownAll, which kills the daemons of every lab still up and
	// removes this process's namespaces and bridge.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "e2e: %v: tearing the lab down\n", s)
		teardownAll()
		removeLeftovers(true)
		os.Exit(1)
	}()
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 10*time.Second {
			tm := time.AfterFunc(d-5*time.Second, func() {
				fmt.Fprintf(os.Stderr, "e2e: the test binary times out in 5 s (-timeout %v): tearing the lab down now\n", d)
				teardownAll()
				removeLeftovers(true)
			})
			defer tm.Stop()
		}
	}

	dir, err := os.MkdirTemp("", tag+"-bin-")
	if err != nil {
		buildErr = err
	} else {
		defer os.RemoveAll(dir)
		groupdBin = filepath.Join(dir, "groupd")
		buildErr = buildGroupd(groupdBin)
	}
	return m.Run()
}

// preflight says why the lab cannot run here, or "".
func preflight() string {
	if testing.Short() {
		return "-short: the end-to-end tests take minutes"
	}
	if runtime.GOOS != "linux" {
		return "network namespaces need Linux"
	}
	if os.Geteuid() != 0 {
		return "not root: the end-to-end tests create network namespaces (CAP_NET_ADMIN); run them as root, e.g. sudo go test ./e2e/"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "`ip` is missing: install iproute2 (apt-get install -y iproute2)"
	}
	probe := tag + "-probe"
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		return fmt.Sprintf("cannot create a network namespace (ip netns add: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("ip", "netns", "del", probe).CombinedOutput(); err != nil {
		return fmt.Sprintf("cannot delete a network namespace (ip netns del: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	return ""
}

// takeLock serialises e2e runs on this machine (see lockWait).
func takeLock() (func(), error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %v", lockPath, err)
	}
	deadline := time.Now().Add(lockWait)
	said := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("cannot lock %s: %v", lockPath, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another groupd e2e run has held %s for %v", lockPath, lockWait)
		}
		if !said {
			b, _ := os.ReadFile(lockPath)
			fmt.Fprintf(os.Stderr, "e2e: waiting for another e2e run (pid %s) to finish\n", strings.TrimSpace(string(b)))
			said = true
		}
		time.Sleep(500 * time.Millisecond)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// buildGroupd builds ./cmd/groupd (this package's parent module) into bin.
func buildGroupd(bin string) error {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	cmd := exec.Command(goTool, "build", "-o", bin, "./cmd/groupd")
	cmd.Dir = ".." // the module root: this package is e2e/
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build -o %s ./cmd/groupd: %v\n%s", bin, err, out)
	}
	fmt.Fprintf(os.Stderr, "e2e: built %s in %.1fs\n", bin, time.Since(start).Seconds())
	return nil
}

// requireLab skips or fails t when the lab cannot run.
func requireLab(t *testing.T) {
	t.Helper()
	if skipAll != "" {
		t.Skip("e2e: " + skipAll)
	}
	if buildErr != nil {
		t.Fatalf("e2e: %v", buildErr)
	}
}

// requireFaults skips t when iptables is missing.
func requireFaults(t *testing.T) {
	t.Helper()
	requireLab(t)
	if noIptables != "" {
		t.Skip("e2e: " + noIptables)
	}
}
