package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/groupd/groupd/cmd/groupd/daemon"
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

// unitKeys reads a systemd unit into section -> key -> values (a key may
// be given more than once; a value may list several words).
func unitKeys(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string][]string{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			section = strings.Trim(line, "[]")
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: line %q is not KEY=VALUE", path, line)
			}
			out[section][k] = append(out[section][k], strings.Fields(v)...)
		}
	}
	return out
}

// TestContribUnitRestart checks that the systemd unit restarts groupd after
// a runtime failure (exit 1) for as long as it takes, and not after a
// configuration error (exit 2), which would fail the same way again.
func TestContribUnitRestart(t *testing.T) {
	u := unitKeys(t, "../../contrib/groupd.service")
	svc := u["Service"]
	if got := svc["Restart"]; len(got) != 1 || got[0] != "on-failure" {
		t.Errorf("Restart=%v, want on-failure", got)
	}
	prevent := map[string]bool{}
	for _, v := range svc["RestartPreventExitStatus"] {
		prevent[v] = true
	}
	if !prevent[strconv.Itoa(exitConfig)] {
		t.Errorf("RestartPreventExitStatus=%v lacks %d: a configuration error would be retried forever",
			svc["RestartPreventExitStatus"], exitConfig)
	}
	if prevent[strconv.Itoa(exitFailure)] {
		t.Errorf("RestartPreventExitStatus=%v keeps the daemon down after exit %d", svc["RestartPreventExitStatus"], exitFailure)
	}
	for _, v := range svc["SuccessExitStatus"] {
		if v == strconv.Itoa(exitFailure) {
			t.Errorf("SuccessExitStatus=%v: exit %d would count as success and not be restarted", svc["SuccessExitStatus"], exitFailure)
		}
	}
	if got := u["Unit"]["StartLimitIntervalSec"]; len(got) != 1 || got[0] != "0" {
		t.Errorf("StartLimitIntervalSec=%v, want 0: systemd gives up after 5 failed starts in 10 s", got)
	}
}

// TestContribUnitNotify checks that the unit waits for groupd's READY=1
// (Type=notify) and watches its event loop (WatchdogSec), and lets only the
// daemon itself notify: a hook's child must not say READY.
func TestContribUnitNotify(t *testing.T) {
	svc := unitKeys(t, "../../contrib/groupd.service")["Service"]
	for k, want := range map[string]string{"Type": "notify", "NotifyAccess": "main"} {
		if got := svc[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s=%v, want %s", k, got, want)
		}
	}
	if got := svc["WatchdogSec"]; len(got) != 1 {
		t.Errorf("WatchdogSec=%v, want one value", got)
	} else if d, err := time.ParseDuration(got[0]); err != nil || d < 2*daemon.WatchdogStale {
		t.Errorf("WatchdogSec=%s: want at least %v (pings every half of it, while the loop turned within %v)", got[0], 2*daemon.WatchdogStale, daemon.WatchdogStale)
	}
}

// TestContribUnitVerify runs `systemd-analyze verify` on the unit, with
// ExecStart pointed at an executable that exists here (it checks that),
// where systemd's tools are installed; it needs no running systemd.
func TestContribUnitVerify(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is missing (apt-get install -y systemd): the unit is not verified")
	}
	b, err := os.ReadFile("../../contrib/groupd.service")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "groupd.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/groupd", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "verify", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestContribKubernetes checks the StatefulSet's groupd arguments against
// the flags of groupd run, and the settings docs/networks.md explains: a
// headless Service that publishes pods before they are ready, --id from
// the ordinal, --name from the pod's name, no multicast.
func TestContribKubernetes(t *testing.T) {
	b, err := os.ReadFile("../../contrib/kubernetes/groupd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	flags := map[string]bool{}
	for _, f := range runCommand().Flags {
		flags[f.Names()[0]] = true
	}
	for _, m := range regexp.MustCompile(`(?m)^\s+- --([a-z-]+)=`).FindAllStringSubmatch(y, -1) {
		if !flags[m[1]] {
			t.Errorf("groupd.yaml passes --%s, which groupd run does not know", m[1])
		}
	}
	// Its own instruction, kubectl exec groupd-1 -- groupd status, works
	// only if the client finds the API the daemon listens on without a
	// flag (the image has no shell): both read GROUPD_API from the
	// container's environment, set after POD_IP, which it uses.
	if strings.Contains(y, "- --api=") {
		t.Errorf("groupd.yaml passes --api to groupd run: groupd status under kubectl exec would not find the API")
	}
	api := strings.Index(y, `{name: GROUPD_API, value: "$(POD_IP):7953"}`)
	if ip := strings.Index(y, "{name: POD_IP,"); api < 0 || ip < 0 || api < ip {
		t.Errorf("groupd.yaml does not set GROUPD_API to $(POD_IP):7953 after POD_IP")
	}
	if !strings.Contains(y, "kubectl exec groupd-1 -- groupd status") {
		t.Errorf("groupd.yaml lacks its kubectl exec instruction")
	}
	for _, c := range newApp([]string{"groupd"}, nil, nil).Commands {
		switch c.Name {
		case "run", "status", "members", "watch", "exec", "ui":
		default:
			continue
		}
		f, ok := lookupFlag(c.Flags, "api").(*cli.StringFlag)
		if !ok || !slices.Contains(f.EnvVars, "GROUPD_API") {
			t.Errorf("groupd %s --api does not read GROUPD_API", c.Name)
		}
	}
	for _, want := range []string{"clusterIP: None", "publishNotReadyAddresses: true", "--id=$(POD_INDEX)", "apps.kubernetes.io/pod-index",
		"--name=$(POD_NAME)", "--multicast=off", "--join=groupd.$(POD_NAMESPACE).svc.cluster.local", "readinessProbe:", "path: /healthz",
		"runAsNonRoot: true", "mountPath: /var/lib/groupd", "ordinals: {start: 1}"} {
		if !strings.Contains(y, want) {
			t.Errorf("groupd.yaml lacks %q", want)
		}
	}
}
