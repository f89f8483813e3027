package simbench

import (
	"fmt"
	"time"

	"github.com/groupd/groupd/bully"
	"github.com/groupd/groupd/sim"
	"github.com/groupd/groupd/wire"
)

// BullyCount is the message count of one standalone bully election.
type BullyCount struct {
	N           int         // survivors taking part
	Starter     wire.NodeID // who noticed the failure first
	Election    int
	Answer      int
	Coordinator int
	Winner      wire.NodeID
}

// Total is the number of messages of the election.
func (c BullyCount) Total() int { return c.Election + c.Answer + c.Coordinator }

// BullyFormula is what the machine's rules give on a reliable network with
// equal delays, for n survivors with IDs 1..n (rank = ID) when survivor
// `starter` starts:
//
//   - The starter s sends Election to the n−s survivors above it. Each
//     receiver answers every Election it gets (an Answer per Election) and,
//     on the first one, starts its own election (AutoStart), sending
//     Election to everyone above it. With equal delays every survivor above
//     s receives s's Election at the same instant, so all of them start in
//     the same round, before any Coordinator arrives: survivor k ≥ s sends
//     n−k Elections. Elections = Σ_{k=s}^{n} (n−k) = (n−s)(n−s+1)/2, and
//     Answers = Elections.
//   - The highest survivor starts with nobody above it and wins at once;
//     with Announce it sends Coordinator to the n−1 others. Every other
//     survivor got an Answer, so it yields and never wins.
//
// So the lowest starting (s = 1) costs n(n−1)/2 + n(n−1)/2 + (n−1) = n²−1
// messages (the textbook's n(n−1) worst case counts the Elections and
// Answers), the second-highest (s = n−1) costs 1 + 1 + (n−1) = n+1, and the
// highest (s = n) costs the textbook's best case, n−1.
func BullyFormula(n int, starter wire.NodeID) BullyCount {
	k := n - int(starter)
	e := k * (k + 1) / 2
	return BullyCount{N: n, Starter: starter, Election: e, Answer: e, Coordinator: n - 1, Winner: wire.NodeID(n)}
}

// BullyRun runs bully.Machine alone (Announce and AutoStart, the textbook
// algorithm) for n survivors with IDs 1..n and equal priorities on a
// reliable network where every message takes 1 ms, started by starter, and
// counts the messages by type.
func BullyRun(n int, starter wire.NodeID) (BullyCount, error) {
	const delay = time.Millisecond
	g := wire.GroupNumber{Seq: 7, ID: wire.NodeID(n + 1)} // the failed coordinator's group
	var cands []wire.Member
	for id := 1; id <= n; id++ {
		cands = append(cands, wire.Member{ID: wire.NodeID(id), Priority: wire.DefaultPriority})
	}
	ms := make([]*bully.Machine, n+1)
	for id := 1; id <= n; id++ {
		m, err := bully.New(bully.Config{
			Self:            cands[id-1],
			Group:           g,
			Candidates:      cands,
			AnswerTimeout:   100 * time.Millisecond,
			ElectionTimeout: time.Second,
			Announce:        true,
			AutoStart:       true,
		})
		if err != nil {
			return BullyCount{}, err
		}
		ms[id] = m
	}
	type msg struct {
		at       time.Time
		from, to wire.NodeID
		body     wire.Body
	}
	var q []msg // FIFO: equal delays keep it sorted by time
	c := BullyCount{N: n, Starter: starter}
	now := sim.Epoch
	drain := func(from wire.NodeID) {
		for _, snd := range ms[from].Outbox() {
			switch snd.Body.(type) {
			case wire.Election:
				c.Election++
			case wire.Answer:
				c.Answer++
			case wire.Coordinator:
				c.Coordinator++
			}
			q = append(q, msg{at: now.Add(delay), from: from, to: snd.To, body: snd.Body})
		}
	}
	ms[starter].Start(now)
	drain(starter)
	for steps := 0; ; steps++ {
		if steps > 10*n*n+100 {
			return c, fmt.Errorf("bully: no end after %d steps", steps)
		}
		// Next event: the first message, or the earliest deadline.
		next := time.Time{}
		if len(q) > 0 {
			next = q[0].at
		}
		var tick wire.NodeID
		for id := 1; id <= n; id++ {
			if d := ms[id].Deadline(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
				next, tick = d, wire.NodeID(id)
			}
		}
		if next.IsZero() {
			break
		}
		now = next
		if tick != 0 {
			ms[tick].Tick(now)
			drain(tick)
			continue
		}
		m := q[0]
		q = q[1:]
		ms[m.to].Step(now, m.from, m.body)
		drain(m.to)
	}
	for id := 1; id <= n; id++ {
		switch ms[id].Phase() {
		case bully.Won:
			if c.Winner != 0 {
				return c, fmt.Errorf("bully: two winners, %d and %d", c.Winner, id)
			}
			c.Winner = wire.NodeID(id)
		case bully.Lost:
		default:
			return c, fmt.Errorf("bully: node %d ended %s", id, ms[id].Phase())
		}
	}
	return c, nil
}
