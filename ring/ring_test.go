package ring

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func members(ids ...wire.NodeID) []wire.Member {
	out := make([]wire.Member, len(ids))
	for i, id := range ids {
		out[i] = wire.Member{ID: id, Priority: 100}
	}
	return out
}

var grp = wire.GroupNumber{Seq: 4, ID: 9}

func machine(t *testing.T, self wire.NodeID, mutate func(*Config), cands ...wire.NodeID) *Machine {
	t.Helper()
	cfg := Config{
		Self: wire.Member{ID: self, Priority: 100}, Group: grp, Candidates: members(cands...),
		HopTimeout: 100 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond, MaxRounds: 2,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Short constructors for the messages of round r about candidate c.
func elect(r uint32, c wire.NodeID) wire.RingElection {
	return wire.RingElection{Group: grp, Round: r, Candidate: wire.Member{ID: c, Priority: 100}}
}

func elected(r uint32, c wire.NodeID) wire.RingElected {
	return wire.RingElected{Group: grp, Round: r, Leader: wire.Member{ID: c, Priority: 100}}
}

func ack(of wire.Type, r uint32, c wire.NodeID) wire.RingAck {
	return wire.RingAck{Group: grp, Of: of, Round: r, Candidate: wire.Member{ID: c, Priority: 100}}
}

// describe prints a body briefly: "Election(5 r1)", "Ack(Elected 5 r1)".
func describe(b wire.Body) string {
	switch b := b.(type) {
	case wire.RingElection:
		return fmt.Sprintf("Election(%d r%d)", b.Candidate.ID, b.Round)
	case wire.RingElected:
		return fmt.Sprintf("Elected(%d r%d)", b.Leader.ID, b.Round)
	case wire.RingAck:
		return fmt.Sprintf("Ack(%s %d r%d)", strings.TrimPrefix(b.Of.String(), "Ring"), b.Candidate.ID, b.Round)
	}
	return b.String()
}

func outbox(m *Machine) string {
	var s []string
	for _, o := range m.Outbox() {
		s = append(s, fmt.Sprintf("%d:%s", o.To, describe(o.Body)))
	}
	slices.Sort(s)
	return strings.Join(s, " ")
}

func TestTransitions(t *testing.T) {
	announce := func(c *Config) { c.Announce = true }
	other := wire.GroupNumber{Seq: 3, ID: 9}
	cases := []struct {
		name    string
		m       func(t *testing.T) *Machine
		input   func(m *Machine)
		phase   Phase
		sent    string
		leader  wire.NodeID
		skipped []wire.NodeID
	}{
		// Starting.
		{"start sends my candidacy to my successor", func(t *testing.T) *Machine { return machine(t, 2, nil, 1, 2, 3, 5) },
			func(m *Machine) { m.Start(ms(0)) }, Electing, "3:Election(2 r1)", 0, nil},
		{"the highest candidate's successor is the lowest", func(t *testing.T) *Machine { return machine(t, 5, nil, 1, 2, 5) },
			func(m *Machine) { m.Start(ms(0)) }, Electing, "1:Election(5 r1)", 0, nil},
		{"alone: wins at once", func(t *testing.T) *Machine { return machine(t, 4, announce, 4) },
			func(m *Machine) { m.Start(ms(0)) }, Won, "", 4, nil},
		{"Start is idempotent", func(t *testing.T) *Machine { return machine(t, 2, nil, 1, 3) },
			func(m *Machine) { m.Start(ms(0)); m.Outbox(); m.Start(ms(1)) }, Electing, "", 0, nil},
		{"Start after joining an election does nothing", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4, 5) },
			func(m *Machine) { m.Step(ms(0), 1, elect(1, 5)); m.Outbox(); m.Start(ms(1)) }, Electing, "", 0, nil},

		// RingElection: forward, replace, suppress, win.
		{"a higher candidate is sent on", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4, 5) },
			func(m *Machine) { m.Step(ms(0), 1, elect(1, 5)) }, Electing, "1:Ack(Election 5 r1) 4:Election(5 r1)", 0, nil},
		{"a lower candidate is replaced by mine", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4, 5) },
			func(m *Machine) { m.Step(ms(0), 1, elect(1, 1)) }, Electing, "1:Ack(Election 1 r1) 4:Election(3 r1)", 0, nil},
		{"a lower candidate is suppressed once mine is sent", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4, 5) },
			func(m *Machine) { m.Start(ms(0)); m.Outbox(); m.Step(ms(1), 1, elect(1, 1)) }, Electing, "1:Ack(Election 1 r1)", 0, nil},
		{"a candidate below one I sent on is suppressed", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4, 5, 6) },
			func(m *Machine) { m.Step(ms(0), 1, elect(1, 6)); m.Outbox(); m.Step(ms(1), 1, elect(1, 5)) }, Electing, "1:Ack(Election 5 r1)", 0, nil},
		{"a higher candidate after mine is sent on", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4, 5, 6) },
			func(m *Machine) { m.Start(ms(0)); m.Outbox(); m.Step(ms(1), 1, elect(1, 6)) }, Electing, "1:Ack(Election 6 r1) 4:Election(6 r1)", 0, nil},
		{"a duplicate is acknowledged again, not sent on", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4, 5) },
			func(m *Machine) { m.Step(ms(0), 1, elect(1, 5)); m.Outbox(); m.Step(ms(1), 1, elect(1, 5)) }, Electing, "1:Ack(Election 5 r1)", 0, nil},
		{"my candidacy back round: won", func(t *testing.T) *Machine { return machine(t, 5, nil, 1, 3) },
			func(m *Machine) { m.Start(ms(0)); m.Outbox(); m.Step(ms(3), 3, elect(1, 5)) }, Won, "3:Ack(Election 5 r1)", 5, nil},
		{"Announce: the winner sends RingElected", func(t *testing.T) *Machine { return machine(t, 5, announce, 1, 3) },
			func(m *Machine) { m.Start(ms(0)); m.Outbox(); m.Step(ms(3), 3, elect(1, 5)) }, Won, "1:Elected(5 r1) 3:Ack(Election 5 r1)", 5, nil},
		{"a copy of a candidacy I never sent wins nothing", func(t *testing.T) *Machine { return machine(t, 5, announce, 1, 3) },
			func(m *Machine) { m.Step(ms(0), 3, elect(1, 5)) }, Electing, "3:Ack(Election 5 r1)", 0, nil},
		{"a second copy after winning is only acknowledged", func(t *testing.T) *Machine { return machine(t, 5, announce, 1, 3) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Step(ms(3), 3, elect(1, 5))
				m.Outbox()
				m.Step(ms(4), 3, elect(1, 5))
			}, Won, "3:Ack(Election 5 r1)", 5, nil},

		// RingElected.
		{"RingElected: lost, leader recorded, sent on", func(t *testing.T) *Machine { return machine(t, 3, announce, 1, 4, 5) },
			func(m *Machine) { m.Step(ms(0), 1, elected(1, 5)) }, Lost, "1:Ack(Elected 5 r1) 4:Elected(5 r1)", 5, nil},
		{"RingElected is sent on to the winner itself", func(t *testing.T) *Machine { return machine(t, 4, announce, 1, 3, 5) },
			func(m *Machine) { m.Step(ms(0), 3, elected(1, 5)) }, Lost, "3:Ack(Elected 5 r1) 5:Elected(5 r1)", 5, nil},
		{"RingElected back at the winner stops", func(t *testing.T) *Machine { return machine(t, 5, announce, 1, 3) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Step(ms(3), 3, elect(1, 5))
				m.Outbox()
				m.Step(ms(6), 3, elected(1, 5))
			}, Won, "3:Ack(Elected 5 r1)", 5, nil},
		{"a duplicate RingElected is not sent on", func(t *testing.T) *Machine { return machine(t, 3, announce, 1, 4, 5) },
			func(m *Machine) { m.Step(ms(0), 1, elected(1, 5)); m.Outbox(); m.Step(ms(1), 1, elected(1, 5)) }, Lost, "1:Ack(Elected 5 r1)", 5, nil},
		{"a RingElected below a candidate I sent on is suppressed", func(t *testing.T) *Machine { return machine(t, 3, announce, 1, 4, 5, 6) },
			func(m *Machine) { m.Step(ms(0), 1, elect(1, 6)); m.Outbox(); m.Step(ms(1), 1, elected(1, 5)) }, Electing, "1:Ack(Elected 5 r1)", 0, nil},
		{"a higher RingElected overrides my win", func(t *testing.T) *Machine { return machine(t, 5, announce, 1, 3, 6) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Step(ms(3), 3, elect(1, 5))
				m.Outbox()
				m.Step(ms(6), 3, elected(1, 6))
			}, Lost, "3:Ack(Elected 6 r1) 6:Elected(6 r1)", 6, nil},
		{"reordered: RingElected before its RingElection", func(t *testing.T) *Machine { return machine(t, 3, announce, 1, 4, 5) },
			func(m *Machine) { m.Step(ms(0), 1, elected(1, 5)); m.Outbox(); m.Step(ms(1), 1, elect(1, 5)) }, Lost, "1:Ack(Election 5 r1)", 5, nil},
		{"reordered: a lower candidate after the result", func(t *testing.T) *Machine { return machine(t, 3, announce, 1, 4, 5) },
			func(m *Machine) { m.Step(ms(0), 1, elected(1, 5)); m.Outbox(); m.Step(ms(1), 1, elect(1, 1)) }, Lost, "1:Ack(Election 1 r1)", 5, nil},

		// RingAck and skipping.
		{"no ack within HopTimeout: the successor is skipped", func(t *testing.T) *Machine { return machine(t, 2, nil, 1, 3, 5) },
			func(m *Machine) { m.Start(ms(0)); m.Outbox(); m.Tick(ms(99)); m.Tick(ms(100)) }, Electing, "5:Election(2 r1)", 0, []wire.NodeID{3}},
		{"an ack stops the wait", func(t *testing.T) *Machine { return machine(t, 2, nil, 1, 3, 5) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Outbox()
				m.Step(ms(2), 3, ack(wire.TypeRingElection, 1, 2))
				m.Tick(ms(100))
			}, Electing, "", 0, nil},
		{"an ack from another node is ignored", func(t *testing.T) *Machine { return machine(t, 2, nil, 1, 3, 5) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Outbox()
				m.Step(ms(2), 5, ack(wire.TypeRingElection, 1, 2))
				m.Tick(ms(100))
			}, Electing, "5:Election(2 r1)", 0, []wire.NodeID{3}},
		{"an ack for another candidate is ignored", func(t *testing.T) *Machine { return machine(t, 2, nil, 1, 3, 5) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Outbox()
				m.Step(ms(2), 3, ack(wire.TypeRingElection, 1, 5))
				m.Step(ms(2), 3, ack(wire.TypeRingElected, 1, 2))
				m.Tick(ms(100))
			}, Electing, "5:Election(2 r1)", 0, []wire.NodeID{3}},
		{"RingElected skips a dead successor too", func(t *testing.T) *Machine { return machine(t, 3, announce, 1, 4, 5) },
			func(m *Machine) { m.Step(ms(0), 1, elected(1, 5)); m.Outbox(); m.Tick(ms(100)) }, Lost, "5:Elected(5 r1)", 5, []wire.NodeID{4}},
		{"every successor skipped: the only survivor wins", func(t *testing.T) *Machine { return machine(t, 2, announce, 1, 3) },
			func(m *Machine) { m.Start(ms(0)); m.Tick(ms(100)); m.Outbox(); m.Tick(ms(200)) }, Won, "", 2, []wire.NodeID{1, 3}},
		{"every successor skipped while sending a winner on: I win", func(t *testing.T) *Machine { return machine(t, 2, announce, 1, 3) },
			func(m *Machine) { m.Step(ms(0), 1, elected(1, 3)); m.Tick(ms(100)); m.Outbox(); m.Tick(ms(200)) }, Won, "", 2, []wire.NodeID{1, 3}},
		{"a message from a skipped node revives it", func(t *testing.T) *Machine { return machine(t, 2, nil, 1, 3, 5) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Tick(ms(100))
				m.Step(ms(101), 3, ack(wire.TypeRingElection, 1, 2)) // late
				m.Outbox()
				m.Step(ms(102), 1, elect(1, 5))
			}, Electing, "1:Ack(Election 5 r1) 3:Election(5 r1)", 0, nil},

		// Filtering.
		{"another group is ignored", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4) },
			func(m *Machine) {
				m.Step(ms(0), 1, wire.RingElection{Group: other, Round: 1, Candidate: wire.Member{ID: 1, Priority: 100}})
			}, Idle, "", 0, nil},
		{"a stranger is ignored", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4) },
			func(m *Machine) { m.Step(ms(0), 7, elect(1, 7)) }, Idle, "", 0, nil},
		{"round 0 and candidate 0 are ignored", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4) },
			func(m *Machine) {
				m.Step(ms(0), 1, elect(0, 1))
				m.Step(ms(0), 1, elect(1, 0))
				m.Step(ms(0), 1, elected(0, 4))
			}, Idle, "", 0, nil},
		{"other message types are ignored", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4) },
			func(m *Machine) { m.Step(ms(0), 1, wire.Election{Group: grp}) }, Idle, "", 0, nil},

		// Rounds.
		{"no result within ElectionTimeout: a new round", func(t *testing.T) *Machine { return machine(t, 2, nil, 3) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Step(ms(2), 3, ack(wire.TypeRingElection, 1, 2))
				m.Outbox()
				m.Tick(ms(500))
			}, Electing, "3:Election(2 r2)", 0, nil},
		{"MaxRounds own rounds fail", func(t *testing.T) *Machine { return machine(t, 2, nil, 3) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Step(ms(2), 3, ack(wire.TypeRingElection, 1, 2))
				m.Tick(ms(500))
				m.Step(ms(502), 3, ack(wire.TypeRingElection, 2, 2))
				m.Outbox()
				m.Tick(ms(1000))
			}, Failed, "", 0, nil},
		{"a failed machine ignores everything", func(t *testing.T) *Machine { return machine(t, 2, func(c *Config) { c.MaxRounds = 1 }, 3) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Step(ms(2), 3, ack(wire.TypeRingElection, 1, 2))
				m.Tick(ms(500))
				m.Outbox()
				m.Step(ms(501), 3, elect(5, 3))
			}, Failed, "", 0, nil},
		{"a joiner starts its own round when nothing comes", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4, 5) },
			func(m *Machine) {
				m.Step(ms(0), 1, elect(1, 5))
				m.Step(ms(1), 4, ack(wire.TypeRingElection, 1, 5))
				m.Outbox()
				m.Tick(ms(500))
			}, Electing, "4:Election(3 r2)", 0, nil},
		{"an earlier round is acknowledged and dropped", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4, 5) },
			func(m *Machine) { m.Step(ms(0), 1, elect(2, 1)); m.Outbox(); m.Step(ms(1), 1, elect(1, 5)) }, Electing, "1:Ack(Election 5 r1)", 0, nil},
		{"a later round forgets what I sent on", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 4, 5) },
			func(m *Machine) { m.Step(ms(0), 1, elect(1, 5)); m.Outbox(); m.Step(ms(1), 1, elect(2, 1)) }, Electing, "1:Ack(Election 1 r2) 4:Election(3 r2)", 0, nil},
		{"a later round reopens a result", func(t *testing.T) *Machine { return machine(t, 3, announce, 1, 4, 5) },
			func(m *Machine) { m.Step(ms(0), 1, elected(1, 5)); m.Outbox(); m.Step(ms(1), 1, elect(2, 1)) }, Electing, "1:Ack(Election 1 r2) 4:Election(3 r2)", 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m(t)
			tc.input(m)
			if m.Phase() != tc.phase {
				t.Errorf("phase %s, want %s", m.Phase(), tc.phase)
			}
			if got := outbox(m); got != tc.sent {
				t.Errorf("sent %q, want %q", got, tc.sent)
			}
			if m.Leader() != tc.leader {
				t.Errorf("leader %d, want %d", m.Leader(), tc.leader)
			}
			if got := m.Skipped(); !slices.Equal(got, tc.skipped) {
				t.Errorf("skipped %v, want %v", got, tc.skipped)
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Self: wire.Member{ID: 1}, HopTimeout: 0, ElectionTimeout: time.Second},
		{Self: wire.Member{ID: 1}, HopTimeout: time.Second, ElectionTimeout: -1},
		{Self: wire.Member{ID: 0}, HopTimeout: time.Second, ElectionTimeout: time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// TestRingOrder checks the ring goes up by rank (priority, then ID) from
// self and wraps, without duplicates or ID 0.
func TestRingOrder(t *testing.T) {
	m, err := New(Config{
		Self: wire.Member{ID: 2, Priority: 100},
		Candidates: []wire.Member{
			{ID: 1, Priority: 200}, {ID: 3, Priority: 100}, {ID: 5, Priority: 50},
			{ID: 3, Priority: 100}, {ID: 0, Priority: 255}, {ID: 2, Priority: 100}, {ID: 9, Priority: 100},
		},
		HopTimeout: time.Second, ElectionTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Ring(), []wire.NodeID{3, 9, 1, 5}; !slices.Equal(got, want) {
		t.Fatalf("ring %v, want %v", got, want)
	}
}

// TestDeadline checks the machine asks to be ticked for the first hop
// timeout, then for the round's end once the hop is acknowledged, and not
// at all once the election is over.
func TestDeadline(t *testing.T) {
	m := machine(t, 2, nil, 2, 3)
	if !m.Deadline().IsZero() {
		t.Fatal("idle machine has a deadline")
	}
	m.Start(ms(0))
	if got := m.Deadline(); !got.Equal(ms(100)) {
		t.Fatalf("deadline %v, want +100ms", got.Sub(t0))
	}
	m.Step(ms(1), 3, ack(wire.TypeRingElection, 1, 2))
	if got := m.Deadline(); !got.Equal(ms(500)) {
		t.Fatalf("deadline %v, want +500ms", got.Sub(t0))
	}
	m.Step(ms(2), 3, elect(1, 3))
	m.Step(ms(3), 3, elected(1, 3))
	if m.Phase() != Lost {
		t.Fatalf("phase %s", m.Phase())
	}
	// Lost, but RingElected went on to 3 and waits for its ack.
	if got := m.Deadline(); !got.Equal(ms(103)) {
		t.Fatalf("deadline %v, want +103ms", got.Sub(t0))
	}
	m.Step(ms(4), 3, ack(wire.TypeRingElected, 1, 3))
	if got := m.Deadline(); !got.IsZero() {
		t.Fatalf("deadline %v after the election", got.Sub(t0))
	}
}

// ---- A reliable network, to count messages -------------------------------

const (
	delay      = time.Millisecond // every message takes exactly this long
	hopTimeout = 10 * delay
)

type scenario struct {
	n        int           // candidates 1..n, equal priority (rank = ID)
	starters []wire.NodeID // call Start at time 0, in this order
	crashed  []wire.NodeID // dead from the start: never start, drop what they receive
	// crashAfterCandidacy dies right after sending its own RingElection
	// (the messages already sent are delivered).
	crashAfterCandidacy wire.NodeID
	noAnnounce          bool // groupd mode: run until just before ElectionTimeout
}

type result struct {
	election, elected, acks int
	last                    time.Duration // when the last RingElection/RingElected reached a live node
	ms                      []*Machine    // by ID; nil at 0
	dead                    []bool
}

// protocol is the seeds' message count: RingElection and RingElected.
func (r result) protocol() int { return r.election + r.elected }

func (r result) String() string {
	return fmt.Sprintf("Election %d + Elected %d = %d (acks %d) in %v", r.election, r.elected, r.protocol(), r.acks, r.last)
}

// run is a tiny deterministic network: FIFO delivery after a fixed delay,
// ticks at each machine's deadline, no loss.
func run(t *testing.T, sc scenario) result {
	t.Helper()
	const electionTimeout = time.Second
	g := wire.GroupNumber{Seq: 7, ID: wire.NodeID(sc.n + 1)} // the failed coordinator's group
	cands := members()
	for id := 1; id <= sc.n; id++ {
		cands = append(cands, wire.Member{ID: wire.NodeID(id), Priority: wire.DefaultPriority})
	}
	r := result{ms: make([]*Machine, sc.n+1), dead: make([]bool, sc.n+1)}
	for id := 1; id <= sc.n; id++ {
		m, err := New(Config{
			Self: cands[id-1], Group: g, Candidates: cands,
			HopTimeout: hopTimeout, ElectionTimeout: electionTimeout, MaxRounds: 3,
			Announce: !sc.noAnnounce,
		})
		if err != nil {
			t.Fatal(err)
		}
		r.ms[id] = m
	}
	for _, id := range sc.crashed {
		r.dead[id] = true
	}
	type msg struct {
		at       time.Time
		from, to wire.NodeID
		body     wire.Body
	}
	var q []msg // FIFO: equal delays keep it sorted by time
	now := t0
	drain := func(from wire.NodeID) {
		for _, s := range r.ms[from].Outbox() {
			switch b := s.Body.(type) {
			case wire.RingElection:
				r.election++
				if from == sc.crashAfterCandidacy && b.Candidate.ID == from {
					r.dead[from] = true
				}
			case wire.RingElected:
				r.elected++
			case wire.RingAck:
				r.acks++
			}
			q = append(q, msg{at: now.Add(delay), from: from, to: s.To, body: s.Body})
		}
	}
	for _, id := range sc.starters {
		r.ms[id].Start(now)
		drain(id)
	}
	horizon := t0.Add(electionTimeout - delay)
	for steps := 0; ; steps++ {
		if steps > 100*sc.n*sc.n+1000 {
			t.Fatalf("no end after %d steps", steps)
		}
		next := time.Time{}
		if len(q) > 0 {
			next = q[0].at
		}
		var tick wire.NodeID
		for id := 1; id <= sc.n; id++ {
			if d := r.ms[id].Deadline(); !r.dead[id] && !d.IsZero() && (next.IsZero() || d.Before(next)) {
				next, tick = d, wire.NodeID(id)
			}
		}
		if next.IsZero() || sc.noAnnounce && next.After(horizon) {
			break
		}
		now = next
		if tick != 0 {
			r.ms[tick].Tick(now)
			drain(tick)
			continue
		}
		m := q[0]
		q = q[1:]
		if r.dead[m.to] {
			continue
		}
		if m.body.Type() != wire.TypeRingAck {
			r.last = now.Sub(t0)
		}
		r.ms[m.to].Step(now, m.from, m.body)
		drain(m.to)
	}
	return r
}

// agree checks that the highest live node won and every other live node
// lost to it.
func agree(t *testing.T, r result, want wire.NodeID) {
	t.Helper()
	for id := 1; id < len(r.ms); id++ {
		m := r.ms[id]
		if r.dead[id] {
			continue
		}
		wantPhase := Lost
		if wire.NodeID(id) == want {
			wantPhase = Won
		}
		if m.Phase() != wantPhase || m.Leader() != want {
			t.Errorf("node %d: %s with leader %d, want %s with leader %d", id, m.Phase(), m.Leader(), wantPhase, want)
		}
	}
}

// TestSeedFormulas runs the standalone election (Announce) on a reliable
// network for n = 2..20 and checks the lecture notes' counts: 2n messages
// when the would-be leader starts, 3n−1 when its ring successor (the lowest
// candidate) starts, and 3n−k when the k-th lowest starts. Acks are
// counted apart: one per hop. Time is one delay per message.
func TestSeedFormulas(t *testing.T) {
	t.Logf("%3s %14s %14s %14s %14s", "n", "best (k=n)", "2n", "worst (k=1)", "3n-1")
	for n := 2; n <= 20; n++ {
		var row [2]int
		for k := 1; k <= n; k++ {
			r := run(t, scenario{n: n, starters: []wire.NodeID{wire.NodeID(k)}})
			agree(t, r, wire.NodeID(n))
			want := 3*n - k
			if r.protocol() != want || r.acks != want || r.elected != n || r.last != time.Duration(want)*delay {
				t.Errorf("n=%d k=%d: %v; want %d messages, %d acks, %d Elected, in %v", n, k, r, want, want, n, time.Duration(want)*delay)
			}
			switch k {
			case n:
				row[0] = r.protocol()
			case 1:
				row[1] = r.protocol()
			}
		}
		if row[0] != 2*n || row[1] != 3*n-1 {
			t.Errorf("n=%d: best %d (want 2n = %d), worst %d (want 3n-1 = %d)", n, row[0], 2*n, row[1], 3*n-1)
		}
		t.Logf("%3d %14d %14d %14d %14d", n, row[0], 2*n, row[1], 3*n-1)
	}
}

// TestGroupdMode runs without Announce: the winner's own candidacy comes back
// and nobody else learns the result from the ring (the winner's Invitation
// does that), so the count is the seeds' minus the n RingElected.
func TestGroupdMode(t *testing.T) {
	for n := 2; n <= 20; n++ {
		for _, k := range []int{1, n / 2, n} {
			if k == 0 {
				continue
			}
			r := run(t, scenario{n: n, starters: []wire.NodeID{wire.NodeID(k)}, noAnnounce: true})
			if want := 2*n - k; r.protocol() != want || r.elected != 0 {
				t.Errorf("n=%d k=%d: %v; want %d RingElection and no RingElected", n, k, r, want)
			}
			for id := 1; id <= n; id++ {
				want := Electing
				if id == n {
					want = Won
				}
				if p := r.ms[id].Phase(); p != want {
					t.Errorf("n=%d k=%d: node %d is %s, want %s", n, k, id, p, want)
				}
			}
		}
	}
}

// TestConcurrentStarters: several nodes start at once. Suppression lets only
// the highest candidate's election circulate: one RingElected circulation,
// one winner, everyone agrees.
func TestConcurrentStarters(t *testing.T) {
	for n := 2; n <= 20; n++ {
		subsets := map[string][]wire.NodeID{}
		var all, odd, low []wire.NodeID
		for id := 1; id <= n; id++ {
			all = append(all, wire.NodeID(id))
			if id%2 == 1 {
				odd = append(odd, wire.NodeID(id))
			}
			if id <= (n+1)/2 {
				low = append(low, wire.NodeID(id))
			}
		}
		subsets["all"] = all
		subsets["odd"] = odd
		subsets["lower half"] = low
		subsets["highest and lowest"] = []wire.NodeID{wire.NodeID(n), 1}
		for name, starters := range subsets {
			r := run(t, scenario{n: n, starters: starters})
			agree(t, r, wire.NodeID(n))
			if r.elected != n {
				t.Errorf("n=%d %s: %d RingElected, want one circulation (%d)", n, name, r.elected, n)
			}
			// A bound that holds for these start patterns (equal
			// delays): each extra starter adds at most one hop before
			// its candidacy meets a higher one.
			if bound := 3*n - 1 + len(starters) - 1; r.protocol() > bound {
				t.Errorf("n=%d %s: %v, more than %d", n, name, r, bound)
			}
			if name == "all" && r.protocol() != 3*n-1 {
				t.Errorf("n=%d all: %v, want n own candidacies + n-1 hops of the highest + n Elected = 3n-1", n, r)
			}
		}
	}
}

// TestCrashedNode: one node is dead from the start. Its predecessor's first
// message to it times out and goes to the next node instead, which costs one
// message and one HopTimeout; the rest is the seeds' count over the n-1 live
// nodes. This covers the would-be leader being dead (x = n).
func TestCrashedNode(t *testing.T) {
	for n := 3; n <= 12; n++ {
		for x := 1; x <= n; x++ {
			live := n - 1
			winner := wire.NodeID(n)
			if x == n {
				winner = wire.NodeID(n - 1)
			}
			for k := 1; k <= n; k++ {
				if k == x {
					continue
				}
				kLive := k // rank of the starter among the live nodes
				if x < k {
					kLive--
				}
				r := run(t, scenario{n: n, starters: []wire.NodeID{wire.NodeID(k)}, crashed: []wire.NodeID{wire.NodeID(x)}})
				agree(t, r, winner)
				want := 3*live - kLive + 1
				wantTime := time.Duration(want-1)*delay + hopTimeout
				if r.protocol() != want || r.acks != want-1 || r.last != wantTime {
					t.Errorf("n=%d dead=%d k=%d: %v; want %d messages, %d acks, in %v", n, x, k, r, want, want-1, wantTime)
				}
				pred := wire.NodeID(x - 1)
				if x == 1 {
					pred = wire.NodeID(n)
				}
				if got := r.ms[pred].Skipped(); !slices.Equal(got, []wire.NodeID{wire.NodeID(x)}) {
					t.Errorf("n=%d dead=%d k=%d: predecessor %d skipped %v", n, x, k, pred, got)
				}
			}
		}
	}
}

// TestLeaderCrashesMidElection: the would-be leader dies right after sending
// its own candidacy. Its RingElection reaches its predecessor, which skips
// it and stops at the next node, which already sent it on; nobody wins
// round 1. The first node whose ElectionTimeout ends starts round 2, which
// elects the highest survivor.
func TestLeaderCrashesMidElection(t *testing.T) {
	for n := 3; n <= 12; n++ {
		for _, k := range []wire.NodeID{1, wire.NodeID(n)} {
			r := run(t, scenario{n: n, starters: []wire.NodeID{k}, crashAfterCandidacy: wire.NodeID(n)})
			agree(t, r, wire.NodeID(n-1))
			for id := 1; id < n; id++ {
				if got := r.ms[id].Round(); got != 2 {
					t.Errorf("n=%d k=%d: node %d in round %d, want 2", n, k, id, got)
				}
			}
			if n == 5 {
				t.Logf("n=%d k=%d, leader dead mid-election: %v", n, k, r)
			}
		}
	}
}

func ExampleMachine() {
	g := wire.GroupNumber{Seq: 7, ID: 9}
	cands := []wire.Member{{ID: 1, Priority: 100}, {ID: 2, Priority: 100}, {ID: 3, Priority: 100}}
	nodes := map[wire.NodeID]*Machine{}
	for _, c := range cands {
		m, _ := New(Config{Self: c, Group: g, Candidates: cands, HopTimeout: time.Second, ElectionTimeout: time.Minute, Announce: true})
		nodes[c.ID] = m
	}
	type msg struct {
		from wire.NodeID
		Send
	}
	var q []msg
	send := func(from wire.NodeID) {
		for _, s := range nodes[from].Outbox() {
			if s.Body.Type() != wire.TypeRingAck {
				fmt.Println(from, s)
			}
			q = append(q, msg{from, s})
		}
	}
	nodes[1].Start(t0)
	send(1)
	for len(q) > 0 {
		m := q[0]
		q = q[1:]
		nodes[m.To].Step(t0, m.from, m.Body)
		send(m.To)
	}
	for _, c := range cands {
		fmt.Println(c.ID, nodes[c.ID].Phase(), nodes[c.ID].Leader())
	}
	// Output:
	// 1 →2 RingElection(7.9 r1 1/100)
	// 2 →3 RingElection(7.9 r1 2/100)
	// 3 →1 RingElection(7.9 r1 3/100)
	// 1 →2 RingElection(7.9 r1 3/100)
	// 2 →3 RingElection(7.9 r1 3/100)
	// 3 →1 RingElected(7.9 r1 3/100)
	// 1 →2 RingElected(7.9 r1 3/100)
	// 2 →3 RingElected(7.9 r1 3/100)
	// 1 lost 3
	// 2 lost 3
	// 3 won 3
}
