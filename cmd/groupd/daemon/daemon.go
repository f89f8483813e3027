// Package daemon is what `groupd run` adds to the library, package group:
// the --on-change hook runner (hooks.go), the live view at /ui/ on the
// agent's API, and systemd's readiness and watchdog (notify.go). It is
// built only on group's public API (Config.OnEvent, Config.BeforeLeave,
// Config.WrapAPI, Agent.Status, Agent.NameOf, Agent.Registry, Subscribe,
// LoopTurned), so that an embedder can do all the daemon does, and the
// library runs no shell command and serves no page.
//
// Use: New, then Configure the agent's Config, group.New, Attach the
// agent, run it (beside a Notifier), and Stop once Run has returned.
package daemon

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/ui"
)

// DefaultHookTimeout bounds one run of the --on-change hook: long enough
// for a VIP move or a service reload.
const DefaultHookTimeout = 10 * time.Second

// Options are the daemon's own settings, beside the agent's group.Config.
type Options struct {
	// OnChange is a shell command (run with /bin/sh -c) run on every change
	// of group, role, primary or degraded state, when the node becomes
	// Normal or is confirmed again, and once per leadership transition
	// (--on-change; hooks.go lists its environment). "" runs none.
	OnChange string
	// HookTimeout bounds one run of OnChange; its process group is killed
	// after it (--hook-timeout). Zero means DefaultHookTimeout.
	HookTimeout time.Duration
	// Logger receives the daemon's logs (component=hooks).
	Logger zerolog.Logger
}

// Daemon is the daemon's part of one agent.
type Daemon struct {
	opts  Options
	m     *hookMetrics
	hooks *hookRunner // nil without OnChange, or before Attach
}

// New returns the daemon's part for opts.
func New(opts Options) *Daemon {
	if opts.HookTimeout == 0 {
		opts.HookTimeout = DefaultHookTimeout
	}
	return &Daemon{opts: opts, m: newHookMetrics()}
}

// Configure sets in cfg what the daemon needs of the agent: its events, for
// the hook (Config.OnEvent), and its API, to serve the live view at /ui/
// beside it (Config.WrapAPI).
func (d *Daemon) Configure(cfg *group.Config) {
	if d.opts.OnChange != "" {
		cfg.OnEvent = d.onEvent
		cfg.BeforeLeave = d.beforeLeave
	}
	cfg.WrapAPI = WithUI
}

// Attach ties the daemon to the agent group.New made of the configured
// Config, before its Run: the hook's metrics join the agent's registry
// (/metrics) and the hook runner starts.
func (d *Daemon) Attach(a *group.Agent) error {
	if err := d.m.register(a.Registry()); err != nil {
		return err
	}
	if d.opts.OnChange == "" {
		return nil
	}
	log := d.opts.Logger.With().Str("component", "hooks").Uint64("node", uint64(a.ID())).Logger()
	r := newHookRunner(d.opts.OnChange, d.opts.HookTimeout, log, d.m)
	r.leads = func(term group.GroupNumber) bool {
		st := a.Status()
		return st.IsLeader() && st.Term == term
	}
	r.nameOf = a.NameOf
	d.hooks = r
	return nil
}

// onEvent is Config.OnEvent: it queues the events that run the hook, and
// never blocks.
func (d *Daemon) onEvent(e group.Event) {
	if d.hooks != nil && hookWorthy(e) {
		d.hooks.enqueue(e)
	}
}

// beforeLeave is Config.BeforeLeave: Run stops, and a stopping leader's
// leader-stop, queued, gets to run (and the queue to empty) before the
// other nodes hear of the leave, until ctx ends (a second).
func (d *Daemon) beforeLeave(ctx context.Context) {
	if d.hooks != nil {
		d.hooks.drain(ctx)
	}
}

// Stop ends the hook runner once the agent's Run has returned: a hook
// still running is killed and the queued ones are dropped.
func (d *Daemon) Stop() {
	if d.hooks != nil {
		d.hooks.stop()
	}
}

// WithUI wraps the agent's API handler with the live view (package ui,
// embedded) at /ui/; every other path is the agent's. The page only reads
// /v1/status, /v1/members and /v1/events, with the same access rules:
// whoever can read the API can see it. It answers GET (and HEAD) only.
func WithUI(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.Handle("GET /ui/", ui.Handler())
	mux.Handle("GET /ui", ui.Handler())
	// Any other method: 405, as a method-only pattern answers it.
	notAllowed := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
	}
	mux.HandleFunc("/ui/", notAllowed)
	mux.HandleFunc("/ui", notAllowed)
	return mux
}

// hookMetrics count the hook's runs, in the agent's registry.
type hookMetrics struct {
	hookRuns, hookFailures, hookDropped prometheus.Counter
}

func newHookMetrics() *hookMetrics {
	f := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "groupd", Name: name, Help: help})
	}
	return &hookMetrics{
		hookRuns:     f("hook_runs_total", "Runs of the --on-change hook."),
		hookFailures: f("hook_failures_total", "Runs of the --on-change hook that failed or timed out."),
		hookDropped:  f("hook_coalesced_total", "Hook events merged into a later one because the queue was full."),
	}
}

func (m *hookMetrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.hookRuns, m.hookFailures, m.hookDropped} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
