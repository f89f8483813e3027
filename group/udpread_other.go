//go:build !linux

package group

import (
	"net"
	"net/netip"
)

// udpReader reads datagrams from a UDP socket; on Linux with a raw
// system call (rawread_linux.go), elsewhere as net.UDPConn does.
type udpReader struct{ c *net.UDPConn }

func newUDPReader(c *net.UDPConn) (*udpReader, error) { return &udpReader{c: c}, nil }

// ReadFromUDPAddrPort reads one datagram into buf.
func (r *udpReader) ReadFromUDPAddrPort(buf []byte) (int, netip.AddrPort, error) {
	return r.c.ReadFromUDPAddrPort(buf)
}
