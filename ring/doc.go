// Package ring implements Chang and Roberts' ring election among the
// survivors of one group, as a pure state machine, with per-hop
// acknowledgements so that a dead successor is skipped.
//
// A Machine knows the candidate set (the members of the group whose
// coordinator failed, each with its rank). The candidates form a logical ring
// in rank order: a node's successor is the next higher-ranked candidate, and
// the highest wraps around to the lowest. The machine elects the
// highest-ranked candidate that is alive. It performs no I/O: it is driven
// by Start, Step (a RingElection, RingElected or RingAck message) and Tick
// (the time), and it leaves the messages it wants sent in an outbox that the
// caller drains with Outbox. Its API has the shape of package bully's, so
// that package invitation can run either one inside a group.
//
//	phase     entered when                          leaves on
//	Idle      New                                   Start, or any
//	                                                RingElection/RingElected
//	Electing  Start: own RingElection sent to the   own RingElection back → Won;
//	          successor; or a message of a new      RingElected → Lost;
//	          round arrived                         ElectionTimeout → a new
//	                                                round, or Failed after
//	                                                MaxRounds own rounds
//	Won       my own RingElection came back round   a message of a later round
//	          (or every successor was skipped)      (→ Electing)
//	Lost      a RingElected named the winner        a message of a later round
//	          (only with Announce)                  (→ Electing)
//	Failed    MaxRounds own rounds ended without    (final)
//	          a result
//
//	message       sent by → to                  receiver's rule
//	RingElection  any node → its successor      ack it; then, by the candidate c:
//	(round, c)                                  c = me: I won (send RingElected
//	                                            if Announce); c ≤ the highest I
//	                                            sent on this round: drop it
//	                                            (suppression); c > me: send c
//	                                            on; c < me: send myself on
//	                                            instead (replacement)
//	RingElected   winner → successor, then      ack it; record the leader and
//	(round, l)    each node → its successor     send it on, unless l = me
//	              (only with Announce)          (it went round), l is already
//	                                            my leader, or l ranks below a
//	                                            candidate I sent on
//	RingAck       receiver → sender of each     the hop arrived: stop waiting
//	              RingElection or RingElected   for it
//
// Each RingElection and RingElected waits HopTimeout for its RingAck. With
// none, the sender marks the successor dead for this election ("skipped"),
// and sends that message and any other waiting for the same successor to the
// next one. A node whose successors are all skipped is the only survivor and
// wins. Any message from a skipped node revives it. Suppression means that
// when several nodes start at once, only the highest candidate's election
// goes round, so all agree on one leader.
//
// Rounds. If a candidate dies after sending its RingElection, its message
// circulates to its predecessor, which skips it, and then stops at the next
// node, which has already sent it on: nobody wins. A node that sees no
// result within ElectionTimeout of joining a round starts a new round with
// its own candidacy; a message of a later round makes every node forget what
// it sent on in earlier ones, and messages of earlier rounds are acknowledged
// and dropped. The dead candidate's predecessor already skips it, so the new
// round elects the highest survivor. ElectionTimeout must therefore exceed a
// whole election: (3n−1)·Ttrans, plus HopTimeout for each dead successor.
//
// Cost. With n live candidates, a reliable network and no concurrent
// starters, the election takes 3n−k RingElection and RingElected messages
// (and as many RingAcks) when the k-th lowest candidate starts it: n−k hops,
// each replacing the candidate by a higher one, until the highest candidate
// holds it, n for the highest's own candidacy to circulate, and n for
// RingElected to circulate back to the winner. That is the lecture notes' 2n
// best case (k = n, the would-be leader starts) and 3n−1 worst case (k = 1,
// the lowest candidate, the would-be leader's ring successor). Time is the
// same number of message delays: hops are sequential and acks are off the
// critical path. A node dead from the start adds one message, the one to it
// that timed out, and one HopTimeout. Without Announce (inside groupd) the
// n RingElected are not sent: 2n−k messages.
//
// Compared with bully, which sends n−1 messages at best and O(n²) at worst
// but decides within one AnswerTimeout plus a few message delays whatever n,
// the ring always costs O(n) messages (at most 3n−1, plus one RingAck per
// hop), but its hops are sequential: it takes O(n) message delays, plus one
// HopTimeout per dead node it skips.
//
// Inside groupd (package invitation) the winner does not send RingElected:
// it creates a new group number and invites the old members, and the
// Invitation serves as the ring's "elected" message. Standalone, with
// Announce set, the machine is the textbook algorithm, and its message counts
// match the lecture notes' formulas (see the tests).
package ring
