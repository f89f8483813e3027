// Package group is groupd's runtime and its embedding API: it runs the
// invitation algorithm (package invitation) on a real network.
//
//	a, err := group.New(cfg)            // validate, lock the data dir, bind sockets
//	go func() { done <- a.Run(ctx) }()  // until ctx is done; Leave on the way out
//	a.Status()                          // this node's view: state, role, group, members
//	a.WatchLeader()                     // a channel of this node's leadership
//	a.Subscribe()                       // a channel of view changes
//	a.Handler()                         // the HTTP API, to mount elsewhere
//	err = <-done                        // why Run stopped: nil once ctx was done
//
// Run's error is the only sign that an agent stopped by itself (another
// process with its ID, say): the channels of WatchLeader and Subscribe are
// then closed. DefaultLANConfig makes the agent a node of the LAN's groupd,
// on its ports and multicast group; Multicast "off" and Join keep it to
// the nodes it is given. The program examples/embed in the repository
// does all of this, with two agents on loopback and a failover.
//
// # Architecture
//
// One goroutine, the event loop, owns the invitation.Node. Its inputs
// arrive on bounded channels: wire packets (already size-checked, unsealed
// with the shared key if there is one, decoded and replay-checked by the
// socket readers), multicast beacons, memberlist's "node dead or left",
// and a timer set to the node's next deadline (at TickInterval
// resolution). Its outputs are done by the loop or handed to goroutines
// that cannot block it:
//
//   - sends: encoded (package wire), sealed, and sent to the address the
//     address book has for the destination (the source of its last
//     authenticated packet, else its memberlist meta); a Broadcast is one
//     multicast datagram plus a unicast copy to memberlist members not
//     heard over multicast;
//   - counter saves: a new group number leaves the node only after the
//     store's Save returned nil (an fsync, done on the loop);
//   - events: to the log (one line per change with the old and new group
//     numbers), the metrics, subscribers (buffered, dropping when slow),
//     Config.OnEvent (synchronous, in order: groupd's --on-change hook
//     queues the event for its own goroutine) and memberlist's meta (its
//     own goroutine).
//
// # Discovery and membership
//
// Memberlist keeps the membership list and is a second failure detector,
// tuned to the protocol's timing (see DefaultLANConfig). Nodes find each
// other by multicast beacons (Config.Multicast, on the interfaces
// Config.Interface selects) or by --join seeds (Config.Join). A beacon from a node memberlist does not
// list as alive makes this node join it, so the two sides of a partition
// re-merge however long it lasted; without multicast, a reconnect loop
// retries the seeds and failed members.
//
// # Identity and durability
//
// The node ID comes from Config.ID, else the data dir's state file, else
// is generated and saved. Every start bumps and saves the incarnation
// before anything is sent, and the group-number counter read back makes
// every new group number larger than any this node created before, across
// crashes (design §1, invariant S1).
//
// # Local API
//
// Agent.Handler serves the routes GET /v1/status (a Status), /v1/members
// (the Members), /v1/events (newline-delimited Events, the first a
// snapshot), /v1/leader, POST /v1/exec (groupd exec's guard), /metrics
// and /healthz; Config.API listens on them, and Config.WrapAPI adds
// routes beside them (groupd's live view at /ui/). Status, Member and
// Event marshal to exactly the JSON shapes the CLI (cmd/groupd) and
// package client read.
package group
