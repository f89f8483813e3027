package daemon

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/groupd/groupd/group"
)

// The --on-change hook, built on what package group offers embedders:
// Config.OnEvent hands it every event, in order, as the agent publishes
// it (hookWorthy picks the ones that run the hook), the runner asks
// Agent.Status whether a leader-start's leadership still holds, and
// Agent.NameOf for a coordinator's name.
//
// The command runs with /bin/sh -c and, on top of the daemon's
// environment:
//
//	GROUPD_EVENT        the event's reason (merge, invited, ready, confirmed, ...)
//	GROUPD_ID           this node's ID
//	GROUPD_STATE        normal, election or reorganization
//	GROUPD_ROLE         coordinator or participant
//	GROUPD_GROUP        the group number, seq.id
//	GROUPD_COORDINATOR  the group's coordinator ID
//	GROUPD_MEMBERS      the member IDs, comma-separated, sorted
//	GROUPD_OLD_GROUP    the group number before the change
//	GROUPD_OLD_ROLE     the role before the change
//	GROUPD_PRIMARY      1 if the group is the primary partition, else 0
//	GROUPD_NAME         this node's name; GROUPD_COORDINATOR_NAME the coordinator's
//	                    (from its memberlist meta: a run waits for it up to
//	                    BeaconInterval + AliveInterval, Agent.NameOf)
//	GROUPD_LEADER       1 while this node leads (Status.IsLeader: in quorum
//	                    mode, while it holds its lease), else 0
//	GROUPD_TERM         the leadership's term (leader-start, leader-term: the
//	                    new one; leader-stop: the one that ended), else empty
//	GROUPD_OLD_TERM     leader-term: the term that ended (the leadership goes
//	                    on under GROUPD_TERM), else empty
//	GROUPD_DEGRADED     1 while this node cannot save its state
//
// It fires on every change of group or role, when the node becomes Normal
// (so a hook sees the settled state after an Election or Reorganization),
// on "confirmed" (a coordinator confirmed again after a merge or a heal),
// and once for each leadership transition, with GROUPD_EVENT leader-start,
// leader-stop, or leader-term (a leader goes on under a new term; a
// leader's last hook before the daemon stops is its leader-stop; it gets
// up to a second to run).
//
// A leader-stop is bounded by the lease (docs/design.md §8): it runs next,
// ahead of queued changes; a leader-start of the leadership that ended is
// killed if it runs (its process group, SIGKILL) and dropped if queued, so
// what a leader-start did is undone by its leader-stop as soon as the
// lease ends, within the lease's safety margin before another node can
// lead. A leadership event never waits for the coordinator's name. Runs
// are serialised: one at a time, in order (but for a leader-stop), in the
// runner's own goroutine, so the event loop never waits for a hook. If
// events arrive
// faster than hooks finish, the queue is bounded (hookQueueMax): a new
// event that finds it full is merged into the last queued one, which keeps
// its old group and role and takes the new event's reason and state. The
// hook thus always sees the latest state, and never a stale one last.
//
// A run is time-limited: after Options.HookTimeout its whole process group (it runs
// in its own, Setpgid) is killed with SIGKILL, so a hook that started
// background children cannot outlive its budget. Failures (non-zero exit,
// timeout, cannot start) are logged with the exit status and the tail of
// stderr, and counted. Hooks still running when the agent stops are
// killed, and queued ones are dropped (Daemon.Stop); a stopping leader's
// leader-stop gets up to a second first, before memberlist announces the
// leave (Config.BeforeLeave).

// hookQueueMax bounds the events waiting for the hook.
const hookQueueMax = 4

// hookTailSize is how much of a hook's stderr (and stdout) is kept for the
// log.
const hookTailSize = 512

// hookWorthy reports whether e should run the hook: every leadership
// event (leader-start, leader-stop, leader-term: one per transition), and
// the changes of view listed above.
func hookWorthy(e group.Event) bool {
	if e.Old == nil {
		return false
	}
	if isLeaderEvent(e) {
		return true
	}
	o, n := e.Old, e.New
	return o.Group != n.Group || o.Role != n.Role || e.Reason == "confirmed" || o.Primary != n.Primary ||
		(n.State == group.StateNormal && o.State != group.StateNormal) || o.Degraded != n.Degraded
}

// isLeaderEvent reports whether e is a leadership transition, which the
// hook queue never merges away.
func isLeaderEvent(e group.Event) bool {
	return e.Reason == group.ReasonLeaderStart || e.Reason == group.ReasonLeaderStop || e.Reason == group.ReasonLeaderTerm
}

func boolEnv(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// hookEnv returns the GROUPD_* variables for e.
func hookEnv(e group.Event) []string {
	n := e.New
	ids := make([]string, len(n.Members))
	for i, id := range n.Members {
		ids[i] = strconv.FormatUint(uint64(id), 10)
	}
	oldGroup, oldRole := "", ""
	if e.Old != nil {
		oldGroup, oldRole = e.Old.Group.String(), e.Old.Role.String()
	}
	leader, term, oldTerm := n.IsLeader(), "", ""
	switch {
	case e.Reason == group.ReasonLeaderStart:
		leader, term = true, n.Term.String()
	case e.Reason == group.ReasonLeaderStop:
		leader = false
		if e.Old != nil {
			term = e.Old.Term.String() // the term that ended
		}
	case e.Reason == group.ReasonLeaderTerm:
		leader, term = true, n.Term.String()
		if e.Old != nil {
			oldTerm = e.Old.Term.String()
		}
	case leader:
		term = n.Term.String()
	}
	return []string{
		"GROUPD_EVENT=" + e.Reason,
		"GROUPD_ID=" + strconv.FormatUint(uint64(n.ID), 10),
		"GROUPD_NAME=" + n.Name,
		"GROUPD_STATE=" + n.State.String(),
		"GROUPD_ROLE=" + n.Role.String(),
		"GROUPD_GROUP=" + n.Group.String(),
		"GROUPD_COORDINATOR=" + strconv.FormatUint(uint64(n.Coordinator), 10),
		"GROUPD_COORDINATOR_NAME=" + n.CoordinatorName,
		"GROUPD_MEMBERS=" + strings.Join(ids, ","),
		"GROUPD_OLD_GROUP=" + oldGroup,
		"GROUPD_OLD_ROLE=" + oldRole,
		"GROUPD_PRIMARY=" + boolEnv(n.Primary),
		"GROUPD_LEADER=" + boolEnv(leader),
		"GROUPD_TERM=" + term,
		"GROUPD_OLD_TERM=" + oldTerm,
		"GROUPD_DEGRADED=" + boolEnv(n.Degraded),
	}
}

// hookRunner runs the hook for queued events, one at a time.
type hookRunner struct {
	cmd     string
	timeout time.Duration
	log     zerolog.Logger
	m       *hookMetrics
	// nameOf, if set, finds the coordinator's name of an event that has
	// none yet, waiting a little for it or until ctx is done
	// (Agent.NameOf).
	nameOf func(ctx context.Context, id group.NodeID) string

	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // cap 1: "the queue is not empty"
	done   chan struct{} // closed when the runner goroutine exits

	mu      sync.Mutex
	queue   []group.Event
	running bool // a hook runs now
	// current is the event whose hook runs now, and kill ends its run
	// (a leader-stop ends its leadership's running leader-start).
	current group.Event
	kill    context.CancelFunc

	// leads, if set, reports whether the node leads in term now: a
	// leader-start whose leadership already ended is skipped.
	leads func(term group.GroupNumber) bool
}

// newHookRunner starts a runner. Stop it with stop.
func newHookRunner(cmd string, timeout time.Duration, log zerolog.Logger, m *hookMetrics) *hookRunner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &hookRunner{
		cmd: cmd, timeout: timeout, log: log, m: m,
		ctx: ctx, cancel: cancel,
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	go r.run()
	return r
}

// enqueue queues e for the hook. It never blocks. A full queue merges a
// new event into the last queued one, unless either is a leadership
// transition: those run once each, whatever the queue holds.
func (r *hookRunner) enqueue(e group.Event) {
	r.mu.Lock()
	if e.Reason == group.ReasonLeaderStop {
		r.preempt(e)
		r.mu.Unlock()
		select {
		case r.wake <- struct{}{}:
		default:
		}
		return
	}
	if n := len(r.queue); n >= hookQueueMax && !isLeaderEvent(e) && !isLeaderEvent(r.queue[n-1]) {
		// Coalesce into the last queued event: keep its Old, take
		// the newest view.
		last := &r.queue[n-1]
		last.Time, last.Reason, last.New = e.Time, e.Reason, e.New
		r.m.hookDropped.Inc()
	} else {
		r.queue = append(r.queue, e)
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// preempt queues a leader-stop ahead of everything but another
// leadership event, drops the queued leader-start (and leader-term) of
// the leadership that ended, and kills its leader-start if it runs: a
// leader-start's side effects must be undone when the lease ends, not
// after the hooks queued before. Call with r.mu held.
func (r *hookRunner) preempt(stop group.Event) {
	var term group.GroupNumber
	if stop.Old != nil {
		term = stop.Old.Term
	}
	ended := func(e group.Event) bool {
		return (e.Reason == group.ReasonLeaderStart || e.Reason == group.ReasonLeaderTerm) && e.New.Term == term
	}
	if r.running && ended(r.current) && r.kill != nil {
		r.log.Warn().Str("term", term.String()).
			Msg("leader-start hook killed: the leadership ended (its lease ran out) while it ran; leader-stop runs next")
		r.kill()
	}
	q := r.queue[:0]
	at := 0 // after the leadership events still queued, in order
	for _, e := range r.queue {
		if ended(e) {
			continue
		}
		q = append(q, e)
		if isLeaderEvent(e) && at == len(q)-1 {
			at = len(q)
		}
	}
	q = append(q, group.Event{})
	copy(q[at+1:], q[at:])
	q[at] = stop
	r.queue = q
}

// drain waits until no hook is queued or running, or ctx is done: a
// stopping leader's leader-stop hook gets to run.
func (r *hookRunner) drain(ctx context.Context) {
	for ctx.Err() == nil {
		r.mu.Lock()
		idle := len(r.queue) == 0 && !r.running
		r.mu.Unlock()
		if idle {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// stop kills a running hook, drops queued events and waits for the runner
// to exit.
func (r *hookRunner) stop() {
	r.cancel()
	<-r.done
}

func (r *hookRunner) run() {
	defer close(r.done)
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.wake:
		}
		for {
			r.mu.Lock()
			if len(r.queue) == 0 || r.ctx.Err() != nil {
				r.mu.Unlock()
				break
			}
			e := r.queue[0]
			r.queue = r.queue[1:]
			r.running, r.current = true, e
			r.mu.Unlock()
			r.runOne(e)
			r.mu.Lock()
			r.running, r.current, r.kill = false, group.Event{}, nil
			r.mu.Unlock()
		}
	}
}

// runOne runs the hook once for e and logs the outcome.
func (r *hookRunner) runOne(e group.Event) {
	if e.Reason == group.ReasonLeaderStart && r.leads != nil && !r.leads(e.New.Term) {
		r.log.Info().Str("term", e.New.Term.String()).
			Msg("leader-start hook skipped: the leadership ended (its lease ran out) before the hook's turn; its leader-stop follows")
		return
	}
	if r.nameOf != nil && !isLeaderEvent(e) && e.New.CoordinatorName == "" && e.New.Coordinator != 0 {
		// The coordinator's name may arrive after the group settled. A
		// leadership event does not wait for it: a leader-stop is due
		// when the lease ends.
		e.New.CoordinatorName = r.nameOf(r.ctx, e.New.Coordinator)
	}
	tctx, cancel := context.WithTimeout(r.ctx, r.timeout)
	defer cancel()
	ctx, kill := context.WithCancel(tctx) // kill: a leader-stop ends this run (preempt)
	defer kill()
	r.mu.Lock()
	r.kill = kill
	r.mu.Unlock()
	c := exec.CommandContext(ctx, "/bin/sh", "-c", r.cmd)
	c.Env = append(os.Environ(), hookEnv(e)...)
	// Its own process group, so that the timeout kills whatever the
	// shell started too.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	// A background child that keeps stdout/stderr open must not hold
	// the runner after the shell exits.
	c.WaitDelay = time.Second
	var stdout, stderr tailBuffer
	c.Stdout, c.Stderr = &stdout, &stderr

	start := time.Now()
	r.m.hookRuns.Inc()
	err := c.Run()
	took := time.Since(start)
	ev := r.log.With().Str("event", e.Reason).Str("group", e.New.Group.String()).
		Str("role", e.New.Role.String()).Dur("took", took).Logger()
	if err == nil {
		ev.Debug().Str("stdout", stdout.String()).Msg("hook done")
		return
	}
	r.m.hookFailures.Inc()
	l := ev.Warn().Str("stderr", stderr.String())
	var exit *exec.ExitError
	switch {
	case r.ctx.Err() != nil:
		l.Msg("hook killed: agent stopping")
	case errors.Is(tctx.Err(), context.DeadlineExceeded):
		l.Dur("timeout", r.timeout).Msg("hook timed out; process group killed")
	case ctx.Err() != nil:
		l.Msg("hook killed: its leadership ended")
	case errors.As(err, &exit):
		l.Int("exit_status", exit.ExitCode()).Str("exit", exit.String()).Msg("hook failed")
	default:
		l.Err(err).Msg("hook failed")
	}
}

// tailBuffer keeps the last hookTailSize bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	cut bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > hookTailSize {
		t.b = append(t.b[:0], t.b[len(t.b)-hookTailSize:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if t.cut {
		s = "..." + s
	}
	return s
}
