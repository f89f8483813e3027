package invitation

import (
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// The roll of voters and the rule it gives (quorum.go), case by case: what
// counts as one more voter, what as the same one restarted, and what is
// forgotten.

func rollNode(t *testing.T, q Quorum) *Node {
	t.Helper()
	n, err := New(Config{ID: 9, Priority: wire.DefaultPriority, Boot: 0xb009, Timing: DefaultTiming(), Quorum: q}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRollVoters(t *testing.T) {
	t0 := time.Unix(100, 0)
	agree := wire.Quorum{Expect: 5, Voters: 5}
	type hear struct {
		after time.Duration // since t0
		id    wire.NodeID
		boot  uint64
		fresh bool
		age   time.Duration // how long it has run, as it announces
		home  uint32        // where it keeps its state, as it announces
	}
	cases := []struct {
		name   string
		listed []wire.NodeID // member list at t0
		homes  []uint32      // the homes it carries
		hears  []hear
		want   int // processes in the roll
		extra  []wire.NodeID
		counts map[uint64]bool // boot: whether a leader counts its grants (ID of the last hear)
	}{
		{name: "a member known by ID is the process that ran when the list named it, fresh or not",
			listed: []wire.NodeID{1, 2}, hears: []hear{{10 * time.Second, 2, 0xb2, true, time.Minute, 0}}, want: 2},
		{name: "a fresh process started since the list named its ID is one more voter (a second process, or lost state)",
			listed: []wire.NodeID{1, 2}, hears: []hear{{10 * time.Second, 2, 0xc2, true, 5 * time.Second, 0}}, want: 3,
			extra: []wire.NodeID{2}, counts: map[uint64]bool{0xc2: false}},
		{name: "a process with its state started since the list named its ID: the member restarted",
			listed: []wire.NodeID{1, 2}, hears: []hear{{10 * time.Second, 2, 0xc2, false, 5 * time.Second, 0}}, want: 2},
		{name: "the old process of a disputed ID still counts",
			hears: []hear{{0, 2, 0xb2, false, 0, 0}, {1, 2, 0xc2, true, 0, 0}}, want: 2, extra: []wire.NodeID{2},
			counts: map[uint64]bool{0xb2: true, 0xc2: false}},
		{name: "a restart with its state replaces its process",
			hears: []hear{{0, 3, 0xb3, false, 0, 0}, {time.Second, 3, 0xc3, false, 0, 0}}, want: 1,
			counts: map[uint64]bool{0xc3: true}},
		{name: "the process a successor replaced heard again: two processes, neither counted",
			hears: []hear{{0, 3, 0xb3, false, 0, 0}, {time.Second, 3, 0xc3, false, 0, 0}, {2 * time.Second, 3, 0xb3, false, 2 * time.Second, 0}},
			want:  2, extra: []wire.NodeID{3}, counts: map[uint64]bool{0xb3: false, 0xc3: false}},
		{name: "a late packet the replaced process sent before its successor started proves nothing",
			hears: []hear{{0, 3, 0xb3, false, 0, 0}, {time.Second, 3, 0xc3, false, 0, 0}, {2 * time.Second, 3, 0xb3, false, 500 * time.Millisecond, 0}},
			want:  1, counts: map[uint64]bool{0xc3: true}},
		{name: "a first boot of an unknown ID is a voter, fresh or not",
			hears: []hear{{0, 6, 0xb6, true, 0, 0}}, want: 1, counts: map[uint64]bool{0xb6: true}},
		{name: "a fresh process at the member's home is the member restarted (its data dir was lost)",
			listed: []wire.NodeID{1, 2}, homes: []uint32{0x11, 0x22},
			hears: []hear{{10 * time.Second, 2, 0xc2, true, 5 * time.Second, 0x22}}, want: 2, counts: map[uint64]bool{0xc2: true}},
		{name: "a fresh process elsewhere, even started before the list, is a second process",
			listed: []wire.NodeID{1, 2}, homes: []uint32{0x11, 0x22},
			hears: []hear{{10 * time.Second, 2, 0xc2, true, time.Minute, 0x99}}, want: 3, extra: []wire.NodeID{2},
			counts: map[uint64]bool{0xc2: false}},
		{name: "a restart at its home replaces the process, fresh or not",
			hears: []hear{{0, 3, 0xb3, false, 0, 0x33}, {time.Second, 3, 0xc3, true, 0, 0x33}}, want: 1,
			counts: map[uint64]bool{0xc3: true}},
		{name: "a process with the node's state elsewhere is the node moved",
			hears: []hear{{0, 3, 0xb3, false, 0, 0x33}, {time.Second, 3, 0xc3, false, 0, 0x44}}, want: 1,
			counts: map[uint64]bool{0xc3: true}},
		{name: "boots per ID are bounded",
			hears: []hear{{0, 7, 1, false, 0, 0}, {1, 7, 2, true, 0, 0}, {2, 7, 3, true, 0, 0}, {3, 7, 4, true, 0, 0}, {4, 7, 5, true, 0, 0}, {5, 7, 6, true, 0, 0}},
			want:  maxBootsPerID, extra: []wire.NodeID{7}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := rollNode(t, Quorum{Expect: 5})
			var ms []wire.Member
			for _, id := range tc.listed {
				ms = append(ms, wire.Member{ID: id})
			}
			n.listVoters(t0, ms, tc.homes)
			var last wire.NodeID
			for _, h := range tc.hears {
				q := agree
				q.Age, q.Home = uint32(h.age/time.Millisecond), h.home
				n.noteVoter(t0.Add(h.after), h.id, h.boot, h.fresh, q, true)
				last = h.id
			}
			if n.quorum.rollSize != tc.want {
				t.Errorf("roll holds %d processes, want %d", n.quorum.rollSize, tc.want)
			}
			if got := n.extraVoters(); !equalIDs(got, tc.extra) {
				t.Errorf("extra voters %v, want %v", got, tc.extra)
			}
			for boot, want := range tc.counts {
				if got := n.countsGrant(last, boot); got != want {
					t.Errorf("countsGrant(%d, %x) = %v, want %v", last, boot, got, want)
				}
			}
		})
	}
}

func equalIDs(a, b []wire.NodeID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRollSecondProcessCounts: a second process of an ID is one more
// voter (design §8), and the rule's notice names the disputed ID even when
// the number of voters does not change (e2e's TestQuorumDuplicateSides
// found quorum_rule.extra empty while two processes of ID 2 ran).
func TestRollSecondProcessCounts(t *testing.T) {
	t0 := time.Unix(100, 0)
	for _, tc := range []struct {
		expect, voters int
	}{{3, 4}, {5, 5}} {
		n := rollNode(t, Quorum{Expect: tc.expect})
		q := wire.Quorum{Expect: uint32(tc.expect), Voters: uint32(tc.expect), Home: 0x11}
		n.noteVoter(t0, 1, 0xb1, false, q, true)
		q.Home = 0x22
		n.noteVoter(t0, 2, 0xb2, false, q, true)
		n.ownRule()
		n.out = Output{}
		q.Home, q.Age = 0x99, 0
		n.noteVoter(t0.Add(time.Minute), 2, 0xc2, true, q, true) // fresh, elsewhere, started after 0xb2 was heard
		if r := n.ownRule(); r.voters != tc.voters {
			t.Errorf("--expect %d, nodes 1, 2, 9 and a second process of 2: a majority of %d, want %d", tc.expect, r.voters, tc.voters)
		}
		var extra []wire.NodeID
		for _, no := range n.out.Notices {
			if no.Kind == NoticeQuorumRule {
				extra = no.Extra
			}
		}
		if !equalIDs(extra, []wire.NodeID{2}) {
			t.Errorf("--expect %d: the rule's notice names %v as run by more than one process, want [2] (notices %v)", tc.expect, extra, n.out.Notices)
		}
	}
}

func TestRollForgets(t *testing.T) {
	t0 := time.Unix(100, 0)
	n := rollNode(t, Quorum{Expect: 3})
	for id := wire.NodeID(1); id <= 4; id++ {
		n.noteVoter(t0, id, 0xb0+uint64(id), false, wire.Quorum{Expect: 3, Voters: 3}, true)
	}
	if r := n.ownRule(); r.voters != 5 {
		t.Fatalf("rule of %d voters with itself and four others heard, want 5", r.voters)
	}
	n.voterLeft(4)
	if r := n.ownRule(); r.voters != 4 {
		t.Errorf("after 4 left: a majority of %d, want 4", r.voters)
	}
	// 1 stays in this node's member list; 2 and 3 fall silent.
	n.members = []wire.Member{{ID: 1}, {ID: 9}}
	n.sweepVoters(t0.Add(n.t.VoterTimeout / 2))
	n.sweepVoters(t0.Add(n.t.VoterTimeout + time.Second))
	if r := n.ownRule(); r.voters != 3 || n.quorum.rollSize != 1 {
		t.Errorf("after VoterTimeout: %d processes and a majority of %d, want 1 (the member) and 3 (--expect)", n.quorum.rollSize, r.voters)
	}
}

func TestRuleFromSettings(t *testing.T) {
	t0 := time.Unix(100, 0)
	cases := []struct {
		name   string
		q      Quorum
		others []wire.Quorum // settings heard from nodes 1, 2, ...
		want   rule
	}{
		{"agreeing", Quorum{Expect: 4, TieBreaker: 3}, []wire.Quorum{{Expect: 4, TieBreaker: 3}, {Expect: 4, TieBreaker: 3}}, rule{4, 3}},
		{"tie-breakers disagree", Quorum{Expect: 4, TieBreaker: 3}, []wire.Quorum{{Expect: 4, TieBreaker: 1}}, rule{4, 0}},
		{"a node without a tie-breaker", Quorum{Expect: 4, TieBreaker: 3}, []wire.Quorum{{Expect: 4}}, rule{4, 0}},
		{"a larger expect", Quorum{Expect: 3}, []wire.Quorum{{Expect: 5}}, rule{5, 0}},
		{"a smaller expect counts mine", Quorum{Expect: 5}, []wire.Quorum{{Expect: 3}}, rule{5, 0}},
		{"more voters than expect", Quorum{Expect: 2, TieBreaker: 9}, []wire.Quorum{{Expect: 2, TieBreaker: 9}, {Expect: 2, TieBreaker: 9}}, rule{3, 0}},
		{"a node without a quorum", Quorum{Expect: 3}, []wire.Quorum{{}}, rule{3, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := rollNode(t, tc.q)
			for i, q := range tc.others {
				n.noteVoter(t0, wire.NodeID(i+1), uint64(0xb1+i), false, q, true)
			}
			if got := n.ownRule(); got != tc.want {
				t.Errorf("rule %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRuleCovers(t *testing.T) {
	cases := []struct {
		leader, member rule
		want           bool
	}{
		{rule{5, 0}, rule{5, 0}, true},
		{rule{5, 0}, rule{3, 2}, true},
		{rule{3, 0}, rule{5, 0}, false},
		{rule{4, 3}, rule{4, 3}, true},
		{rule{4, 3}, rule{4, 0}, false}, // the member knows the tie-breaker is disputed
		{rule{4, 3}, rule{4, 1}, false},
		{rule{4, 0}, rule{4, 1}, true},
	}
	for _, tc := range cases {
		if got := tc.leader.covers(tc.member); got != tc.want {
			t.Errorf("%+v covers %+v = %v, want %v", tc.leader, tc.member, got, tc.want)
		}
	}
}
