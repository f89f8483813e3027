//go:build linux

package e2e

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/internal/lab"
)

// Set by TestMain.
var (
	// skipAll is why every test skips (-short); empty when the lab can
	// run.
	skipAll string
	// noIptables is why the fault tests skip; empty when iptables works.
	noIptables string
	// buildErr is a failed `go build ./cmd/groupd`: every test fails
	// with it.
	buildErr error
	// groupdBin is the binary built for this run.
	groupdBin string
	// namePrefix starts every name this process's labs use
	// (GROUPD_E2E_PREFIX, default "gde"), and tag continues it with the
	// PID in base 36, five digits (see the package doc).
	namePrefix, tag string
	// subnet16 holds the labs' subnets: lab K has the K-th /24 of it
	// (GROUPD_E2E_SUBNET, default 10.78.0.0/16).
	subnet16 netip.Prefix
)

// The settings of the suite (see the package doc).
const (
	envRun    = "GROUPD_E2E"        // "1" requires the suite, "0" turns it off; unset: it runs as root
	envPrefix = "GROUPD_E2E_PREFIX" // the names' prefix
	envSubnet = "GROUPD_E2E_SUBNET" // the labs' /16
)

// howToRun is the notice of a run that did not ask for the suite.
const howToRun = "e2e: the end-to-end tests did not run: they start real daemons in network namespaces " +
	"and need root; as root, go test ./... runs them (sudo go test ./e2e/; " +
	"sudo -E env PATH=$PATH go test ./e2e/ if root has no go); GROUPD_E2E=0 turns them off, " +
	"GROUPD_E2E=1 fails a run that cannot run them"

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

// runMain runs the suite as root, unless GROUPD_E2E=0 turns it off, and
// wherever GROUPD_E2E=1 asks for it. Otherwise (not root, or turned off)
// it runs no test and says so on stdout, with the testing package's own
// line for it,
// which the go command turns into "ok ... [no tests to run]" however its
// output is redirected (it prints a passing package's output only with
// -v, where the notice shows too). m.Run is not called then: it would log
// the run for the go command's test cache without GROUPD_E2E among its
// inputs (read here, before m.Run starts the log), and a later
// GROUPD_E2E=1 run would replay it. Without a log the run is not cached.
//
// Asked for, a lab that cannot run (not root, no ip, no namespaces,
// another run holding the lock, a bad setting) fails the run with the
// reason, rather than pass it on tests that all skipped.
func runMain(m *testing.M) int {
	switch v := os.Getenv(envRun); {
	case v == "1":
	case v == "" && os.Geteuid() == 0:
	default:
		fmt.Println(howToRun)
		fmt.Println("testing: warning: no tests to run")
		return 0
	}
	if err := readSettings(); err != nil {
		fmt.Printf("e2e: %v\n", err)
		return 1
	}
	if testing.Short() {
		skipAll = "-short: the end-to-end tests take minutes"
		return m.Run()
	}
	if why := preflight(); why != "" {
		fmt.Printf("e2e: %s=1, but the lab cannot run here: %s\n", envRun, why)
		return 1
	}
	unlock, err := takeLock()
	if err != nil {
		fmt.Printf("e2e: %v\n", err)
		return 1
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

// uncached keeps the go command from caching this run. A cached run is
// replayed without running the binary: a run would pass on the strength
// of an old one, though the daemons it tests are built from ./cmd/groupd,
// which is not among the package's dependencies (a change there does not
// invalidate the cache). A run without GROUPD_E2E=1 runs no test and may
// be cached: the go command keys it on the variable.
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

// readSettings reads GROUPD_E2E_PREFIX and GROUPD_E2E_SUBNET.
func readSettings() error {
	namePrefix = "gde"
	if v := os.Getenv(envPrefix); v != "" {
		if !regexp.MustCompile(`^[a-z][a-z0-9]{0,2}$`).MatchString(v) {
			return fmt.Errorf("%s=%q: want a lower-case letter and up to 2 more letters or digits "+
				"(the PID and a lab's number follow, within the kernel's 15-character interface names)", envPrefix, v)
		}
		namePrefix = v
	}
	tag = namePrefix + fmt.Sprintf("%05s", strconv.FormatInt(int64(os.Getpid()), 36))
	subnet16 = netip.MustParsePrefix("10.78.0.0/16")
	if v := os.Getenv(envSubnet); v != "" {
		p, err := parseSubnet16(v)
		if err != nil {
			return fmt.Errorf("%s=%q: %v", envSubnet, v, err)
		}
		subnet16 = p
	}
	return nil
}

// parseSubnet16 reads the labs' /16: "10.95" or "10.95.0.0/16".
func parseSubnet16(v string) (netip.Prefix, error) {
	s := v
	if !strings.Contains(s, "/") {
		s += ".0.0/16"
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() || p.Bits() != 16 {
		return netip.Prefix{}, fmt.Errorf("want the first two octets of a /16, e.g. 10.95 (lab K gets 10.95.K.0/24)")
	}
	return p.Masked(), nil
}

// labSubnet is lab k's /24 of subnet16.
func labSubnet(k int) netip.Prefix {
	b := subnet16.Addr().As4()
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{b[0], b[1], byte(k), 0}), 24)
}

// preflight says why the lab cannot run here, or "".
func preflight() string {
	if runtime.GOOS != "linux" {
		return "network namespaces need Linux"
	}
	if os.Geteuid() != 0 {
		return "not root: they create network namespaces (CAP_NET_ADMIN); run them as root: sudo " + envRun + "=1 go test ./e2e/"
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
		p, ok := strings.CutPrefix(prefix, namePrefix)
		return ok && (len(p) == 5 || len(p) == 7) && stale(p[:5])
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: removing leftovers: %v\n", err)
	}
	// Binaries built by dead runs (their run dirs, kept for a failed
	// test, stay).
	bins, _ := filepath.Glob(filepath.Join(os.TempDir(), namePrefix+"*-bin-*"))
	for _, b := range bins {
		if p := strings.TrimPrefix(filepath.Base(b), namePrefix); len(p) > 5 && p[5] == '-' && stale(p[:5]) {
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
