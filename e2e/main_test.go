package e2e

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/internal/lab"
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
	// tag starts the prefix of every lab this process creates: "gde" and
	// its PID in base 36, five digits (see the package doc).
	tag = "gde" + fmt.Sprintf("%05s", strconv.FormatInt(int64(os.Getpid()), 36))
	// skipped counts the tests that skipped for want of a lab.
	skipped atomic.Int32
)

const lockPath = "/tmp/groupd-e2e.lock"

// lockWait is how long a run waits for another e2e run (another test
// binary of this package) to finish before skipping. Two runs at once
// would not collide (their names differ) but would share two cores, which
// the timing bounds do not allow for.
const lockWait = 4 * time.Minute

// parallelLabs is how many tests run their labs at once when -parallel is
// not given (it defaults to GOMAXPROCS, 2 here): the scenario tests spend
// most of their time waiting for check points at fault + T_heal, not on
// the CPU. An idle daemon uses about 1.5 % of a core (16 of them: 0.24),
// so 8 labs of 5 to 16 nodes leave most of a 2-core machine to the
// protocol's timers (see the package doc).
const parallelLabs = 8

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	skipAll = preflight()
	if skipAll != "" {
		return runSkipping(m)
	}
	unlock, err := takeLock()
	if err != nil {
		skipAll = err.Error()
		return runSkipping(m)
	}
	defer unlock()
	if err := lab.HaveIptables(); err != nil {
		noIptables = err.Error() + " (the fault tests need it)"
	}
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", strconv.Itoa(parallelLabs))
	}

	removeLeftovers(false)
	defer removeLeftovers(true)
	// Tear down on SIGINT/SIGTERM and just before the -timeout panic,
	// where neither t.Cleanup nor deferred calls run: lab.CloseAll kills
	// the daemons of every lab still up and removes their networks.
	defer lab.CloseOnSignal(func() { removeLeftovers(true) })()
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 10*time.Second {
			defer lab.CloseBefore(d-5*time.Second, func() { removeLeftovers(true) })()
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

// runSkipping runs the tests (they all skip) and says so where it is seen.
func runSkipping(m *testing.M) int {
	fmt.Fprintf(os.Stderr, "e2e: every test skips: %s\n", skipAll)
	code := m.Run()
	if n := skipped.Load(); n > 0 && !testing.Short() {
		notice(fmt.Sprintf("e2e: %d end-to-end tests skipped: %s\n", n, skipAll))
	}
	return code
}

// notice writes msg where the person who ran `go test ./...` sees it.
//
// In package-list mode (`go test ./...`, `go test ./e2e/`) the go command
// prints a passing package's output only with -v, so a run that skipped
// every test would just say "ok". The test binary's parent is then the go
// command, whose own stderr is the terminal (or the CI log): the notice
// goes there, through /proc/PPID/fd/2, when that is a file other than this
// binary's stderr (in local-directory mode, `go test` in e2e/, and under
// -v, the output is streamed and os.Stderr is enough). The notice always
// goes to os.Stderr too, which is all there is where /proc or the
// parent's stderr cannot be opened (a pipe another user created). See
// uncached for why it is printed on every run.
func notice(msg string) {
	fmt.Fprint(os.Stderr, msg)
	if testing.Verbose() || runtime.GOOS != "linux" {
		return
	}
	parent := fmt.Sprintf("/proc/%d/fd/2", os.Getppid())
	var ours, theirs syscall.Stat_t
	if syscall.Fstat(2, &ours) != nil || syscall.Stat(parent, &theirs) != nil ||
		(ours.Dev == theirs.Dev && ours.Ino == theirs.Ino) {
		return
	}
	if f, err := os.OpenFile(parent, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		_, _ = io.WriteString(f, msg)
		f.Close()
	}
}

// uncached keeps the go command from caching this run. A cached run is
// replayed without running the binary: a non-root run would lose its
// notice, and a root run would pass on the strength of an old one, though
// the daemons it tests are built from ./cmd/groupd, which is not among the
// package's dependencies (a change there does not invalidate the cache).
// The go command records the files a test opens inside the module
// (testing's testlog, kept while m.Run runs: requireLab calls this in the
// first test) and, when the run ends, refuses to cache it if one of them
// was modified less than two seconds before (cmd/go: errFileTooNew).
// e2e/e2e-last-run.out (ignored by git, as *.out) is written, dated a day
// ahead so that it is still "too new" however long the run takes, and
// opened. In a read-only checkout the run may be cached.
var uncachedOnce sync.Once

func uncached() {
	const stamp = "e2e-last-run.out" // the test binary runs in the package's directory
	msg := "the end-to-end tests ran at " + time.Now().String() + "\n"
	if skipAll != "" {
		msg = "the end-to-end tests skipped at " + time.Now().String() + ": " + skipAll + "\n"
	}
	if os.WriteFile(stamp, []byte(msg), 0o644) != nil {
		return
	}
	_ = os.Chtimes(stamp, time.Now(), time.Now().Add(24*time.Hour))
	if f, err := os.Open(stamp); err == nil {
		f.Close()
	}
}

// preflight says why the lab cannot run here, or "".
func preflight() string {
	const how = "run them as root: sudo go test ./e2e/ (sudo -E env PATH=$PATH go test ./e2e/ if root has no go)"
	if testing.Short() {
		return "-short: the end-to-end tests take minutes"
	}
	if runtime.GOOS != "linux" {
		return "network namespaces need Linux"
	}
	if os.Geteuid() != 0 {
		return "not root: they create network namespaces (CAP_NET_ADMIN); " + how
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "`ip` is missing: install iproute2 (apt-get install -y iproute2)"
	}
	probe := tag + "-probe-0"
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

// removeLeftovers removes the labs and binaries of e2e runs that are gone
// (a -timeout panic, SIGKILL), and this process's own when own is set. A
// live run's labs are left alone: the PID in a prefix names the test
// binary that made it.
func removeLeftovers(own bool) {
	stale := func(pid36 string) bool {
		pid, err := strconv.ParseInt(pid36, 36, 64)
		if err != nil {
			return false
		}
		if int(pid) == os.Getpid() {
			return own
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err != nil || !strings.Contains(string(cmdline), "e2e.test")
	}
	removed, err := lab.RemoveLeftovers(func(prefix string) bool {
		p, ok := strings.CutPrefix(prefix, "gde")
		return ok && (len(p) == 5 || len(p) == 7) && stale(p[:5])
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: removing leftovers: %v\n", err)
	}
	// Binaries built by dead runs (their run dirs, kept for a failed
	// test, stay).
	bins, _ := filepath.Glob(filepath.Join(os.TempDir(), "gde*-bin-*"))
	for _, b := range bins {
		if p := strings.TrimPrefix(filepath.Base(b), "gde"); len(p) > 5 && p[5] == '-' && stale(p[:5]) {
			os.RemoveAll(b)
			removed = append(removed, b)
		}
	}
	if len(removed) > 0 && !own {
		fmt.Fprintf(os.Stderr, "e2e: removed leftovers of an earlier run: %s\n", strings.Join(removed, " "))
	}
}

// requireLab skips or fails t when the lab cannot run.
func requireLab(t *testing.T) {
	t.Helper()
	uncachedOnce.Do(uncached)
	if skipAll != "" {
		skipped.Add(1)
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

// long reports whether the long soaks run (GROUPD_E2E_LONG=1: CI's extra
// step); otherwise each runs a short version that still exercises all of
// it.
func long() bool { return os.Getenv("GROUPD_E2E_LONG") == "1" }
