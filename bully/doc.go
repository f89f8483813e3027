// Package bully implements Garcia-Molina's bully election among the
// survivors of one group, as a pure state machine.
//
// A Machine knows the candidate set (the members of the group whose
// coordinator failed, each with its rank) and elects the highest-ranked
// candidate that is alive. It performs no I/O: it is driven by Start, Step
// (an Election, Answer or Coordinator message) and Tick (the time), and it
// leaves the messages it wants sent in an outbox that the caller drains with
// Outbox.
//
//	phase     entered when                         leaves on
//	Idle      New                                  Start
//	Waiting   Start: Election sent to every        Answer → Yielded;
//	          higher-ranked candidate              AnswerTimeout → Won
//	Yielded   an Answer arrived: a higher-ranked   Coordinator → Lost;
//	          candidate is alive and runs its own  ElectionTimeout → Start
//	          election                             again, or Failed after
//	                                               MaxRounds rounds
//	Won       no higher-ranked candidate answered  (final)
//	Lost      a Coordinator message arrived        (final)
//	Failed    MaxRounds rounds ended in Yielded    (final)
//
//	message      sent by → to                        receiver's rule
//	Election     candidate → higher candidates       reply Answer; start an
//	                                                 election (if AutoStart)
//	Answer       higher candidate → lower one        Waiting → Yielded
//	Coordinator  winner → lower candidates           record the leader
//	             (only with Announce)
//
// With Probe, the first round asks only the node's successor (the
// lowest-ranked candidate above it) and widens to every higher candidate
// when the successor is silent for AnswerTimeout: when all survivors start
// together, each sends one Election and one Answer, and only the highest
// reachable survivor asks everyone above it. groupd sets it; the textbook
// algorithm does not have it.
//
// Inside groupd (package invitation) the winner does not send Coordinator:
// it creates a new group number and invites the old members, and the
// Invitation serves as the bully "coordinator" message. Standalone, with
// Announce and AutoStart set, the machine is the textbook algorithm, so its
// message counts can be compared with the n(n-1) worst case and n-1 best
// case of the lecture notes.
package bully
