package group

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// metrics are one agent's Prometheus metrics. Each agent has its own
// registry, not the global one, so that several agents in one process (the
// integration tests, an embedder running more than one) do not collide;
// /metrics serves it, and Agent.Registry exposes it to embedders.
type metrics struct {
	reg *prometheus.Registry

	events        *prometheus.CounterVec // by reason
	elections     prometheus.Counter
	merges        prometheus.Counter
	recoveries    prometheus.Counter
	roleChanges   *prometheus.CounterVec // by new role
	msgsSent      *prometheus.CounterVec // by type
	bytesSent     *prometheus.CounterVec // by type
	msgsRecv      *prometheus.CounterVec // by type
	bytesRecv     *prometheus.CounterVec // by type
	dropped       *prometheus.CounterVec // by reason
	sendErrors    *prometheus.CounterVec // by reason
	copies        prometheus.Counter
	persistFails  prometheus.Counter
	subDropped    prometheus.Counter
	joins         *prometheus.CounterVec // by result
	state         *prometheus.GaugeVec   // 1 for the current state
	isCoordinator prometheus.Gauge
	groupSeq      prometheus.Gauge
	members       prometheus.Gauge

	created          prometheus.Counter
	leaderChanges    *prometheus.CounterVec // leader-start, leader-stop, leader-term
	degraded         prometheus.Gauge
	duplicateIDs     prometheus.Counter
	timingMismatches prometheus.Counter
	quorumMismatches prometheus.Counter
	quorumVoters     prometheus.Gauge
}

// Drop reasons the runtime adds to wire.DropReasons.
const (
	dropQueueFull   = "queue_full"   // the loop's inbox was full
	dropShed        = "shed"         // a beacon, while the inbox was half full
	dropRateLimited = "rate_limited" // the source address sent over Config.RateLimit
)

// liveGauges are the gauges read when scraped, not set on changes: a
// lease runs out without any change the loop reports.
type liveGauges struct {
	sinceLastChange, gossipAlive func() float64
	// leader and primary are 1 while Status.IsLeader and Status.Primary
	// hold, checked at the moment of the scrape.
	leader, primary func() float64
}

func newMetrics(live liveGauges) *metrics {
	reg := prometheus.NewRegistry()
	f := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "groupd", Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	fv := func(name, help string, label string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "groupd", Name: name, Help: help}, []string{label})
		reg.MustRegister(c)
		return c
	}
	g := func(name, help string) prometheus.Gauge {
		c := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "groupd", Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	m := &metrics{
		reg:          reg,
		events:       fv("events_total", "Changes of the node's view, by reason.", "reason"),
		elections:    f("elections_total", "Elections started after a coordinator failed."),
		merges:       f("merges_total", "Merges this node started: as coordinator, or taking over as a participant that outranks its coordinator."),
		recoveries:   f("recoveries_total", "Groups this node formed while it had none (Recovery): alone, or inviting the nodes it heard."),
		roleChanges:  fv("role_changes_total", "Role changes, by new role.", "role"),
		msgsSent:     fv("messages_sent_total", "Wire messages sent, by type.", "type"),
		bytesSent:    fv("bytes_sent_total", "Wire bytes sent (as on the wire, sealed if keyed), by message type.", "type"),
		msgsRecv:     fv("messages_received_total", "Wire messages received and accepted, by type.", "type"),
		bytesRecv:    fv("bytes_received_total", "Wire bytes received and accepted, by message type.", "type"),
		dropped:      fv("dropped_packets_total", "Received packets dropped, by reason.", "reason"),
		sendErrors:   fv("send_errors_total", "Messages that could not be sent, by reason.", "reason"),
		copies:       f("broadcast_copies_total", "Broadcasts also sent by unicast, to members whose process was never heard over multicast."),
		persistFails: f("persist_failures_total", "Failed saves of the node's state (group-number counter, last group)."),
		subDropped:   f("subscriber_dropped_events_total", "Events not delivered to a slow subscriber."),
		joins:        fv("memberlist_joins_total", "memberlist Join attempts (beacons, seeds, reconnects), by result.", "result"),
		state: func() *prometheus.GaugeVec {
			v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "groupd", Name: "state",
				Help: "1 for the node's current state (normal, election, reorganization), else 0."}, []string{"state"})
			reg.MustRegister(v)
			return v
		}(),
		isCoordinator: g("is_coordinator", "1 if the node coordinates its group."),
		groupSeq:      g("group_seq", "Sequence number of the node's current group."),
		members:       g("members", "Members in the node's current member list."),

		created:          f("groups_created_total", "Group numbers this node created."),
		leaderChanges:    fv("leader_changes_total", "Leadership transitions of this node, by event (leader-start, leader-stop, leader-term).", "event"),
		degraded:         g("degraded", "1 while the node cannot save its state (it creates no group number and steps aside)."),
		duplicateIDs:     f("duplicate_id_total", "Other processes seen using this node's ID."),
		timingMismatches: f("timing_mismatches_total", "Peers seen announcing other intervals than this node's (each peer once per value)."),
		quorumMismatches: f("quorum_mismatches_total", "Peers seen announcing other quorum settings (--expect, --tie-breaker) than this node's (each peer once per value)."),
		quorumVoters:     g("quorum_voters", "The number of voters a quorum is a majority of (--expect, or more when more nodes are known or announced); 0 without --expect."),
	}
	m.leaderChanges.WithLabelValues(ReasonLeaderStart)
	m.leaderChanges.WithLabelValues(ReasonLeaderStop)
	m.leaderChanges.WithLabelValues(ReasonLeaderTerm)
	gf := func(name, help string, f func() float64) {
		if f == nil {
			f = func() float64 { return 0 }
		}
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "groupd", Name: name, Help: help}, f))
	}
	gf("seconds_since_last_change", "Seconds since the node's group last changed.", live.sinceLastChange)
	gf("gossip_alive_members", "Nodes memberlist lists as alive or suspect, this one included.", live.gossipAlive)
	gf("leader", "1 while this node is the leader an application may act on (in quorum mode: while it holds its lease), checked when scraped.", live.leader)
	gf("primary", "1 if the node's group is the primary partition (--expect; a leader: while it holds its lease), checked when scraped; with --expect unset, 1 while Normal.", live.primary)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// Initialise the label sets at zero so that rate() and alerts work
	// from the first scrape.
	for _, t := range wire.Types() {
		for _, v := range []*prometheus.CounterVec{m.msgsSent, m.bytesSent, m.msgsRecv, m.bytesRecv} {
			v.WithLabelValues(t.String())
		}
	}
	for _, r := range append(wire.DropReasons(), dropQueueFull, dropShed, dropRateLimited) {
		m.dropped.WithLabelValues(r)
	}
	for _, s := range []wire.State{wire.StateNormal, wire.StateElection, wire.StateReorganization} {
		m.state.WithLabelValues(s.String())
	}
	m.roleChanges.WithLabelValues("coordinator")
	m.roleChanges.WithLabelValues("participant")
	return m
}

// observe updates the metrics for one change of the node's view.
func (m *metrics) observe(e Event) {
	m.events.WithLabelValues(e.Reason).Inc()
	n := e.New
	// A number a node creates is reported twice with the reason it was
	// created for: when the node starts on it (it goes to Election) and
	// when it adopts the saved number. Count each once.
	switch e.Reason {
	case "election":
		// The start; the winner reports "election" again when it
		// creates its group.
		if e.Old == nil || e.Old.State != wire.StateElection {
			m.elections.Inc()
		}
	case "merge":
		// The start; a takeover stays Normal until its number is
		// saved, so it is counted then.
		if e.Old == nil || e.Old.State != wire.StateElection {
			m.merges.Inc()
		}
	case "recovery":
		// Losing a group is a recovery too; count the groups formed.
		if e.Old != nil && e.Old.Group.IsZero() && !n.Group.IsZero() && n.Role == invitation.Coordinator {
			m.recoveries.Inc()
		}
	}
	if e.Old != nil && e.Old.Role != n.Role {
		m.roleChanges.WithLabelValues(n.Role.String()).Inc()
	}
	for _, s := range []wire.State{wire.StateNormal, wire.StateElection, wire.StateReorganization} {
		v := 0.0
		if s == n.State {
			v = 1
		}
		m.state.WithLabelValues(s.String()).Set(v)
	}
	if n.Role == invitation.Coordinator {
		m.isCoordinator.Set(1)
	} else {
		m.isCoordinator.Set(0)
	}
	m.groupSeq.Set(float64(n.Group.Seq))
	m.members.Set(float64(len(n.Members)))
	if n.Degraded {
		m.degraded.Set(1)
	} else {
		m.degraded.Set(0)
	}
}

// sinceSeconds is the GaugeFunc body for a time that may be zero.
func sinceSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return time.Since(t).Seconds()
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
