package group

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/groupd/groupd/driver"
	"github.com/groupd/groupd/invitation"
)

// loopEnd says why the event loop stopped.
type loopEnd uint8

const (
	endStopped loopEnd = iota // the context was done
	endCrashed                // a test crash: no Leave, no goodbye
	endYielded                // another process holds this node's ID
)

// Run runs the protocol until ctx is done, then leaves memberlist (so
// peers react at once), releases the data dir and sockets, and returns nil
// within about a second. It returns an error if memberlist cannot start,
// and ErrDuplicateID (soon after the start) if another live process uses
// this node's ID and this one gave way. Run may be called once, and not
// after Close: it then returns ErrClosed.
//
// Done is closed when Run has returned, and Err then returns what it
// returned. Kill stops it as a crash would.
func (a *Agent) Run(ctx context.Context) (err error) {
	if !a.started.CompareAndSwap(false, true) {
		return ErrClosed
	}
	defer func() {
		a.runErr = err
		close(a.done)
	}()
	ml, err := memberlist.Create(a.mlConf)
	if err != nil {
		a.release()
		return fmt.Errorf("group: start memberlist: %w", err)
	}
	a.ml.Store(ml)
	seed := randomSeed()
	mcfg := invitation.Config{
		ID:       a.id,
		Priority: a.cfg.Priority,
		Boot:     a.boot,
		Durable:  a.durable,
		Timing:   a.cfg.Timing,
		Election: a.cfg.Election,
		Rand:     mrand.New(mrand.NewSource(seed)),
		Quorum:   a.cfg.Quorum,
		Home:     a.home,

		NoPreempt: a.cfg.NoPreempt,
	}
	opts := driver.Options{Clock: time.Now, NextCounter: func() uint64 { return a.pktCounter.Add(1) },
		Observer: a.observeOutput} // the header a probe carries (dupid.go)
	var inputLog *driver.LogWriter
	if a.cfg.InputLog != nil {
		inputLog = driver.NewLogWriter(a.cfg.InputLog, mcfg, seed)
		opts.Observer = func(now time.Time, in invitation.Input, out invitation.Output) {
			a.observeOutput(now, in, out)
			inputLog.Observe(now, in, out)
		}
	}
	if a.sealer == nil {
		a.log.Warn().Str("fix", "head -c 32 /dev/urandom | base64 > /etc/groupd/key; then --key-file /etc/groupd/key on every node").
			Msg("NO KEY (--key-file): wire packets and memberlist gossip are neither authenticated nor encrypted;" +
				" anyone on the LAN can forge them, take over as coordinator or split the group")
	}
	a.log.Info().Uint64("incarnation", a.incarnation).Str("boot", fmt.Sprintf("%016x", a.boot)).
		Uint64("counter", a.durable.Counter).Str("last_group", a.durable.LastGroup.String()).
		Str("name", a.name).Str("wire", a.Addrs().Wire).Str("gossip", a.gossipAddr).Str("multicast", a.Addrs().Multicast).
		Str("api", a.apiAddr).Str("profile", a.cfg.Profile).Msg("starting")

	bg, stopBG := context.WithCancel(context.Background())
	var metaWG sync.WaitGroup
	metaWG.Add(1)
	go func() { defer metaWG.Done(); a.metaUpdater(bg, ml) }()
	// The joiner and the reconnect loop are not waited for: a Join in
	// progress may block for TCPTimeout, longer than shutdown may take.
	// They stop at their next step, and a Join on a shut-down memberlist
	// just fails.
	go a.joiner(bg, ml)
	go a.reconnect(bg, ml)
	a.pub.start()

	d, err := driver.New(mcfg, time.Now(), loopEnv{a}, opts)
	if err != nil {
		stopBG()
		ml.Shutdown()
		a.release()
		return configErrorf("group: %w", err)
	}
	a.tr.Start(a.receive)
	if a.apiSrv != nil {
		go a.serveAPI()
	}

	a.running.Store(true)
	end := a.loop(ctx, d)
	a.running.Store(false)
	a.stopping.Store(true)
	if end == endYielded {
		a.lingerYielded()
	}

	// Shutdown. Order matters: the loop is stopped, so nothing new is
	// sent; a leader says it stops leading (leader-stop) and
	// BeforeLeave gets up to beforeLeaveTimeout (groupd's leader-stop
	// hook may release a virtual IP); memberlist announces our leave
	// while its sockets still work; then everything is closed.
	stopBG()
	if end != endCrashed {
		a.pub.goodbye(time.Now())
		if f := a.cfg.BeforeLeave; f != nil {
			ctx, cancel := context.WithTimeout(context.Background(), beforeLeaveTimeout)
			f(ctx)
			cancel()
		}
	}
	if inputLog != nil {
		if err := inputLog.Err(); err != nil {
			a.log.Warn().Err(err).Msg("input log incomplete")
		}
	}
	metaWG.Wait()
	if end == endStopped {
		if err := ml.Leave(leaveTimeout); err != nil {
			a.glog.Debug().Err(err).Msg("leave not confirmed")
		}
	}
	if err := ml.Shutdown(); err != nil {
		a.glog.Warn().Err(err).Msg("memberlist shutdown")
	}
	a.release()
	a.pub.stopLeaders()
	switch end {
	case endCrashed:
		a.log.Warn().Msg("stopped abruptly (Kill): no memberlist Leave, no leader-stop")
	case endYielded:
		return ErrDuplicateID
	default:
		a.log.Info().Msg("stopped")
	}
	return nil
}

// beforeLeaveTimeout bounds Config.BeforeLeave (a stopping leader's
// leader-stop hook): within the 2 s a stop may take.
const beforeLeaveTimeout = time.Second

// randomSeed seeds the machine's jitter, from crypto/rand, so that nodes
// started together drift apart; the input log records it.
func randomSeed() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // on failure the zero seed still works
	return int64(binary.LittleEndian.Uint64(b[:]))
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
