//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestContainerJoinsLab builds groupd's image (contrib/container/build.sh:
// FROM scratch, offline) and runs `groupd run` in it with podman, in the
// network namespace of a lab node, beside two daemons of the lab: the
// three form one group, the container's daemon runs as 65532 and keeps its
// state on a volume. podman runs with runc and the cgroupfs manager, which
// work on hosts whose cgroups crun refuses (a hybrid of v1 and v2), and
// with the host's open-files limit, which a container may not raise.
func TestContainerJoinsLab(t *testing.T) {
	t.Parallel()
	requireLab(t)
	for _, c := range []string{"buildah", "podman", "runc"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("e2e: %s is missing (apt-get install -y buildah podman runc): the container image is not tested", c)
		}
	}
	l := newLab(t, 3, "lan")
	image := "localhost/" + l.Config().Prefix + ":test"
	build := exec.Command("../contrib/container/build.sh", image)
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	t.Logf("image: %s", strings.TrimSpace(string(out)))
	volume := l.Config().Prefix + "-state"
	name := l.Config().Prefix + "-c3"
	podman := func(args ...string) (string, error) {
		b, err := exec.Command("podman", append([]string{"--runtime", "runc", "--cgroup-manager", "cgroupfs"}, args...)...).CombinedOutput()
		return string(b), err
	}
	t.Cleanup(func() {
		_, _ = podman("rm", "-f", "-t", "2", name)
		_, _ = podman("volume", "rm", "-f", volume)
		_, _ = podman("rmi", "-f", image)
	})
	l.start(1, 2)
	nofile := "20000"
	if b, err := exec.Command("sh", "-c", "ulimit -Hn").Output(); err == nil {
		nofile = strings.TrimSpace(string(b))
	}
	if o, err := podman("run", "-d", "--name", name, "--ulimit", "nofile="+nofile+":"+nofile, "--ulimit", "nproc=4096:4096",
		"--network", "ns:/run/netns/"+l.NS(3), "-v", volume+":/var/lib/groupd", image,
		"run", "--id", "3", "--name", "c3", "--bind", l.Addr(3).String(), "--interface", "eth0"); err != nil {
		t.Fatalf("podman run: %v\n%s", err, o)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := l.status(1)
		if len(st.Members) == 3 && st.Coordinator == 3 && l.status(2).Group == st.Group {
			t.Logf("the container's node 3 coordinates the lab's nodes: %v", st)
			break
		}
		if time.Now().After(deadline) {
			logs, _ := podman("logs", name)
			t.Fatalf("nodes 1 and 2 never joined the container's node 3: %v\n%s", st, logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	o, err := podman("exec", name, "/usr/local/bin/groupd", "status", "--json")
	if err != nil || !regexp.MustCompile(`"members":\[1,2,3\]`).MatchString(o) {
		t.Errorf("groupd status in the container: %v\n%s", err, o)
	}
	if o, _ := podman("inspect", name, "--format", "{{.Config.User}}"); strings.TrimSpace(o) != "65532:65532" {
		t.Errorf("the container runs as %q, want 65532:65532", strings.TrimSpace(o))
	}
	mp, err := podman("volume", "inspect", volume, "--format", "{{.Mountpoint}}")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(strings.TrimSpace(mp), "state.a"))
	if err != nil {
		t.Errorf("no state on the volume: %v", err)
	} else if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 65532 {
		t.Errorf("state.a on the volume belongs to uid %d, want 65532", st.Uid)
	}
}
