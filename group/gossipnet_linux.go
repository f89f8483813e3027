package group

import (
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// msgProbe is Linux's MSG_PROBE (include/linux/socket.h), which
// golang.org/x/sys/unix does not export: "do not send, only probe the
// path".
const msgProbe = 0x10

// confirmNeighbour tells the kernel that the peer at ap is reachable (it
// just answered), without sending anything: a zero-length sendmsg with
// MSG_CONFIRM|MSG_PROBE only refreshes the neighbour entry of the route to
// ap, so that the entry does not need an ARP probe. See gossipNet.
func confirmNeighbour(c *net.UDPConn, ap netip.AddrPort) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var sa unix.Sockaddr
	if a := ap.Addr(); a.Is4() {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}
	} else {
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.Sendto(int(fd), nil, unix.MSG_CONFIRM|msgProbe, sa)
	}); err != nil {
		return err
	}
	return serr
}
