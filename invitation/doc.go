// Package invitation implements Garcia-Molina's invitation algorithm as a
// deterministic state machine, with bully (package bully) as the fast path
// when a group's coordinator fails.
//
// A Node performs no I/O and reads no clock. The runtime feeds it messages
// (Step), the time (Tick), the failure detector's verdicts (PeerDown) and the
// outcome of saves (Persisted, PersistFailed), and carries out what Output
// returns: messages to send, a counter to persist, events to report. The
// daemon (package group) and the simulator (package sim) run the same code.
//
// # Group numbers
//
// A group is named by (Seq, ID), ID being its coordinator. Before creating a
// number a node picks Seq = max(persisted counter, highest Seq seen) + 1 and
// asks the runtime to persist it; no message carries the number until
// Persisted confirms the save. Numbers are therefore never created twice,
// even across crashes, and newer groups have larger numbers.
//
// # States
//
//	state           coordinator (Group.ID == self)         participant
//	Election        saving a new number; accept window      bully running among the
//	                open after Invitations went out         survivors of a failed
//	                                                        coordinator
//	Reorganization  accept window closed; Ready being       accepted an Invitation;
//	                delivered and acknowledged              waiting for Ready
//	Normal          Check every CheckInterval; answers      AreYouThere every
//	                AreYouThere; drops silent members       AliveInterval
//
// # Messages
//
//	message            sent by → to                          receiver's rule
//	Beacon             everyone → multicast, each            remember the sender while it
//	                   BeaconInterval                        says it coordinates; a
//	                                                         coordinator hearing a lower
//	                                                         coordinator of another group
//	                                                         Checks now
//	AreYouCoordinator  coordinator → peers that last said    reply Yes iff Normal and
//	                   they coordinate another group         coordinator; a lower sender
//	                                                         prompts an early Check
//	Yes / No           replies                               Yes(AYC): lower → merge now,
//	                                                         or after MergeDelay per higher
//	                                                         coordinator seen; No(AYT):
//	                                                         coordinator lost me → bully
//	AreYouThere(g)     participant → its coordinator         Yes iff g is mine, I coordinate
//	                                                         it and you are a member
//	Invitation(g)      merging coordinator → lower           accept if Normal and the
//	                   coordinators and its own members;     inviter outranks me (as
//	                   an invited coordinator forwards it    coordinator), is my coordinator
//	                   to its members                        or outranks it (participant),
//	                                                         or outranks me (in bully);
//	                                                         otherwise ignore
//	Accept(g)          invitee → g's coordinator             add to Up (late ones too)
//	Ready(g, v, list)  coordinator → members, retransmitted  Reorganization → Normal; ack
//	ReadyAck(g, v)     member → coordinator                  stop retransmitting to it
//	Election / Answer  bully among a failed coordinator's    see package bully
//	                   survivors
//
// A coordinator invites only coordinators of lower rank; a higher-ranked one
// will invite it. A participant whose coordinator stops answering runs bully
// with the other members; a member that still hears the coordinator answers
// and probes it at once instead of joining a needless election. The winner
// invites the old members into a new group. When bully fails twice the node
// runs Recovery (a singleton group) and merging takes over.
//
// The failure detector usually tells every survivor at once, and bully among
// n survivors that all start then costs close to its n² worst case. So only
// the highest survivor starts at once (it wins without a message); each of
// the others sends it one Election, so that it probes the coordinator now if
// it has not noticed yet, then holds back for one AnswerTimeout, answering
// any Election meanwhile, and joins its invitation. They run bully only if
// none came, which costs one AnswerTimeout more when the highest survivor
// died too.
//
// Config.Election selects the algorithm the survivors run: ElectionBully
// (the default) or ElectionRing (package ring, Chang-Roberts). Both are
// embedded the same way: the winner invites instead of announcing, a member
// that still hears the coordinator stops the election and probes, and two
// failed rounds lead to Recovery.
//
// Timing.FailoverBound and Timing.HealBound give T_failover and T_heal, the
// bounds of invariants L2 and L1 in DESIGN.md §4.
//
// # Cost
//
// A node keeps its member list and the nodes that last said they
// coordinate a group, not every node it heard: in a settled LAN that is one
// or two entries, so memory and the periodic sweep do not grow with the LAN.
// Status and Event share the member list with the machine, which replaces
// it rather than editing it, so reporting a view is O(1) in the group size.
// A group holds at most MaxGroupSize members.
package invitation
