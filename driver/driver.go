// Package driver runs an invitation.Node for a runtime: the one loop body
// that the daemon (package group), the simulator (package sim) and the
// tests share, so the chores around the pure machine are written once.
//
// For every input the driver steps the machine and carries out its Output:
//
//   - stamping: each message gets the boot's next packet counter (the
//     machine fills the rest of the header);
//   - the save handshake: Output.Save goes to Env.Save; a synchronous
//     runtime (the daemon fsyncs on its loop) has the outcome fed back at
//     once as the next input (invitation.Saved or SaveFailed), an
//     asynchronous one (the simulator's modelled disk) feeds it later
//     through Step;
//   - reporting: view changes, created numbers and notices go to
//     Env.Report, after the save the same Output asked for, so nothing is
//     announced before the data dir covers it;
//   - sending: messages go to Env.Send, after the report (a broadcast is
//     one envelope to wire.Broadcast; the transport fans it out);
//   - scheduling: Deadline is when to Tick next, and Tick ticks while work
//     is due, so a machine that never gets done with an instant is caught
//     (a livelock) instead of spinning.
//
// An Observer sees every input with the Output it caused, stamped: traces,
// input logs and their replay (see Log) are built on it.
package driver

import (
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// Env is what the driver needs from its runtime. Its methods are called
// from the goroutine that calls the Driver's.
type Env interface {
	// Send transmits one stamped message; To may be wire.Broadcast.
	Send(e wire.Envelope)
	// Save starts making d durable. A synchronous Env saves before it
	// returns and reports done with the outcome; an asynchronous one
	// returns done false and later delivers invitation.Saved or
	// invitation.SaveFailed through Driver.Step.
	Save(d invitation.Durable) (done bool, err error)
	// Report hands over what an Output decided besides messages and
	// saves: Events, Created and Notices (Messages and Save are nil).
	Report(now time.Time, out invitation.Output)
}

// Options tune a Driver; the zero value suits most runtimes.
type Options struct {
	// Clock, if set, is read after a synchronous save: the inputs that
	// follow it (the save's outcome, and what it unblocked) happen then,
	// not at the earlier time of the input that asked for the save.
	Clock func() time.Time
	// Observer sees every input, with the Output it caused (messages
	// stamped), before the Output is carried out; a nil input is the
	// machine's start (New).
	Observer func(now time.Time, in invitation.Input, out invitation.Output)
	// NextCounter, if set, draws each message's packet counter, so that
	// a runtime that sends messages of its own (the daemon's replay
	// challenges) shares one counter with the machine's; nil counts from
	// 1 in the driver.
	NextCounter func() uint64
	// Lazy keeps the scheduled deadline after an input that made a
	// participant do nothing (a beacon or a Yes received, typically)
	// instead of asking the machine, which walks its timer table: most
	// inputs of a large simulation are such. Such an input never brings a
	// participant's deadline forward; with Lazy off, LazyMisses counts
	// the exceptions, so tests can check that claim.
	Lazy bool
}

// Driver runs one machine. It is not safe for concurrent use.
type Driver struct {
	node     *invitation.Node
	env      Env
	opts     Options
	counter  uint64    // packet counter of this boot
	deadline time.Time // when the machine next has work (zero: none)

	// LazyMisses counts inputs that produced no output yet brought a
	// participant's deadline forward (see Options.Lazy; counted only
	// with Lazy off), and FirstLazyMiss describes the first.
	LazyMisses    uint64
	FirstLazyMiss string
}

// maxTicks bounds how often Tick ticks at one instant: a machine whose
// deadline is still due after that many is livelocked.
const maxTicks = 4

// New starts a machine for cfg at time now, and carries out its first
// Output (the announcement of a node without a group).
func New(cfg invitation.Config, now time.Time, env Env, opts Options) (*Driver, error) {
	n, err := invitation.New(cfg, now)
	if err != nil {
		return nil, err
	}
	d := &Driver{node: n, env: env, opts: opts}
	d.carry(now, nil, false)
	return d, nil
}

func (d *Driver) nextCounter() uint64 {
	if d.opts.NextCounter != nil {
		return d.opts.NextCounter()
	}
	d.counter++
	return d.counter
}

// Node returns the machine, for reading (Status, Durable, Stopped): every
// input must go through the Driver.
func (d *Driver) Node() *invitation.Node { return d.node }

// Deadline returns when the machine next has work: Tick then. Zero means
// never (a node that gave way to another process with its ID).
func (d *Driver) Deadline() time.Time { return d.deadline }

// Step feeds one input and carries out everything it causes.
func (d *Driver) Step(now time.Time, in invitation.Input) {
	d.node.Step(now, in)
	_, isTick := in.(invitation.Tick)
	d.carry(now, in, !isTick)
}

// Tick ticks the machine while work is due at now. It returns false if
// work is still due after maxTicks ticks at this instant: the machine is
// livelocked (a bug); the deadline is then moved a millisecond on, so the
// runtime does not spin.
func (d *Driver) Tick(now time.Time) bool {
	for range maxTicks {
		if d.deadline.IsZero() || now.Before(d.deadline) {
			return true
		}
		// Due tells the machine how late this tick is (a stalled
		// runtime; see invitation.Tick).
		tick := invitation.Tick{Due: d.deadline}
		d.node.Step(now, tick)
		d.carry(now, tick, false)
	}
	if d.deadline.IsZero() || now.Before(d.deadline) {
		return true
	}
	d.deadline = now.Add(time.Millisecond)
	return false
}

// carry carries out the machine's Output after input in (nil: New), then
// every save outcome a synchronous Env returns, and reschedules.
func (d *Driver) carry(now time.Time, in invitation.Input, mayBeLazy bool) {
	quiet := true
	for range 64 { // a bound against a machine that saves forever
		out := d.node.Output()
		if !out.Empty() {
			quiet = false
		}
		for i := range out.Messages {
			out.Messages[i].Msg.Counter = d.nextCounter()
		}
		if d.opts.Observer != nil {
			d.opts.Observer(now, in, out)
		}
		done, err := false, error(nil)
		if out.Save != nil {
			done, err = d.env.Save(*out.Save)
		}
		if len(out.Events) > 0 || len(out.Created) > 0 || len(out.Notices) > 0 {
			d.env.Report(now, invitation.Output{Events: out.Events, Created: out.Created, Notices: out.Notices})
		}
		for _, e := range out.Messages {
			d.env.Send(e)
		}
		if !done {
			break
		}
		if d.opts.Clock != nil {
			if t := d.opts.Clock(); t.After(now) {
				now = t
			}
		}
		if err != nil {
			in = invitation.SaveFailed{Durable: *out.Save, Err: err.Error()}
		} else {
			in = invitation.Saved{Durable: *out.Save}
		}
		d.node.Step(now, in)
	}
	d.schedule(now, in, quiet && mayBeLazy)
}

// schedule updates the deadline after an input.
func (d *Driver) schedule(now time.Time, in invitation.Input, quiet bool) {
	lazy := quiet && !d.deadline.IsZero() && d.node.Status().Role() != invitation.Coordinator
	if lazy && d.opts.Lazy {
		return
	}
	dl := d.node.NextDeadline()
	if lazy && dl.Before(d.deadline) {
		d.LazyMisses++
		if d.FirstLazyMiss == "" {
			d.FirstLazyMiss = lazyMiss(now, in, d.deadline, dl, d.node.Status())
		}
	}
	d.deadline = dl
}

func lazyMiss(now time.Time, in invitation.Input, was, is time.Time, st invitation.Status) string {
	what := "?"
	if s, ok := in.(interface{ String() string }); ok {
		what = s.String()
	}
	return now.UTC().Format("15:04:05.000000") + " " + what + ": deadline moved from " +
		was.UTC().Format("15:04:05.000000") + " to " + is.UTC().Format("15:04:05.000000") + " (" + st.String() + ")"
}
