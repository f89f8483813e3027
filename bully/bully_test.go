package bully

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
		AnswerTimeout: 100 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond, MaxRounds: 2,
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

func outbox(m *Machine) string {
	var s []string
	for _, o := range m.Outbox() {
		s = append(s, fmt.Sprintf("%d:%s", o.To, o.Body.Type()))
	}
	slices.Sort(s)
	return strings.Join(s, " ")
}

func TestTransitions(t *testing.T) {
	announce := func(c *Config) { c.Announce = true }
	auto := func(c *Config) { c.AutoStart = true }
	probe := func(c *Config) { c.Probe = true }
	cases := []struct {
		name   string
		m      func(t *testing.T) *Machine
		input  func(m *Machine)
		phase  Phase
		sent   string
		leader wire.NodeID
	}{
		{"start asks every higher candidate", func(t *testing.T) *Machine { return machine(t, 2, nil, 1, 2, 3, 5) },
			func(m *Machine) { m.Start(ms(0)) }, Waiting, "3:Election 5:Election", 0},
		{"highest candidate wins at once", func(t *testing.T) *Machine { return machine(t, 5, nil, 1, 2, 5) },
			func(m *Machine) { m.Start(ms(0)) }, Won, "", 5},
		{"highest candidate announces when asked to", func(t *testing.T) *Machine { return machine(t, 5, announce, 1, 2, 5) },
			func(m *Machine) { m.Start(ms(0)) }, Won, "1:Coordinator 2:Coordinator", 5},
		{"silence for AnswerTimeout wins", func(t *testing.T) *Machine { return machine(t, 2, nil, 2, 3) },
			func(m *Machine) { m.Start(ms(0)); m.Outbox(); m.Tick(ms(99)); m.Tick(ms(100)) }, Won, "", 2},
		{"an Answer yields", func(t *testing.T) *Machine { return machine(t, 2, nil, 2, 3) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Outbox()
				m.Step(ms(10), 3, wire.Answer{Group: grp})
				m.Tick(ms(200))
			}, Yielded, "", 0},
		{"an Answer from a lower node is ignored", func(t *testing.T) *Machine { return machine(t, 2, nil, 1, 2, 3) },
			func(m *Machine) { m.Start(ms(0)); m.Outbox(); m.Step(ms(10), 1, wire.Answer{Group: grp}) }, Waiting, "", 0},
		{"an Answer for another election is ignored", func(t *testing.T) *Machine { return machine(t, 2, nil, 2, 3) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Outbox()
				m.Step(ms(10), 3, wire.Answer{Group: wire.GroupNumber{Seq: 1, ID: 9}})
			}, Waiting, "", 0},
		{"no winner after ElectionTimeout: a new round", func(t *testing.T) *Machine { return machine(t, 2, nil, 2, 3) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Outbox()
				m.Step(ms(10), 3, wire.Answer{Group: grp})
				m.Tick(ms(510))
			}, Waiting, "3:Election", 0},
		{"MaxRounds yielded rounds fail", func(t *testing.T) *Machine { return machine(t, 2, nil, 2, 3) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Step(ms(10), 3, wire.Answer{Group: grp})
				m.Tick(ms(510))
				m.Step(ms(520), 3, wire.Answer{Group: grp})
				m.Outbox()
				m.Tick(ms(1020))
			}, Failed, "", 0},
		{"a Coordinator from a higher node ends it", func(t *testing.T) *Machine { return machine(t, 2, nil, 2, 3) },
			func(m *Machine) { m.Start(ms(0)); m.Outbox(); m.Step(ms(10), 3, wire.Coordinator{Group: grp}) }, Lost, "", 3},
		{"Election from a lower node is answered", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 3) },
			func(m *Machine) { m.Step(ms(0), 1, wire.Election{Group: grp}) }, Idle, "1:Answer", 0},
		{"AutoStart: Election from a lower node starts my own", func(t *testing.T) *Machine { return machine(t, 3, auto, 1, 3, 4) },
			func(m *Machine) { m.Step(ms(0), 1, wire.Election{Group: grp}) }, Waiting, "1:Answer 4:Election", 0},
		{"Election from a stranger is ignored", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 3) },
			func(m *Machine) { m.Step(ms(0), 2, wire.Election{Group: grp}) }, Idle, "", 0},
		{"the winner still answers", func(t *testing.T) *Machine { return machine(t, 3, nil, 1, 3) },
			func(m *Machine) { m.Start(ms(0)); m.Step(ms(5), 1, wire.Election{Group: grp}) }, Won, "1:Answer", 3},
		{"Start is idempotent while waiting", func(t *testing.T) *Machine { return machine(t, 2, nil, 2, 3) },
			func(m *Machine) { m.Start(ms(0)); m.Outbox(); m.Start(ms(1)) }, Waiting, "", 0},
		// Probe: the successor is the lowest-ranked higher candidate by
		// rank (priority, then ID), not by ID.
		{"Probe: the first round asks the successor alone", func(t *testing.T) *Machine { return machine(t, 2, probe, 1, 2, 7, 3, 5) },
			func(m *Machine) { m.Start(ms(0)) }, Waiting, "3:Election", 0},
		{"Probe: the successor by rank", func(t *testing.T) *Machine {
			return machine(t, 2, func(c *Config) {
				c.Probe = true
				c.Candidates = []wire.Member{{ID: 3, Priority: 200}, {ID: 4, Priority: 100}, {ID: 9, Priority: 150}}
			})
		}, func(m *Machine) { m.Start(ms(0)) }, Waiting, "4:Election", 0},
		{"Probe: the successor's Answer yields", func(t *testing.T) *Machine { return machine(t, 2, probe, 2, 3, 5) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Outbox()
				m.Step(ms(10), 3, wire.Answer{Group: grp})
				m.Tick(ms(200))
			}, Yielded, "", 0},
		{"Probe: a silent successor widens the round", func(t *testing.T) *Machine { return machine(t, 2, probe, 2, 3, 5) },
			func(m *Machine) { m.Start(ms(0)); m.Outbox(); m.Tick(ms(100)) }, Waiting, "3:Election 5:Election", 0},
		{"Probe: the widened round's silence wins", func(t *testing.T) *Machine { return machine(t, 2, probe, 2, 3, 5) },
			func(m *Machine) { m.Start(ms(0)); m.Tick(ms(100)); m.Outbox(); m.Tick(ms(199)); m.Tick(ms(200)) }, Won, "", 2},
		{"Probe: an Answer to the widened round yields", func(t *testing.T) *Machine { return machine(t, 2, probe, 2, 3, 5) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Tick(ms(100))
				m.Outbox()
				m.Step(ms(150), 5, wire.Answer{Group: grp})
			}, Yielded, "", 0},
		{"Probe: one higher candidate is asked at once", func(t *testing.T) *Machine { return machine(t, 2, probe, 2, 3) },
			func(m *Machine) { m.Start(ms(0)) }, Waiting, "3:Election", 0},
		{"Probe: the second round asks everyone", func(t *testing.T) *Machine { return machine(t, 2, probe, 2, 3, 5) },
			func(m *Machine) {
				m.Start(ms(0))
				m.Step(ms(10), 3, wire.Answer{Group: grp})
				m.Outbox()
				m.Tick(ms(510))
			}, Waiting, "3:Election 5:Election", 0},
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
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Self: wire.Member{ID: 1}, AnswerTimeout: 0, ElectionTimeout: time.Second},
		{Self: wire.Member{ID: 1}, AnswerTimeout: time.Second, ElectionTimeout: -1},
		{Self: wire.Member{ID: 0}, AnswerTimeout: time.Second, ElectionTimeout: time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// TestDeadline checks the machine asks to be ticked only when it waits.
func TestDeadline(t *testing.T) {
	m := machine(t, 2, nil, 2, 3)
	if !m.Deadline().IsZero() {
		t.Fatal("idle machine has a deadline")
	}
	m.Start(ms(0))
	if got := m.Deadline(); !got.Equal(ms(100)) {
		t.Fatalf("deadline %v, want +100ms", got.Sub(t0))
	}
}
