package schema

import "time"

// ExecGuardRequest is the body of POST /v1/exec: `groupd exec` asks its
// daemon to guard the command it is about to start in term Term. The
// daemon refuses unless it leads in that term at that moment (409); 429
// when it keeps too many guards, 501 when it cannot make a cgroup here
// (exec then runs the command without a guard, and says so), 503 while it
// stops, 400 for a body it cannot read.
type ExecGuardRequest struct {
	// Term is the leadership's term as GET /v1/leader gave it (SEQ.ID).
	Term string `json:"term"`
	// GraceMS is exec's --grace (1..60000) and PollMS its --poll
	// (0..60000), in milliseconds: without a lease (no --expect), the
	// daemon kills the guard's group PollMS + GraceMS + 50 ms after the
	// leadership ends, so that a live exec stops its command first,
	// gracefully.
	GraceMS int64 `json:"grace_ms"`
	PollMS  int64 `json:"poll_ms"`
}

// ExecGuard is one line of POST /v1/exec's answer, a stream of
// newline-delimited JSON that stays open until exec closes it. The first
// line names the guard's cgroup (Cgroup), into which exec starts its
// command; the daemon kills every process in it when exec's connection
// closes while any is left (exec died), when the leadership of Term ends
// (with --expect 20 ms before the end of its lease), or when the daemon
// stops. The last line, when the daemon ends the guard, says why (End)
// and whether it killed the group (Killed); from then on the daemon kills
// whatever starts in the group until exec closes the stream.
type ExecGuard struct {
	ID   uint64 `json:"id"`
	Term string `json:"term"`
	// Cgroup is the guard's cgroup v2 directory, as the daemon's mount
	// namespace shows it (first line only).
	Cgroup string `json:"cgroup,omitempty"`
	// End is why the daemon ended the guard ("" until then).
	End    string    `json:"end,omitempty"`
	Killed bool      `json:"killed,omitempty"`
	Time   time.Time `json:"time"`
}
