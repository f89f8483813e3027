package bully

import (
	"fmt"
	"sort"
	"time"

	"github.com/groupd/groupd/wire"
)

// Phase is where an election stands.
type Phase uint8

const (
	Idle    Phase = iota // not started
	Waiting              // Election sent; waiting for an Answer
	Yielded              // a higher candidate answered; waiting for it to win
	Won                  // no higher candidate answered: this node is coordinator
	Lost                 // a higher candidate announced itself (Announce mode)
	Failed               // MaxRounds rounds ended without a winner being seen
)

func (p Phase) String() string {
	switch p {
	case Idle:
		return "idle"
	case Waiting:
		return "waiting"
	case Yielded:
		return "yielded"
	case Won:
		return "won"
	case Lost:
		return "lost"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Done reports whether the election has ended.
func (p Phase) Done() bool { return p == Won || p == Lost || p == Failed }

// Config describes one election.
type Config struct {
	Self  wire.Member
	Group wire.GroupNumber // the group whose survivors elect; names the election
	// Candidates are the nodes that may win: the survivors of Group. Self
	// may be included or not; the failed coordinator should not be.
	Candidates []wire.Member
	// AnswerTimeout is T = 2·Ttrans + Tprocess: how long to wait for any
	// Answer before declaring victory.
	AnswerTimeout time.Duration
	// ElectionTimeout is T': after an Answer, how long to wait for the
	// higher candidate to win before starting again.
	ElectionTimeout time.Duration
	// MaxRounds bounds how many rounds may end in Yielded before the
	// election fails. Zero means no bound.
	MaxRounds int
	// Announce makes the winner send Coordinator to every lower candidate
	// (the textbook algorithm). groupd invites instead.
	Announce bool
	// AutoStart makes an Election from a lower candidate start this
	// node's own election if it has none running (the textbook rule).
	AutoStart bool
	// Probe makes the first round ask only this node's successor (the
	// lowest-ranked candidate above it) and widen to every higher
	// candidate only if the successor stays silent for AnswerTimeout. An
	// answering successor is alive and outranks this node, so this node
	// yields as it would to any Answer. When every survivor runs at once,
	// each then costs one Election and one Answer, and only the highest
	// reachable survivor, whose successor is silent, asks everyone above
	// it: O(n) messages instead of O(n²) when the candidates above are
	// unreachable (a partition that cut the group in two), at one extra
	// AnswerTimeout for that survivor. With a single higher candidate the
	// probe would be the whole round, so there is none.
	Probe bool
}

// Send is a message body the machine wants delivered to one node.
type Send struct {
	To   wire.NodeID
	Body wire.Body
}

func (s Send) String() string { return fmt.Sprintf("→%d %s", s.To, s.Body) }

// Machine is one node's view of one election. It is not safe for concurrent
// use; the caller serialises Start, Step and Tick.
type Machine struct {
	cfg      Config
	phase    Phase
	round    int
	deadline time.Time
	leader   wire.NodeID
	higher   []wire.NodeID
	lower    []wire.NodeID
	succ     wire.NodeID // the lowest-ranked higher candidate; 0 if none
	probing  bool        // Waiting on the successor alone
	out      []Send
}

// New returns an idle machine. It validates nothing beyond what it needs:
// timeouts must be positive.
func New(cfg Config) (*Machine, error) {
	if cfg.AnswerTimeout <= 0 || cfg.ElectionTimeout <= 0 {
		return nil, fmt.Errorf("bully: timeouts must be positive (answer %v, election %v)", cfg.AnswerTimeout, cfg.ElectionTimeout)
	}
	if cfg.Self.ID == 0 {
		return nil, fmt.Errorf("bully: self ID must not be 0")
	}
	m := &Machine{cfg: cfg}
	self := cfg.Self.Rank()
	seen := map[wire.NodeID]bool{cfg.Self.ID: true}
	cands := append([]wire.Member(nil), cfg.Candidates...)
	sort.Slice(cands, func(i, j int) bool { return cands[i].ID < cands[j].ID })
	var succ wire.Rank
	for _, c := range cands {
		if c.ID == 0 || seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		if self.Less(c.Rank()) {
			m.higher = append(m.higher, c.ID)
			if m.succ == 0 || c.Rank().Less(succ) {
				m.succ, succ = c.ID, c.Rank()
			}
		} else {
			m.lower = append(m.lower, c.ID)
		}
	}
	return m, nil
}

// Phase returns where the election stands.
func (m *Machine) Phase() Phase { return m.phase }

// Round returns how many rounds have started.
func (m *Machine) Round() int { return m.round }

// Leader returns the announced winner once Lost, or Self once Won.
func (m *Machine) Leader() wire.NodeID { return m.leader }

// Group returns the group whose survivors this election is for.
func (m *Machine) Group() wire.GroupNumber { return m.cfg.Group }

// Deadline returns when Tick next has work to do, or the zero time.
func (m *Machine) Deadline() time.Time {
	if m.phase == Waiting || m.phase == Yielded {
		return m.deadline
	}
	return time.Time{}
}

// Outbox returns and clears the messages the machine wants sent.
func (m *Machine) Outbox() []Send {
	out := m.out
	m.out = nil
	return out
}

// Start begins a round unless one is running or the election has ended.
func (m *Machine) Start(now time.Time) {
	if m.phase == Waiting || m.phase.Done() {
		return
	}
	m.round++
	if len(m.higher) == 0 {
		// The highest survivor knows it and elects itself at once.
		m.win()
		return
	}
	m.phase = Waiting
	m.deadline = now.Add(m.cfg.AnswerTimeout)
	if m.cfg.Probe && m.round == 1 && len(m.higher) > 1 {
		m.probing = true
		m.out = append(m.out, Send{To: m.succ, Body: wire.Election{Group: m.cfg.Group}})
		return
	}
	m.askHigher()
}

// askHigher sends Election to every higher candidate.
func (m *Machine) askHigher() {
	for _, id := range m.higher {
		m.out = append(m.out, Send{To: id, Body: wire.Election{Group: m.cfg.Group}})
	}
}

func (m *Machine) win() {
	m.phase = Won
	m.leader = m.cfg.Self.ID
	if m.cfg.Announce {
		for _, id := range m.lower {
			m.out = append(m.out, Send{To: id, Body: wire.Coordinator{Group: m.cfg.Group}})
		}
	}
}

// Step handles an Election, Answer or Coordinator message for this
// election. from is the sender; other messages are ignored.
func (m *Machine) Step(now time.Time, from wire.NodeID, body wire.Body) {
	switch b := body.(type) {
	case wire.Election:
		if b.Group != m.cfg.Group || !m.isLower(from) {
			return
		}
		// A higher candidate always answers, even after winning, so the
		// lower one stops; the textbook's receiver then runs its own.
		m.out = append(m.out, Send{To: from, Body: wire.Answer{Group: m.cfg.Group}})
		if m.cfg.AutoStart && m.phase == Idle {
			m.Start(now)
		}
	case wire.Answer:
		if b.Group != m.cfg.Group || !m.isHigher(from) || m.phase != Waiting {
			return
		}
		m.phase, m.probing = Yielded, false
		m.deadline = now.Add(m.cfg.ElectionTimeout)
	case wire.Coordinator:
		if b.Group != m.cfg.Group || !m.isHigher(from) || m.phase.Done() {
			return
		}
		m.phase = Lost
		m.leader = from
	}
}

// Tick advances time: a silent round is won, a yielded round that saw no
// winner starts again (or fails after MaxRounds).
func (m *Machine) Tick(now time.Time) {
	if (m.phase != Waiting && m.phase != Yielded) || now.Before(m.deadline) {
		return
	}
	switch m.phase {
	case Waiting:
		if m.probing {
			// The successor is silent: ask everyone above, for a
			// whole AnswerTimeout.
			m.probing = false
			m.deadline = now.Add(m.cfg.AnswerTimeout)
			m.askHigher()
			return
		}
		m.win()
	case Yielded:
		if m.cfg.MaxRounds > 0 && m.round >= m.cfg.MaxRounds {
			m.phase = Failed
			return
		}
		m.phase = Idle
		m.Start(now)
	}
}

func (m *Machine) isHigher(id wire.NodeID) bool { return contains(m.higher, id) }
func (m *Machine) isLower(id wire.NodeID) bool  { return contains(m.lower, id) }

func contains(ids []wire.NodeID, id wire.NodeID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
