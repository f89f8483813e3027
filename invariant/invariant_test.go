package invariant

import (
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func g(seq uint64, id wire.NodeID) wire.GroupNumber { return wire.GroupNumber{Seq: seq, ID: id} }

func mem(ids ...wire.NodeID) []wire.Member {
	ms := make([]wire.Member, len(ids))
	for i, id := range ids {
		ms[i] = wire.Member{ID: id, Priority: wire.DefaultPriority}
	}
	return ms
}

func normal(id wire.NodeID, grp wire.GroupNumber, v uint64, members ...wire.NodeID) invitation.Status {
	return invitation.Status{ID: id, Priority: wire.DefaultPriority, State: wire.StateNormal, Group: grp, Version: v, Members: mem(members...)}
}

func reorg(id wire.NodeID, grp wire.GroupNumber) invitation.Status {
	return invitation.Status{ID: id, Priority: wire.DefaultPriority, State: wire.StateReorganization, Group: grp}
}

func election(id wire.NodeID, grp wire.GroupNumber) invitation.Status {
	return invitation.Status{ID: id, Priority: wire.DefaultPriority, State: wire.StateElection, Group: grp}
}

// rec is one record of a history.
type rec struct {
	ms      int
	obs     *invitation.Status // Observe alive
	down    wire.NodeID        // Observe with Alive false
	created *Creation
	persist *[2]uint64 // node, counter
	sent    *wire.Message
	crash   wire.NodeID
	restart wire.NodeID
}

func obs(ms int, s invitation.Status) rec { return rec{ms: ms, obs: &s} }
func created(ms int, node wire.NodeID, grp wire.GroupNumber) rec {
	return rec{ms: ms, created: &Creation{Time: at(ms), Node: node, Group: grp}}
}
func persisted(ms int, node wire.NodeID, c uint64) rec {
	return rec{ms: ms, persist: &[2]uint64{uint64(node), c}}
}
func sent(ms int, m wire.Message) rec { return rec{ms: ms, sent: &m} }

func run(c *Checker, h []rec) []Violation {
	var out []Violation
	for _, r := range h {
		t := at(r.ms)
		switch {
		case r.obs != nil:
			out = append(out, c.Observe(Observation{Time: t, Node: r.obs.ID, Status: *r.obs, Alive: true})...)
		case r.down != 0:
			out = append(out, c.Observe(Observation{Time: t, Node: r.down})...)
		case r.created != nil:
			out = append(out, c.Created(*r.created)...)
		case r.persist != nil:
			c.Persisted(t, wire.NodeID(r.persist[0]), r.persist[1])
		case r.sent != nil:
			out = append(out, c.Sent(t, *r.sent)...)
		case r.crash != 0:
			c.Crash(t, r.crash)
		case r.restart != 0:
			c.Restart(t, r.restart)
		}
	}
	return out
}

func TestSafety(t *testing.T) {
	tests := []struct {
		name    string
		history []rec
		want    string // "" for a clean history, else the violated invariant
	}{
		{"clean merge", []rec{
			persisted(0, 1, 1), persisted(0, 2, 1),
			created(1, 1, g(1, 1)), obs(1, normal(1, g(1, 1), 1, 1)),
			created(2, 2, g(1, 2)), obs(2, normal(2, g(1, 2), 1, 2)),
			persisted(3, 2, 2), created(3, 2, g(2, 2)), obs(3, election(2, g(1, 2))),
			obs(4, reorg(1, g(2, 2))),
			obs(5, normal(2, g(2, 2), 1, 1, 2)),
			obs(6, normal(1, g(2, 2), 1, 1, 2)),
		}, ""},
		{"S1 created twice", []rec{
			created(1, 1, g(1, 1)), created(2, 1, g(1, 1)),
		}, "S1"},
		{"S1 created twice across a crash", []rec{
			created(1, 1, g(1, 1)), obs(1, normal(1, g(1, 1), 1, 1)),
			{ms: 2, crash: 1}, {ms: 3, restart: 1},
			created(4, 1, g(1, 1)),
		}, "S1"},
		{"S1 number of another node", []rec{created(1, 1, g(1, 2))}, "S1"},
		{"S1 created before persisted", []rec{
			persisted(0, 1, 4), created(1, 1, g(5, 1)),
		}, "S1"},
		{"S1 persisted then created", []rec{
			persisted(0, 1, 4), persisted(1, 1, 5), created(1, 1, g(5, 1)),
		}, ""},
		{"S1 sent before persisted", []rec{
			persisted(0, 3, 4),
			sent(1, wire.Message{Header: wire.Header{From: 3, Group: g(4, 3)}, Body: wire.Invitation{Group: g(5, 3)}}),
		}, "S1"},
		{"S1 sent an older number and others' numbers", []rec{
			persisted(0, 3, 4),
			sent(1, wire.Message{Header: wire.Header{From: 3, Group: g(4, 3)}, Body: wire.Invitation{Group: g(4, 3)}}),
			sent(1, wire.Message{Header: wire.Header{From: 3, Group: g(9, 7)}, Body: wire.Accept{Group: g(9, 7)}}),
		}, ""},
		{"S1 untracked sender", []rec{
			sent(1, wire.Message{Header: wire.Header{From: 3, Group: g(4, 3)}, Body: wire.Invitation{Group: g(5, 3)}}),
		}, ""},
		{"S2 one node observed twice", []rec{
			obs(1, normal(1, g(1, 1), 1, 1)),
			obs(2, invitation.Status{ID: 1, Priority: 100, State: wire.StateNormal, Group: g(1, 1), Version: 1, Members: mem(1)}),
		}, ""}, // the same node twice is one coordinator
		{"S3 normal list lacks self", []rec{obs(1, normal(2, g(1, 1), 1, 1, 3))}, "S3"},
		{"S3 normal list lacks coordinator", []rec{obs(1, normal(2, g(1, 1), 1, 2, 3))}, "S3"},
		{"S3 reorganization without group", []rec{obs(1, reorg(2, wire.GroupNumber{}))}, "S3"},
		{"S4 same version, two lists", []rec{
			obs(1, normal(1, g(1, 1), 2, 1, 2)),
			obs(2, normal(2, g(1, 1), 2, 1, 2, 3)),
		}, "S4"},
		{"S4 different versions may differ", []rec{
			obs(1, normal(1, g(1, 1), 3, 1, 2)),
			obs(2, normal(2, g(1, 1), 2, 1, 2, 3)),
		}, ""},
		{"S4 dead holder does not count", []rec{
			obs(1, normal(1, g(1, 1), 2, 1, 2)),
			{ms: 2, down: 1},
			obs(3, normal(2, g(1, 1), 2, 1, 2, 3)),
		}, ""},
		{"S4 holder moved on", []rec{
			obs(1, normal(2, g(1, 1), 2, 1, 2)),
			obs(2, normal(2, g(1, 1), 3, 1, 2, 3)),
			obs(3, normal(3, g(1, 1), 2, 1, 2, 3)),
		}, ""},
		{"election views are not compared", []rec{
			obs(1, election(1, g(1, 1))),
			obs(1, election(2, g(1, 1))),
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := run(New(), tt.history)
			if tt.want == "" {
				for _, v := range vs {
					t.Errorf("unexpected violation: %s", v)
				}
				return
			}
			if len(vs) == 0 {
				t.Fatalf("want a %s violation, got none", tt.want)
			}
			for _, v := range vs {
				if v.Invariant != tt.want {
					t.Errorf("want %s, got %s", tt.want, v)
				}
				if !strings.Contains(v.String(), tt.want+" violated at 00:00:00.") {
					t.Errorf("unreadable violation: %q", v.String())
				}
			}
		})
	}
}

// S2 cannot be broken by invitation.Status values from distinct nodes (a
// coordinator's ID is in its group number), so it is tested on views that
// lie about their node.
func TestS2TwoCoordinators(t *testing.T) {
	c := New()
	vs := c.Observe(Observation{Time: at(1), Node: 1, Status: normal(1, g(1, 1), 1, 1), Alive: true})
	vs = append(vs, c.Observe(Observation{Time: at(2), Node: 7, Status: normal(1, g(1, 1), 1, 1), Alive: true})...)
	var s2 bool
	for _, v := range vs {
		s2 = s2 || v.Invariant == "S2"
	}
	if !s2 {
		t.Fatalf("want S2, got %v", vs)
	}
	// Once the first holder dies, the second is alone.
	c.Crash(at(3), 1)
	c.Crash(at(3), 7)
	if vs := c.Observe(Observation{Time: at(4), Node: 1, Status: normal(1, g(1, 1), 1, 1), Alive: true}); len(vs) != 0 {
		t.Fatalf("after crash: %v", vs)
	}
}

func TestConverged(t *testing.T) {
	high := func(id wire.NodeID, s invitation.Status) invitation.Status { s.Priority = 200; return s }
	tests := []struct {
		name string
		live []invitation.Status
		bad  []wire.NodeID // nodes reported
	}{
		{"none", nil, nil},
		{"one group", []invitation.Status{
			normal(1, g(4, 3), 2, 1, 2, 3), normal(2, g(4, 3), 2, 1, 2, 3), normal(3, g(4, 3), 2, 1, 2, 3),
		}, nil},
		{"not highest", []invitation.Status{
			normal(1, g(4, 2), 2, 1, 2, 3), normal(2, g(4, 2), 2, 1, 2, 3), normal(3, g(4, 2), 2, 1, 2, 3),
		}, []wire.NodeID{1, 2, 3}},
		{"priority beats id", []invitation.Status{
			high(1, normal(1, g(4, 1), 2, 1, 2)), normal(2, g(4, 1), 2, 1, 2),
		}, []wire.NodeID{1, 2}}, // member priorities in the lists are 100, the live set says 200
		{"two groups", []invitation.Status{
			normal(1, g(4, 3), 2, 1, 3), normal(2, g(2, 2), 1, 2), normal(3, g(4, 3), 2, 1, 3),
		}, []wire.NodeID{1, 2, 3}},
		{"reorganizing", []invitation.Status{
			normal(1, g(4, 2), 2, 1, 2), reorg(2, g(4, 2)),
		}, []wire.NodeID{1, 2}},
		{"stale version", []invitation.Status{
			normal(1, g(4, 2), 1, 1, 2), normal(2, g(4, 2), 2, 1, 2),
		}, []wire.NodeID{1}},
		{"dead member listed", []invitation.Status{
			normal(1, g(4, 2), 2, 1, 2, 3), normal(2, g(4, 2), 2, 1, 2, 3),
		}, []wire.NodeID{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := Converged(at(9), tt.live)
			var got []wire.NodeID
			for _, v := range vs {
				if v.Invariant != "L1" {
					t.Errorf("not L1: %s", v)
				}
				got = append(got, v.Nodes...)
			}
			if formatIDs(got) != formatIDs(tt.bad) {
				t.Errorf("reported %v, want %v: %v", got, tt.bad, vs)
			}
			if IsConverged(tt.live) != (len(tt.bad) == 0) {
				t.Errorf("IsConverged disagrees")
			}
		})
	}
}

func TestFailedOver(t *testing.T) {
	tests := []struct {
		name string
		sv   []invitation.Status
		ok   bool
	}{
		{"one group", []invitation.Status{normal(1, g(5, 2), 1, 1, 2), normal(2, g(5, 2), 1, 1, 2)}, true},
		{"still electing", []invitation.Status{normal(1, g(5, 2), 1, 1, 2), election(2, g(4, 3))}, false},
		{"split", []invitation.Status{normal(1, g(5, 1), 1, 1), normal(2, g(5, 2), 1, 2)}, false},
		{"old group", []invitation.Status{normal(1, g(4, 3), 1, 1, 2, 3), normal(2, g(4, 3), 1, 1, 2, 3)}, false},
		{"missing survivor", []invitation.Status{normal(1, g(5, 2), 1, 1, 2), normal(2, g(5, 2), 1, 1, 2), normal(4, g(5, 2), 1, 1, 2, 4)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := FailedOver(at(1), tt.sv)
			if (len(vs) == 0) != tt.ok {
				t.Errorf("ok=%v, got %v", tt.ok, vs)
			}
			for _, v := range vs {
				if v.Invariant != "L2" {
					t.Errorf("not L2: %s", v)
				}
			}
		})
	}
}

func TestCheckerLiveness(t *testing.T) {
	c := New()
	run(c, []rec{
		obs(1, normal(1, g(4, 3), 2, 1, 2, 3)), obs(1, normal(2, g(4, 3), 2, 1, 2, 3)), obs(1, normal(3, g(4, 3), 2, 1, 2, 3)),
	})
	if vs := c.CheckConverged(at(2)); len(vs) != 0 {
		t.Fatalf("converged: %v", vs)
	}
	c.Crash(at(3), 3)
	if vs := c.CheckConverged(at(4)); len(vs) == 0 {
		t.Fatal("a dead coordinator's group counted as converged")
	}
	if vs := c.CheckFailover(at(4), []wire.NodeID{1, 2}); len(vs) != 2 {
		// Both are still in the dead coordinator's group.
		t.Fatalf("failover: %v", vs)
	}
	run(c, []rec{obs(5, normal(1, g(5, 2), 1, 1, 2)), obs(5, normal(2, g(5, 2), 1, 1, 2))})
	if vs := c.CheckFailover(at(5), []wire.NodeID{1, 2}); len(vs) != 0 {
		t.Fatalf("failover: %v", vs)
	}
	c.Restart(at(6), 3)
	if vs := c.CheckConverged(at(6)); len(vs) == 0 {
		t.Fatal("a restarted node without a view counted as converged")
	}
	if vs := c.CheckFailover(at(6), []wire.NodeID{1, 2, 9}); len(vs) != 1 || vs[0].Nodes[0] != 9 {
		t.Fatalf("unknown survivor: %v", vs)
	}
	if got := Highest(c.Live()); got != 2 {
		t.Fatalf("Highest = %d, want 2", got)
	}
}

// TestLP1 checks the exclusive-leadership invariant on hand-made
// leaderships: a lease counts to its end (past a stop or a crash), a
// leadership without one until it stops, and primary leaders' terms grow
// except across a lost state file.
func TestLP1(t *testing.T) {
	type lead struct {
		ms     int
		node   wire.NodeID
		term   wire.GroupNumber
		end    int // ms; 0: no lease (until unlead)
		unlead bool
		lost   bool // the node's state file was lost (StateLost)
	}
	cases := []struct {
		name  string
		leads []lead
		want  string // substring of the first violation, "" for none
	}{
		{"one leader renewing", []lead{{0, 5, g(10, 5), 1000, false, false}, {500, 5, g(10, 5), 1500, false, false}}, ""},
		{"successor after the lease's end", []lead{{0, 5, g(10, 5), 1000, false, false}, {1000, 3, g(20, 3), 2000, false, false}}, ""},
		{"successor before the lease's end", []lead{{0, 5, g(10, 5), 1000, false, false}, {999, 3, g(20, 3), 2000, false, false}}, "two primary leaders at once: node 5"},
		{"a stop does not end a lease early", []lead{{0, 5, g(10, 5), 1000, false, false}, {100, 5, g(10, 5), 0, true, false}, {500, 3, g(20, 3), 2000, false, false}}, "two primary leaders at once"},
		{"without a lease: until it stops", []lead{{0, 5, g(10, 5), 0, false, false}, {400, 5, g(10, 5), 0, true, false}, {500, 3, g(20, 3), 0, false, false}}, ""},
		{"without a lease, not stopped", []lead{{0, 5, g(10, 5), 0, false, false}, {500, 3, g(20, 3), 0, false, false}}, "until it stops"},
		{"a lower term after a higher", []lead{{0, 3, g(20, 3), 1000, false, false}, {2000, 5, g(10, 5), 3000, false, false}}, "terms of primary leaders went backwards"},
		{"the same leader again in its term", []lead{{0, 5, g(10, 5), 1000, false, false}, {2000, 5, g(10, 5), 3000, false, false}}, ""},
		{"a lower term after a lost state file", []lead{{0, 3, g(20, 3), 1000, false, false}, {1500, 3, g(20, 3), 0, false, true}, {2000, 5, g(10, 5), 3000, false, false}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			var got []Violation
			for _, l := range tc.leads {
				switch {
				case l.lost:
					c.StateLost(l.node)
				case l.unlead:
					c.Unlead(at(l.ms), l.node)
				default:
					end := time.Time{}
					if l.end != 0 {
						end = at(l.end)
					}
					got = append(got, c.Lead(at(l.ms), l.node, l.term, end)...)
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("violations %v, want none", got)
			case tc.want != "" && len(got) == 0:
				t.Errorf("no violation, want %q", tc.want)
			case tc.want != "" && !strings.Contains(got[0].String(), tc.want):
				t.Errorf("violation %s, want %q", got[0], tc.want)
			}
		})
	}
}

// TestS5 checks that the group numbers a node holds only grow, across
// restarts from what its state file kept (HeldFloor).
func TestS5(t *testing.T) {
	c := New()
	obs := func(ms int, st invitation.Status) []Violation {
		return c.Observe(Observation{Time: at(ms), Node: st.ID, Status: st, Alive: true})
	}
	if v := obs(0, normal(3, g(20, 5), 1, 3, 5)); len(v) > 0 {
		t.Fatal(v)
	}
	if v := obs(10, reorg(3, g(30, 7))); len(v) > 0 {
		t.Fatal(v)
	}
	if v := obs(20, election(3, g(30, 7))); len(v) > 0 { // an election holds nothing new
		t.Fatal(v)
	}
	v := obs(30, reorg(3, g(25, 9)))
	if len(v) != 1 || v[0].Invariant != "S5" {
		t.Fatalf("joined 25.9 after holding 30.7: %v, want one S5", v)
	}
	// Restarted from a state file that kept 22.4 only: 25.9 is fine then.
	c.Crash(at(40), 3)
	c.Restart(at(41), 3)
	c.HeldFloor(3, g(22, 4))
	if v := obs(50, reorg(3, g(25, 9))); len(v) > 0 {
		t.Fatalf("after a restart from 22.4: %v", v)
	}
}
