package group

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/groupd/groupd/group/udp"
)

// gossipNet is memberlist's transport on real sockets: one UDP socket and
// one TCP listener on the same port, as memberlist's own NetTransport. It
// differs in two ways that make an idle node cheaper (issue 14):
//
//   - It confirms its peers' neighbour entries (Linux): after a datagram
//     to a peer heard from within confirmWindow, and after a datagram from
//     a peer sent to within it, a zero-length MSG_CONFIRM|MSG_PROBE send
//     (no packet leaves) tells the kernel the peer is reachable. UDP gives
//     the kernel no such confirmation of its own, as TCP's acks do, so
//     without it every entry goes stale after ~30 s and each probe of a
//     peer cost an ARP request and reply on top of ping and ack: on a LAN,
//     about half of an idle node's packets.
//   - A received datagram is copied out of one reused buffer, where
//     NetTransport allocates 64 KiB per packet.
//
// Everything else (stream handling, ports, shutdown) follows NetTransport.
type gossipNet struct {
	udp      *net.UDPConn
	tcp      *net.TCPListener
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	log      zerolog.Logger
	closed   atomic.Bool
	wg       sync.WaitGroup
	// guards bounds the inbound streams being checked (checkStream);
	// done ends those waiting to be handed over.
	guards chan struct{}
	done   chan struct{}
	// confirmed counts neighbour confirmations.
	confirmed atomic.Uint64

	mu    sync.Mutex
	peers map[netip.Addr]*peerTraffic
	swept time.Time
	// nextConfirm is the earliest confirmAt of any peer (zero: none), so
	// that confirmDue, called on every packet and loop turn, scans the
	// peers only when one is due.
	nextConfirm time.Time
}

// peerTraffic is when a peer address was last heard from and sent to, and
// when a confirmation of it is due (zero: none).
type peerTraffic struct {
	heard, sent time.Time
	confirmAt   time.Time
	addr        netip.AddrPort
}

var _ memberlist.NodeAwareTransport = (*gossipNet)(nil)

// confirmWindow is how recent the other direction's traffic must be for a
// datagram to confirm a peer: the kernel's probe delay (delay_first_probe_
// time) is 5 s by default, and an answer older than this proves little.
const confirmWindow = 2 * time.Second

// gossipBindAttempts bounds the retries of an automatic port (0), whose
// UDP half may be taken by another socket after the TCP half was bound.
const gossipBindAttempts = 10

// newGossipNet binds bind:port for TCP and UDP. Port 0 picks a port free
// for both.
func newGossipNet(bind string, port int, log zerolog.Logger) (*gossipNet, error) {
	ip := net.ParseIP(bind)
	if ip == nil {
		return nil, fmt.Errorf("bad address %q", bind)
	}
	var (
		tcp *net.TCPListener
		udp *net.UDPConn
		err error
	)
	for attempt := 0; ; attempt++ {
		tcp, err = net.ListenTCP("tcp", &net.TCPAddr{IP: ip, Port: port})
		if err != nil {
			return nil, fmt.Errorf("TCP %s: %w", net.JoinHostPort(bind, fmt.Sprint(port)), err)
		}
		p := tcp.Addr().(*net.TCPAddr).Port
		udp, err = net.ListenUDP("udp", &net.UDPAddr{IP: ip, Port: p})
		if err == nil {
			break
		}
		tcp.Close()
		if port != 0 || attempt+1 == gossipBindAttempts {
			return nil, fmt.Errorf("UDP %s: %w", net.JoinHostPort(bind, fmt.Sprint(p)), err)
		}
	}
	// Memberlist's NetTransport asks for 2 MiB and halves until the
	// kernel agrees; bursts here are small, so the default will do if
	// even the request fails.
	for size := 2 << 20; size >= 64<<10; size /= 2 {
		if udp.SetReadBuffer(size) == nil {
			break
		}
	}
	t := &gossipNet{
		udp:      udp,
		tcp:      tcp,
		packetCh: make(chan *memberlist.Packet),
		streamCh: make(chan net.Conn),
		guards:   make(chan struct{}, streamGuards),
		done:     make(chan struct{}),
		log:      log,
		peers:    make(map[netip.Addr]*peerTraffic),
	}
	t.wg.Add(2)
	go t.readPackets()
	go t.acceptStreams()
	return t, nil
}

// Port returns the bound port (TCP and UDP).
func (t *gossipNet) Port() int { return t.tcp.Addr().(*net.TCPAddr).Port }

func (t *gossipNet) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if ip == "" {
		// The agent always advertises an address of its own choosing.
		a := t.tcp.Addr().(*net.TCPAddr)
		return a.IP, a.Port, nil
	}
	addr := net.ParseIP(ip)
	if addr == nil {
		return nil, 0, fmt.Errorf("group: gossip: bad advertise address %q", ip)
	}
	if v4 := addr.To4(); v4 != nil {
		addr = v4
	}
	return addr, port, nil
}

func (t *gossipNet) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

func (t *gossipNet) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	ap, err := netip.ParseAddrPort(a.Addr)
	if err != nil {
		// Names rather than addresses: resolve, as NetTransport does.
		ua, rerr := net.ResolveUDPAddr("udp", a.Addr)
		if rerr != nil {
			return time.Time{}, rerr
		}
		ap = ua.AddrPort()
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	_, err = t.udp.WriteToUDPAddrPort(b, ap)
	now := time.Now()
	if err == nil {
		t.traffic(ap, now, false)
	}
	return now, err
}

func (t *gossipNet) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

func (t *gossipNet) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

func (t *gossipNet) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	return d.Dial("tcp", a.Addr)
}

func (t *gossipNet) StreamCh() <-chan net.Conn { return t.streamCh }

func (t *gossipNet) Shutdown() error {
	if t.closed.Swap(true) {
		return nil
	}
	close(t.done)
	t.tcp.Close()
	t.udp.Close()
	t.wg.Wait()
	return nil
}

// readPackets hands each datagram to memberlist, which keeps the buffer:
// so each gets a copy of its own, sized to fit.
func (t *gossipNet) readPackets() {
	defer t.wg.Done()
	buf := make([]byte, 65536)
	r := udp.NewReader(t.udp)
	for {
		n, from, err := r.ReadFromUDPAddrPort(buf)
		now := time.Now()
		if err != nil {
			if t.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			t.log.Debug().Err(err).Msg("gossip: read")
			continue
		}
		if n < 1 {
			continue
		}
		t.traffic(netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), now, true)
		pkt := make([]byte, n)
		copy(pkt, buf[:n])
		t.packetCh <- &memberlist.Packet{Buf: pkt, From: net.UDPAddrFromAddrPort(from), Timestamp: now}
	}
}

// traffic records a datagram from (heard) or to ap, and confirms ap's
// neighbour entry if the other direction was recent. Peers silent for a
// minute are forgotten once a minute.
func (t *gossipNet) traffic(ap netip.AddrPort, now time.Time, heard bool) {
	t.mu.Lock()
	p := t.peers[ap.Addr()]
	if p == nil {
		p = &peerTraffic{}
		t.peers[ap.Addr()] = p
	}
	other := p.sent
	if heard {
		p.heard = now
	} else {
		p.sent, other = now, p.heard
	}
	if now.Sub(t.swept) >= time.Minute {
		t.swept = now
		for a, q := range t.peers {
			if now.Sub(q.heard) > time.Minute && now.Sub(q.sent) > time.Minute {
				delete(t.peers, a)
			}
		}
	}
	if now.Sub(other) < confirmWindow && p.confirmAt.IsZero() {
		// Not now: the kernel checks confirmations when the entry's
		// probe delay (5 s) ends, on a timer that may fire a few
		// hundred milliseconds late, and a confirmation made in the
		// same instant as the send that started the delay is then
		// already too old. A second later it is not.
		p.confirmAt, p.addr = now.Add(confirmDelay), ap
		if t.nextConfirm.IsZero() || p.confirmAt.Before(t.nextConfirm) {
			t.nextConfirm = p.confirmAt
		}
	}
	t.mu.Unlock()
	t.confirmDue(now)
}

// confirmDelay is how long after the exchange a confirmation is made.
const confirmDelay = time.Second

// confirmDue makes the confirmations that are due. It has no timer of its
// own, so that an idle node does not wake for it: the agent's event loop
// calls it on every wake (at least one heartbeat each AliveInterval), and
// so does every datagram. Late by up to an AliveInterval is well within
// the kernel's 5 s.
func (t *gossipNet) confirmDue(now time.Time) {
	if t.closed.Load() {
		return
	}
	var due []netip.AddrPort
	t.mu.Lock()
	if t.nextConfirm.IsZero() || now.Before(t.nextConfirm) {
		t.mu.Unlock()
		return
	}
	t.nextConfirm = time.Time{}
	for _, p := range t.peers {
		switch {
		case p.confirmAt.IsZero():
		case !now.Before(p.confirmAt):
			due = append(due, p.addr)
			p.confirmAt = time.Time{}
		case t.nextConfirm.IsZero() || p.confirmAt.Before(t.nextConfirm):
			t.nextConfirm = p.confirmAt
		}
	}
	t.mu.Unlock()
	for _, ap := range due {
		if err := confirmNeighbour(t.udp, ap); err != nil {
			t.log.Debug().Err(err).Str("peer", ap.String()).Msg("gossip: neighbour confirmation")
			continue
		}
		t.confirmed.Add(1)
	}
}

// acceptStreams hands each TCP connection to memberlist, backing off on
// errors as NetTransport does (a full file table, say).
func (t *gossipNet) acceptStreams() {
	defer t.wg.Done()
	var delay time.Duration
	for {
		conn, err := t.tcp.AcceptTCP()
		if err != nil {
			if t.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			t.log.Warn().Err(err).Dur("retry_in", delay).Msg("gossip: accept")
			time.Sleep(delay)
			continue
		}
		delay = 0
		select {
		case t.guards <- struct{}{}:
		default:
			conn.Close() // more streams being checked than a LAN makes
			continue
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			defer func() { <-t.guards }()
			c, err := checkStream(conn, time.Now().Add(streamCheckTimeout))
			if err != nil {
				t.log.Debug().Err(err).Str("from", conn.RemoteAddr().String()).Msg("gossip: inbound stream")
				conn.Close()
				return
			}
			select {
			case t.streamCh <- c:
			case <-t.done:
				conn.Close()
			}
		}()
	}
}
