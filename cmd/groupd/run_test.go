package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/invitation"
)

// parseRun parses `groupd run args...` (and the environment) into the
// agent's configuration without starting it.
func parseRun(t *testing.T, args ...string) (group.Config, error) {
	t.Helper()
	var (
		cfg    group.Config
		cfgErr error
	)
	args = append([]string{"groupd", "run"}, args...)
	app := newApp(args, io.Discard, io.Discard)
	for _, c := range app.Commands {
		if c.Name == "run" {
			c.Action = func(c *cli.Context) error {
				cfg, _, cfgErr = configFromFlags(c)
				return cfgErr
			}
		}
	}
	err := app.Run(args)
	if err == nil {
		err = cfgErr
	}
	return cfg, err
}

// writeKey writes a key file of n random-looking bytes in base64.
func writeKey(t *testing.T, n int) string {
	t.Helper()
	key := make([]byte, n)
	for i := range key {
		key[i] = byte(i*7 + 1)
	}
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunDefaults(t *testing.T) {
	cfg, err := parseRun(t)
	if err != nil {
		t.Fatal(err)
	}
	want := group.DefaultLANConfig()
	cfg.Logger, want.Logger = zerolog.Logger{}, zerolog.Logger{}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("zero flags:\n got %+v\nwant %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("zero flags give an invalid config: %v", err)
	}
}

func TestRunFlagsAndEnv(t *testing.T) {
	key := writeKey(t, 32)
	lan, fast := invitation.DefaultTiming(), invitation.FastTiming()
	with := func(t invitation.Timing, f func(*invitation.Timing)) invitation.Timing { f(&t); return t }
	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  []string
		check func(group.Config) bool
	}{
		{"env port", map[string]string{"GROUPD_PORT": "8000"}, nil,
			func(c group.Config) bool { return c.Port == 8000 }},
		{"flag beats env", map[string]string{"GROUPD_PORT": "8000"}, []string{"--port", "9000"},
			func(c group.Config) bool { return c.Port == 9000 }},
		// The command line wins even over a value that does not parse.
		{"flag beats bad env", map[string]string{"GROUPD_ID": "abc", "GROUPD_PROFILE": "turbo", "GROUPD_TAG": "x"},
			[]string{"--id", "7", "--profile=fast", "--tag", "a=b"},
			func(c group.Config) bool { return c.ID == 7 && c.Profile == "fast" && c.Tags["a"] == "b" }},
		{"env data dir", map[string]string{"GROUPD_DATA_DIR": "/srv/groupd"}, nil,
			func(c group.Config) bool { return c.DataDir == "/srv/groupd" }},
		{"env id", map[string]string{"GROUPD_ID": "7"}, nil,
			func(c group.Config) bool { return c.ID == 7 }},
		{"flag id", nil, []string{"--id", "42"},
			func(c group.Config) bool { return c.ID == 42 }},
		{"priority", nil, []string{"--priority", "255"},
			func(c group.Config) bool { return c.Priority == 255 }},
		{"env gossip port", map[string]string{"GROUPD_GOSSIP_PORT": "9001"}, nil,
			func(c group.Config) bool { return c.GossipPort == 9001 }},
		{"env join list", map[string]string{"GROUPD_JOIN": "10.0.0.2:7951,10.0.0.3:7951"}, nil,
			func(c group.Config) bool {
				return reflect.DeepEqual(c.Join, []string{"10.0.0.2:7951", "10.0.0.3:7951"})
			}},
		{"join flags", nil, []string{"--join", "a:1", "--join", "b:2,c:3"},
			func(c group.Config) bool { return reflect.DeepEqual(c.Join, []string{"a:1", "b:2", "c:3"}) }},
		{"multicast off", map[string]string{"GROUPD_MULTICAST": "off"}, nil,
			func(c group.Config) bool { return !c.MulticastEnabled() }},
		{"api off", nil, []string{"--api", "off"},
			func(c group.Config) bool { return c.API == "" }},
		{"api unix", map[string]string{"GROUPD_API": "unix:/run/groupd/api.sock"}, nil,
			func(c group.Config) bool { return c.API == "unix:/run/groupd/api.sock" }},
		{"bind advertise interface", nil, []string{"--bind", "127.0.0.1", "--advertise", "127.0.0.1", "--interface", "lo"},
			func(c group.Config) bool {
				return c.Bind == "127.0.0.1" && c.Advertise == "127.0.0.1" && c.Interface == "lo"
			}},
		{"key file", map[string]string{"GROUPD_KEY_FILE": key}, nil,
			func(c group.Config) bool { return len(c.Key) == 32 }},
		{"profile fast", nil, []string{"--profile", "fast"},
			func(c group.Config) bool { return c.Profile == "fast" && c.Timing == fast }},
		{"env profile fast", map[string]string{"GROUPD_PROFILE": "fast"}, nil,
			func(c group.Config) bool { return c.Profile == "fast" && c.Timing == fast }},
		{"fast plus one override", nil, []string{"--profile", "fast", "--alive-timeout", "1s"},
			func(c group.Config) bool {
				return c.Timing == with(fast, func(t *invitation.Timing) { t.AliveTimeout = time.Second })
			}},
		{"fast plus env override", map[string]string{"GROUPD_PROFILE": "fast", "GROUPD_BEACON_INTERVAL": "300ms"}, nil,
			func(c group.Config) bool {
				return c.Timing == with(fast, func(t *invitation.Timing) { t.BeaconInterval = 300 * time.Millisecond })
			}},
		{"lan plus overrides", nil, []string{"--check-interval", "2s", "--merge-delay", "1s"},
			func(c group.Config) bool {
				return c.Timing == with(lan, func(t *invitation.Timing) { t.CheckInterval, t.MergeDelay = 2*time.Second, time.Second })
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cfg, err := parseRun(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg) {
				t.Errorf("unexpected config: %+v", cfg)
			}
		})
	}
}

// TestHookFlags: --on-change and --hook-timeout (here from the
// environment) are the daemon's options, not the agent's.
func TestHookFlags(t *testing.T) {
	t.Setenv("GROUPD_ON_CHANGE", "logger changed")
	t.Setenv("GROUPD_HOOK_TIMEOUT", "3s")
	var rs runSettings
	app := newApp([]string{"groupd", "run"}, io.Discard, io.Discard)
	for _, c := range app.Commands {
		if c.Name == "run" {
			c.Action = func(c *cli.Context) (err error) {
				_, rs, err = configFromFlags(c)
				return err
			}
		}
	}
	if err := app.Run([]string{"groupd", "run"}); err != nil {
		t.Fatal(err)
	}
	if rs.daemon.OnChange != "logger changed" || rs.daemon.HookTimeout != 3*time.Second {
		t.Errorf("daemon options %+v", rs.daemon)
	}
}

// TestIntervalFlags checks that there is one flag, with its env var, per
// interval of invitation.Timing, and that each sets its own field.
func TestIntervalFlags(t *testing.T) {
	if n := reflect.TypeOf(invitation.Timing{}).NumField(); len(intervalFlags) != n {
		t.Fatalf("%d interval flags for %d Timing fields", len(intervalFlags), n)
	}
	for i, f := range intervalFlags {
		t.Run(f.Name, func(t *testing.T) {
			// A little above the default, so that the relations
			// Timing.Validate checks still hold, and distinct per flag.
			want := invitation.DefaultTiming()
			d := *f.Field(&want) + time.Duration(i+1)*time.Millisecond
			*f.Field(&want) = d
			t.Setenv(envName(f.Name), d.String())
			cfg, err := parseRun(t)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Timing != want {
				t.Errorf("%s=%v gave %+v", envName(f.Name), d, cfg.Timing)
			}
		})
	}
}

// freeUDPPort returns a port on 127.0.0.1 free now for UDP and TCP.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	// Free for TCP too (a gossip port needs both), and below the
	// ephemeral range: see freeGossipPort.
	return freeGossipPort(t)
}

func TestRunBadConfig(t *testing.T) {
	short := writeKey(t, 16)
	notBase64 := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(notBase64, []byte("not a key!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	aFile := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(aFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	busy, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.LocalAddr().(*net.UDPAddr).Port)
	busyAPI, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busyAPI.Close()

	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string // the stderr line contains this
	}{
		{"id 0", nil, []string{"--id", "0"}, "groupd: --id must be >= 1"},
		{"env id 0", map[string]string{"GROUPD_ID": "0"}, nil, "groupd: --id (from GROUPD_ID) must be >= 1"},
		{"id not a number", nil, []string{"--id", "three"}, `groupd: --id: invalid value "three"`},
		{"env rate limit not a number", map[string]string{"GROUPD_RATE_LIMIT": "abc"}, nil,
			`groupd: --rate-limit (from GROUPD_RATE_LIMIT): invalid value "abc": want a whole number`},
		{"unknown profile", nil, []string{"--profile", "wan"}, `groupd: --profile "wan": want lan or fast`},
		{"env unknown profile", map[string]string{"GROUPD_PROFILE": "turbo"}, nil, `groupd: --profile (from GROUPD_PROFILE) "turbo": want lan or fast`},
		{"env election", map[string]string{"GROUPD_ELECTION": "raft"}, nil, `groupd: --election (from GROUPD_ELECTION) "raft": want bully or ring`},
		{"env tie-breaker", map[string]string{"GROUPD_TIE_BREAKER": "3"}, nil, `groupd: --tie-breaker (from GROUPD_TIE_BREAKER) needs --expect`},
		{"env advertise", map[string]string{"GROUPD_ADVERTISE": "0.0.0.0"}, nil, `--advertise (from GROUPD_ADVERTISE) "0.0.0.0" must be a specific address`},
		{"interval 0", nil, []string{"--beacon-interval", "0"}, "groupd: --beacon-interval must be > 0, got 0s"},
		{"interval negative", map[string]string{"GROUPD_ALIVE_TIMEOUT": "-1s"}, nil, "groupd: --alive-timeout (from GROUPD_ALIVE_TIMEOUT) must be > 0, got -1s"},
		{"interval relation", nil, []string{"--alive-timeout", "10ms"}, "groupd: --alive-timeout (10ms) must be >= --alive-interval + --answer-timeout (350ms)"},
		{"hook timeout", nil, []string{"--hook-timeout", "0s"}, "groupd: --hook-timeout must be > 0"},
		{"priority", nil, []string{"--priority", "256"}, "groupd: --priority 256 out of range 0-255"},
		{"start-at not a time", nil, []string{"--start-at", "soon"}, `groupd: --start-at "soon": want an RFC 3339 time or Unix seconds`},
		{"start-at too far", map[string]string{"GROUPD_START_AT": "2999-01-01T00:00:00Z"}, nil, "groupd: --start-at (from GROUPD_START_AT) 2999-01-01T00:00:00Z is "},
		{"key wrong size", nil, []string{"--key-file", short}, "key must be 32 bytes, got 16"},
		{"key not base64", nil, []string{"--key-file", notBase64}, "key is not valid base64"},
		{"key missing", nil, []string{"--key-file", "/nonexistent/key"}, "groupd: --key-file: open /nonexistent/key: no such file or directory"},
		{"key is a dir", nil, []string{"--key-file", t.TempDir()}, "is not a regular file"},
		{"log level", nil, []string{"--log-level", "trace"}, `groupd: --log-level "trace": want debug, info, warn or error`},
		{"log format", nil, []string{"--log-format", "xml"}, `groupd: --log-format "xml": want auto, console or json`},
		{"extra argument", nil, []string{"now"}, `run takes no arguments, got "now"`},
		// Checked by group.Config.Validate / group.New.
		{"port out of range", nil, []string{"--port", "70000"}, "--port 70000"},
		{"bad bind", nil, []string{"--bind", "nope"}, `--bind "nope"`},
		{"bad advertise", nil, []string{"--advertise", "0.0.0.0"}, "--advertise"},
		{"bad multicast", nil, []string{"--multicast", "10.0.0.1:7952"}, "--multicast"},
		{"bad join", map[string]string{"GROUPD_JOIN": "host:port"}, nil, "--join"},
		{"join itself", nil, []string{"--join", "127.0.0.1"}, `--join "127.0.0.1" is this node's own gossip address`},
		{"bad api", nil, []string{"--api", "nope"}, `--api "nope"`},
		{"data dir not a dir", nil, []string{"--data-dir", aFile}, aFile},
		{"data dir not creatable", nil, []string{"--data-dir", filepath.Join(aFile, "sub")}, aFile},
		{"port in use", nil, []string{"--port", busyPort, "--gossip-port", strconv.Itoa(freeUDPPort(t))}, busyPort},
		{"api in use", nil, []string{"--api", busyAPI.Addr().String()}, busyAPI.Addr().String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			// Keep the daemon off the host's defaults, should a case
			// unexpectedly start it.
			args := []string{"run", "--log-level", "error", "--multicast", "off", "--bind", "127.0.0.1",
				"--port", strconv.Itoa(freeUDPPort(t)), "--gossip-port", strconv.Itoa(freeUDPPort(t)),
				"--api", "127.0.0.1:0", "--data-dir", t.TempDir()}
			ctx, cancel := contextWithTimeout(t, 10*time.Second)
			defer cancel()
			code, _, errOut := runCLIContext(t, ctx, append(args, tc.args...)...)
			if code != exitConfig {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitConfig, errOut)
			}
			wantLastLine(t, errOut, tc.want)
		})
	}
}

// wantLastLine checks that the last line of stderr is the "groupd: ..."
// line containing want, and that no other line starts with "groupd: ".
// (The agent may have logged before it failed.)
func wantLastLine(t *testing.T, stderr, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "groupd: ") || !strings.Contains(last, want) {
		t.Fatalf("last stderr line %q is not \"groupd: ...%s...\"; stderr:\n%s", last, want, stderr)
	}
	for _, l := range lines[:len(lines)-1] {
		if strings.HasPrefix(l, "groupd: ") {
			t.Fatalf("more than one error line:\n%s", stderr)
		}
	}
}

func TestLogLevel(t *testing.T) {
	for _, tc := range []struct {
		level string
		want  zerolog.Level // NoLevel: refused
	}{
		{"debug", zerolog.DebugLevel},
		{"info", zerolog.InfoLevel},
		{"warn", zerolog.WarnLevel},
		{"error", zerolog.ErrorLevel},
		{"WARN", zerolog.WarnLevel},
		{"trace", zerolog.NoLevel},
		{"fatal", zerolog.NoLevel},
		{"disabled", zerolog.NoLevel},
		{"", zerolog.NoLevel},
		{"2", zerolog.NoLevel},
		{"warning", zerolog.NoLevel},
	} {
		t.Run(tc.level, func(t *testing.T) {
			log, err := newLogger(io.Discard, tc.level, "json")
			if tc.want == zerolog.NoLevel {
				want := fmt.Sprintf("--log-level %q: want debug, info, warn or error", tc.level)
				if err == nil || err.Error() != want {
					t.Fatalf("err = %v, want %q", err, want)
				}
				return
			}
			if err != nil || log.GetLevel() != tc.want {
				t.Fatalf("level %v, err %v; want %v", log.GetLevel(), err, tc.want)
			}
		})
	}
}

func TestParseStartAt(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"2026-11-23T12:00:01.5Z", now.Add(1500 * time.Millisecond), false},
		{"2026-11-23T13:00:00+01:00", now, false},
		{"1795435200.25", time.Unix(1795435200, 250000000), false},
		{"2026-11-23T11:00:00Z", now.Add(-time.Hour), false}, // past: starts at once
		{"2026-11-23T13:00:01Z", time.Time{}, true},          // over maxStartAhead
		{"0", time.Time{}, true},
		{"-5", time.Time{}, true},
		{"", time.Time{}, true},
		{"tomorrow", time.Time{}, true},
	} {
		got, err := parseStartAt(tc.in, now)
		if (err != nil) != tc.err {
			t.Errorf("%q: error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if !tc.err && !got.Equal(tc.want) {
			// Unix seconds go through a float64: a microsecond is plenty.
			if d := got.Sub(tc.want); d > time.Microsecond || d < -time.Microsecond {
				t.Errorf("%q: %v, want %v", tc.in, got, tc.want)
			}
		}
	}
}

// TestUnknownEnv: a GROUPD_* variable that no flag reads is a warning
// naming the variable it most likely misspells; the lab's, the tests' and
// the hook's variables are not.
func TestUnknownEnv(t *testing.T) {
	t.Setenv("GROUPD_DATADIR", "/srv/groupd")
	t.Setenv("GROUPD_PORTT", "1")
	t.Setenv("GROUPD_LAB_PREFIX", "gfh")
	t.Setenv("GROUPD_EVENT", "merge")
	t.Setenv("GROUPD_WHATEVER", "1")
	code, _, errOut := runCLI(t, "run", "--log-format", "console", "--profile", "wan")
	if code != exitConfig {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"GROUPD_DATADIR is not a setting of groupd run: ignored (did you mean GROUPD_DATA_DIR?)",
		"GROUPD_PORTT is not a setting of groupd run: ignored (did you mean GROUPD_PORT?)",
		"GROUPD_WHATEVER is not a setting of groupd run: ignored",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, quiet := range []string{"GROUPD_LAB_PREFIX", "GROUPD_EVENT", "GROUPD_WHATEVER is not a setting of groupd run: ignored (did"} {
		if strings.Contains(errOut, quiet) {
			t.Errorf("stderr has %q:\n%s", quiet, errOut)
		}
	}
	wantLastLine(t, errOut, `--profile "wan"`)
}

// TestEnvNamesKnown: every GROUPD_* name the repository uses is a flag's
// variable or one of otherEnv, so that a daemon the lab starts (which
// inherits the scripts' environment) does not warn about the lab's own
// variables.
func TestEnvNamesKnown(t *testing.T) {
	flags := map[string]bool{}
	for _, cmd := range newApp([]string{"groupd"}, io.Discard, io.Discard).Commands {
		for _, f := range cmd.Flags {
			if df, ok := f.(cli.DocGenerationFlag); ok {
				for _, e := range df.GetEnvVars() {
					flags[e] = true
				}
			}
		}
	}
	name := regexp.MustCompile(`GROUPD_[A-Z0-9_]*[A-Z0-9]`)
	seen := map[string]string{}
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		switch filepath.Ext(path) {
		case ".go", ".sh", ".md", ".env", ".service", "":
		default:
			return nil
		}
		if d.IsDir() || path == "../../cmd/groupd/env.go" || path == "../../cmd/groupd/run_test.go" {
			return nil // the list itself, and made-up misspellings
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b, 0) >= 0 {
			return nil // a binary: the README's go build -o groupd leaves one here
		}
		for _, n := range name.FindAllString(string(b), -1) {
			seen[n] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 20 {
		t.Fatalf("found only %d GROUPD_ names: is the walk in the repository?", len(seen))
	}
	for n, path := range seen {
		if strings.HasSuffix(n, "_") || flags[n] || isOtherEnv(n) || n == "GROUPD_DATADIR" /* the docs' misspelling */ {
			continue
		}
		t.Errorf("%s (in %s) is neither a flag's variable nor in otherEnv: groupd run would warn about it", n, path)
	}
}

// TestRunErrorsInUserTerms: an error about a value names it as the user
// gave it: the variable it came from, or the flag that was set (--port,
// whose gossip port is port+1, not --gossip-port, which was not given).
func TestRunErrorsInUserTerms(t *testing.T) {
	aFile := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(aFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"run", "--log-level", "error", "--multicast", "off", "--bind", "127.0.0.1", "--api", "127.0.0.1:0"}
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		ctx, cancel := contextWithTimeout(t, 10*time.Second)
		defer cancel()
		code, _, errOut := runCLIContext(t, ctx, append(append([]string(nil), base...), args...)...)
		if code != exitConfig {
			t.Errorf("exit %d, want %d; stderr:\n%s", code, exitConfig, errOut)
		}
		return errOut
	}
	t.Run("data dir from the environment", func(t *testing.T) {
		t.Setenv("GROUPD_DATA_DIR", aFile)
		errOut := run(t, "--port", strconv.Itoa(freeUDPPort(t)), "--gossip-port", strconv.Itoa(freeUDPPort(t)))
		wantLastLine(t, errOut, "groupd: --data-dir (from GROUPD_DATA_DIR) "+aFile+" is not a directory")
	})
	t.Run("data dir on the command line", func(t *testing.T) {
		errOut := run(t, "--data-dir", aFile, "--port", strconv.Itoa(freeUDPPort(t)), "--gossip-port", strconv.Itoa(freeUDPPort(t)))
		wantLastLine(t, errOut, "groupd: --data-dir "+aFile+" is not a directory")
	})
	t.Run("gossip port of --port in use", func(t *testing.T) {
		// A port whose next one is taken.
		var port int
		for i := 0; i < 50 && port == 0; i++ {
			busy, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer busy.Close()
			p := busy.LocalAddr().(*net.UDPAddr).Port - 1
			if c, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				c.Close()
				port = p
			}
		}
		if port == 0 {
			t.Skip("found no free port below a busy one")
		}
		errOut := run(t, "--data-dir", t.TempDir(), "--port", strconv.Itoa(port))
		wantLastLine(t, errOut, fmt.Sprintf("groupd: --port %d: its gossip port %d (--port+1; --gossip-port sets another): ", port, port+1))
	})
}

// TestEmptyEnvIsUnset: a variable set to "" counts as unset for every flag
// of every command, strings included (GROUPD_DATA_DIR= was "--data-dir is
// empty"); the help still lists the variable.
func TestEmptyEnvIsUnset(t *testing.T) {
	for _, c := range newApp([]string{"groupd"}, nil, nil).Commands {
		for _, f := range c.Flags {
			if df, ok := f.(cli.DocGenerationFlag); ok {
				for _, env := range df.GetEnvVars() {
					t.Setenv(env, "")
				}
			}
		}
	}
	cfg, err := parseRun(t)
	if err != nil {
		t.Fatalf("every variable empty: %v", err)
	}
	want := group.DefaultLANConfig()
	cfg.Logger, want.Logger = zerolog.Logger{}, zerolog.Logger{}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("every variable empty:\n got %+v\nwant the defaults %+v", cfg, want)
	}
	// Every type of flag of every command drops an empty variable.
	app := newApp([]string{"groupd"}, nil, nil)
	for _, c := range app.Commands {
		preferCommandLine(c, nil)
		for _, f := range c.Flags {
			if df, ok := f.(cli.DocGenerationFlag); ok && len(df.GetEnvVars()) > 0 {
				t.Errorf("%s --%s (%T) keeps its empty variable %v", c.Name, f.Names()[0], f, df.GetEnvVars())
			}
		}
	}
	_, out, _ := runCLI(t, "run", "--help")
	if !strings.Contains(out, "[$GROUPD_DATA_DIR]") {
		t.Errorf("with GROUPD_DATA_DIR empty, run --help does not list it:\n%s", out)
	}
}
