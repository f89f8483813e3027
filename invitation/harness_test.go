package invitation

import (
	"container/heap"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// net is a minimal deterministic network for unit tests: every message is
// delivered after a fixed delay unless a drop rule matches; saves complete
// after a fixed latency. The full simulator lives in package sim; this one
// exists so the machine's tests do not depend on it.
type net struct {
	t       testing.TB
	now     time.Time
	nodes   map[wire.NodeID]*Node
	durable map[wire.NodeID]uint64
	q       evq
	seq     int
	delay   time.Duration
	save    time.Duration
	drop    func(from, to wire.NodeID, m wire.Message) bool
	trace   []string
	created map[wire.GroupNumber]bool
	timing  Timing
	alg     Election
}

type ev struct {
	at   time.Time
	seq  int
	to   wire.NodeID
	msg  *wire.Message
	save uint64 // persist completion
	tick bool
}

type evq []ev

func (q evq) Len() int { return len(q) }
func (q evq) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q evq) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *evq) Push(x any)   { *q = append(*q, x.(ev)) }
func (q *evq) Pop() any     { o := *q; e := o[len(o)-1]; *q = o[:len(o)-1]; return e }

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newNet(t testing.TB, timing Timing) *net {
	return &net{t: t, now: epoch, nodes: map[wire.NodeID]*Node{}, durable: map[wire.NodeID]uint64{},
		delay: time.Millisecond, save: 2 * time.Millisecond, created: map[wire.GroupNumber]bool{}, timing: timing}
}

func (nt *net) add(id wire.NodeID, prio uint8) *Node {
	n, err := New(Config{ID: id, Priority: prio, Counter: nt.durable[id], Timing: nt.timing, Election: nt.alg, Rand: rand.New(rand.NewSource(int64(id)))}, nt.now)
	if err != nil {
		nt.t.Fatal(err)
	}
	nt.nodes[id] = n
	nt.flush(n)
	return n
}

func (nt *net) crash(id wire.NodeID) { delete(nt.nodes, id) }

func (nt *net) push(e ev) {
	nt.seq++
	e.seq = nt.seq
	heap.Push(&nt.q, e)
}

func (nt *net) flush(n *Node) {
	before := n.Status().Group
	o := n.Output()
	for _, e := range o.Events {
		nt.trace = append(nt.trace, fmt.Sprintf("%v %s", e.Time.Sub(epoch), e))
	}
	if g := n.Status().Group; g != before && g.ID == n.ID() {
		if nt.created[g] {
			nt.t.Fatalf("S1: group %s created twice\n%s", g, nt.dump())
		}
		nt.created[g] = true
	}
	if o.Persist != nil {
		nt.push(ev{at: nt.now.Add(nt.save), to: n.ID(), save: o.Persist.Counter})
	}
	for _, env := range o.Messages {
		m := env.Msg
		targets := []wire.NodeID{env.To}
		if env.To == wire.Broadcast {
			targets = targets[:0]
			for id := range nt.nodes {
				if id != n.ID() {
					targets = append(targets, id)
				}
			}
			sort.Slice(targets, func(i, j int) bool { return targets[i] < targets[j] })
		}
		for _, to := range targets {
			if nt.drop != nil && nt.drop(n.ID(), to, m) {
				nt.trace = append(nt.trace, fmt.Sprintf("%v DROP %d→%d %s", nt.now.Sub(epoch), n.ID(), to, m))
				continue
			}
			mm := m
			nt.push(ev{at: nt.now.Add(nt.delay), to: to, msg: &mm})
		}
	}
	if d := n.NextDeadline(); !d.IsZero() {
		nt.push(ev{at: maxTime(d, nt.now), to: n.ID(), tick: true})
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// run processes events until d has passed.
func (nt *net) run(d time.Duration) {
	end := nt.now.Add(d)
	for nt.q.Len() > 0 && !nt.q[0].at.After(end) {
		e := heap.Pop(&nt.q).(ev)
		nt.now = e.at
		n := nt.nodes[e.to]
		if n == nil {
			continue
		}
		switch {
		case e.msg != nil:
			n.Step(nt.now, *e.msg)
		case e.save != 0:
			if e.save > nt.durable[e.to] {
				nt.durable[e.to] = e.save
			}
			n.Persisted(nt.now, e.save)
		case e.tick:
			if n.NextDeadline().After(nt.now) {
				continue
			}
			n.Tick(nt.now)
		}
		nt.flush(n)
	}
	nt.now = end
}

func (nt *net) dump() string {
	var b strings.Builder
	for _, id := range sortedIDs(nt.nodes) {
		fmt.Fprintf(&b, "  %s\n", nt.nodes[id].Status())
	}
	lines := nt.trace
	if len(lines) > 80 {
		lines = lines[len(lines)-80:]
	}
	b.WriteString(strings.Join(lines, "\n"))
	return b.String()
}

// converged reports whether every node is Normal in one group coordinated
// by the highest-ranked node, with every node in the member list.
func (nt *net) converged() error {
	var top wire.Rank
	for _, n := range nt.nodes {
		if r := n.rank(); top.Less(r) {
			top = r
		}
	}
	var g wire.GroupNumber
	for _, id := range sortedIDs(nt.nodes) {
		s := nt.nodes[id].Status()
		if s.State != wire.StateNormal {
			return fmt.Errorf("node %d is %s", id, s.State)
		}
		if g.IsZero() {
			g = s.Group
		}
		if s.Group != g {
			return fmt.Errorf("node %d in %s, node %d in %s", sortedIDs(nt.nodes)[0], g, id, s.Group)
		}
		if s.Group.ID != top.ID {
			return fmt.Errorf("group %s not coordinated by highest %d", g, top.ID)
		}
		if len(s.Members) != len(nt.nodes) {
			return fmt.Errorf("node %d has %d members, want %d", id, len(s.Members), len(nt.nodes))
		}
	}
	return nil
}

func (nt *net) mustConverge(within time.Duration) {
	nt.t.Helper()
	step := 10 * time.Millisecond
	for waited := time.Duration(0); waited <= within; waited += step {
		if nt.converged() == nil {
			return
		}
		nt.run(step)
	}
	nt.t.Fatalf("not converged within %v: %v\n%s", within, nt.converged(), nt.dump())
}

func TestThreeNodesConverge(t *testing.T) {
	nt := newNet(t, DefaultTiming())
	for id := wire.NodeID(1); id <= 3; id++ {
		nt.add(id, 100)
	}
	nt.mustConverge(DefaultTiming().HealBound())
	t.Logf("converged at %v: %s", nt.now.Sub(epoch), nt.nodes[1].Status())
}
