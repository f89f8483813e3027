package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/internal/cgroup"
	"github.com/groupd/groupd/schema"
)

// exitNotLeader is exec's exit code when it stopped its command because
// the leadership ended (the one `status` uses outside the primary
// partition).
const exitNotLeader = exitNotPrimary

// killMargin is how long before the lease's end exec sends SIGKILL to a
// command that did not exit on SIGTERM: a killed process is gone within
// it. The daemon's guard kills CMD's cgroup as long before the end
// (group's guardKillMargin).
const killMargin = 20 * time.Millisecond

func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Category:  catQuery,
		Usage:     "run a command only while this node leads (with --expect: holds its lease)",
		ArgsUsage: "-- CMD [ARG...]",
		Description: "exec waits until the local daemon answers GET /v1/leader with 200, then runs CMD with\n" +
			"GROUPD_TERM (the leadership's term: fence writes with it), GROUPD_GROUP, GROUPD_ID and\n" +
			"GROUPD_NAME set, and asks the daemon again every --poll. When the leadership ends, or in\n" +
			"quorum mode (--expect) when the lease would run out within --grace (the daemon is frozen,\n" +
			"killed or cut off), exec sends SIGTERM to CMD and everything it started, and SIGKILL if it\n" +
			"is still running " + killMargin.String() + " before the lease's end, so that CMD is gone before another node\n" +
			"can become the leader. exec measures the lease on its own clock from the moment it asked,\n" +
			"which is never later than the daemon's, and acts on the daemon's latest answer. Without\n" +
			"--expect there is no lease: CMD is stopped when the daemon says it no longer leads, or stops\n" +
			"answering for --grace, and two leaders may overlap during a partition. When CMD exits, what\n" +
			"it left running is killed.\n\n" +
			"What holds when exec itself is killed, stopped or starved: exec registers a guard with the\n" +
			"daemon (POST /v1/exec), which makes a cgroup v2 group for it (under the daemon's own), and\n" +
			"starts CMD inside (clone3 CLONE_INTO_CGROUP), where CMD and every descendant stay, setsid or\n" +
			"not. The daemon kills the whole group at once when exec's connection closes while any of it\n" +
			"runs (exec died: CMD and all its descendants are gone within milliseconds), when the\n" +
			"leadership ends or goes on under a new term (with --expect " + killMargin.String() + " before the end of the lease,\n" +
			"even if exec is stopped; without, --poll + --grace + 50ms after the leader-stop), and when the\n" +
			"daemon stops. Besides, CMD gets SIGKILL as its parent-death signal, and exec is a child\n" +
			"subreaper: a descendant whose parent dies stays under exec, which stops it with CMD.\n\n" +
			"The guard needs Linux, cgroup v2 (mounted anywhere: found from /proc/self/mountinfo), a daemon\n" +
			"allowed to create groups under its own (root, or systemd's Delegate=yes), an exec allowed to\n" +
			"move CMD there (root), exec in the daemon's mount namespace (not under ip netns exec), and\n" +
			"Linux 5.14 for cgroup.kill (5.2 to 5.13 freeze the group and kill each member; 5.2 to 5.6 move\n" +
			"CMD in just after its start). Where it cannot be had, exec says so in one line, with the\n" +
			"reason, and runs CMD without it: then a descendant that calls setsid survives exec's death,\n" +
			"and a stopped exec leaves CMD running past the leadership; CMD itself still dies with exec,\n" +
			"and a live exec stops its process group and its other descendants. Off Linux there is no\n" +
			"guard and no subreaper, and a parent-death signal only on FreeBSD; exec says so at its start.\n\n" +
			"Exit status: CMD's own when it exits by itself; 3 when exec stopped it because the leadership\n" +
			"ended, or the daemon's guard killed it (with --repeat exec waits for the next leadership\n" +
			"instead); 0 when exec itself was asked to stop (SIGINT, SIGTERM) before or while CMD ran; 1\n" +
			"when CMD cannot be started; 2 for a usage error.\n\n" +
			"--grace must fit in the lease's dips: members renew it every 5/8 of --lease, so on the lan\n" +
			"profile (lease 1.2s) it runs at least ~0.4s ahead; keep --grace well below that (default\n" +
			"200ms). On the fast profile use --grace 40ms --poll 10ms.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "api", Usage: "address of the daemon's local API: `HOST:PORT` or unix:/path",
				Value: group.DefaultAPI, EnvVars: []string{"GROUPD_API"}},
			&cli.DurationFlag{Name: "grace", Value: 200 * time.Millisecond,
				Usage: "`DURATION` between SIGTERM and SIGKILL; in quorum mode CMD gets SIGTERM this long before the lease would run out"},
			&cli.DurationFlag{Name: "poll", Value: 50 * time.Millisecond,
				Usage: "how often to ask the daemon whether this node still leads (`DURATION`)"},
			&cli.BoolFlag{Name: "repeat",
				Usage: "when a leadership ends, wait for the next one and run CMD again (exit only on SIGINT or SIGTERM)"},
		},
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) == 0 {
				return badConfig("exec needs a command: groupd exec [flags] -- CMD [ARG...]")
			}
			grace, poll := c.Duration("grace"), c.Duration("poll")
			if grace <= 0 || poll <= 0 {
				return badConfig("--grace and --poll must be > 0, got %v and %v", grace, poll)
			}
			if poll >= grace {
				return badConfig("--poll (%v) must be shorter than --grace (%v): a lease is read every poll", poll, grace)
			}
			api, err := newClient(c)
			if err != nil {
				return err
			}
			defer api.Close()
			r := &execRun{api: api, args: args, grace: grace, poll: poll, log: c.App.ErrWriter}
			r.preflight()
			for {
				err := r.run(c.Context)
				var ec cli.ExitCoder
				if !c.Bool("repeat") || c.Context.Err() != nil || !errors.As(err, &ec) || ec.ExitCode() != exitNotLeader {
					return err
				}
				r.logf("%s", strings.TrimPrefix(err.Error(), "groupd: "))
			}
		},
	}
}

// execRun is one `groupd exec`.
type execRun struct {
	api         *client.Client
	args        []string
	grace, poll time.Duration
	log         io.Writer
	// warned holds what exec said it cannot guarantee here (once each).
	warned map[string]bool
	// noGuard is why exec runs CMD without the daemon's guard, once it
	// knows ("" while it may have one).
	noGuard string
	// waiting is why exec last said it waits to start CMD (said once
	// until CMD starts).
	waiting string
}

// child is one run of CMD: its process and what holds it.
type child struct {
	cmd *exec.Cmd
	// cg is the guard's cgroup CMD runs in, nil without one.
	cg *cgroup.Group
	// guard is the daemon's guard over cg, nil without one; guardEnd
	// gets its last line (or the error that broke it) once.
	guard    *client.Guard
	guardEnd chan guardEnd
}

// guardEnd is how a guard ended: the daemon's last line, or what broke
// the stream.
type guardEnd struct {
	line schema.ExecGuard
	err  error
}

func (r *execRun) logf(format string, args ...any) {
	fmt.Fprintf(r.log, "groupd exec: "+format+"\n", args...)
}

// ask asks the daemon once, and returns its answer with the deadline the
// answer's lease gives on this process's clock (zero: no lease), measured
// from before the request left.
func (r *execRun) ask(ctx context.Context) (group.LeaderAnswer, time.Time, error) {
	sent := time.Now()
	ans, err := r.api.Leader(ctx)
	if err != nil || !ans.Leader || ans.LeaseRemainingMS == nil {
		return ans, time.Time{}, err
	}
	return ans, sent.Add(time.Duration(*ans.LeaseRemainingMS) * time.Millisecond), nil
}

func (r *execRun) run(ctx context.Context) error {
	var (
		ans      group.LeaderAnswer
		deadline time.Time
		ch       *child
	)
	for ch == nil {
		var err error
		ans, deadline, err = r.waitLeader(ctx)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil // asked to stop before leading
		}
		if ch, err = r.start(ctx, ans, deadline); err != nil {
			return err
		}
		if ch == nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(r.poll):
			}
		}
	}
	term := ans.Term
	started := time.Now()
	where := ""
	if ch.cg != nil {
		where = " in cgroup " + ch.cg.Path()
	}
	r.logf("leader (term %s): started %s (pid %d)%s", term, r.args[0], ch.cmd.Process.Pid, where)
	exited := make(chan error, 1)
	go func() { exited <- ch.cmd.Wait() }()
	stopReaper := make(chan struct{})
	go reaper(ch.cmd.Process.Pid, stopReaper)
	defer func() {
		close(stopReaper)
		r.finish(ch)
	}()

	// The daemon is asked from its own goroutine: a request to a frozen
	// daemon hangs, and the lease's deadline must fire all the same.
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	answers := make(chan execAnswer)
	go r.pollLoop(pollCtx, answers)

	// In quorum mode, CMD is stopped grace before the lease could end.
	stopAt := time.NewTimer(time.Hour)
	stopAt.Stop()
	arm := func() {
		if deadline.IsZero() {
			stopAt.Stop()
		} else {
			stopAt.Reset(time.Until(deadline.Add(-r.grace)))
		}
	}
	arm()
	defer stopAt.Stop()
	lastOK := started
	for {
		select {
		case err := <-exited:
			if killed, ok := r.killedByGuard(ch, err); ok {
				return cli.Exit(fmt.Sprintf("leadership (term %s) ended: the daemon killed %s: %s", term, r.args[0], killed), exitNotLeader)
			}
			return r.exited(err, started)
		case <-ctx.Done():
			r.stop(ch, exited, "exec was asked to stop", deadline)
			return nil
		case <-stopAt.C:
			return r.lost(ch, exited, term, fmt.Sprintf("the lease would run out within %v and was not renewed (is the daemon frozen, killed or cut off?)", r.grace), deadline)
		case end := <-ch.guardEnd:
			ch.guardEnd = nil
			if end.err == nil {
				why := "the daemon ended its guard: " + end.line.End
				if end.line.Killed {
					why = "the daemon killed " + r.args[0] + ": " + end.line.End
				}
				return r.lost(ch, exited, term, why, deadline)
			}
			r.logf("warning: lost the daemon's guard (%v): from now on a stopped exec leaves %s running past the lease", end.err, r.args[0])
		case got := <-answers:
			a, d, err := got.ans, got.deadline, got.err
			switch {
			case err != nil && deadline.IsZero() && time.Since(lastOK) >= r.grace:
				return r.lost(ch, exited, term, fmt.Sprintf("the daemon did not answer for %v: %v", r.grace, err), deadline)
			case err != nil:
				// In quorum mode the lease already read bounds CMD.
			case !a.Leader:
				return r.lost(ch, exited, term, "the daemon says this node no longer leads", deadline)
			case a.Term != term:
				return r.lost(ch, exited, term, "the leadership's term changed to "+a.Term+" (a new leadership: start exec again)", deadline)
			default:
				// The latest answer's lease, not the longest one seen:
				// the daemon's answer is authoritative, and a lease it
				// says is shorter now is shorter.
				lastOK = time.Now()
				deadline = d
				arm()
			}
		}
	}
}

// preflight says, once at exec's start, what cannot hold here whatever
// the daemon does: off Linux, everything the guard gives; on Linux
// without a cgroup2 mount in exec's mount namespace, the guard.
func (r *execRun) preflight() {
	if w, guard := platformLimits(); !guard {
		r.noGuard = "not on Linux"
		r.warnOnce("guard", "%s", w)
		return
	}
	if _, err := cgroup.Self(); err != nil {
		r.noGuard = err.Error()
		r.warnGuard("%v", err)
	}
}

// start registers a guard with the daemon for term ans.Term and starts
// CMD inside the guard's cgroup, with its parent-death signal, from the
// starter's thread. Where the daemon cannot guard CMD (no cgroup v2, no
// permission, a daemon without guards, exec in another mount namespace)
// it says once what is lost and starts CMD all the same. It returns nil,
// nil when CMD must not start now: the daemon says this node no longer
// leads in that term, refuses for a while (too many guards, stopping), or
// does not answer before the lease read (deadline) comes within grace;
// exec then waits for the next leadership.
func (r *execRun) start(ctx context.Context, ans group.LeaderAnswer, deadline time.Time) (*child, error) {
	if err := becomeSubreaper(); err != nil {
		r.warnOnce("reaper", "cannot become a child subreaper (%v): an orphaned descendant of CMD is not stopped with it", err)
	}
	ch := &child{}
	if r.noGuard == "" {
		// The registration must not outlast what the lease allows (or,
		// without a lease, what a silent daemon is allowed): an
		// unanswered one starts nothing.
		limit := time.Now().Add(r.grace)
		if !deadline.IsZero() {
			limit = deadline.Add(-r.grace)
		}
		rctx, cancel := context.WithDeadline(ctx, limit)
		g, err := r.api.Guard(rctx, schema.ExecGuardRequest{Term: ans.Term,
			GraceMS: r.grace.Milliseconds(), PollMS: r.poll.Milliseconds()})
		cancel()
		var he *client.HTTPError
		switch {
		case errors.As(err, &he) && he.Code == http.StatusConflict:
			r.wait("the daemon no longer leads in term %s (%s): waiting", ans.Term, he.Body)
			return nil, nil
		case errors.As(err, &he) && (he.Code == http.StatusTooManyRequests || he.Code == http.StatusServiceUnavailable):
			r.wait("the daemon cannot guard %s now (%s): waiting", r.args[0], he.Body)
			return nil, nil
		case errors.As(err, &he) && (he.Code == http.StatusNotFound || he.Code == http.StatusMethodNotAllowed):
			r.warnGuard("the daemon at %s predates exec guards (POST /v1/exec)", r.api.Addr())
		case errors.As(err, &he):
			r.warnGuard("the daemon cannot guard here: %s", he.Body)
		case err != nil:
			r.wait("cannot register %s with the daemon (%v): waiting", r.args[0], err)
			return nil, nil
		default:
			ch.guard = g
			if ch.cg, err = cgroup.Open(g.Info.Cgroup); err != nil {
				r.warnGuard("cannot open the guard's cgroup (is exec in another mount namespace than the daemon, as under ip netns exec?): %v", err)
				ch.closeGuard()
			}
		}
	}
	if !deadline.IsZero() && time.Until(deadline) <= r.grace {
		// The registration took what the lease had left.
		ch.closeGuard()
		return nil, nil
	}
	var err error
	ch.cmd, err = r.startCmd(ans, ch.cg)
	if err != nil && ch.cg != nil {
		// clone3 into the cgroup failed (Linux 5.2 to 5.6 have no
		// CLONE_INTO_CGROUP; a seccomp filter; no write access to the
		// cgroups above): start CMD outside and move it in.
		first := err
		if ch.cmd, err = r.startCmd(ans, nil); err == nil {
			if aerr := ch.cg.Add(ch.cmd.Process.Pid); aerr != nil {
				r.warnGuard("cannot start %s in the guard's cgroup (%v), nor move it in (%v)", r.args[0], first, aerr)
				ch.cg = nil
				ch.closeGuard()
			} else {
				r.logf("warning: cannot start %s inside the guard's cgroup (%v): moved it in after the start, so what it forked at once may be outside", r.args[0], first)
			}
		}
	}
	if err != nil {
		ch.closeGuard()
		return nil, failure("cannot start %s: %w", r.args[0], err)
	}
	r.waiting = ""
	if ch.guard != nil {
		ch.guardEnd = make(chan guardEnd, 1)
		go func(g *client.Guard, out chan<- guardEnd) {
			line, err := g.End()
			out <- guardEnd{line, err}
		}(ch.guard, ch.guardEnd)
	}
	return ch, nil
}

// startCmd starts CMD, inside cg if not nil.
func (r *execRun) startCmd(ans group.LeaderAnswer, cg *cgroup.Group) (*exec.Cmd, error) {
	cmd := exec.Command(r.args[0], r.args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "GROUPD_TERM="+ans.Term, "GROUPD_GROUP="+ans.Group,
		"GROUPD_ID="+strconv.FormatUint(uint64(ans.ID), 10), "GROUPD_NAME="+ans.Name)
	attr, done, err := procAttr(cg)
	if err != nil {
		return nil, err
	}
	defer done()
	cmd.SysProcAttr = attr
	if err := procStarter().start(cmd); err != nil {
		return nil, err
	}
	return cmd, nil
}

// closeGuard ends the daemon's guard, if any.
func (ch *child) closeGuard() {
	if ch.guard != nil {
		ch.guard.Close()
		ch.guard = nil
	}
}

// wait says why CMD does not start yet, unless exec said that last.
func (r *execRun) wait(format string, args ...any) {
	if why := fmt.Sprintf(format, args...); why != r.waiting {
		r.waiting = why
		r.logf("%s", why)
	}
}

// warnOnce says, once per exec and kind, a guarantee that does not hold
// here.
func (r *execRun) warnOnce(kind, format string, args ...any) {
	if r.warned[kind] {
		return
	}
	if r.warned == nil {
		r.warned = map[string]bool{}
	}
	r.warned[kind] = true
	r.logf("warning: "+format, args...)
}

// warnGuard says, once per exec, in one line, why CMD runs without the
// daemon's guard, and what is lost.
func (r *execRun) warnGuard(format string, args ...any) {
	r.warnOnce("guard", "no guard for CMD (%s): if exec is killed, CMD dies with it (parent-death signal) but what CMD started in a new session (setsid) lives on; if exec is stopped or starved, nothing stops CMD when the leadership ends",
		fmt.Sprintf(format, args...))
}

// killedByGuard reports whether CMD, which exited with err, was killed by
// the daemon's guard, and why: a SIGKILL exec did not send, with the
// guard's last line saying it killed (which may arrive just after CMD's
// exit is seen).
func (r *execRun) killedByGuard(ch *child, err error) (string, bool) {
	var ee *exec.ExitError
	if ch.guardEnd == nil || !errors.As(err, &ee) {
		return "", false
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return "", false
	}
	select {
	case end := <-ch.guardEnd:
		ch.guardEnd = nil
		if end.err == nil && end.line.Killed {
			return end.line.End, true
		}
	case <-time.After(100 * time.Millisecond):
	}
	return "", false
}

// finish ends a run once CMD has exited: whatever CMD left running is
// killed (everything in the guard's cgroup, or exec's descendants
// without one), orphans are reaped, and the guard is closed, after the
// cgroup is empty, so that the daemon sees an orderly end.
func (r *execRun) finish(ch *child) {
	if ch.cg != nil {
		_ = ch.cg.Kill()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := ch.cg.WaitEmpty(ctx); err != nil {
			r.logf("warning: %v", err)
		}
		cancel()
	}
	// Without a cgroup, and for what CMD forked before it was moved into
	// one.
	signalTree(syscall.SIGKILL, 0)
	reapOrphans(0)
	ch.closeGuard()
}

// execAnswer is one poll of the daemon.
type execAnswer struct {
	ans      group.LeaderAnswer
	deadline time.Time
	err      error
}

// pollLoop asks the daemon every poll and hands each answer to run,
// until ctx ends. A request that takes longer than grace is abandoned as
// an error: without a lease, a daemon that does not answer for grace
// stops CMD.
func (r *execRun) pollLoop(ctx context.Context, answers chan<- execAnswer) {
	tick := time.NewTicker(r.poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, r.grace)
		a, d, err := r.ask(rctx)
		cancel()
		select {
		case answers <- execAnswer{a, d, err}:
		case <-ctx.Done():
			return
		}
	}
}

// waitLeader asks the daemon every poll until this node leads (with a
// lease longer than twice the grace, in quorum mode), or ctx ends.
func (r *execRun) waitLeader(ctx context.Context) (group.LeaderAnswer, time.Time, error) {
	said := ""
	for {
		ans, deadline, err := r.ask(ctx)
		var he *client.HTTPError
		switch {
		case errors.As(err, &he):
			return ans, deadline, apiError(err)
		case err != nil && ctx.Err() == nil:
			if said != "daemon" {
				r.logf("waiting for the daemon at %s: %v", r.api.Addr(), err)
				said = "daemon"
			}
		case err != nil:
		case ans.Leader && (deadline.IsZero() || time.Until(deadline) > 2*r.grace):
			return ans, deadline, nil
		case said != "leader":
			r.logf("waiting for this node (%d) to lead; the leader is %d", ans.ID, ans.LeaderID)
			said = "leader"
		}
		select {
		case <-ctx.Done():
			return ans, time.Time{}, nil
		case <-time.After(r.poll):
		}
	}
}

// lost stops CMD because the leadership ended, and reports it.
func (r *execRun) lost(ch *child, exited chan error, term, why string, deadline time.Time) error {
	how := r.stop(ch, exited, why, deadline)
	return cli.Exit(fmt.Sprintf("leadership (term %s) ended: %s; %s %s", term, why, r.args[0], how), exitNotLeader)
}

// signal sends sig to CMD and everything it started: to every process in
// its cgroup (SIGKILL: cgroup.kill), or, without one, to its process
// group and to every other descendant of exec, so that a descendant that
// left the process group is reached all the same. Each process gets it
// once.
func (r *execRun) signal(ch *child, sig syscall.Signal) {
	pgid := ch.cmd.Process.Pid
	if ch.cg != nil {
		var err error
		if sig == syscall.SIGKILL {
			err = ch.cg.Kill()
		} else {
			err = ch.cg.Signal(sig)
		}
		if err == nil {
			return
		}
	}
	_ = syscall.Kill(-pgid, sig)
	signalTree(sig, pgid)
}

// stop sends SIGTERM to CMD and what it started, then SIGKILL after the
// grace or killMargin before the lease's end, whichever comes first, and
// waits for CMD to exit. It returns how CMD ended, for the report.
func (r *execRun) stop(ch *child, exited chan error, why string, deadline time.Time) string {
	start := time.Now()
	r.logf("stopping %s: %s", r.args[0], why)
	r.signal(ch, syscall.SIGTERM)
	killAt := start.Add(r.grace)
	if !deadline.IsZero() && deadline.Add(-killMargin).Before(killAt) {
		killAt = deadline.Add(-killMargin)
	}
	t := time.NewTimer(time.Until(killAt))
	defer t.Stop()
	select {
	case err := <-exited:
		return fmt.Sprintf("exited %v after SIGTERM", describeExit(err, time.Since(start)))
	case <-t.C:
	}
	r.signal(ch, syscall.SIGKILL)
	err := <-exited
	return fmt.Sprintf("killed (SIGKILL after %v; %s)", time.Since(start).Round(time.Millisecond), describeExit(err, time.Since(start)))
}

// exited reports CMD's own exit and passes its status on.
func (r *execRun) exited(err error, started time.Time) error {
	ran := time.Since(started).Round(time.Millisecond)
	var ee *exec.ExitError
	switch {
	case err == nil:
		r.logf("%s exited with status 0 after %v", r.args[0], ran)
		return nil
	case errors.As(err, &ee):
		code := ee.ExitCode()
		if code < 0 {
			code = exitFailure // killed by a signal exec did not send
		}
		return cli.Exit(fmt.Sprintf("%s %s", r.args[0], describeExit(err, ran)), code)
	default:
		return failure("%s: %w", r.args[0], err)
	}
}

// describeExit says how a process ended, after how long.
func describeExit(err error, after time.Duration) string {
	after = after.Round(time.Millisecond)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("by signal %v after %v", ws.Signal(), after)
		}
		return fmt.Sprintf("with status %d after %v", ee.ExitCode(), after)
	}
	if err != nil {
		return fmt.Sprintf("(%v) after %v", err, after)
	}
	return fmt.Sprintf("with status 0 after %v", after)
}
