package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// The helper-process pattern: a test re-executes the test binary with
// -test.run=^TestHelperProcess$ and GROUPD_STORE_HELPER set, and the child
// plays a second groupd.
const (
	helperEnv    = "GROUPD_STORE_HELPER"
	helperDirEnv = "GROUPD_STORE_HELPER_DIR"
)

func helperCommand(t *testing.T, role, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+role, helperDirEnv+"="+dir)
	return cmd
}

// TestHelperProcess is not a test: it is the child process of
// TestLockCrossProcess and TestCrashConsistency.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv(helperEnv)
	if role == "" {
		t.Skip("helper process for other tests")
	}
	dir := os.Getenv(helperDirEnv)
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(2)
	}
	s, err := Open(dir)
	if err != nil {
		fail("open: %v", err)
	}
	switch role {
	case "lock":
		// Hold the lock until stdin closes.
		fmt.Fprintf(os.Stdout, "locked %d\n", os.Getpid())
		io.Copy(io.Discard, os.Stdin)
		if err := s.Close(); err != nil {
			fail("close: %v", err)
		}
	case "crash":
		// Boot, then save ever larger counters until killed. Every line
		// is written (os.Stdout is unbuffered) only after Save returned.
		boot, err := s.LoadOrInit(InitOptions{ID: 7})
		if err != nil {
			fail("boot: %v", err)
		}
		fmt.Fprintf(os.Stdout, "incarnation %d\n", boot.State.Incarnation)
		st := boot.State
		for {
			st.Counter++
			st.LastGroup = wire.GroupNumber{Seq: st.Counter, ID: st.NodeID}
			if err := s.Save(st); err != nil {
				fail("save: %v", err)
			}
			fmt.Fprintf(os.Stdout, "counter %d\n", st.Counter)
		}
	default:
		fail("unknown role %q", role)
	}
	os.Exit(0)
}

func TestLockCrossProcess(t *testing.T) {
	dir := t.TempDir()
	for _, end := range []string{"close", "SIGKILL"} {
		t.Run(end, func(t *testing.T) {
			cmd := helperCommand(t, "lock", dir)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				cmd.Wait()
				t.Fatalf("child: %v; stderr: %s", err, stderr.String())
			}
			if want := fmt.Sprintf("locked %d\n", cmd.Process.Pid); line != want {
				t.Fatalf("child said %q, want %q", line, want)
			}

			s, err := Open(dir)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded while another process holds the lock")
			}
			if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(cmd.Process.Pid)) {
				t.Fatalf("Open: %v, want ErrLocked naming pid %d", err, cmd.Process.Pid)
			}

			if end == "close" {
				stdin.Close()
			} else {
				cmd.Process.Signal(syscall.SIGKILL)
			}
			err = cmd.Wait()
			if end == "close" && err != nil {
				t.Fatalf("child: %v; stderr: %s", err, stderr.String())
			}
			s, err = Open(dir)
			if err != nil {
				t.Fatalf("Open after the child's %s: %v", end, err)
			}
			s.Close()
		})
	}
}

// TestCrashConsistency kills a child process at random points while it
// saves in a loop. After each kill, Load must return a counter at least as
// high as the last one the child reported (it reports only after Save
// returned), and an incarnation at least as high as the child booted with.
//
// SIGKILL tests that no interruption of Save leaves the state unloadable or
// older: the temp file, the rename, the alternation of slots. It cannot
// test what a power loss would drop from the page cache; that rests on the
// order of fsyncs (TestSaveProtocolOrder).
//
// GROUPD_STORE_CRASH_SEED replays a failing seed.
func TestCrashConsistency(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("GROUPD_STORE_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	const (
		kills  = 60
		budget = 20 * time.Second
	)
	var (
		maxCounter, maxInc uint64
		midRun             int // kills after at least one Save in this run
		deadline           = time.Now().Add(budget)
	)
	for i := 0; i < kills && time.Now().Before(deadline); i++ {
		// Kill after the child reported n saves, plus a random delay (so
		// also in the middle of a Save), or before it even booted (n < 0).
		n := rng.IntN(25) - 3
		delay := time.Duration(rng.IntN(3000)) * time.Microsecond

		cmd := helperCommand(t, "crash", dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		watchdog := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })

		saves := 0
		sc := bufio.NewScanner(stdout)
		record := func(line string) {
			key, val, _ := strings.Cut(line, " ")
			v, err := strconv.ParseUint(val, 10, 64)
			switch {
			case err != nil:
				cmd.Process.Kill()
				t.Fatalf("seed %d: child said %q", seed, line)
			case key == "counter":
				saves++
				if v <= maxCounter {
					cmd.Process.Kill()
					t.Fatalf("seed %d, kill %d: child saved counter %d after %d had been saved", seed, i, v, maxCounter)
				}
				maxCounter = v
			case key == "incarnation":
				if v <= maxInc {
					cmd.Process.Kill()
					t.Fatalf("seed %d, kill %d: child booted with incarnation %d after %d", seed, i, v, maxInc)
				}
				maxInc = v
			default:
				cmd.Process.Kill()
				t.Fatalf("seed %d: child said %q", seed, line)
			}
		}
		if n >= 0 {
			for saves < n && sc.Scan() {
				record(sc.Text())
			}
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		// Whatever the child wrote before it died is still in the pipe.
		for sc.Scan() {
			record(sc.Text())
		}
		err = cmd.Wait()
		watchdog.Stop()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("seed %d, kill %d: child ended with %v, not by SIGKILL; stderr: %s", seed, i, err, stderr.String())
		}
		if saves > 0 {
			midRun++
		}

		s, err := Open(dir)
		if err != nil {
			t.Fatalf("seed %d, kill %d: Open: %v", seed, i, err)
		}
		st, err := s.Load()
		warnings := s.Warnings()
		s.Close()
		switch {
		case errors.Is(err, ErrNoState) && maxInc == 0:
			continue // killed before its first Save
		case err != nil:
			t.Fatalf("seed %d, kill %d: Load: %v", seed, i, err)
		case len(warnings) > 0:
			t.Fatalf("seed %d, kill %d: Load warnings %v", seed, i, warnings)
		case st.Counter < maxCounter || st.Incarnation < maxInc:
			t.Fatalf("seed %d, kill %d: Load = %v, but the child had saved counter %d, incarnation %d",
				seed, i, st, maxCounter, maxInc)
		}
	}
	t.Logf("seed %d: %d kills during saves, highest counter %d, incarnation %d", seed, midRun, maxCounter, maxInc)
	if midRun < 20 {
		t.Errorf("seed %d: only %d kills interrupted a saving child within %v", seed, midRun, budget)
	}
}

// TestLockNotInherited checks that a command started while the store is
// open (a hook) does not inherit the lock's descriptor: the lock must end
// with the daemon, not with its longest-running hook.
func TestLockNotInherited(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := exec.Command("/bin/sh", "-c", `for f in /proc/$$/fd/*; do readlink "$f"; done; true`).Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), filepath.Join(dir, lockName)) {
		t.Fatalf("a child process holds the lock file open:\n%s", out)
	}
	if !strings.Contains(string(out), "/") {
		t.Fatalf("the child listed no open file, so the check proves nothing:\n%q", out)
	}
}
