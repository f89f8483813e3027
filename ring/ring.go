package ring

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/groupd/groupd/wire"
)

// Phase is where an election stands.
type Phase uint8

const (
	Idle     Phase = iota // not started, and no election message seen
	Electing              // taking part: a candidate was sent on; waiting for the result
	Won                   // this node's own candidacy came back around: it is coordinator
	Lost                  // a RingElected named a higher winner (Announce mode)
	Failed                // MaxRounds rounds of this node ended without a result
)

func (p Phase) String() string {
	switch p {
	case Idle:
		return "idle"
	case Electing:
		return "electing"
	case Won:
		return "won"
	case Lost:
		return "lost"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Done reports whether the election has a result (or has given up). A later
// round started by another node may reopen Won or Lost; Failed is final.
func (p Phase) Done() bool { return p == Won || p == Lost || p == Failed }

// Config describes one election.
type Config struct {
	Self  wire.Member
	Group wire.GroupNumber // the group whose survivors elect; names the election
	// Candidates are the nodes that may win: the survivors of Group, which
	// form the ring in rank order. Self may be included or not; the failed
	// coordinator should not be.
	Candidates []wire.Member
	// HopTimeout is how long to wait for the successor's RingAck before
	// skipping it as dead and sending to the next one: 2·Ttrans + Tprocess,
	// like bully's AnswerTimeout.
	HopTimeout time.Duration
	// ElectionTimeout bounds a round: a node that joined a round and saw
	// no result within it starts a new round. It must exceed a whole
	// election, (3n−1)·Ttrans plus HopTimeout per dead node; without
	// Announce the result is the winner's Invitation, which the caller
	// handles.
	ElectionTimeout time.Duration
	// MaxRounds bounds how many rounds this node may start before the
	// election fails. Zero means no bound.
	MaxRounds int
	// Announce makes the winner circulate RingElected once around the ring
	// (the textbook algorithm). groupd invites instead.
	Announce bool
}

// Send is a message body the machine wants delivered to one node. It has the
// shape of bully.Send.
type Send struct {
	To   wire.NodeID
	Body wire.Body
}

func (s Send) String() string { return fmt.Sprintf("→%d %s", s.To, s.Body) }

// hop is a RingElection or RingElected sent to a successor and not yet
// acknowledged.
type hop struct {
	to       wire.NodeID
	of       wire.Type
	cand     wire.Member
	round    uint32
	deadline time.Time
}

func (h hop) body(g wire.GroupNumber) wire.Body {
	if h.of == wire.TypeRingElected {
		return wire.RingElected{Group: g, Round: h.round, Leader: h.cand}
	}
	return wire.RingElection{Group: g, Round: h.round, Candidate: h.cand}
}

// Machine is one node's view of one ring election. It is not safe for
// concurrent use; the caller serialises Start, Step and Tick.
type Machine struct {
	cfg   Config
	ring  []wire.Member // every candidate and self, by ascending rank
	self  int           // self's index in ring
	phase Phase

	round   uint32      // the highest round seen or started
	started int         // rounds this node started
	best    wire.Member // highest candidate sent on in this round (ID 0: none)
	leader  wire.NodeID
	timeout time.Time // end of this round, while Electing

	pending []hop
	down    map[wire.NodeID]bool // skipped successors; a message revives one
	out     []Send
}

// New returns an idle machine. Timeouts must be positive and Self.ID
// non-zero; candidates with ID 0 and repeated IDs are dropped.
func New(cfg Config) (*Machine, error) {
	if cfg.HopTimeout <= 0 || cfg.ElectionTimeout <= 0 {
		return nil, fmt.Errorf("ring: timeouts must be positive (hop %v, election %v)", cfg.HopTimeout, cfg.ElectionTimeout)
	}
	if cfg.Self.ID == 0 {
		return nil, fmt.Errorf("ring: self ID must not be 0")
	}
	m := &Machine{cfg: cfg, down: map[wire.NodeID]bool{}}
	seen := map[wire.NodeID]bool{cfg.Self.ID: true}
	m.ring = append(m.ring, cfg.Self)
	for _, c := range cfg.Candidates {
		if c.ID == 0 || seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		m.ring = append(m.ring, c)
	}
	sort.Slice(m.ring, func(i, j int) bool { return m.ring[i].Rank().Less(m.ring[j].Rank()) })
	for i, c := range m.ring {
		if c.ID == cfg.Self.ID {
			m.self = i
		}
	}
	return m, nil
}

// Phase returns where the election stands.
func (m *Machine) Phase() Phase { return m.phase }

// Round returns the highest election round this node has seen or started.
func (m *Machine) Round() int { return int(m.round) }

// Leader returns the announced winner once Lost, or Self once Won.
func (m *Machine) Leader() wire.NodeID { return m.leader }

// Group returns the group whose survivors this election is for.
func (m *Machine) Group() wire.GroupNumber { return m.cfg.Group }

// Ring returns the ring's node IDs in order, starting at Self's successor.
func (m *Machine) Ring() []wire.NodeID {
	ids := make([]wire.NodeID, 0, len(m.ring)-1)
	for i := 1; i < len(m.ring); i++ {
		ids = append(ids, m.ring[(m.self+i)%len(m.ring)].ID)
	}
	return ids
}

// Skipped returns the successors this node skipped as dead, sorted by ID.
func (m *Machine) Skipped() []wire.NodeID {
	var ids []wire.NodeID
	for _, c := range m.ring {
		if m.down[c.ID] {
			ids = append(ids, c.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// Deadline returns when Tick next has work to do, or the zero time.
func (m *Machine) Deadline() time.Time {
	var d time.Time
	if m.phase == Electing {
		d = m.timeout
	}
	for _, h := range m.pending {
		if d.IsZero() || h.deadline.Before(d) {
			d = h.deadline
		}
	}
	return d
}

// Outbox returns and clears the messages the machine wants sent.
func (m *Machine) Outbox() []Send {
	out := m.out
	m.out = nil
	return out
}

// Start makes this node a candidate: it sends its own RingElection to its
// successor in a new round. It does nothing once the node takes part in a
// round or the election has ended.
func (m *Machine) Start(now time.Time) {
	if m.phase != Idle {
		return
	}
	m.newRound(now, m.round+1)
}

// newRound starts round r as a candidate.
func (m *Machine) newRound(now time.Time, r uint32) {
	m.started++
	m.join(now, r)
	m.candidate(now)
}

// join enters round r: what earlier rounds sent on no longer matters.
func (m *Machine) join(now time.Time, r uint32) {
	m.round = r
	m.best = wire.Member{}
	m.leader = 0
	m.phase = Electing
	m.timeout = now.Add(m.cfg.ElectionTimeout)
	m.pending = slices.DeleteFunc(m.pending, func(h hop) bool { return h.round < r })
}

// candidate sends this node's own candidacy on.
func (m *Machine) candidate(now time.Time) {
	m.best = m.cfg.Self
	m.forward(now, wire.TypeRingElection, m.cfg.Self)
}

// forward sends a RingElection or RingElected of the current round to the
// first successor not skipped, and waits for its ack. With every successor
// skipped, this node is the only survivor and wins.
func (m *Machine) forward(now time.Time, of wire.Type, cand wire.Member) {
	if of == wire.TypeRingElection {
		// A lower candidate in flight is moot: the successor would
		// suppress it anyway.
		m.pending = slices.DeleteFunc(m.pending, func(h hop) bool { return h.of == of && h.cand.Rank().Less(cand.Rank()) })
	}
	to := m.successor()
	if to == 0 {
		m.win(now)
		return
	}
	h := hop{to: to, of: of, cand: cand, round: m.round, deadline: now.Add(m.cfg.HopTimeout)}
	m.pending = append(m.pending, h)
	m.out = append(m.out, Send{To: to, Body: h.body(m.cfg.Group)})
}

// successor returns the next node after self in rank order, wrapping,
// that was not skipped; 0 when there is none.
func (m *Machine) successor() wire.NodeID {
	for i := 1; i < len(m.ring); i++ {
		if c := m.ring[(m.self+i)%len(m.ring)]; !m.down[c.ID] {
			return c.ID
		}
	}
	return 0
}

func (m *Machine) win(now time.Time) {
	m.phase = Won
	m.leader = m.cfg.Self.ID
	m.best = m.cfg.Self
	m.pending = slices.DeleteFunc(m.pending, func(h hop) bool { return h.of == wire.TypeRingElection })
	if m.cfg.Announce && m.successor() != 0 {
		m.forward(now, wire.TypeRingElected, m.cfg.Self)
	}
}

// Step handles a RingElection, RingElected or RingAck for this election.
// from is the sender; messages from nodes outside the ring, for another
// group, or of other types are ignored. Every RingElection and RingElected
// is acknowledged, even when it is stale or suppressed, so that the sender
// does not skip a live node. A Failed machine ignores everything.
func (m *Machine) Step(now time.Time, from wire.NodeID, body wire.Body) {
	if m.phase == Failed || from == m.cfg.Self.ID || !m.inRing(from) {
		return
	}
	switch b := body.(type) {
	case wire.RingElection:
		if b.Group != m.cfg.Group || b.Round == 0 || b.Candidate.ID == 0 {
			return
		}
		m.heard(from)
		m.ack(from, wire.TypeRingElection, b.Round, b.Candidate)
		m.onElection(now, b)
	case wire.RingElected:
		if b.Group != m.cfg.Group || b.Round == 0 || b.Leader.ID == 0 {
			return
		}
		m.heard(from)
		m.ack(from, wire.TypeRingElected, b.Round, b.Leader)
		m.onElected(now, b)
	case wire.RingAck:
		if b.Group != m.cfg.Group {
			return
		}
		m.heard(from)
		for i, h := range m.pending {
			if h.to == from && h.of == b.Of && h.round == b.Round && h.cand == b.Candidate {
				m.pending = slices.Delete(m.pending, i, i+1)
				return
			}
		}
	}
}

func (m *Machine) ack(to wire.NodeID, of wire.Type, r uint32, c wire.Member) {
	m.out = append(m.out, Send{To: to, Body: wire.RingAck{Group: m.cfg.Group, Of: of, Round: r, Candidate: c}})
}

// heard revives a node that was skipped: it is alive after all.
func (m *Machine) heard(id wire.NodeID) { delete(m.down, id) }

// onElection is Chang-Roberts with suppression: send on the higher of the
// candidate and myself, once per candidate, and win when my own comes back.
func (m *Machine) onElection(now time.Time, b wire.RingElection) {
	switch {
	case b.Round < m.round:
		return // a round that was given up
	case b.Round > m.round:
		m.join(now, b.Round)
	}
	c := b.Candidate
	switch {
	case c.ID == m.cfg.Self.ID:
		// My candidacy went all the way round: nobody on the ring
		// ranks higher. A copy from before a win, or one I never
		// sent, changes nothing.
		if m.best.ID == m.cfg.Self.ID && m.phase == Electing {
			m.win(now)
		}
	case m.best.ID != 0 && !m.best.Rank().Less(c.Rank()):
		// Suppressed: I already sent on this candidate or a higher one.
	case m.cfg.Self.Rank().Less(c.Rank()):
		m.best = c
		m.forward(now, wire.TypeRingElection, c)
	default:
		// A lower candidate, and I have sent nothing: replace it with
		// my own candidacy.
		m.candidate(now)
	}
}

// onElected records the winner and sends it on until it reaches the winner.
func (m *Machine) onElected(now time.Time, b wire.RingElected) {
	switch {
	case b.Round < m.round:
		return
	case b.Round > m.round:
		m.join(now, b.Round)
	}
	l := b.Leader
	switch {
	case l.ID == m.cfg.Self.ID:
		// My announcement came back: everyone on the ring knows.
	case m.leader == l.ID:
		// A duplicate.
	case m.best.ID != 0 && l.Rank().Less(m.best.Rank()):
		// Suppressed: a higher candidate is running in this round.
	default:
		m.phase = Lost
		m.leader = l.ID
		m.best = l
		m.pending = slices.DeleteFunc(m.pending, func(h hop) bool { return h.of == wire.TypeRingElection })
		// With every successor skipped, the winner is dead too and
		// forward makes me, the only survivor, win.
		m.forward(now, wire.TypeRingElected, l)
	}
}

// Tick advances time: a hop not acknowledged within HopTimeout skips its
// successor; a round with no result by ElectionTimeout is started again (or
// fails after MaxRounds rounds).
func (m *Machine) Tick(now time.Time) {
	if m.phase == Failed {
		return
	}
	for i := 0; i < len(m.pending); {
		h := m.pending[i]
		if now.Before(h.deadline) {
			i++
			continue
		}
		m.skip(now, h.to)
		i = 0 // skip rewrote pending
	}
	if m.phase != Electing || now.Before(m.timeout) {
		return
	}
	if m.cfg.MaxRounds > 0 && m.started >= m.cfg.MaxRounds {
		m.phase = Failed
		m.pending = nil
		return
	}
	m.newRound(now, m.round+1)
}

// skip marks a successor dead for this election and sends everything still
// waiting for its ack to the next successor instead.
func (m *Machine) skip(now time.Time, dead wire.NodeID) {
	m.down[dead] = true
	var redo []hop
	m.pending = slices.DeleteFunc(m.pending, func(h hop) bool {
		if h.to == dead {
			redo = append(redo, h)
			return true
		}
		return false
	})
	for _, h := range redo {
		if h.round != m.round || m.phase == Won && h.of == wire.TypeRingElection {
			continue
		}
		m.forward(now, h.of, h.cand)
	}
}

func (m *Machine) inRing(id wire.NodeID) bool {
	for _, c := range m.ring {
		if c.ID == id {
			return true
		}
	}
	return false
}
