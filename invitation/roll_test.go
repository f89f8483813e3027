package invitation

import (
	"slices"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

// The roll of voters and the rule it gives are package quorum's, tested
// there (testdata/roll*.txt); what the node does with them, here.

func rollNode(t *testing.T, q Quorum) *Node {
	t.Helper()
	n, err := New(Config{ID: 9, Priority: wire.DefaultPriority, Boot: 0xb009, Timing: DefaultTiming(), Quorum: q}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return n
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
		n.quorum.roll.Heard(t0, 1, 0xb1, false, q, true)
		q.Home = 0x22
		n.quorum.roll.Heard(t0, 2, 0xb2, false, q, true)
		n.ownRule()
		n.out = Output{}
		q.Home, q.Age = 0x99, 0
		n.quorum.roll.Heard(t0.Add(time.Minute), 2, 0xc2, true, q, true) // fresh, elsewhere, started after 0xb2 was heard
		if r := n.ownRule(); r.Voters != tc.voters {
			t.Errorf("--expect %d, nodes 1, 2, 9 and a second process of 2: a majority of %d, want %d", tc.expect, r.Voters, tc.voters)
		}
		var extra []wire.NodeID
		for _, no := range n.out.Notices {
			if no.Kind == NoticeQuorumRule {
				extra = no.Extra
			}
		}
		if !slices.Equal(extra, []wire.NodeID{2}) {
			t.Errorf("--expect %d: the rule's notice names %v as run by more than one process, want [2] (notices %v)", tc.expect, extra, n.out.Notices)
		}
	}
}
