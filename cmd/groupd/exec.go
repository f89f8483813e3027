package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/group"
)

// exitNotLeader is exec's exit code when it stopped its command because
// the leadership ended (the one `status` uses outside the primary
// partition).
const exitNotLeader = exitNotPrimary

// killMargin is how long before the lease's end exec sends SIGKILL to a
// command that did not exit on SIGTERM: a killed process is gone within
// it.
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
			"killed or cut off), exec sends SIGTERM to CMD's process group, and SIGKILL if it is still\n" +
			"running " + killMargin.String() + " before the lease's end, so that CMD is gone before another node can\n" +
			"become the leader. exec measures the lease on its own clock from the moment it asked, which\n" +
			"is never later than the daemon's. Without --expect there is no lease: CMD is stopped when the\n" +
			"daemon says it no longer leads, or stops answering for --grace, and two leaders may overlap\n" +
			"during a partition.\n\n" +
			"Exit status: CMD's own when it exits by itself; 3 when exec stopped it because the leadership\n" +
			"ended (with --repeat exec waits for the next leadership instead); 0 when exec itself was asked\n" +
			"to stop (SIGINT, SIGTERM) before or while CMD ran; 1 when CMD cannot be started; 2 for a\n" +
			"usage error.\n\n" +
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
	ans, deadline, err := r.waitLeader(ctx)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil // asked to stop before leading
	}
	term := ans.Term
	cmd := exec.Command(r.args[0], r.args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "GROUPD_TERM="+term, "GROUPD_GROUP="+ans.Group,
		"GROUPD_ID="+strconv.FormatUint(uint64(ans.ID), 10), "GROUPD_NAME="+ans.Name)
	// Its own process group: a stop reaches whatever CMD started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return failure("cannot start %s: %w", r.args[0], err)
	}
	started := time.Now()
	r.logf("leader (term %s): started %s (pid %d)", term, r.args[0], cmd.Process.Pid)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

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
		if !deadline.IsZero() {
			stopAt.Reset(time.Until(deadline.Add(-r.grace)))
		}
	}
	arm()
	defer stopAt.Stop()
	lastOK := started
	for {
		select {
		case err := <-exited:
			return r.exited(err, started)
		case <-ctx.Done():
			r.stop(cmd, exited, "exec was asked to stop", deadline)
			return nil
		case <-stopAt.C:
			return r.lost(cmd, exited, term, fmt.Sprintf("the lease would run out within %v and was not renewed (is the daemon frozen, killed or cut off?)", r.grace), deadline)
		case got := <-answers:
			a, d, err := got.ans, got.deadline, got.err
			switch {
			case err != nil && deadline.IsZero() && time.Since(lastOK) >= r.grace:
				return r.lost(cmd, exited, term, fmt.Sprintf("the daemon did not answer for %v: %v", r.grace, err), deadline)
			case err != nil:
				// In quorum mode the lease already read bounds CMD.
			case !a.Leader:
				return r.lost(cmd, exited, term, "the daemon says this node no longer leads", deadline)
			case a.Term != term:
				return r.lost(cmd, exited, term, "the leadership's term changed to "+a.Term+" (a new leadership: start exec again)", deadline)
			default:
				lastOK = time.Now()
				if d.After(deadline) {
					deadline = d
					arm()
				}
			}
		}
	}
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
func (r *execRun) lost(cmd *exec.Cmd, exited chan error, term, why string, deadline time.Time) error {
	how := r.stop(cmd, exited, why, deadline)
	return cli.Exit(fmt.Sprintf("leadership (term %s) ended: %s; %s %s", term, why, r.args[0], how), exitNotLeader)
}

// stop sends SIGTERM to CMD's process group, then SIGKILL after the grace
// or killMargin before the lease's end, whichever comes first, and waits
// for CMD to exit. It returns how CMD ended, for the report.
func (r *execRun) stop(cmd *exec.Cmd, exited chan error, why string, deadline time.Time) string {
	start := time.Now()
	pgid := -cmd.Process.Pid
	r.logf("stopping %s: %s", r.args[0], why)
	_ = syscall.Kill(pgid, syscall.SIGTERM)
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
	_ = syscall.Kill(pgid, syscall.SIGKILL)
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
