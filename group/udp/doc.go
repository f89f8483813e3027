// Package udp is groupd's transport on a real network: the wire
// protocol's datagrams over UDP, unicast and multicast. It is what package
// group uses when Config.Transport is nil, and an embedder may open one
// with other options and hand it to Config.Transport; package group/memnet
// is the in-memory counterpart. It knows nothing of the protocol beyond
// the largest datagram (wire.MaxDatagramSize): it moves bytes, and group
// encodes, seals and checks them. It is a package of its own so that the
// library's runtime (group) and the sockets it runs on are read, tested and
// replaced apart, as memberlist keeps its Transport apart from
// NetTransport.
//
// What a Transport guarantees:
//
//   - One unicast socket per address family (Families): a dual-stack Bind
//     ("::") gets udp4 on 0.0.0.0 and udp6 on [::] (IPV6_V6ONLY) on the
//     same port, so that each family's multicast is joined and sent the
//     usual way for it.
//   - Beacons leave from their family's unicast socket, so their UDP
//     source is the sender's unicast address and receivers learn where to
//     reply without any address in the payload. That socket gets a
//     multicast TTL (IPv6: hop limit) of 1, so beacons stay on the link;
//     multicast loopback on, so other nodes on the host hear them; and the
//     group's first interface as its multicast interface. With several
//     interfaces, each beacon is sent once per interface, choosing it per
//     datagram with IP_PKTINFO (IPV6_PKTINFO), so that a host on several
//     LANs is heard on all of them.
//   - Beacons are received on a socket of their own per group, bound to the
//     group address and port (not the wildcard, so that it gets only
//     datagrams sent to the group) with SO_REUSEADDR and SO_REUSEPORT, so
//     that several daemons on one host all listen on the port (the kernel
//     gives each such socket a copy of every multicast datagram). It joins
//     the group on each of the group's interfaces (IPv6: by interface
//     index, the group's scope zone).
//   - Every socket is read by one goroutine with a Reader, which avoids
//     waking the runtime's sysmon thread per datagram on an idle node;
//     a datagram longer than wire.MaxDatagramSize is handed on one byte
//     too long, for the receiver to drop, never silently truncated to a
//     valid length.
//
// Platform notes. Linux: IP_MULTICAST_ALL (IPv6: IPV6_MULTICAST_ALL, from
// Linux 4.20) is cleared on the multicast sockets, so that they get only the
// groups they joined and not those other programs on the host joined on
// the same port; IPv4 multicast is delivered over loopback even when lo
// lacks the MULTICAST flag, which is why Interfaces accepts lo for a
// loopback Bind; Linux does not route IPv6 multicast over lo. Other Unix
// systems have no such option (a socket gets only the groups it joined)
// and read with net.UDPConn's own calls. A link-local IPv6 group
// (ff02::/16, ff12::/16) is bound with its interface as zone where the
// kernel asks for one, so it takes exactly one interface.
package udp
