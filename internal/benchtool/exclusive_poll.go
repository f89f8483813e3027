//go:build linux

package main

// The pollers of `benchtool exclusive`: one goroutine per node asks it,
// every poll interval, whether it is a primary leader (exclProber), and
// keeps every answer, and every poll that got none, with its arrival time.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/groupd/groupd/client"
	netlab "github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/wire"
)

// exclProber asks one node once whether it is a primary leader. An error
// means no answer (the poll claims nothing).
type exclProber interface {
	probe(ctx context.Context, i int) (exclSample, error)
	// source says what is polled, for the record.
	source() string
}

// exclPoller polls nodes 1..N until its context ends.
type exclPoller struct {
	every, timeout time.Duration

	mu      sync.Mutex
	samples []exclSample
	latest  map[int]exclSample // each node's last poll
	lastErr map[int]string     // and why its last unanswered poll got nothing
	wg      sync.WaitGroup
}

func startPoller(ctx context.Context, pr exclProber, n int, every, timeout time.Duration) *exclPoller {
	p := &exclPoller{every: every, timeout: timeout, latest: map[int]exclSample{}, lastErr: map[int]string{}}
	for i := 1; i <= n; i++ {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.loop(ctx, pr, i)
		}()
	}
	return p
}

func (p *exclPoller) loop(ctx context.Context, pr exclProber, i int) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, p.timeout)
		s, err := pr.probe(pctx, i)
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.Node, s.At, s.OK = i, time.Now(), err == nil
		if err != nil {
			s = exclSample{Node: i, At: s.At}
		}
		p.mu.Lock()
		p.samples = append(p.samples, s)
		p.latest[i] = s
		if err != nil {
			p.lastErr[i] = err.Error()
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// wait returns when every poller has stopped (after its context ended).
func (p *exclPoller) wait() { p.wg.Wait() }

// take returns the samples that arrived in [from, to) and forgets every
// sample older than to.
func (p *exclPoller) take(from, to time.Time) []exclSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out, keep []exclSample
	for _, s := range p.samples {
		if !s.At.Before(from) && s.At.Before(to) {
			out = append(out, s)
		}
		if !s.At.Before(to) {
			keep = append(keep, s)
		}
	}
	p.samples = keep
	return out
}

// now is every node's last poll, and why the unanswered ones got nothing.
func (p *exclPoller) now() (map[int]exclSample, map[int]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, e := make(map[int]exclSample, len(p.latest)), make(map[int]string, len(p.lastErr))
	for k, v := range p.latest {
		l[k] = v
	}
	for k, v := range p.lastErr {
		e[k] = v
	}
	return l, e
}

// describe is the last poll of every node, for messages.
func (p *exclPoller) describe(n int) string {
	l, e := p.now()
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		s, ok := l[i]
		switch {
		case !ok:
			fmt.Fprintf(&b, "[%d: not polled yet] ", i)
		case !s.OK:
			fmt.Fprintf(&b, "[%d: no answer: %s] ", i, e[i])
		default:
			fmt.Fprintf(&b, "[%d: %s %s full=%v] ", i, s.state(), s.Term, s.Full)
		}
	}
	return string(bytes.TrimSpace(b.Bytes()))
}

// ---- groupd ----------------------------------------------------------------

// groupdProber asks a groupd node over its API socket: GET /v1/leader
// where the daemon has it (200 primary leader, 503 not, the term in
// X-Groupd-Term), else GET /v1/status (leader && primary, term). The first
// 404 from /v1/leader switches every node to /v1/status for the run (one
// binary runs everywhere).
type groupdProber struct {
	client   func(i int) *client.Client // node i's API (the lab's)
	n        int
	noLeader atomic.Bool // /v1/leader answered 404
	usedLdr  atomic.Bool // /v1/leader answered 200 or 503 at least once
}

func (g *groupdProber) source() string {
	switch {
	case g.usedLdr.Load() && g.noLeader.Load():
		return "groupd GET /v1/leader and /v1/status (mixed)"
	case g.usedLdr.Load():
		return "groupd GET /v1/leader (200 = primary leader; term from X-Groupd-Term)"
	}
	return "groupd GET /v1/status (leader && primary; term)"
}

func (g *groupdProber) probe(ctx context.Context, i int) (exclSample, error) {
	c := g.client(i)
	if !g.noLeader.Load() {
		a, err := c.Leader(ctx)
		var he *client.HTTPError
		switch {
		case errors.As(err, &he) && he.Code == 404:
			g.noLeader.Store(true)
		case err != nil:
			return exclSample{}, err
		default:
			g.usedLdr.Store(true)
			// /v1/leader says nothing of the membership: Full is left to
			// the lab's convergence check (exclGroupd.ready). A term
			// comes with a 200 only.
			s := exclSample{PL: a.Leader, Leader: a.Leader, Primary: a.Leader, Full: true}
			if a.Leader {
				term, err := wire.ParseGroupNumber(a.Term)
				if err != nil {
					return exclSample{}, fmt.Errorf("GET /v1/leader: term %q: %w", a.Term, err)
				}
				s.Term = exclTerm(term)
			}
			return s, nil
		}
	}
	st, err := c.Status(ctx)
	if err != nil {
		return exclSample{}, err
	}
	s := exclSample{PL: st.Leader && st.Primary, Leader: st.Leader, Primary: st.Primary,
		Full: st.State == wire.StateNormal && st.Primary && len(st.Members) == g.n}
	if st.Leader {
		s.Term = exclTerm(st.Term)
	}
	return s, nil
}

// ---- processes -------------------------------------------------------------

// procState is the state letter of /proc/PID/stat ('R', 'S', 'T' for
// stopped, 'Z'...), or an error when the process is gone.
func procState(pid int) (byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("process %d is gone", pid)
	}
	k := bytes.LastIndexByte(b, ')')
	if k < 0 || k+2 >= len(b) {
		return 0, fmt.Errorf("process %d: unreadable /proc/%d/stat", pid, pid)
	}
	return b[k+2], nil
}

// procRunning says why pid cannot answer (gone, a zombie, stopped), or
// nil.
func procRunning(pid int) error {
	st, err := procState(pid)
	switch {
	case err != nil:
		return err
	case st == 'Z' || st == 'X':
		return fmt.Errorf("process %d has exited", pid)
	case st == 'T' || st == 't':
		return fmt.Errorf("process %d is stopped (SIGSTOP)", pid)
	}
	return nil
}

// procAliveOrStopped is procRunning that lets a stopped process pass.
func procAliveOrStopped(pid int) error {
	if err := procRunning(pid); err != nil {
		if st, _ := procState(pid); st == 'T' || st == 't' {
			return nil
		}
		return err
	}
	return nil
}

// ---- keepalived ------------------------------------------------------------

// hasAddr says whether node i's namespace has addr on an interface:
// keepalived's MASTER holds the VIP. A netlink dump from a thread moved
// into the namespace (lab.Do): no process per poll.
func hasAddr(l *netlab.Lab, i int, addr netip.Addr) (bool, error) {
	var found bool
	err := l.Do(i, func() error {
		b, err := syscall.NetlinkRIB(syscall.RTM_GETADDR, syscall.AF_INET)
		if err != nil {
			return fmt.Errorf("netlink RTM_GETADDR: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(b)
		if err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Type != unix.RTM_NEWADDR {
				continue
			}
			attrs, err := syscall.ParseNetlinkRouteAttr(&m)
			if err != nil {
				return fmt.Errorf("netlink: %w", err)
			}
			for _, a := range attrs {
				if (a.Attr.Type == unix.IFA_LOCAL || a.Attr.Type == unix.IFA_ADDRESS) && len(a.Value) == 4 {
					if netip.AddrFrom4([4]byte(a.Value)) == addr {
						found = true
					}
				}
			}
		}
		return nil
	})
	return found, err
}
