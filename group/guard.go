package group

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/groupd/groupd/internal/cgroup"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// Exec guards (issue 33): `groupd exec` runs its command only while this
// node leads, and stops it itself when the leadership ends; but a process
// can be stopped (SIGSTOP), starved or killed, and then nothing of its own
// stops the command. The daemon keeps running, and holds the lease: so
// exec registers a guard with it (POST /v1/exec, a request whose answer
// stays open while exec lives), the daemon makes a cgroup for it, and exec
// starts its command inside (clone3's CLONE_INTO_CGROUP), where it and
// every process it starts stay, setsid or not. The daemon kills every
// process in the guard's cgroup:
//
//   - at once when exec's connection closes while any is left: exec died
//     (a live exec stops its command and what it left behind, and only
//     then closes the guard);
//   - when the leadership the guard was registered under ends (leader-stop,
//     or leader-term: a new term needs a new GROUPD_TERM, and exec stops
//     its command for it too): with a quorum (--expect), guardKillMargin
//     before the end of the lease the daemon published (the latest end it
//     published while it led in that term: a published end never moves
//     earlier), at once if that is past; also when that lease runs out
//     unrenewed while the loop has not yet said the leadership ended
//     (the guard's own timer); without a quorum, exec's poll and grace and
//     guardSlack after the leader-stop, so that a live exec stops its
//     command first, with its SIGTERM;
//   - when the agent stops.
//
// Once a guard has ended, its cgroup stays dead until exec closes the
// connection: a command exec started into it afterwards (a start racing
// the end) is killed within guardWatch.
//
// The daemon only ever kills cgroups it created: the API is reachable by
// local users, so it never takes a pid, a process group or a path to kill,
// and a process gets into a guard's cgroup only by a caller allowed to
// move it there (write access to the cgroups above both: root, or a
// delegated subtree). Registration is refused unless the node leads in the
// term named, and at most maxGuards guards live at once. The cgroups live
// under the daemon's own, one directory per agent (groupd-PID, and -2, -3
// ... for more agents of one process, or one a crashed daemon of the same
// pid left), so that daemons of one host never share one; each guard's is
// exec-N inside it, made anew (a directory that exists is skipped, never
// used). A guard's directory is removed once it is empty, the agent's when
// it stops. A daemon that is killed leaves them behind (with what exec, if
// it lives, did not stop); the next agent that makes its directory there
// removes those of daemons that are gone, if they are empty.

const (
	// maxGuards bounds the guards that live at once.
	maxGuards = 64
	// guardKillMargin is how long before the lease's end a guard's
	// cgroup is killed: a killed process is gone within it (exec's
	// killMargin). The lease margin (Timing.LeaseMargin, 100 ms lan, 20
	// ms fast) then still separates the kill from the earliest moment
	// another node can be primary.
	guardKillMargin = 20 * time.Millisecond
	// guardSlack is how long past exec's own stop (poll + grace after
	// the leadership ended) a guard waits without a lease.
	guardSlack = 50 * time.Millisecond
	// maxGuardTiming bounds the grace and poll a guard accepts.
	maxGuardTiming = time.Minute
	// guardEmptyWait bounds how long the daemon waits for a killed
	// cgroup to empty before it leaves the directory for the agent's
	// stop to remove.
	guardEmptyWait = 2 * time.Second
	// guardWatch is how often an ended guard's cgroup is checked for a
	// process started into it after the end.
	guardWatch = 5 * time.Millisecond
	// maxGuardRequest bounds POST /v1/exec's body.
	maxGuardRequest = 4 << 10
)

// guards are an agent's exec guards.
type guards struct {
	a *Agent

	mu sync.Mutex
	// base is the cgroup directory the agent's own is made in: the
	// daemon's cgroup ("": found with cgroup.Self; tests set one).
	base   string
	parent *cgroup.Group // groupd-PID, made at the first registration
	next   uint64
	live   map[uint64]*guard
	closed bool
}

// guard is one registered exec.
type guard struct {
	gs   *guards
	id   uint64
	term GroupNumber
	cg   *cgroup.Group
	// after is, without a lease, how long after the leadership's end the
	// cgroup is killed.
	after  time.Duration
	quorum bool

	// Under gs.mu.
	end     leaseEnd // quorum: the latest lease end seen while the term led
	stopped bool     // the leadership of term ended: the kill is due
	timer   *time.Timer
	ended   bool          // the daemon ended the guard (why, killed)
	done    chan struct{} // closed when ended
	why     string
	killed  bool
	killAt  time.Time // when the kill was sent (zero: none)
	gone    bool      // released: its connection closed
}

// leaseEnd is a lease's end on both of a lease's clocks (primary.go).
type leaseEnd struct {
	until time.Time
	boot  int64 // CLOCK_BOOTTIME at until (0: unknown)
}

// later returns the later of e and o.
func (e leaseEnd) later(o leaseEnd) leaseEnd {
	if o.until.After(e.until) {
		return o
	}
	return e
}

// remaining is how long the lease still runs at now, on both clocks
// (lease.remaining's rule).
func (e leaseEnd) remaining(now time.Time) time.Duration {
	if !leaseValid(now, e.until, e.boot) {
		return 0
	}
	d := e.until.Sub(now)
	if e.boot != 0 {
		if b := bootNanos(); b != 0 {
			d = min(d, time.Duration(e.boot-b))
		}
	}
	return d
}

// snapshot returns the lease's end on both clocks.
func (l *lease) snapshot() leaseEnd {
	l.mu.Lock()
	defer l.mu.Unlock()
	return leaseEnd{until: l.until, boot: l.boot}
}

// guardError is a refused registration, with the HTTP status to answer:
// 409 the node does not lead in the term named, 429 too many guards, 501
// the daemon cannot make cgroups here (exec goes on without a guard, and
// says so), 503 the daemon stops.
type guardError struct {
	code int
	msg  string
}

func (e *guardError) Error() string { return e.msg }

// acting returns whether the publisher acts as leader in term.
func (gs *guards) acting(term GroupNumber) bool {
	p := &gs.a.pub
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acting && p.actTerm == term
}

// register makes a guard for an exec about to start its command in term,
// with its cgroup, if the node leads in term now. It holds gs.mu while it
// checks the leadership, so that the leadership's end (leadershipEnded,
// which the publisher calls after it stops acting) finds the new guard.
func (gs *guards) register(term GroupNumber, grace, poll time.Duration) (*guard, error) {
	a := gs.a
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.closed {
		return nil, &guardError{http.StatusServiceUnavailable, "the daemon is stopping"}
	}
	st := a.Status()
	if !st.IsLeader() || st.Term != term || !gs.acting(term) {
		now := "does not lead"
		if st.IsLeader() {
			now = "leads in term " + st.Term.String()
		}
		return nil, &guardError{http.StatusConflict, fmt.Sprintf("this node does not lead in term %s (it %s)", term, now)}
	}
	if len(gs.live) >= maxGuards {
		return nil, &guardError{http.StatusTooManyRequests, fmt.Sprintf("%d exec guards already live, the most a daemon keeps", maxGuards)}
	}
	cg, err := gs.createLocked()
	if err != nil {
		return nil, &guardError{http.StatusNotImplemented, "this daemon cannot make a cgroup for the guard: " + err.Error()}
	}
	g := &guard{gs: gs, id: gs.next, term: term, cg: cg, after: poll + grace + guardSlack,
		quorum: st.Expect > 0, done: make(chan struct{})}
	if g.quorum {
		g.end = a.lease.snapshot()
		g.timer = time.AfterFunc(max(g.end.remaining(time.Now())-guardKillMargin, 0), g.due)
	}
	if gs.live == nil {
		gs.live = make(map[uint64]*guard)
	}
	gs.live[g.id] = g
	a.log.Info().Uint64("guard", g.id).Str("term", term.String()).Str("cgroup", cg.Path()).Msg("exec guard registered")
	return g, nil
}

// createLocked makes a new cgroup for a guard, exec-N under the agent's
// own directory, N the guard's ID (gs.next): a name that exists is
// skipped, so that a group the daemon did not make is never used (nor
// killed).
func (gs *guards) createLocked() (*cgroup.Group, error) {
	parent, err := gs.parentLocked()
	if err != nil {
		return nil, err
	}
	for range maxGuards {
		gs.next++ // the guard's ID, and its group's name
		cg, err := cgroup.Create(filepath.Join(parent.Path(), fmt.Sprintf("exec-%d", gs.next)))
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if errors.Is(err, fs.ErrNotExist) && gs.parent != nil {
			// The agent's directory went (removed from outside while
			// empty): make it again.
			gs.parent = nil
			if parent, err = gs.parentLocked(); err != nil {
				return nil, err
			}
			gs.next--
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := cg.Check(); err != nil {
			_ = cg.Remove()
			return nil, err
		}
		return cg, nil
	}
	return nil, fmt.Errorf("cgroup: %d names in %s taken by groups this daemon did not make", maxGuards, parent.Path())
}

// parentLocked returns the agent's own cgroup directory, making it under
// the daemon's cgroup if it does not exist yet.
func (gs *guards) parentLocked() (*cgroup.Group, error) {
	if gs.parent != nil {
		return gs.parent, nil
	}
	base := gs.base
	if base == "" {
		self, err := cgroup.Self()
		if err != nil {
			return nil, err
		}
		base = self
	}
	removeStale(base)
	name := filepath.Join(base, fmt.Sprintf("groupd-%d", os.Getpid()))
	for k := 1; k <= maxGuards; k++ {
		dir := name
		if k > 1 {
			dir = fmt.Sprintf("%s-%d", name, k)
		}
		g, err := cgroup.Create(dir)
		if errors.Is(err, fs.ErrExist) {
			continue // another agent of this process, or one that crashed with this pid
		}
		if err != nil {
			return nil, err
		}
		gs.parent = g
		return g, nil
	}
	return nil, fmt.Errorf("cgroup: %s and %s-2 .. -%d all exist", name, name, maxGuards)
}

// removeStale removes from base the directories groupd-PID and
// groupd-PID-K of daemons that are gone (no process PID): what a daemon
// that was killed left behind. The kernel removes no group that has a
// process in it (or below it), so nothing that runs is touched; a group
// it cannot remove stays.
func removeStale(base string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, ok := guardDirPID(e.Name())
		if !ok || !e.IsDir() || pid == os.Getpid() || processExists(pid) {
			continue
		}
		if g, err := cgroup.Open(filepath.Join(base, e.Name())); err == nil {
			_ = g.Remove()
		}
	}
}

// guardDirPID parses an agent's directory name, groupd-PID or
// groupd-PID-K.
func guardDirPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "groupd-")
	if !ok {
		return 0, false
	}
	rest, k, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(rest)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != rest {
		return 0, false
	}
	if k != "" {
		if n, err := strconv.Atoi(k); err != nil || n < 2 || strconv.Itoa(n) != k {
			return 0, false
		}
	}
	return pid, true
}

// processExists reports whether a process pid exists (in this process's
// pid namespace).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// leadershipEnded is the publisher's call (publish.go, leadership) when
// the node stops acting as leader in term at t, or goes on under a new
// term. Every guard of term gets its kill time: guardKillMargin before the
// latest lease end published (quorum; the lease still holds it, since the
// loop clears it only after reporting the change), or t + poll + grace +
// guardSlack. It does not block: a kill due at once is one write to
// cgroup.kill.
func (gs *guards) leadershipEnded(term GroupNumber, t time.Time) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if len(gs.live) == 0 {
		return
	}
	now := time.Now()
	cur := gs.a.lease.snapshot()
	for _, g := range gs.live {
		if g.term != term || g.stopped || g.ended {
			continue
		}
		g.stopped = true
		var wait time.Duration
		if g.quorum {
			g.end = g.end.later(cur)
			wait = g.end.remaining(now) - guardKillMargin
		} else {
			wait = t.Add(g.after).Sub(now)
		}
		if wait <= 0 {
			g.endLocked("the leadership of term "+term.String()+" ended", true)
			continue
		}
		if g.timer == nil {
			g.timer = time.AfterFunc(wait, g.due)
		} else {
			g.timer.Reset(wait)
		}
	}
}

// due runs on the guard's timer: in quorum mode while the term still
// leads, a renewed lease moves the kill later; otherwise the kill is due.
func (g *guard) due() {
	gs := g.gs
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if g.ended {
		return
	}
	now := time.Now()
	if g.quorum {
		if !g.stopped && gs.acting(g.term) {
			g.end = g.end.later(gs.a.lease.snapshot())
		}
		if r := g.end.remaining(now) - guardKillMargin; r > 0 {
			g.timer.Reset(r) // renewed meanwhile, or fired early
			return
		}
		why := "the lease of term " + g.term.String() + " ran out unrenewed"
		if g.stopped {
			why = "the leadership of term " + g.term.String() + " ended"
		}
		g.endLocked(why+" (the lease's end is "+guardKillMargin.String()+" away)", true)
		return
	}
	g.endLocked(fmt.Sprintf("the leadership of term %s ended %v ago", g.term, g.after), true)
}

// endLocked ends the guard: its stream is told why, and with kill every
// process in its cgroup is killed. Under gs.mu.
func (g *guard) endLocked(why string, kill bool) {
	if g.ended {
		return
	}
	g.ended, g.why = true, why
	if g.timer != nil {
		g.timer.Stop()
	}
	if kill {
		populated, _ := g.cg.Populated()
		g.killAt = time.Now()
		err := g.cg.Kill()
		g.killed = err == nil
		ev := g.gs.a.log.Warn()
		if !populated {
			ev = g.gs.a.log.Info()
		}
		if err != nil {
			ev = g.gs.a.log.Error().Err(err)
		}
		ev.Uint64("guard", g.id).Str("term", g.term.String()).Str("cgroup", g.cg.Path()).Bool("populated", populated).
			Msg("exec guard: killing its cgroup: " + why)
	}
	close(g.done)
}

// release ends a guard whose connection closed: if exec left processes
// in its cgroup it died without stopping them, and they are killed. It
// then waits (up to guardEmptyWait) for the cgroup to empty, and removes
// it.
func (gs *guards) release(g *guard) {
	gs.mu.Lock()
	if g.gone {
		gs.mu.Unlock()
		return
	}
	g.gone = true
	delete(gs.live, g.id)
	if !g.ended {
		if populated, err := g.cg.Populated(); err != nil || populated {
			g.endLocked("exec's connection closed while its command still ran (exec died)", true)
		} else {
			g.endLocked("exec ended the guard", false)
		}
	}
	gs.mu.Unlock()
	gs.cleanup(g.cg)
}

// keepDead kills whatever runs in an ended guard's cgroup, every
// guardWatch, until ctx ends (exec closed the connection) or the agent
// stops: a command exec started into the cgroup just as the guard ended
// does not outlive it.
func (gs *guards) keepDead(ctx context.Context, g *guard) {
	t := time.NewTicker(guardWatch)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		gs.mu.Lock()
		closed := gs.closed
		gs.mu.Unlock()
		if populated, err := g.cg.Populated(); err == nil && populated {
			_ = g.cg.Kill()
			gs.a.log.Warn().Uint64("guard", g.id).Str("cgroup", g.cg.Path()).
				Msg("exec guard: killing a process started into the cgroup after the guard ended")
		} else if err != nil || closed {
			return
		}
	}
}

// cleanup waits for a cgroup to empty and removes it.
func (gs *guards) cleanup(cg *cgroup.Group) {
	ctx, cancel := context.WithTimeout(context.Background(), guardEmptyWait)
	defer cancel()
	if err := cg.WaitEmpty(ctx); err != nil {
		gs.a.log.Warn().Err(err).Msg("exec guard: its cgroup did not empty; left for the agent's stop")
		return
	}
	if err := cg.Remove(); err != nil {
		gs.a.log.Warn().Err(err).Msg("exec guard: removing its cgroup")
	}
}

// close ends every guard, killing its cgroup (the agent stops: nothing
// guards the commands any more), and removes the agent's cgroup
// directory once it is empty. Registration is refused from then on.
func (gs *guards) close() {
	gs.mu.Lock()
	gs.closed = true
	for _, g := range gs.live {
		g.endLocked("the daemon stops", true)
	}
	parent := gs.parent
	gs.mu.Unlock()
	if parent != nil {
		gs.cleanup(parent)
	}
}

// guardRequest is a checked POST /v1/exec body.
type guardRequest struct {
	term        GroupNumber
	grace, poll time.Duration
}

// parseGuardRequest decodes and checks a POST /v1/exec body: one JSON
// object (schema.ExecGuardRequest; unknown fields are ignored, for newer
// clients), the term in its canonical form, grace_ms in 1..60000 and
// poll_ms in 0..60000. Its errors are for the client's eyes.
func parseGuardRequest(body []byte) (guardRequest, error) {
	var req schema.ExecGuardRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return guardRequest{}, fmt.Errorf("bad request body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return guardRequest{}, errors.New("bad request body: more after the JSON object")
	}
	term, err := wire.ParseGroupNumber(req.Term)
	if err != nil || term.IsZero() || term.String() != req.Term {
		return guardRequest{}, fmt.Errorf("bad term %q: want the term GET /v1/leader gave, SEQ.ID", req.Term)
	}
	most := maxGuardTiming.Milliseconds()
	if req.GraceMS < 1 || req.GraceMS > most || req.PollMS < 0 || req.PollMS > most {
		return guardRequest{}, fmt.Errorf("grace_ms must be in 1..%d and poll_ms in 0..%d, got %d and %d", most, most, req.GraceMS, req.PollMS)
	}
	return guardRequest{term: term, grace: time.Duration(req.GraceMS) * time.Millisecond,
		poll: time.Duration(req.PollMS) * time.Millisecond}, nil
}

// serveExec answers POST /v1/exec (schema.ExecGuardRequest): it registers
// a guard and streams schema.ExecGuard lines, the first with the guard's
// cgroup, the last (if the daemon ends the guard) with why, and holds the
// answer open until exec's connection closes.
func (a *Agent) serveExec(w http.ResponseWriter, r *http.Request) {
	// Only the groupd command registers guards. A web page may send a
	// POST to a loopback API too, but not with a JSON content type
	// without the API's consent (CORS preflight), and its browser names
	// its origin.
	if r.Header.Get("Origin") != "" {
		http.Error(w, "POST /v1/exec is not for browsers", http.StatusForbidden)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "POST /v1/exec takes application/json", http.StatusUnsupportedMediaType)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	// The whole body: only then does the server watch the connection,
	// and cancel r.Context() the moment it closes.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxGuardRequest))
	if err != nil {
		code := http.StatusBadRequest
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			code = http.StatusRequestEntityTooLarge
		}
		http.Error(w, "bad request body: "+err.Error(), code)
		return
	}
	req, err := parseGuardRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	g, err := a.guards.register(req.term, req.grace, req.poll)
	if err != nil {
		code := http.StatusInternalServerError
		var ge *guardError
		if errors.As(err, &ge) {
			code = ge.code
		}
		http.Error(w, err.Error(), code)
		return
	}
	defer a.guards.release(g)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	if enc.Encode(schema.ExecGuard{ID: g.id, Term: req.term.String(), Cgroup: g.cg.Path(), Time: time.Now().UTC()}) != nil {
		return
	}
	flusher.Flush()
	select {
	case <-r.Context().Done():
		return
	case <-g.done:
	}
	a.guards.mu.Lock()
	last := schema.ExecGuard{ID: g.id, Term: req.term.String(), End: g.why, Killed: g.killed, Time: time.Now().UTC()}
	a.guards.mu.Unlock()
	if enc.Encode(last) == nil {
		flusher.Flush()
	}
	a.guards.keepDead(r.Context(), g)
}
