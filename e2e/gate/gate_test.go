package gate

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// goTest runs `go test args...` in the module root with env on top of this
// environment less every GROUPD_E2E* variable, and returns its combined
// output (stdout and stderr, as `go test ./... > log 2>&1` keeps them) and
// whether it succeeded.
func goTest(t *testing.T, env []string, args ...string) (string, bool) {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	cmd := exec.Command(goTool, append([]string{"test"}, args...)...)
	cmd.Dir = "../.."
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GROUPD_E2E") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func TestSuiteOff(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the go command")
	}
	// Off: GROUPD_E2E=0, or not root (as root the suite would run here).
	off := []string{"GROUPD_E2E=0"}
	out, ok := goTest(t, off, "./e2e/")
	if !ok || !strings.Contains(out, "[no tests to run]") {
		t.Errorf("GROUPD_E2E=0 go test ./e2e/: ok %v, output:\n%s\nwant ok and \"[no tests to run]\"", ok, out)
	}
	// Never from the cache: a run that runs the suite must not replay it.
	out2, _ := goTest(t, off, "./e2e/")
	if strings.Contains(out2, "(cached)") {
		t.Errorf("the second run came from the cache:\n%s", out2)
	}
	out, ok = goTest(t, off, "-v", "./e2e/")
	if !ok || !strings.Contains(out, "e2e: the end-to-end tests did not run") || !strings.Contains(out, "as root, go test ./... runs them") {
		t.Errorf("GROUPD_E2E=0 go test -v ./e2e/ does not say why and how:\n%s", out)
	}
}

func TestSuiteOnBadSetting(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the go command")
	}
	for _, env := range [][]string{
		{"GROUPD_E2E=1", "GROUPD_E2E_PREFIX=Bad"},
		{"GROUPD_E2E=1", "GROUPD_E2E_SUBNET=10.95.1"},
	} {
		out, ok := goTest(t, env, "./e2e/")
		if ok || !strings.Contains(out, "FAIL") || !strings.Contains(out, strings.SplitN(env[1], "=", 2)[0]) {
			t.Errorf("%v go test ./e2e/: ok %v, output:\n%s\nwant a failure naming the setting", env, ok, out)
		}
	}
}
