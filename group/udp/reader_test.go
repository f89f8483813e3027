package udp

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/groupd/groupd/group/memnet"
)

// TestReader: the transport's reader returns each datagram with its
// source (IPv4 and, where the host has it, IPv6), waits in the netpoller
// when there is nothing to read, and returns net.ErrClosed once the socket
// is closed.
func TestReader(t *testing.T) {
	for _, tc := range []struct{ network, ip string }{{"udp4", "127.0.0.1"}, {"udp6", "::1"}} {
		t.Run(tc.network, func(t *testing.T) {
			rc, err := net.ListenUDP(tc.network, &net.UDPAddr{IP: net.ParseIP(tc.ip)})
			if err != nil {
				t.Skipf("no %s loopback here: %v", tc.network, err)
			}
			defer rc.Close()
			sc, err := net.ListenUDP(tc.network, &net.UDPAddr{IP: net.ParseIP(tc.ip)})
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			r := NewReader(rc)
			want := netip.MustParseAddrPort(sc.LocalAddr().String())
			buf := make([]byte, 64)
			// reading waits until the test's read is parked in the
			// netpoller: what comes next reaches a reader that waits.
			reading := func() {
				if err := memnet.WaitParked(10*time.Second, "IO wait", "udp.(*Reader).ReadFromUDPAddrPort", "udp.TestReader"); err != nil {
					t.Error(err)
				}
			}
			for i, msg := range [][]byte{[]byte("first"), {}, bytes.Repeat([]byte{7}, 64)} {
				// The second and third are sent once the read waits:
				// the reader must wake for them.
				go func() {
					if i > 0 {
						reading()
					}
					sc.WriteToUDP(msg, rc.LocalAddr().(*net.UDPAddr))
				}()
				n, src, err := r.ReadFromUDPAddrPort(buf)
				if err != nil {
					t.Fatalf("datagram %d: %v", i, err)
				}
				if !bytes.Equal(buf[:n], msg) || src != want {
					t.Fatalf("datagram %d: %q from %v, want %q from %v", i, buf[:n], src, msg, want)
				}
			}
			go func() { reading(); rc.Close() }()
			if _, _, err := r.ReadFromUDPAddrPort(buf); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("read after close: %v, want net.ErrClosed", err)
			}
		})
	}
}
