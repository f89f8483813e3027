package group

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sort"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// The local HTTP API (read-only, but for exec's guards):
//
//	GET /v1/status   Status as JSON
//	GET /v1/members  []Member as JSON; each with "reach", this node's own
//	                 evidence that the member reaches it (group/reach.go)
//	GET /v1/events   newline-delimited JSON Events, flushed per line; the
//	                 first is a "snapshot"; ends when the client goes away
//	                 or the agent stops
//	GET /v1/leader   200 while this node is the leader to act on (in quorum
//	                 mode: while it holds its lease), else 503; the term in
//	                 X-Groupd-Term; LeaderAnswer as JSON
//	POST /v1/exec    `groupd exec`'s guard over its command (guard.go):
//	                 schema.ExecGuardRequest in (application/json, no
//	                 Origin), a stream of schema.ExecGuard lines out, open
//	                 until exec closes it; 400 a bad body, 409 this node
//	                 does not lead in the term named, 429 too many guards,
//	                 501 no cgroup can be made here, 503 stopping
//	GET /metrics     Prometheus metrics (the agent's own registry)
//	GET /healthz     200 "ok" while the event loop runs and the state can be
//	                 saved; else 503 "not running" or "persist error: ..."
//
// It listens on Config.API: "host:port" (TCP; loopback by default, and a
// non-loopback address is logged as a warning since anyone reaching it can
// read the group's state) or "unix:/path" (a unix socket with mode 0600; a
// stale socket file left by a crash is removed, a live one is an error),
// and serves Handler, or what Config.WrapAPI makes of it (groupd adds its
// live view, GET /ui/).

// openAPI binds the API's listener.
func (a *Agent) openAPI() error {
	network, addr, err := parseAPI(a.cfg.API)
	if err != nil {
		return err
	}
	var ln net.Listener
	switch network {
	case "unix":
		if ln, err = listenUnix(addr); err != nil {
			return err
		}
		a.apiAddr = "unix:" + addr
	default:
		if ln, err = net.Listen("tcp", addr); err != nil {
			return configErrorf("group: Config.API %s: %w", addr, err)
		}
		a.apiAddr = ln.Addr().String()
		if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
			a.log.Warn().Str("api", a.apiAddr).Msg("the local API listens on a non-loopback address: anyone who reaches it can read this node's status")
		}
	}
	a.apiLn = ln
	h := a.Handler()
	if a.cfg.WrapAPI != nil {
		h = a.cfg.WrapAPI(h)
	}
	a.apiSrv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          newStdLogger(a.log.With().Str("component", "api").Logger()),
	}
	return nil
}

// listenUnix listens on a unix socket at path, replacing a stale socket
// file (one nobody answers on) and refusing to touch anything else.
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, configErrorf("group: Config.API unix:%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
			c.Close()
			return nil, configErrorf("group: Config.API unix:%s is in use by another process", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, configErrorf("group: Config.API unix:%s: remove stale socket: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, configErrorf("group: Config.API unix:%s: %w", path, err)
	}
	// The API shows the group's state: owner only. (Listen creates the
	// socket with the umask; tighten it before anyone can use it.)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, configErrorf("group: Config.API unix:%s: chmod: %w", path, err)
	}
	return ln, nil
}

// serveAPI serves the API until the agent releases it.
func (a *Agent) serveAPI() {
	if err := a.apiSrv.Serve(a.apiLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
		a.log.Error().Err(err).Msg("API server stopped")
	}
}

// Handler returns the API's handler, so that an embedder can mount it on
// its own server (Config.API "" then avoids a second listener).
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, a.Status())
	})
	mux.HandleFunc("GET /v1/members", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, a.Members())
	})
	mux.HandleFunc("GET /v1/events", a.serveEvents)
	mux.HandleFunc("GET /v1/leader", a.serveLeader)
	mux.HandleFunc("POST /v1/exec", a.serveExec)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !a.running.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not running\n"))
			return
		}
		if st := a.pub.status(); st.PersistError != "" {
			// The node runs but cannot save: it creates no group number
			// and has stepped aside. A supervisor should look.
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("persist error: " + st.PersistError + "\n"))
			return
		}
		w.Write([]byte("ok\n"))
	})
	if a.cfg.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// serveLeader answers GET /v1/leader (see LeaderAnswer).
func (a *Agent) serveLeader(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	st := a.Status()
	ans := LeaderAnswer{Leader: st.IsLeader(), ID: st.ID, Name: st.Name, Group: st.Group.String(),
		Primary: st.Primary, Expect: st.Expect, Time: now.UTC()}
	if st.State == StateNormal {
		ans.LeaderID, ans.LeaderName = st.Coordinator, st.CoordinatorName
	}
	var ms int64
	if ans.Leader && st.Expect > 0 {
		// Whole milliseconds, rounded down: a lease with less than one
		// left is answered as ended, never as a 200 whose reader must
		// stop at once.
		if ms = a.lease.remaining(now).Milliseconds(); ms < 1 {
			ans.Leader, ans.Primary = false, false
		}
	}
	code := http.StatusServiceUnavailable
	if ans.Leader {
		code = http.StatusOK
		ans.Term = st.Term.String()
		w.Header().Set(schema.TermHeader, ans.Term)
		if st.Expect > 0 {
			ans.LeaseRemainingMS = &ms
		}
	}
	b, err := json.Marshal(ans)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

// serveEvents streams events as NDJSON, one flushed line per event.
func (a *Agent) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	events, cancel := a.Subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	enc := json.NewEncoder(w) // Encode ends each value with a newline
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-events:
			if !ok {
				return // the agent stopped
			}
			if err := enc.Encode(e); err != nil {
				return // the client went away
			}
			flusher.Flush()
		}
	}
}

// Members returns the nodes this agent knows of, sorted by ID: every node
// memberlist knows (alive, suspect, or recently dead or left), every
// member of the current group, and the agent itself. Each one's Reach is
// this agent's own wire evidence of it (see Reach), judged at one instant
// with the agent's configured timing: gossip plays no part in it.
func (a *Agent) Members() []Member {
	st := a.pub.status()
	inGroup := make(map[wire.NodeID]bool, len(st.Members))
	prios := make(map[wire.NodeID]uint8, len(st.Members))
	for i, id := range st.Members {
		inGroup[id] = true
		if i < len(st.MemberPriorities) {
			prios[id] = st.MemberPriorities[i]
		}
	}
	// Memberlist's live view has suspicion, which its events do not
	// report.
	live := make(map[wire.NodeID]string)
	if ml := a.ml.Load(); ml != nil && !a.stopping.Load() {
		for _, n := range ml.Members() {
			if id, ok := parseNodeName(n.Name); ok {
				if n.State == memberlist.StateSuspect {
					live[id] = GossipSuspect
				} else {
					live[id] = GossipAlive
				}
			}
		}
	}
	qm := make(map[wire.NodeID]string, len(st.QuorumMismatches))
	for _, m := range st.QuorumMismatches {
		qm[m.Peer] = m.Detail
	}
	book := a.peers.snapshot()
	// One instant for every member's reach, taken after the snapshot so
	// that no evidence in it is from the future.
	now := time.Now()
	coord := book[st.Coordinator].heard
	reach := func(id wire.NodeID) Reach {
		return reachOf(relationOf(st, a.id, id, inGroup[id]), book[id].heard, coord, now, a.cfg.Timing, st.Expect > 0)
	}
	out := []Member{{
		ID: a.id, Name: a.name, Priority: a.cfg.Priority, Addr: a.Addrs().Wire,
		Gossip: GossipAlive, InGroup: inGroup[a.id], Group: st.Group.String(), State: st.State.String(),
		Leader: st.Leader, Degraded: st.Degraded, Tags: copyTags(a.cfg.Tags), Reach: reach(a.id),
	}}
	seen := map[wire.NodeID]bool{a.id: true}
	add := func(id wire.NodeID) {
		if seen[id] {
			return
		}
		seen[id] = true
		p := book[id]
		m := Member{ID: id, Priority: p.priority, Addr: p.addr, InGroup: inGroup[id], Gossip: p.gossip, Reach: reach(id)}
		if g, ok := live[id]; ok {
			m.Gossip = g
		} else if m.Gossip == GossipAlive {
			m.Gossip = GossipDead // gone from memberlist since its last event
		}
		if m.Gossip == "" {
			// A group member memberlist does not know (yet):
			// nothing vouches for it.
			m.Gossip = GossipSuspect
		}
		if prio, ok := prios[id]; ok && !p.hasPrio {
			m.Priority = prio
		}
		if d, ok := qm[id]; ok {
			m.Quorum = d
		}
		if md := p.meta; md != nil {
			m.Name, m.Tags = md.Name, copyTags(md.Tags)
			m.Group, m.State, m.Leader, m.Degraded = md.Group.String(), md.State.String(), md.Leader, md.Degraded
		}
		if m.Gossip == GossipDead || m.Gossip == GossipLeft {
			// Its meta is what it said before it stopped: it leads
			// nothing now.
			m.Leader = false
		}
		if m.Tags == nil {
			m.Tags = map[string]string{}
		}
		out = append(out, m)
	}
	for id := range live {
		add(id)
	}
	for id, p := range book {
		if p.gossip != "" {
			add(id)
		}
	}
	for _, id := range st.Members {
		add(id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func copyTags(t map[string]string) map[string]string {
	out := make(map[string]string, len(t))
	for k, v := range t {
		out[k] = v
	}
	return out
}
