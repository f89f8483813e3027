package invitation

import (
	"fmt"
	"time"

	"github.com/groupd/groupd/bully"
	"github.com/groupd/groupd/ring"
	"github.com/groupd/groupd/wire"
)

// Election names the algorithm a group's survivors use to pick the node
// that forms their new group when the coordinator fails. A group runs its
// coordinator's choice, which its Ready announces, so nodes configured
// differently still agree within a group.
type Election string

const (
	// ElectionBully is Garcia-Molina's bully algorithm (the default):
	// it decides within one AnswerTimeout whatever the group size. The
	// highest survivor wins at once while the others tell it (one
	// Election each) and hold back for one AnswerTimeout, so the usual
	// failover (the coordinator alone died) costs about n−1 election
	// messages; only if the highest survivor is gone too do the rest run
	// bully, each first asking only its successor (bully.Config.Probe), so
	// that costs O(n) messages too, not O(n²).
	ElectionBully Election = "bully"
	// ElectionRing is Chang and Roberts' ring election: at most 2n-1
	// messages inside groupd (3n-1 with the textbook's Elected round),
	// but n sequential hops.
	ElectionRing Election = "ring"
)

// ParseElection accepts "bully" or "ring" ("" means bully).
func ParseElection(s string) (Election, error) {
	switch Election(s) {
	case "", ElectionBully:
		return ElectionBully, nil
	case ElectionRing:
		return ElectionRing, nil
	}
	return "", fmt.Errorf("invitation: unknown election algorithm %q (want bully or ring)", s)
}

// outcome is where an embedded election stands.
type outcome uint8

const (
	running outcome = iota
	won
	failed
)

// election is what the node needs from bully.Machine or ring.Machine.
type election interface {
	Start(now time.Time)
	Step(now time.Time, from wire.NodeID, body wire.Body)
	Tick(now time.Time)
	Deadline() time.Time
	Group() wire.GroupNumber
	outcome() outcome
	drain(func(to wire.NodeID, body wire.Body))
}

type bullyElection struct{ *bully.Machine }

func (e bullyElection) outcome() outcome {
	switch e.Phase() {
	case bully.Won:
		return won
	case bully.Failed, bully.Lost:
		return failed
	}
	return running
}

func (e bullyElection) drain(send func(wire.NodeID, wire.Body)) {
	for _, s := range e.Outbox() {
		send(s.To, s.Body)
	}
}

type ringElection struct{ *ring.Machine }

func (e ringElection) outcome() outcome {
	switch e.Phase() {
	case ring.Won:
		return won
	case ring.Failed, ring.Lost:
		return failed
	}
	return running
}

func (e ringElection) drain(send func(wire.NodeID, wire.Body)) {
	for _, s := range e.Outbox() {
		send(s.To, s.Body)
	}
}

// newElection builds the configured algorithm for the survivors cands of
// group g. Both give up after two rounds, as design §3 prescribes; the node
// then runs Recovery.
func (n *Node) newElection(g wire.GroupNumber, cands []wire.Member) (election, error) {
	if n.galg == ElectionRing {
		m, err := ring.New(ring.Config{
			Self:            n.self(),
			Group:           g,
			Candidates:      cands,
			HopTimeout:      n.gt.AnswerTimeout,
			ElectionTimeout: n.gt.ringRound(len(cands)),
			MaxRounds:       2,
		})
		if err != nil {
			return nil, err
		}
		return ringElection{m}, nil
	}
	m, err := bully.New(bully.Config{
		Self:            n.self(),
		Group:           g,
		Candidates:      cands,
		AnswerTimeout:   n.gt.AnswerTimeout,
		ElectionTimeout: n.gt.ElectionTimeout,
		MaxRounds:       2,
		// When the highest survivor does not invite within the hold-back
		// (startElection), it is usually because a partition cut off the
		// group's upper ranks, and then every survivor asking every
		// higher-ranked one cost O(n²) Elections, most to unreachable
		// nodes.
		Probe: true,
	})
	if err != nil {
		return nil, err
	}
	return bullyElection{m}, nil
}

// ringRound bounds one ring round among n survivors: up to 2n sequential
// hops of at most half an AnswerTimeout each, one skipped successor, and
// the winner's save and invitation; never less than ElectionTimeout.
func (t Timing) ringRound(n int) time.Duration {
	return max(t.ElectionTimeout, time.Duration(n+2)*t.AnswerTimeout)
}

// electionGroup returns the group an election message is about, and
// whether the body belongs to the algorithm my group runs at all.
func (n *Node) electionGroup(body wire.Body) (wire.GroupNumber, bool) {
	switch b := body.(type) {
	case wire.Election:
		return b.Group, n.galg == ElectionBully
	case wire.Answer:
		return b.Group, n.galg == ElectionBully
	case wire.RingElection:
		return b.Group, n.galg == ElectionRing
	case wire.RingElected:
		return b.Group, n.galg == ElectionRing
	case wire.RingAck:
		return b.Group, n.galg == ElectionRing
	}
	return wire.GroupNumber{}, false
}
