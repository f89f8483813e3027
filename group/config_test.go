package group

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/store"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string // substring of the error; "" for valid
	}{
		{"lan defaults", func(*Config) {}, ""},
		{"fast defaults", func(c *Config) { *c = DefaultFastConfig() }, ""},
		{"port 0 means any", func(c *Config) { c.Port = 0 }, ""},
		{"port too big", func(c *Config) { c.Port = 70000 }, "Config.Port 70000 out of range"},
		{"port negative", func(c *Config) { c.Port = -1 }, "Config.Port -1 out of range"},
		{"gossip port too big", func(c *Config) { c.GossipPort = 65536 }, "Config.GossipPort 65536 out of range"},
		{"gossip default overflows", func(c *Config) { c.Port = 65535 }, "Config.Port 65535: its gossip port 65536 (Config.Port+1) is out of range; set Config.GossipPort"},
		{"gossip same as port", func(c *Config) { c.GossipPort = c.Port }, "Config.GossipPort 7950 is the same as Config.Port"},
		{"bind not an IP", func(c *Config) { c.Bind = "eth0" }, `Config.Bind "eth0" is not an IP address`},
		{"bind IPv6", func(c *Config) { c.Bind = "::1" }, ""},
		{"bind IPv6 any", func(c *Config) { c.Bind = "::" }, ""},
		{"bind IPv4-mapped", func(c *Config) { c.Bind = "::ffff:10.0.0.1" }, ""},
		{"bind link-local", func(c *Config) { c.Bind = "fe80::1" }, "is link-local"},
		{"bind zone", func(c *Config) { c.Bind = "fe80::1%eth0" }, "a zone (%) is not accepted"},
		{"advertise IPv6 any", func(c *Config) { c.Bind, c.Advertise = "::", "::" }, "must be a specific address"},
		{"advertise IPv6 on IPv4", func(c *Config) { c.Advertise = "fd00::1" }, "Config.Advertise fd00::1 is IPv6, but Config.Bind 0.0.0.0 is IPv4 only"},
		{"advertise IPv4 on IPv6", func(c *Config) { c.Bind, c.Advertise = "fd00::2", "10.0.0.1" }, "is IPv4, but Config.Bind fd00::2 is IPv6 only"},
		{"advertise IPv6 dual", func(c *Config) { c.Bind, c.Advertise = "::", "fd00::1" }, ""},
		{"advertise IPv4 dual", func(c *Config) { c.Bind, c.Advertise = "::", "10.0.0.1" }, ""},
		{"advertise any", func(c *Config) { c.Advertise = "0.0.0.0" }, "must be a specific address"},
		{"advertise ok", func(c *Config) { c.Advertise = "10.0.0.1" }, ""},
		{"multicast off", func(c *Config) { c.Multicast = "off" }, ""},
		{"multicast empty", func(c *Config) { c.Multicast = "" }, ""},
		{"multicast unicast addr", func(c *Config) { c.Multicast = "10.0.0.1:7952" }, "is not a multicast address"},
		{"multicast IPv6 unicast", func(c *Config) { c.Multicast = "[fd00::1]:7952" }, "is not a multicast address"},
		{"multicast IPv6 no brackets", func(c *Config) { c.Multicast = "ff15::7952:7952" }, "want addr:port ([addr]:port for IPv6)"},
		{"multicast two IPv4", func(c *Config) { c.Multicast = "239.1.1.1:1,239.1.1.2:1" }, "two IPv4 groups"},
		{"multicast IPv4 only on IPv6", func(c *Config) { c.Bind, c.Multicast = "fd00::1", "239.1.1.1:7952" }, "has no IPv6 group"},
		{"multicast IPv6 only on IPv4", func(c *Config) { c.Multicast = "[ff15::1]:7952" }, "has no IPv4 group"},
		{"multicast IPv6 only on IPv6", func(c *Config) { c.Bind, c.Multicast = "fd00::1", "[ff12::1]:7952" }, ""},
		{"multicast one family on dual", func(c *Config) { c.Bind, c.Multicast = "::", "239.1.1.1:7952" }, ""},
		{"multicast no port", func(c *Config) { c.Multicast = "239.1.1.1" }, "want addr:port"},
		{"multicast port 0", func(c *Config) { c.Multicast = "239.1.1.1:0" }, "out of range"},
		{"join ok", func(c *Config) { c.Join = []string{"10.0.0.2:7951", "node3"} }, ""},
		{"join IPv6", func(c *Config) { c.Join = []string{"[fd00::2]:7951", "fd00::3"} }, ""},
		{"join bad port", func(c *Config) { c.Join = []string{"10.0.0.2:x"} }, `Config.Join "10.0.0.2:x"`},
		{"join empty host", func(c *Config) { c.Join = []string{":7951"} }, "empty host"},
		{"no data dir", func(c *Config) { c.DataDir = " " }, "Config.DataDir is empty"},
		{"api unix", func(c *Config) { c.API = "unix:/run/groupd.sock" }, ""},
		{"api unix empty", func(c *Config) { c.API = "unix:" }, "empty socket path"},
		{"api off", func(c *Config) { c.API = "" }, ""},
		{"api bad", func(c *Config) { c.API = "localhost" }, "want host:port or unix:/path"},
		{"api bad host", func(c *Config) { c.API = "example.com:7953" }, "must be an IP address or localhost"},
		{"profile", func(c *Config) { c.Profile = "wan" }, `Config.Profile "wan": want lan or fast`},
		{"interval zero", func(c *Config) { c.Timing.AliveInterval = 0 }, "Config.Timing.AliveInterval must be > 0"},
		{"interval negative", func(c *Config) { c.Timing.BeaconInterval = -time.Second }, "Config.Timing.BeaconInterval must be > 0"},
		{"interval relation", func(c *Config) { c.Timing.AliveTimeout = time.Millisecond }, "Config.Timing.AliveTimeout (1ms) must be >= Config.Timing.AliveInterval + Config.Timing.AnswerTimeout"},
		{"key short", func(c *Config) { c.Key = make([]byte, 16) }, "Config.Key is 16 bytes, want 32"},
		{"key ok", func(c *Config) { c.Key = make([]byte, 32) }, ""},
		{"tick", func(c *Config) { c.TickInterval = -1 }, "Config.TickInterval must be > 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultLANConfig()
			tc.mod(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: nil, want %q", tc.want)
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "group: ") {
				t.Errorf("error %q, want it to start with group: and contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line", err)
			}
			// The library's errors name Config's fields; flags are
			// the command line's (cmd/groupd maps one to the other).
			if strings.Contains(err.Error(), "--") {
				t.Errorf("error %q names a flag, not a Config field", err)
			}
		})
	}
}

func TestConfigForProfile(t *testing.T) {
	c, err := ConfigForProfile("fast")
	if err != nil || c.Timing != invitation.FastTiming() || c.Profile != ProfileFast {
		t.Errorf("fast: %+v, %v", c.Timing, err)
	}
	c, err = ConfigForProfile("lan")
	if err != nil || c.Timing != invitation.DefaultTiming() {
		t.Errorf("lan: %+v, %v", c.Timing, err)
	}
	if _, err := ConfigForProfile("nope"); !errors.Is(err, ErrConfig) {
		t.Errorf("unknown profile: %v", err)
	}
}

func TestDefaultPorts(t *testing.T) {
	c := DefaultLANConfig()
	if c.Port != 7950 || c.gossipPort() != 7951 || c.Multicast != "239.192.79.50:7952,[ff15::7952]:7952" || c.API != "127.0.0.1:7953" {
		t.Errorf("defaults: port %d gossip %d multicast %s api %s", c.Port, c.gossipPort(), c.Multicast, c.API)
	}
	c.Port = 0
	if c.gossipPort() != 0 {
		t.Errorf("port 0: gossip %d, want 0 (any)", c.gossipPort())
	}
}

// TestMemberlistTuning checks that memberlist, the slow detector, is
// scaled to the profile: below 10 nodes a dead member is reported (one
// probe interval to be probed, then the suspicion) within MemberTimeout,
// an idle node probes less than once a second, and the probe settings
// keep their floors in the fast profile.
func TestMemberlistTuning(t *testing.T) {
	lan := invitation.DefaultTiming()
	mc := memberlistConfig(lan)
	suspicion := time.Duration(mc.SuspicionMult) * mc.ProbeInterval
	if detect := mc.ProbeInterval + mc.ProbeTimeout + suspicion; detect >= lan.MemberTimeout {
		t.Errorf("lan detection about %v, not within MemberTimeout %v", detect, lan.MemberTimeout)
	}
	if mc.ProbeInterval < time.Second || mc.SuspicionMaxTimeoutMult != 1 || mc.PushPullInterval < 60*time.Second {
		t.Errorf("lan memberlist not relaxed: probe %v, suspicion ×%d, push/pull %v", mc.ProbeInterval, mc.SuspicionMaxTimeoutMult, mc.PushPullInterval)
	}
	if mc.ProbeTimeout >= mc.ProbeInterval {
		t.Errorf("probe timeout %v must be below the interval %v", mc.ProbeTimeout, mc.ProbeInterval)
	}
	fast := memberlistConfig(invitation.FastTiming())
	if fast.ProbeInterval < 100*time.Millisecond || fast.ProbeTimeout < 50*time.Millisecond {
		t.Errorf("fast probe %v/%v below the floors", fast.ProbeInterval, fast.ProbeTimeout)
	}
	if mc.DeadNodeReclaimTime != lan.PeerTimeout {
		t.Errorf("reclaim %v", mc.DeadNodeReclaimTime)
	}
}

// newTestConfig is a config that binds only loopback ephemeral ports.
func newTestConfig(t *testing.T) Config {
	c := DefaultFastConfig()
	c.Bind = "127.0.0.1"
	c.Port = 0
	c.Multicast = "off"
	c.API = ""
	c.DataDir = t.TempDir()
	return c
}

func TestNewErrors(t *testing.T) {
	t.Run("data dir of another node", func(t *testing.T) {
		c := newTestConfig(t)
		c.ID = 7
		a, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		inc := a.Status().Incarnation
		a.Close()
		c.ID = 8
		_, err = New(c)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "belongs to node 7") {
			t.Fatalf("New with another ID: %v", err)
		}
		// ID 0 takes the stored one.
		c.ID = 0
		a, err = New(c)
		if err != nil || a.ID() != 7 {
			t.Fatalf("New with ID 0: id %v, %v", a, err)
		}
		// Incarnations grow at every start, and are at least the Unix
		// time (store.InitOptions.MinIncarnation).
		if got := a.Status().Incarnation; got <= inc || got < uint64(time.Now().Unix()-60) {
			t.Errorf("incarnation %d, want more than %d and about the Unix time", got, inc)
		}
		a.Close()
	})
	t.Run("corrupt state", func(t *testing.T) {
		c := newTestConfig(t)
		for _, slot := range []string{"state.a", "state.b"} {
			if err := os.WriteFile(filepath.Join(c.DataDir, slot), []byte("garbage"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, err := New(c)
		var ce *store.CorruptError
		if !errors.Is(err, ErrConfig) || !errors.As(err, &ce) {
			t.Fatalf("New on corrupt state: %v", err)
		}
	})
	t.Run("data dir locked", func(t *testing.T) {
		c := newTestConfig(t)
		a, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		if _, err := New(c); !errors.Is(err, ErrConfig) || !errors.Is(err, store.ErrLocked) {
			t.Fatalf("second New on one data dir: %v", err)
		}
	})
	t.Run("data dir not writable", func(t *testing.T) {
		c := newTestConfig(t)
		c.DataDir = "/proc/groupd-test"
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Fatalf("New on /proc: %v", err)
		}
	})
	t.Run("port in use", func(t *testing.T) {
		c := newTestConfig(t)
		a, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		c2 := newTestConfig(t)
		_, p, _ := strings.Cut(a.Addrs().Wire, ":")
		c2.Port = atoiOrFail(t, p)
		c2.GossipPort = 0
		if c2.Port == 65535 {
			t.Skip("port at the top of the range")
		}
		if _, err := New(c2); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Config.Port "+p+": listen") {
			t.Fatalf("New on a used port: %v", err)
		}
		c3 := newTestConfig(t)
		_, gp, _ := strings.Cut(a.Addrs().Gossip, ":")
		c3.GossipPort = atoiOrFail(t, gp)
		if _, err := New(c3); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Config.GossipPort "+gp+": ") {
			t.Fatalf("New on a used gossip port: %v", err)
		}
	})
	t.Run("unknown interface", func(t *testing.T) {
		c := newTestConfig(t)
		c.Multicast = DefaultMulticast
		c.Interface = "nope0"
		if _, err := New(c); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `Config.Interface "nope0"`) {
			t.Fatalf("New with an unknown interface: %v", err)
		}
	})
	t.Run("bind not local", func(t *testing.T) {
		c := newTestConfig(t)
		c.Multicast = DefaultMulticast
		c.Bind = "192.0.2.222" // TEST-NET-1: not ours
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Fatalf("New with a foreign bind address: %v", err)
		}
	})
}

func atoiOrFail(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			t.Fatalf("not a port: %q", s)
		}
		n = n*10 + int(r-'0')
	}
	return n
}

func TestMinCounter(t *testing.T) {
	c := newTestConfig(t)
	c.MinCounter = 1000
	a, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got := a.Status().Counter; got != 1000 {
		t.Errorf("counter %d, want 1000", got)
	}
}
