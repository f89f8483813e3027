package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// buildGroupd builds the groupd binary into a temporary directory.
func buildGroupd(t *testing.T) string {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	bin := filepath.Join(t.TempDir(), "groupd")
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startLone starts `groupd run` as lone node 7 on loopback (profile fast,
// no multicast), its API at api and its data dir and log in dir, with
// args on top and env added to this environment. done gets what Wait
// returns. At the test's end it kills (by PID) a process still running,
// and logs the daemon's log if the test failed.
func startLone(t *testing.T, bin, dir, api string, env []string, args ...string) (cmd *exec.Cmd, done <-chan error) {
	t.Helper()
	cmd = exec.Command(bin, append([]string{"run", "--id", "7", "--profile", "fast", "--bind", "127.0.0.1", "--port", "0",
		"--multicast", "off", "--api", api, "--data-dir", filepath.Join(dir, "data")}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	logf, err := os.Create(filepath.Join(dir, "groupd.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill() // by PID: our own child
			<-ch
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "groupd.log"))
			t.Logf("daemon log:\n%s", b)
		}
	})
	return cmd, ch
}

// freeGossipPort returns a port free for both TCP and UDP on 127.0.0.1
// (memberlist uses both). It draws it below the kernel's ephemeral range,
// which the tests that run alongside bind from (port 0): a port drawn
// from that range was taken by one of them before the daemon bound it
// (TestCorruptStateFile, "bind: address already in use", a full-suite
// run).
func freeGossipPort(t *testing.T) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 12000 {
				low = v
			}
		}
	}
	for range 100 {
		port := 10000 + rand.IntN(low-10000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		c, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		l.Close()
		if err == nil {
			c.Close()
			return port
		}
	}
	t.Fatal("no port free for both TCP and UDP")
	return 0
}

// daemon is one `groupd run` process of TestThreeDaemons.
type daemonProc struct {
	id     int
	port   int
	gossip int
	api    string
	log    string // stderr file
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
	waited error
}

func (d *daemonProc) logs() string {
	b, _ := os.ReadFile(d.log)
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// logged reports whether the daemon's stderr, all of it, holds s.
func (d *daemonProc) logged(s string) bool {
	b, _ := os.ReadFile(d.log)
	return bytes.Contains(b, []byte(s))
}

func (d *daemonProc) running() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// status runs `groupd status --json` against d.
func (d *daemonProc) status(bin string) (group.Status, string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, "status", "--json", "--api", d.api)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return group.Status{}, "", fmt.Errorf("%v: %s", err, strings.TrimSpace(errOut.String()))
	}
	var st group.Status
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		return group.Status{}, "", fmt.Errorf("status --json printed %q: %v", out.String(), err)
	}
	return st, strings.TrimSpace(out.String()), nil
}

// TestThreeDaemons starts three `groupd run` processes on loopback, joined
// by seeds (no multicast), waits until `groupd status --json` of each shows
// one group coordinated by the highest id, then checks that SIGHUP is
// ignored and that SIGTERM stops each with exit 0 within 2 s.
func TestThreeDaemons(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	bin := buildGroupd(t)
	ds := startDaemons(t, bin, 3)
	waitAgreement(t, bin, ds)

	// members --json of the coordinator lists the three nodes, in the group.
	out, err := exec.Command(bin, "members", "--json", "--api", ds[2].api).Output()
	if err != nil {
		t.Fatalf("members --json: %v", err)
	}
	var ms []group.Member
	if err := json.Unmarshal(out, &ms); err != nil {
		t.Fatalf("members --json printed %q: %v", out, err)
	}
	in := map[wire.NodeID]bool{}
	for _, m := range ms {
		if m.InGroup {
			in[m.ID] = true
		}
	}
	if !reflect.DeepEqual(in, map[wire.NodeID]bool{1: true, 2: true, 3: true}) {
		t.Errorf("members --json of node 3: %s", out)
	}

	// SIGHUP is ignored: the node says so, and it still answers.
	if err := ds[0].cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !ds[0].logged("SIGHUP ignored") && ds[0].running() {
		if time.Now().After(deadline) {
			t.Fatalf("node 1 did not log the SIGHUP it ignored within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, _, err := ds[0].status(bin); err != nil || !ds[0].running() {
		t.Fatalf("node 1 did not survive SIGHUP: %v", err)
	}

	// SIGTERM: each leaves and exits 0 within 2 s.
	start := time.Now()
	for _, d := range ds {
		if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range ds {
		select {
		case <-d.done:
		case <-time.After(2*time.Second - time.Since(start)):
			t.Fatalf("node %d still running 2s after SIGTERM", d.id)
		}
		var ee *exec.ExitError
		if errors.As(d.waited, &ee) || d.waited != nil {
			t.Errorf("node %d: %v after SIGTERM, want exit 0", d.id, d.waited)
		}
	}
	t.Logf("all stopped %v after SIGTERM", time.Since(start).Round(time.Millisecond))
}

// startDaemons starts n `groupd run` processes on loopback ports, each
// joining the others by their gossip ports; cleanup kills those still
// running.
func startDaemons(t *testing.T, bin string, n int) []*daemonProc {
	ds := make([]*daemonProc, n)
	for i := range ds {
		dir := t.TempDir()
		ds[i] = &daemonProc{
			id:     i + 1,
			port:   freeUDPPort(t),
			gossip: freeGossipPort(t),
			api:    "unix:" + filepath.Join(dir, "api.sock"), // a TCP port picked free could be taken before the daemon binds it
			log:    filepath.Join(dir, "stderr.log"),
			done:   make(chan struct{}),
		}
	}
	// The node's unicast port must not be another's gossip port, etc.
	seen := map[int]bool{}
	for _, d := range ds {
		for _, p := range []int{d.port, d.gossip} {
			if seen[p] {
				t.Skip("port collision while picking free ports; rerun")
			}
			seen[p] = true
		}
	}

	for _, d := range ds {
		var join []string
		for _, o := range ds {
			if o != d {
				join = append(join, "127.0.0.1:"+strconv.Itoa(o.gossip))
			}
		}
		logf, err := os.Create(d.log)
		if err != nil {
			t.Fatal(err)
		}
		d.cmd = exec.Command(bin, "run",
			"--id", strconv.Itoa(d.id),
			"--bind", "127.0.0.1", "--advertise", "127.0.0.1",
			"--port", strconv.Itoa(d.port), "--gossip-port", strconv.Itoa(d.gossip),
			"--api", d.api, "--data-dir", filepath.Join(filepath.Dir(d.log), "data"),
			"--profile", "fast", "--multicast", "off",
			"--join", strings.Join(join, ","),
			"--log-level", "debug")
		d.cmd.Stdout, d.cmd.Stderr = logf, logf
		if err := d.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		logf.Close()
		go func(d *daemonProc) {
			d.waited = d.cmd.Wait()
			close(d.done)
		}(d)
		t.Cleanup(func() {
			if d.running() {
				_ = d.cmd.Process.Kill()
				<-d.done
			}
			if t.Failed() {
				t.Logf("node %d stderr (tail):\n%s", d.id, d.logs())
			}
		})
	}
	return ds
}

// waitAgreement waits until every daemon is Normal in one group,
// coordinated by node 3, with members 1 2 3.
func waitAgreement(t *testing.T, bin string, ds []*daemonProc) {
	deadline := time.Now().Add(30 * time.Second)
	var last []string
	for {
		last = last[:0]
		sts := make([]group.Status, len(ds))
		ok := true
		for i, d := range ds {
			if !d.running() {
				t.Fatalf("node %d exited early: %v", d.id, d.waited)
			}
			st, raw, err := d.status(bin)
			if err != nil {
				ok = false
				last = append(last, fmt.Sprintf("node %d: %v", d.id, err))
				continue
			}
			sts[i] = st
			last = append(last, raw)
			if st.State != wire.StateNormal || st.Coordinator != 3 || st.Group != sts[0].Group ||
				!reflect.DeepEqual(st.Members, []wire.NodeID{1, 2, 3}) {
				ok = false
			}
		}
		if ok && sts[2].Role == invitation.Coordinator && sts[0].Role == invitation.Participant {
			t.Logf("converged on group %s", sts[0].Group)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no agreement within 30s; last statuses:\n%s", strings.Join(last, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
