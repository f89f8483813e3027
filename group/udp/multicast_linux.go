package udp

import "golang.org/x/sys/unix"

// multicastAll is the socket option that, cleared, keeps groups other
// programs joined on a port from reaching this socket: IP_MULTICAST_ALL
// or IPV6_MULTICAST_ALL (Linux only; elsewhere a socket gets only the
// groups it joined).
func multicastAll(network string) (level, opt int, ok bool) {
	if network == "udp6" {
		return unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_ALL, true
	}
	return unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, true
}
