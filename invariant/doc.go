// Package invariant checks the safety and liveness properties of
// docs/design.md §4
// on a history of node views: the simulator feeds it after every event, and
// end-to-end tests can feed it the recorded history of a real run.
//
// A history is a stream of records, in time order:
//
//	Observe(Observation)   a node's view (invitation.Status) changed, or it died
//	Created(Creation)      a node adopted a group number it created itself
//	Persisted(t, id, c)    a node's counter c became durable (optional)
//	Sent(t, msg)           a node sent msg (optional)
//	Crash(t, id)           a node stopped and lost its memory
//	Restart(t, id)         a crashed node started again
//	Lead(t, id, term, end) a node is a primary leader (quorum mode) whose
//	                       lease runs until end
//	Unlead(t, id)          it no longer is (its lease still counts)
//	StateLost(id)          its state file was lost or restored from an
//	                       older copy
//	HeldFloor(id, g)       it restarts from a state file whose group is g
//
// The Checker keeps the latest view of every live node and checks, on every
// record:
//
//	S1  no group number is created twice, across crashes, restarts and
//	    lost or restored state, and each node's numbers only grow; and,
//	    when Persisted and Sent records are given, a node creates and sends
//	    a number of its own only once its sequence is durable
//	S2  at any instant at most one live node is Normal and coordinator of a
//	    given group number
//	S3  live nodes in Reorganization or Normal with the same group number
//	    have the same coordinator. A group number names its coordinator
//	    (Group.ID), so this holds by construction; what is checked is that
//	    every Normal view's member list contains the node itself and the
//	    coordinator, and that a node calling itself coordinator has the ID
//	    in the number
//	S4  live Normal nodes with the same group number and the same member
//	    list version have identical member lists (versions count per group)
//	LT1 no two nodes ever hold one leadership term, a term is a number of
//	    its holder's, and a node's terms grow
//	LT2 a leader stays leader while it coordinates: merges it leads,
//	    members coming and going and its group being renumbered leave it
//	    leader
//	S5  the distinct group numbers a node holds (Reorganization or Normal)
//	    strictly grow, across invitations, merges, failovers, recoveries
//	    and restarts
//	LP1 no two nodes are primary leaders at the same real instant (a
//	    lease counts until its end, even past its holder's crash), and
//	    each new primary leadership's term is above every earlier one's
//
// and, when asked at a check point:
//
//	L1  CheckConverged: after the network was connected and quiet for
//	    T_heal, every live node is Normal in one group, coordinated by the
//	    highest-ranked live node (rank = (priority, ID), a node that cannot
//	    persist below every node that can), at one version,
//	    and the member list is exactly the set of live nodes
//	L2  CheckFailover: T_failover after the coordinator of a connected,
//	    quiet group crashed, its survivors are Normal in one group whose
//	    member list contains them all
//
// The package depends only on wire and invitation (for the Status type), so
// it can check histories that did not come from the simulator.
package invariant
