package group

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Leadership for embedders, after client-go's leaderelection and raft's
// LeaderCh: callbacks (Config.Leader) and a latest-value channel
// (WatchLeader). Both follow Status.IsLeader: without a quorum, a node
// leads from when it first coordinates a Normal group until it stops
// coordinating; in quorum mode (Config.Quorum), only while it also holds
// its lease, so that two nodes never lead at once (docs/design.md §8).

// LeaderCallbacks are called as this node's leadership changes. They run on
// one goroutine of their own, in order, never on the event loop; a slow
// callback delays the next one, not the protocol.
type LeaderCallbacks struct {
	// OnStartedLeading is called, in a goroutine of its own, when this node
	// starts leading (Status.IsLeader). ctx is cancelled when the
	// leadership ends (before OnStoppedLeading is called), or when the
	// agent stops: do the leader's work until then.
	//
	// In quorum mode ctx is cancelled when the lease runs out, by a timer
	// of this process, even if no packet arrives and the event loop is
	// blocked; a new leader becomes primary only after the grants this
	// one counted have expired at their members, Lease after the
	// heartbeats they acknowledged (docs/design.md §8). That guarantee
	// assumes clocks whose rates differ by less than 1 % and that this
	// process runs: work that outlives a cancelled ctx (a write already
	// in flight, a process that was frozen) is not covered, so fence
	// writes with the term (Leadership.Term, GROUPD_TERM), which only
	// grows from one leadership to the next.
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading is called when this node stops leading, after the
	// context of OnStartedLeading was cancelled, including when the agent
	// stops while leading: Run returns after it.
	OnStoppedLeading func()
	// OnNewTerm is called when this node goes on leading under a new
	// term (old → term): the leadership, and OnStartedLeading's context,
	// go on, but a resource fenced by terms refuses writes with the old
	// one once another leader's higher term reached it (without a
	// quorum, after a partition healed): write with the new term.
	OnNewTerm func(old, term GroupNumber)
	// OnNewLeader is called when this node's group settles (Normal) under
	// a new coordinator, itself included: id and name are the leader's.
	// Another node's name comes with its memberlist meta, which can
	// arrive shortly after the group settles: the call waits for it, up
	// to BeaconInterval + AliveInterval, and name is "" only if it did
	// not come by then.
	OnNewLeader func(id NodeID, name string)
}

func (c LeaderCallbacks) any() bool {
	return c.OnStartedLeading != nil || c.OnStoppedLeading != nil || c.OnNewLeader != nil || c.OnNewTerm != nil
}

// leaderRunner runs the callbacks: a queue of transitions drained by one
// goroutine.
type leaderRunner struct {
	cb  LeaderCallbacks
	log zerolog.Logger
	// nameOf finds a leader's name that the view does not know yet,
	// waiting a little for it (Agent.nameOf); nil in tests.
	nameOf func(id NodeID, known string, stop <-chan struct{}) string

	mu      sync.Mutex
	queue   []func(context.Context)
	wake    chan struct{}
	closing chan struct{} // closed by close
	done    chan struct{}
	cancel  context.CancelFunc // the current leadership's
	running bool               // the goroutine runs

	// base parents every leadership's context; stopBase ends it when
	// the agent stops.
	base     context.Context
	stopBase context.CancelFunc
}

func (r *leaderRunner) init(cb LeaderCallbacks, log zerolog.Logger) {
	r.cb, r.log = cb, log
	r.wake = make(chan struct{}, 1)
	r.closing = make(chan struct{})
	r.done = make(chan struct{})
}

// start runs the callbacks' goroutine until close.
func (r *leaderRunner) start() {
	if !r.cb.any() {
		close(r.done)
		return
	}
	r.running = true
	r.base, r.stopBase = context.WithCancel(context.Background())
	ctx, stop := r.base, r.stopBase
	go func() {
		defer close(r.done)
		defer stop()
		for {
			closing := false
			select {
			case <-r.closing:
				closing = true
			case <-r.wake:
			}
			r.drain(ctx)
			if closing {
				// A leadership still current (a crash, or an agent that
				// stopped without a goodbye) ends with the agent, as
				// client-go's OnStoppedLeading does when Run returns.
				r.mu.Lock()
				cancel := r.cancel
				r.cancel = nil
				r.mu.Unlock()
				if cancel != nil {
					cancel()
					if r.cb.OnStoppedLeading != nil {
						r.safely(r.cb.OnStoppedLeading)
					}
				}
				return
			}
		}
	}()
}

// drain runs the queued transitions in order.
func (r *leaderRunner) drain(ctx context.Context) {
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			r.mu.Unlock()
			return
		}
		f := r.queue[0]
		r.queue = r.queue[1:]
		r.mu.Unlock()
		r.safely(func() { f(ctx) })
	}
}

// close runs what is queued (the goodbye's stop included), ends a
// leadership still current, and waits for the callbacks' goroutine.
func (r *leaderRunner) close() {
	if r.running {
		close(r.closing)
	}
	<-r.done
}

// safely runs f, logging rather than dying on a panic in an embedder's
// callback.
func (r *leaderRunner) safely(f func()) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error().Str("panic", fmt.Sprint(p)).Msg("a leader callback panicked")
		}
	}()
	f()
}

func (r *leaderRunner) enqueue(f func(context.Context)) {
	if !r.running {
		return
	}
	r.mu.Lock()
	r.queue = append(r.queue, f)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// started begins the leadership of term: its context now, so that a stop
// cancels it at once, and OnStartedLeading queued.
func (r *leaderRunner) started(term GroupNumber) {
	if !r.running {
		return
	}
	ctx, cancel := context.WithCancel(r.base)
	r.mu.Lock()
	if r.cancel != nil {
		r.cancel() // cannot happen: a stop comes in between
	}
	r.cancel = cancel
	r.mu.Unlock()
	r.enqueue(func(context.Context) {
		if r.cb.OnStartedLeading != nil {
			go r.safely(func() { r.cb.OnStartedLeading(ctx) })
		}
	})
}

// stopped ends the current leadership: its context is cancelled now, not
// behind the callbacks queued before it, and OnStoppedLeading queued.
func (r *leaderRunner) stopped() {
	if !r.running {
		return
	}
	r.mu.Lock()
	if r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
	r.mu.Unlock()
	r.enqueue(func(context.Context) {
		if r.cb.OnStoppedLeading != nil {
			r.cb.OnStoppedLeading()
		}
	})
}

// newTerm queues OnNewTerm: the leadership goes on under term.
func (r *leaderRunner) newTerm(old, term GroupNumber) {
	if r.cb.OnNewTerm == nil {
		return
	}
	r.enqueue(func(context.Context) { r.cb.OnNewTerm(old, term) })
}

// newLeader queues OnNewLeader.
func (r *leaderRunner) newLeader(id NodeID, name string) {
	if r.cb.OnNewLeader == nil || id == 0 {
		return
	}
	r.enqueue(func(context.Context) {
		if r.nameOf != nil {
			name = r.nameOf(id, name, r.closing)
		}
		r.cb.OnNewLeader(id, name)
	})
}

// Leadership is this node's leadership as WatchLeader reports it.
type Leadership struct {
	// Leader, Term and Since: whether this node leads (Status.IsLeader:
	// in quorum mode, it holds its lease), the term it leads in, and
	// since when this leadership, or term, began.
	Leader bool
	Term   GroupNumber
	Since  time.Time
	// LeaderID and LeaderName are who leads this node's group: its
	// coordinator once Normal, 0 and "" while the node has no settled
	// group.
	LeaderID   NodeID
	LeaderName string
}

// leaderWatch is one WatchLeader call: a channel holding at most the
// latest value.
type leaderWatch struct {
	ch   chan Leadership
	last Leadership
}

// leadership returns the node's leadership as WatchLeader reports it, at
// now. Call with p.mu held.
func (p *publisher) leadershipNow(now time.Time) Leadership {
	s := p.live(p.st, now)
	var l Leadership
	if s.IsLeader() && p.acting {
		l = Leadership{Leader: true, Term: p.actTerm, Since: p.actSince}
	}
	if s.State == StateNormal {
		l.LeaderID, l.LeaderName = s.Coordinator, s.CoordinatorName
	}
	return l
}

// WatchLeader returns a channel that always holds this node's latest
// leadership, like raft's LeaderCh: it starts with the current value, gets
// a new one whenever the leadership or the group's leader changes (or the
// leader's name arrives, see LeaderCallbacks.OnNewLeader), and a
// reader that falls behind finds the newest value, never a stale one
// (values in between are replaced). The function ends the watch.
//
// The channel is open from WatchLeader until one of these closes it: the
// function is called; Run ends (after the node has left its group, just
// before Done is closed); or Close releases an agent that never ran. So a
// watch may start before Run: it holds the leadership of a node not yet
// running (not leading) and follows Run from its start. Once the agent
// has stopped, WatchLeader returns a channel already closed. A receive
// from the closed channel returns the zero Leadership at once, for ever,
// so a reader must check: range over the channel, or stop when ok is
// false, then wait for Done and ask Err why the agent stopped (nil after
// its context was done):
//
//	w, stop := a.WatchLeader()
//	defer stop()
//	for l := range w { // ends when the agent stops
//		log.Printf("leading: %v; leader: %d %s", l.Leader, l.LeaderID, l.LeaderName)
//	}
//	<-a.Done()
//	return a.Err()
func (a *Agent) WatchLeader() (<-chan Leadership, func()) {
	p := &a.pub
	w := &leaderWatch{ch: make(chan Leadership, 1)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		close(w.ch)
		return w.ch, func() {}
	}
	w.last = p.leadershipNow(time.Now())
	w.ch <- w.last
	p.watchers[w] = struct{}{}
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if _, ok := p.watchers[w]; ok {
				delete(p.watchers, w)
				close(w.ch)
			}
		})
	}
}

// notifyWatchers puts the current leadership in every watcher whose value
// changed, replacing an unread older one.
func (p *publisher) notifyWatchers() {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.leadershipNow(time.Now())
	for w := range p.watchers {
		if l == w.last {
			continue
		}
		w.last = l
		select {
		case <-w.ch: // drop the unread older value
		default:
		}
		w.ch <- l // room: only this goroutine, under mu, sends
	}
}
