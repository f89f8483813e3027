package udp

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// Reader reads datagrams from a UDP socket with recvfrom(2) made as a
// raw system call, waiting for the socket in Go's netpoller.
//
// Why: net.UDPConn's reads go through the runtime's syscall entry, and
// entering a system call wakes the runtime's sysmon thread if every P was
// idle. On an idle node, where every datagram (a heartbeat, a memberlist
// probe) arrives to a sleeping process, that is two extra context switches
// per datagram: sysmon wakes, sleeps 20 µs, and parks again. The socket
// is non-blocking (Go opens it so), so recvfrom returns at once, with
// EAGAIN when there is nothing to read, and a raw system call is safe.
//
// The transport reads its sockets with it, and so does package group's
// memberlist transport: one reader for every UDP socket of the daemon.
type Reader struct {
	c  *net.UDPConn
	rc syscall.RawConn // nil: c's own reads
}

// NewReader returns a reader of c. A socket without a file descriptor
// (which the net package never hands out open) is read as c reads.
func NewReader(c *net.UDPConn) *Reader {
	rc, err := c.SyscallConn()
	if err != nil {
		return &Reader{c: c}
	}
	return &Reader{c: c, rc: rc}
}

// ReadFromUDPAddrPort reads one datagram into buf, as
// net.UDPConn.ReadFromUDPAddrPort does (IPv4 and IPv6 sources).
func (r *Reader) ReadFromUDPAddrPort(buf []byte) (int, netip.AddrPort, error) {
	if r.rc == nil {
		return r.c.ReadFromUDPAddrPort(buf)
	}
	var (
		sa    [syscall.SizeofSockaddrInet6]byte // large enough for either family
		n     uintptr
		errno syscall.Errno
	)
	var p unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			salen := uint32(len(sa))
			n, _, errno = syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(p), uintptr(len(buf)), 0,
				uintptr(unsafe.Pointer(&sa[0])), uintptr(unsafe.Pointer(&salen)))
			switch errno {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the netpoller
			}
			return true
		}
	})
	if err != nil {
		return 0, netip.AddrPort{}, err
	}
	if errno != 0 {
		return 0, netip.AddrPort{}, &net.OpError{Op: "read", Net: "udp", Source: r.c.LocalAddr(), Err: os.NewSyscallError("recvfrom", errno)}
	}
	return int(n), sockaddrAddrPort(sa[:]), nil
}

// sockaddrAddrPort decodes a struct sockaddr_in or sockaddr_in6; a zero
// AddrPort for any other family.
func sockaddrAddrPort(sa []byte) netip.AddrPort {
	port := binary.BigEndian.Uint16(sa[2:4])
	switch binary.NativeEndian.Uint16(sa[0:2]) {
	case syscall.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(sa[4:8])), port)
	case syscall.AF_INET6:
		a := netip.AddrFrom16([16]byte(sa[8:24]))
		if scope := binary.NativeEndian.Uint32(sa[24:28]); scope != 0 && a.Is6() && !a.Is4In6() {
			a = a.WithZone(strconv.FormatUint(uint64(scope), 10)) // a link-local source's interface
		}
		return netip.AddrPortFrom(a, port)
	}
	return netip.AddrPort{}
}
