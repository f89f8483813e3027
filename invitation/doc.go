// Package invitation implements Garcia-Molina's invitation algorithm as a
// deterministic state machine, with bully (package bully) or the ring
// (package ring) as the fast path when a group's coordinator fails.
//
// A Node performs no I/O and reads no clock. Every input takes one path,
// Step(now, input): a message from the network (Receive), the time (Tick),
// the failure detector's verdict (PeerDown) and the outcome of a save
// (Saved, SaveFailed). The runtime carries out what Output returns:
// messages to send, state to save, events, created numbers and notices.
// Package driver is the one runtime loop around a Node; the daemon (package
// group), the simulator (package sim) and the tests use it.
//
// The node's timers are one table (timers.go): each names when it is due,
// read from the node's state, and what it does then. A Tick runs the ones
// due; NextDeadline, when the runtime should tick next, is the earliest of
// the same entries, and NextTimer names it.
//
// # Group numbers
//
// A group is named by (Seq, ID), ID being its coordinator. Before creating
// a number a node picks Seq = max(saved counter, saved last group, highest
// Seq seen, wall clock in ms) + 1 and asks the runtime to save it; no
// message carries the number until Saved confirms the save. Numbers are
// therefore never created twice, even across crashes, and newer groups
// have larger numbers. The wall-clock floor makes a node whose state file
// was wiped or restored from an older copy create numbers above its old
// ones on a sane clock; beacons carry every node's high-water mark, and a
// peer reporting one of this node's numbers above its counter raises it
// (NoticeStateBehind). The group the node moves to is saved too
// (Durable.LastGroup), so its numbers stay above every group it was in.
//
// # States
//
//	state           coordinator (Group.ID == self)         participant
//	Election        saving a new number; accept window      bully running among the
//	                open after Invitations went out         survivors of a failed
//	                                                        coordinator; or no group
//	                                                        (Group zero): listening
//	                                                        for a boot window
//	Reorganization  accept window closed; Ready being       accepted an Invitation;
//	                delivered and acknowledged              waiting for Ready
//	Normal          heartbeat (a numbered beacon) every     a BeatAck when a heartbeat
//	                AliveInterval, asking for BeatAcks      asks (its sign of life, and
//	                every AckInterval; Check every          in quorum mode its grant);
//	                CheckInterval; asks and drops           AreYouThere only when a
//	                members whose BeatAcks stop, and        heartbeat is late
//	                those the failure detector reports
//
// # Messages
//
//	message            sent by → to                          receiver's rule
//	Beacon             coordinator: every AliveInterval      a coordinator's is its group's
//	                   (its heartbeat); a node without a     heartbeat; remember coordinators;
//	                   group: every AnswerTimeout; idle      a coordinator hearing a lower one
//	                   participant: never                    Checks now; a node without a
//	                                                         group is answered with a beacon,
//	                                                         and invited by a coordinator
//	                                                         that outranks it
//	AreYouCoordinator  coordinator → peers that last said    reply Yes iff Normal and
//	                   they coordinate another group         coordinator
//	Yes / No           replies                               Yes(AYC): lower → merge now,
//	                                                         or after MergeDelay per higher
//	                                                         coordinator seen; No(AYT): my
//	                                                         coordinator dropped me, or has
//	                                                         no group (it restarted): go
//	                                                         without one and wait to be
//	                                                         invited; it moved on into
//	                                                         another group: elect
//	AreYouThere(g)     participant → its coordinator, when   Yes iff g is mine, I coordinate
//	                   a heartbeat is late                   it and you are a member; g an
//	                                                         older group of mine: invite you
//	                                                         into my current one; else No
//	Invitation(g, t)   merging coordinator → lower           accept if Normal and the inviter
//	                   coordinators, its own members and     outranks me (coordinator), is my
//	                   nodes without a group; an invited     coordinator or outranks it
//	                   coordinator forwards it               (participant), outranks me (in
//	                                                         bully, without a group), or I am
//	                                                         degraded; otherwise ignore
//	Accept(g)          invitee → g's coordinator             add to Up (late ones too)
//	Ready(g, v, t, l)  coordinator → members, retransmitted  Reorganization → Normal; adopt
//	                   until acked; and to a member whose    the coordinator's timing; ack
//	                   BeatAcks stopped
//	ReadyAck(g, v)     member → coordinator                  stop retransmitting to it
//	BeatAck(g, b, t)   member → coordinator, to a heartbeat  a sign of life; with grant, the
//	                   that asks                             lease (lease.go); t: term floor
//	Decline(g, held)   invitee → inviter: g is below a       renumber above held, invite
//	                   number it held                        again (group numbers only grow)
//	Election / Answer  bully among a failed coordinator's    see package bully
//	                   survivors
//
// A coordinator invites only coordinators of lower rank; a higher-ranked
// one will invite it. A participant whose coordinator stops beating runs
// the group's election with the other members; a member that still hears
// the coordinator answers and probes it at once instead of joining a
// needless election. The winner invites the old members into a new group.
// When the election fails twice the node goes without a group.
//
// The failure detector usually tells every survivor at once, and bully
// among n survivors that all start then costs close to its n² worst case.
// So only the highest survivor starts at once (it wins without a message);
// each of the others sends it one Election, so that it probes the
// coordinator now if it has not noticed yet, then holds back for one
// AnswerTimeout, answering any Election meanwhile, and joins its
// invitation. They run bully only if none came, which costs one
// AnswerTimeout more when the highest survivor died too.
//
// # A node without a group
//
// A node that starts, or loses its group, listens for a boot window (two
// AnswerTimeouts) before it creates a number: a coordinator that outranks
// it invites it into its running group (no new number, and the coordinator
// stays Normal), and every coordinator answers its beacon with its own, to
// that node alone. At the end of the window the highest-ranked node heard without a
// group creates one number and invites the others, so N nodes started
// together form one group with one number. Invitations received during
// the window are held until it ends, so a node that must give way to
// another process with its ID has joined nothing.
//
// # Operator faults
//
// A message with this node's ID and another boot is a second process: the
// one still in its boot window, or else the one with the lower boot nonce,
// gives way (NoticeDuplicateID, Stopped). A failed save makes the node
// degraded: it ranks below every healthy node (wire.FlagDegraded in every
// header), creates no number, joins any inviter and takes no part in
// elections; a participant that outranks its coordinator (whose disk is
// full, or this node's came back) takes over. Every node applies the
// timing a peer announced to that peer's phases, a group runs its
// coordinator's timing and election, and a mismatch is reported once per
// peer and value (NoticeTimingMismatch).
//
// # Leadership
//
// Status.Leader is set from when the node first coordinates a Normal group
// until it stops coordinating; Term is a group number of its own: the one
// at which that began, or a later one when it must go above a term its
// members saw. Merges the leader leads and members coming and going leave
// it leader. In quorum mode (Config.Quorum) a leader is Primary only while
// a majority holds its lease, until LeaseUntil; lease.go has the rules, and
// why two leaders are never primary at once and terms only grow.
//
// Timing.FailoverBound and Timing.HealBound give T_failover and T_heal, the
// bounds of invariants L2 and L1 in design §4 (docs/design.md).
//
// # Cost
//
// A node keeps its member list and the nodes that last said they coordinate
// a group (or were heard without one), not every node it heard: in a
// settled LAN that is one or two entries, so memory and the periodic sweep
// do not grow with the LAN. Status and Event share the member list with the
// machine, which replaces it rather than editing it, so reporting a view is
// O(1) in the group size. A group holds at most MaxGroupSize members.
package invitation
