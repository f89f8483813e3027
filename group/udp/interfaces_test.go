package udp

import (
	"net"
	"slices"
	"testing"
)

func TestFamilies(t *testing.T) {
	for _, tc := range []struct {
		bind   net.IP
		v4, v6 bool
	}{
		{net.IPv4(10, 1, 2, 3), true, false},
		{net.IPv4zero, true, false},
		{net.ParseIP("fd00::1"), false, true},
		{net.IPv6unspecified, true, true},
		{nil, true, true},
	} {
		if v4, v6 := Families(tc.bind); v4 != tc.v4 || v6 != tc.v6 {
			t.Errorf("Families(%v) = %v, %v; want %v, %v", tc.bind, v4, v6, tc.v4, tc.v6)
		}
	}
}

func TestInterfaces(t *testing.T) {
	t.Run("by bind address", func(t *testing.T) {
		ifs, err := Interfaces(net.IPv4(127, 0, 0, 1), false)
		if err != nil || len(ifs) != 1 || ifs[0].Flags&net.FlagLoopback == 0 {
			t.Errorf("%v, %v; want the loopback interface", ifs, err)
		}
	})
	t.Run("any address", func(t *testing.T) {
		ifs, err := Interfaces(net.IPv4zero, false)
		if err != nil || len(ifs) == 0 {
			t.Fatalf("%v, %v", ifs, err)
		}
		// Every non-loopback multicast interface that is up with an
		// IPv4 address, or else loopback alone.
		for _, ifi := range ifs {
			if ifi.Flags&net.FlagUp == 0 || len(InterfaceIPs(ifi, false)) == 0 {
				t.Errorf("picked %s: down or no IPv4", ifi.Name)
			}
			if ifi.Flags&net.FlagLoopback != 0 && len(ifs) > 1 {
				t.Errorf("picked loopback next to real interfaces: %v", ifs)
			}
		}
		// The default route's interface first, if it is picked.
		if ip := DefaultRouteIP(false); ip != nil {
			for i, ifi := range ifs {
				if slices.ContainsFunc(InterfaceIPs(ifi, false), ip.Equal) && i != 0 {
					t.Errorf("the default route's interface %s is number %d of %v", ifi.Name, i, ifs)
				}
			}
		}
	})
	t.Run("foreign bind", func(t *testing.T) {
		if ifs, err := Interfaces(net.IPv4(192, 0, 2, 222), false); err != nil || len(ifs) != 0 {
			t.Errorf("%v, %v; want none", ifs, err)
		}
	})
}
