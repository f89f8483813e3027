package group

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/groupd/groupd/store"
	"github.com/groupd/groupd/wire"
)

// TestDiskFaults: node 2's data dir is a tiny tmpfs. While it is read-only
// (or full), node 3, the coordinator, crashes, so node 2, the highest
// survivor, must create a group and cannot save its counter. It must:
//   - never announce a group number above the counter on its disk (its own
//     events, node 1's view and the state file afterwards agree);
//   - report the fault in Status.PersistError (and a persist-failed event);
//   - log it once, however many times it retries;
//   - step aside meanwhile: join node 1's group (it ranks below every node
//     that can save), show itself degraded in its status, metrics and
//     /healthz;
//   - recover once the disk does: take over (it outranks node 1 again),
//     clear PersistError and log the recovery once.
//
// It needs root (mount); it skips otherwise or where mount is not allowed.
func TestDiskFaults(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		notRoot.Store("TestDiskFaults mounts a tmpfs on a data dir")
		t.Skip("needs root: mounts a tmpfs on the data dir")
	}
	if _, err := exec.LookPath("mount"); err != nil {
		t.Skip("mount is missing")
	}
	for _, mode := range []string{"read-only", "full"} {
		t.Run(mode, func(t *testing.T) { t.Parallel(); testDiskFault(t, mode) })
	}
}

// notRoot is why TestDiskFaults skipped for want of root (nil if it did
// not): the package then prints ok as if it had run, so TestMain says so
// in the test output, as package e2e does.
var notRoot atomic.Value

func testDiskFault(t *testing.T, mode string) {
	// The mount outlives the agents: its cleanup is registered before the
	// cluster's (cleanups run last-in first-out).
	mnt, err := os.MkdirTemp("", "groupd-diskfault-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		os.Remove(mnt)
		t.Skipf("cannot mount a tmpfs: %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
		os.Remove(mnt)
	})
	dir2 := filepath.Join(mnt, "data")

	c := newCluster(t, memMulticast)
	c.start(1, "")
	logs := &lockedWriter{w: &bytes.Buffer{}}
	cfg := c.config(2, dir2)
	cfg.Logger = zerolog.New(logs).Level(zerolog.InfoLevel)
	a2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n2 := c.run(a2, dir2)
	c.start(3, "")
	c.waitConverged(convergeBound(c))
	n1 := c.live()[0]

	// The fault.
	var undo func()
	switch mode {
	case "read-only":
		// `mount -o remount,ro` of the tmpfs fails while the agent holds
		// files open for writing (its lock), as it would on a real disk.
		// A read-only bind mount of the data dir over itself is what a
		// path lookup then sees: the same files, read-only (EROFS).
		mount(t, "--bind", dir2, dir2)
		mount(t, "-o", "remount,bind,ro", dir2)
		undo = func() { mount(t, "-u", dir2) }
	case "full":
		fill := filepath.Join(mnt, "filler")
		f, err := os.Create(fill)
		if err != nil {
			t.Fatal(err)
		}
		block := make([]byte, 4096)
		for {
			if _, err := f.Write(block); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling the tmpfs: %v", err)
				}
				break
			}
		}
		f.Close()
		undo = func() {
			if err := os.Remove(fill); err != nil {
				t.Fatal(err)
			}
		}
	}
	faultAt := time.Now()
	c.crash(3)

	// Node 2 reports the fault and creates no group while it lasts.
	waitFor(t, 10*time.Second, "node 2 to report a persist error", func() bool {
		return n2.a.Status().PersistError != ""
	})
	st := n2.a.Status()
	t.Logf("%s: node 2 reports %q (state %s, group %s)", mode, st.PersistError, st.State, st.Group)
	disk := diskCounter(t, dir2)
	// Several retries (every CheckInterval) happen while the fault lasts.
	time.Sleep(10 * c.timing.CheckInterval)
	for _, seq := range n2.createdSeqs() {
		if seq > disk {
			t.Errorf("node 2 announced group %d.2 above its saved counter %d", seq, disk)
		}
	}
	if s := n2.a.Status(); s.PersistError == "" || (s.Group.ID == 2 && s.Group.Seq > disk) {
		t.Errorf("during the fault node 2 is %v (persist error %q), saved counter %d", s, s.PersistError, disk)
	}
	if s := n1.a.Status(); s.Group.ID == 2 && s.Group.Seq > disk {
		t.Errorf("node 1 is in group %s, above node 2's saved counter %d", s.Group, disk)
	}
	if got := metricValue(n2.a.metrics.persistFails); got < 2 {
		t.Errorf("persist failures %v, want retries (>= 2)", got)
	}
	failLines := strings.Count(logs.String(), "cannot save the node's state")
	if failLines != 1 {
		t.Errorf("the fault was logged %d times, want once:\n%s", failLines, logs.String())
	}
	failEvents := 0
	n2.mu.Lock()
	for _, e := range n2.events {
		if e.Reason == "persist-failed" && e.New.PersistError != "" {
			failEvents++
		}
	}
	n2.mu.Unlock()
	if failEvents == 0 {
		t.Errorf("no persist-failed event with the error")
	}
	// It stepped aside: the survivors (1 and 2) are one group under node
	// 1, which outranks the degraded node 2; node 2 is degraded in its
	// status and metrics, and /healthz says why.
	if g, _ := c.waitConverged(convergeBound(c)); g.ID != 1 {
		t.Errorf("during the fault: group %s, want one group under node 1", g)
	}
	if s := n2.a.Status(); !s.Degraded || metricValue(n2.a.metrics.degraded) != 1 {
		t.Errorf("node 2 not shown degraded: %+v", s)
	}
	rec := httptest.NewRecorder()
	n2.a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "persist error") {
		t.Errorf("/healthz during the fault: %d %q", rec.Code, rec.Body.String())
	}

	// The disk recovers: so does node 2.
	undo()
	healedAt := time.Now()
	g, _ := c.waitConverged(convergeBound(c))
	if g.ID != 2 {
		t.Errorf("after the disk recovered: group %s, want coordinator 2", g)
	}
	if s := n2.a.Status(); s.PersistError != "" {
		t.Errorf("persist error still reported: %q", s.PersistError)
	}
	if n := strings.Count(logs.String(), "the node's state is saved again"); n != 1 {
		t.Errorf("the recovery was logged %d times, want once:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "cannot save the node's state"); n != 1 {
		t.Errorf("the fault was logged %d times in all, want once", n)
	}
	disk = diskCounter(t, dir2)
	for _, seq := range n2.createdSeqs() {
		if seq > disk {
			t.Errorf("node 2 announced group %d.2 above its saved counter %d", seq, disk)
		}
	}
	if g.Seq > disk {
		t.Errorf("group %s above node 2's saved counter %d", g, disk)
	}
	t.Logf("%s: fault for %.1fs; node 2 recovered into group %s %.2fs after the disk did (saved counter %d)",
		mode, healedAt.Sub(faultAt).Seconds(), g, time.Since(healedAt).Seconds(), disk)
}

// mount runs mount ARGS, or umount with "-u" first.
func mount(t *testing.T, args ...string) {
	t.Helper()
	cmd := "mount"
	if args[0] == "-u" {
		cmd, args = "umount", args[1:]
	}
	if out, err := exec.Command(cmd, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", cmd, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// diskCounter reads the counter saved in data dir dir, from a copy of its
// state slots (the running agent holds the dir's lock).
func diskCounter(t *testing.T, dir string) uint64 {
	t.Helper()
	cp := t.TempDir()
	for _, name := range []string{"state.a", "state.b"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cp, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := store.Open(cp)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Load()
	if err != nil {
		t.Fatalf("loading a copy of %s: %v", dir, err)
	}
	if st.NodeID != wire.NodeID(2) {
		t.Fatalf("state of node %d", st.NodeID)
	}
	return st.Counter
}
