package group_test

import (
	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/group/memnet"
	"github.com/groupd/groupd/group/udp"
)

// Both transports of the repository are group Transports, checked where an
// embedder would use them: the daemon's UDP sockets and the in-memory
// network's wire endpoint (memnet's gossip side is a memberlist.Transport,
// for Config.GossipTransport).
var (
	_ group.Transport = (*udp.Transport)(nil)
	_ group.Transport = (*memnet.Wire)(nil)
)
