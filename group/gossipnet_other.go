//go:build !linux

package group

import (
	"net"
	"net/netip"
)

// confirmNeighbour does nothing: only Linux has MSG_CONFIRM.
func confirmNeighbour(*net.UDPConn, netip.AddrPort) error { return nil }
