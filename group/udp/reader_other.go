//go:build !linux

package udp

import (
	"net"
	"net/netip"
)

// Reader reads datagrams from a UDP socket: on Linux with a raw system
// call (reader_linux.go, which says why), elsewhere as net.UDPConn does.
type Reader struct{ c *net.UDPConn }

// NewReader returns a reader of c.
func NewReader(c *net.UDPConn) *Reader { return &Reader{c: c} }

// ReadFromUDPAddrPort reads one datagram into buf.
func (r *Reader) ReadFromUDPAddrPort(buf []byte) (int, netip.AddrPort, error) {
	return r.c.ReadFromUDPAddrPort(buf)
}
