// Package schema defines the records that leave a groupd daemon: what its
// API answers (Status, Member, LeaderAnswer; ExecGuardRequest and
// ExecGuard for `groupd exec`'s guard), what its event stream prints
// (Event), and what the network lab writes beside those events (Mark),
// each with its JSON form. It is the one definition of those shapes: the
// daemon (package group) writes them, and every reader (client, timeline,
// internal/history, the lab and the benchmarks) reads them from here.
//
// It depends on the standard library and wire only, so that a program that
// reads a status or a recorded history does not link the daemon's runtime
// (memberlist, Prometheus, zerolog); a test keeps it so. Conversions into
// the algorithm's own types (invitation.Status, for the invariant checker)
// live with their users, in internal/history.
//
// The JSON is a contract: daemons of other versions and recorded histories
// (scripts/bench/results) are read with it, so fields are only added, and
// a field a sender leaves out decodes as its zero value.
package schema
