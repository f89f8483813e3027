package group

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/groupd/groupd/wire"
	"golang.org/x/net/ipv4"
)

// Transport carries the wire protocol's datagrams (encoded, and sealed
// when there is a key): unicast to a node's address, and multicast to every
// node listening on the group. The daemon uses UDP sockets (a nil
// Config.Transport: Bind, Port, Multicast and Interface); tests and embedders can hand Config.Transport an
// in-memory one (package group/memnet), where partitions are cut at the
// transport.
type Transport interface {
	// Start begins delivering received datagrams to recv, with their
	// source and whether they came by multicast, and returns at once.
	// recv runs on the transport's goroutines, must not block for long,
	// and must not keep pkt after it returns.
	Start(recv func(pkt []byte, src *net.UDPAddr, multicast bool))
	// Addr returns the unicast address other nodes reach this one at.
	Addr() *net.UDPAddr
	// Send sends one datagram to addr.
	Send(pkt []byte, addr *net.UDPAddr) error
	// Multicast sends one datagram to the multicast group and returns how
	// many copies left (one per interface). It is not called when
	// MulticastGroup is "".
	Multicast(pkt []byte) (int, error)
	// MulticastGroup returns the group as "addr:port", or "" without
	// multicast.
	MulticastGroup() string
	// Close stops receiving and releases the transport; recv is not called
	// once Close has returned.
	Close() error
}

// udpTransport is the daemon's Transport: the unicast wire socket, which
// also sends the beacons (so that their source is the sender's wire
// address), and the multicast socket that receives them (multicast.go).
type udpTransport struct {
	uc    *net.UDPConn
	ucp   *ipv4.PacketConn
	addr  *net.UDPAddr // advertised address
	mcast *mcastSocket // nil without multicast

	closed  chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	onError func(err error, multicast bool)
}

// openUDPTransport binds the wire socket on bind:port and, unless group is
// nil, the multicast socket on ifaces. adv is the advertised IP.
func openUDPTransport(bind net.IP, port int, adv net.IP, group *net.UDPAddr, ifaces []net.Interface) (*udpTransport, error) {
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: bind, Port: port})
	if err != nil {
		return nil, configErrorf("group: --port %d: %w", port, err)
	}
	t := &udpTransport{
		uc:     uc,
		ucp:    ipv4.NewPacketConn(uc),
		addr:   &net.UDPAddr{IP: adv, Port: uc.LocalAddr().(*net.UDPAddr).Port},
		closed: make(chan struct{}),
	}
	if group == nil {
		return t, nil
	}
	if err := setupMulticastSender(t.ucp, ifaces); err != nil {
		uc.Close()
		return nil, configErrorf("%w", err)
	}
	if t.mcast, err = openMulticast(group, ifaces); err != nil {
		uc.Close()
		return nil, err
	}
	return t, nil
}

func (t *udpTransport) Start(recv func([]byte, *net.UDPAddr, bool)) {
	t.wg.Add(1)
	go func() { defer t.wg.Done(); t.readLoop(t.uc, false, recv) }()
	if t.mcast != nil {
		t.wg.Add(1)
		go func() { defer t.wg.Done(); t.readLoop(t.mcast.conn, true, recv) }()
	}
}

// readLoop reads datagrams from conn until it is closed. One goroutine per
// socket.
func (t *udpTransport) readLoop(conn net.PacketConn, multicast bool, recv func([]byte, *net.UDPAddr, bool)) {
	r, err := datagramReaderFor(conn)
	if err != nil {
		if t.onError != nil {
			t.onError(err, multicast)
		}
		return
	}
	// One byte more than the largest valid datagram, to detect (and drop)
	// longer ones rather than silently truncate them.
	buf := make([]byte, wire.MaxDatagramSize+1)
	for {
		n, src, err := r.ReadFromUDPAddrPort(buf)
		if err != nil {
			select {
			case <-t.closed:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient error (ICMP port unreachable surfacing as
			// ECONNREFUSED, say) must not stop the node.
			if t.onError != nil {
				t.onError(err, multicast)
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		var udp *net.UDPAddr
		if src.IsValid() {
			udp = net.UDPAddrFromAddrPort(netip.AddrPortFrom(src.Addr().Unmap(), src.Port()))
		}
		recv(buf[:n], udp, multicast)
	}
}

// datagramReader is what readLoop reads from: a *net.UDPConn, or on Linux
// a udpReader over one.
type datagramReader interface {
	ReadFromUDPAddrPort(buf []byte) (int, netip.AddrPort, error)
}

// datagramReaderFor returns the reader for one of the transport's sockets
// (always a *net.UDPConn: net.ListenUDP, or ListenPacket on "udp4").
func datagramReaderFor(conn net.PacketConn) (datagramReader, error) {
	uc, ok := conn.(*net.UDPConn)
	if !ok {
		return nil, fmt.Errorf("group: transport socket is a %T, not a UDP socket", conn)
	}
	return newUDPReader(uc)
}

func (t *udpTransport) Addr() *net.UDPAddr { return t.addr }

func (t *udpTransport) Send(pkt []byte, addr *net.UDPAddr) error {
	_, err := t.uc.WriteToUDP(pkt, addr)
	return err
}

func (t *udpTransport) Multicast(pkt []byte) (int, error) {
	if t.mcast == nil {
		return 0, errors.New("group: no multicast socket")
	}
	return t.mcast.send(t.ucp, pkt)
}

func (t *udpTransport) MulticastGroup() string {
	if t.mcast == nil {
		return ""
	}
	return t.mcast.group.String()
}

func (t *udpTransport) Close() error {
	var err error
	t.once.Do(func() {
		close(t.closed)
		err = t.uc.Close()
		if t.mcast != nil {
			if e := t.mcast.close(); err == nil {
				err = e
			}
		}
		t.wg.Wait()
	})
	return err
}
