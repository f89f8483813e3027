package group

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// Memberlist trusts the header of a push/pull stream: it allocates room
// for as many nodes as the header says (up to 1,048,576, about 110 MB)
// before it reads one. Without an encryption key anyone who can reach the
// gossip port can send that header, and a handful of such connections
// took a node to 1.6 GB in the packet fuzzer (e2e.TestFuzzPackets, garbage
// TCP connections). So the transport reads the first bytes of every
// inbound stream itself and refuses, before memberlist sees it:
//
//   - a push/pull whose header claims more nodes than a groupd LAN can
//     hold (streamMaxNodes) or more user state than groupd sends
//     (streamMaxUserState), or whose header does not decode;
//   - a compressed stream: groupd runs memberlist without compression
//     (memberlistConfig), so a compressed stream is not from a groupd of
//     this protocol version, and its inner header could not be checked
//     without decompressing it.
//
// Encrypted streams (with a key) and every other message type pass
// unchanged: memberlist authenticates the former before it trusts them.
const (
	streamMaxNodes     = 4 * 8192 // 4 × invitation.MaxGroupSize
	streamMaxUserState = 1 << 20
	// streamPeek is enough for the type byte and a push/pull header
	// (about 40 bytes of msgpack).
	streamPeek = 64
	// streamGuards bounds the streams being checked at once; more are
	// closed at once (a LAN's push/pulls come one every 120 s per node).
	streamGuards = 32
	// streamCheckTimeout bounds the wait for a stream's first bytes; a
	// LAN peer sends them at once.
	streamCheckTimeout = time.Second
)

// The message types of memberlist's wire protocol that the guard reads
// (memberlist/net.go; the numbers are part of its protocol).
const (
	mlPushPullMsg = 6
	mlCompressMsg = 9
)

// errStreamRefused is a stream the guard refused.
var errStreamRefused = errors.New("gossip: stream refused")

// checkStream reads the first bytes of an inbound stream (within
// deadline) and returns a conn that replays them to memberlist, or
// errStreamRefused with the reason.
func checkStream(conn net.Conn, deadline time.Time) (net.Conn, error) {
	if err := conn.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(conn, 4096)
	head, err := br.Peek(1)
	if err != nil {
		return nil, fmt.Errorf("%w: nothing read: %v", errStreamRefused, err)
	}
	switch head[0] {
	case mlCompressMsg:
		return nil, fmt.Errorf("%w: compressed (groupd gossips uncompressed)", errStreamRefused)
	case mlPushPullMsg:
		// A push/pull is always longer than this; a short read (the
		// deadline) is decoded as far as it goes.
		head, _ = br.Peek(streamPeek)
		var h struct {
			Nodes        int
			UserStateLen int
			Join         bool
		}
		if err := codec.NewDecoder(bytes.NewReader(head[1:]), &codec.MsgpackHandle{}).Decode(&h); err != nil {
			return nil, fmt.Errorf("%w: push/pull header: %v", errStreamRefused, err)
		}
		if h.Nodes < 0 || h.Nodes > streamMaxNodes || h.UserStateLen < 0 || h.UserStateLen > streamMaxUserState {
			return nil, fmt.Errorf("%w: push/pull header claims %d nodes and %d bytes of user state", errStreamRefused, h.Nodes, h.UserStateLen)
		}
	}
	// Memberlist sets its own deadline on the conn it gets (handleConn),
	// replacing this one.
	return &peekedConn{Conn: conn, r: br}, nil
}

// peekedConn is a conn whose first bytes were read ahead into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
