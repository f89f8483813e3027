package group

import (
	"errors"
	"net"
	"strings"
	"testing"
)

// TestSelectInterfaces: Config.Interface names the one interface, else
// udp.Interfaces picks by Config.Bind (its own tests say how), and the
// errors name the field to fix.
func TestSelectInterfaces(t *testing.T) {
	lo, err := loopbackInterface()
	if err != nil {
		t.Skip(err)
	}
	t.Run("by name", func(t *testing.T) {
		ifs, err := selectInterfaces(lo.Name, nil, false)
		if err != nil || len(ifs) != 1 || ifs[0].Name != lo.Name {
			t.Errorf("%v, %v", ifs, err)
		}
	})
	t.Run("by bind address", func(t *testing.T) {
		ifs, err := selectInterfaces("", net.IPv4(127, 0, 0, 1), false)
		if err != nil || len(ifs) != 1 || ifs[0].Name != lo.Name {
			t.Errorf("%v, %v", ifs, err)
		}
	})
	t.Run("unknown name", func(t *testing.T) {
		if _, err := selectInterfaces("nope0", nil, false); err == nil {
			t.Error("no error")
		}
	})
	t.Run("foreign bind", func(t *testing.T) {
		if _, err := selectInterfaces("", net.IPv4(192, 0, 2, 222), false); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Config.Bind 192.0.2.222") {
			t.Errorf("%v, want a configuration error naming Config.Bind", err)
		}
	})
}

func TestChooseAdvertise(t *testing.T) {
	c := DefaultLANConfig()
	c.Advertise = "10.1.2.3"
	if ip, err := chooseAdvertise(c, net.IPv4zero); err != nil || ip.String() != "10.1.2.3" {
		t.Errorf("explicit: %v %v", ip, err)
	}
	c.Advertise = ""
	if ip, err := chooseAdvertise(c, net.IPv4(127, 0, 0, 1)); err != nil || ip.String() != "127.0.0.1" {
		t.Errorf("bind: %v %v", ip, err)
	}
	ip, err := chooseAdvertise(c, net.IPv4zero)
	if err != nil || ip.To4() == nil || ip.IsUnspecified() {
		t.Errorf("any: %v %v", ip, err)
	}
}
