//go:build linux

package main

import (
	"slices"
	"strings"
	"testing"
)

// Two blocks of `corosync-quorumtool -m` as node 5 prints them: all five,
// then node 5 cut off with node 4 (the second block's table is cut short:
// a block counts once its table lists "Nodes:" members).
const quorumtoolMonitor = `Quorum information
------------------
Date:             Thu Nov 26 16:12:59 2026
Quorum provider:  corosync_votequorum
Nodes:            5
Node ID:          5
Ring ID:          1.9
Quorate:          Yes

Votequorum information
----------------------
Expected votes:   5
Highest expected: 5
Total votes:      5
Quorum:           3  
Flags:            Quorate 

Membership information
----------------------
    Nodeid      Votes Name
         1          1 n1
         2          1 n2
         3          1 n3
         4          1 n4
         5          1 n5 (local)
Quorum information
------------------
Date:             Thu Nov 26 16:13:10 2026
Quorum provider:  corosync_votequorum
Nodes:            2
Node ID:          5
Ring ID:          4.d
Quorate:          No

Votequorum information
----------------------
Expected votes:   5
Highest expected: 5
Total votes:      2
Quorum:           3 Activity blocked
Flags:            

Membership information
----------------------
    Nodeid      Votes Name
         4          1 n4
`

func TestCorosyncMonitor(t *testing.T) {
	c := &exclCorosync{}
	nd := &coroNode{}
	// The first block only: node 5 is the primary leader.
	first := quorumtoolMonitor[:strings.LastIndex(quorumtoolMonitor, "Quorum information")]
	c.readBlocks(nd, strings.NewReader(first))
	if !nd.qOK || !nd.q.Quorate || nd.q.Ring != "1.9" || !slices.Equal(nd.q.Members, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("first block: %+v ok=%v", nd.q, nd.qOK)
	}
	if s := corosyncSample(5, 5, nd.q); !s.PL || !s.Full || s.Term != (exclTerm{Seq: 9, ID: 1}) {
		t.Errorf("node 5 in the full ring: %+v", s)
	}
	if s := corosyncSample(4, 5, nd.q); s.PL || !s.Primary || !s.Term.IsZero() {
		t.Errorf("node 4 in the full ring is primary, not leader: %+v", s)
	}
	// The second block is incomplete (one of its two members): the first stays.
	c.readBlocks(nd, strings.NewReader(quorumtoolMonitor))
	if nd.q.Ring != "1.9" {
		t.Errorf("an incomplete block was taken: %+v", nd.q)
	}
	// Complete, it is node 5's answer: not quorate, so no primary leader.
	c.readBlocks(nd, strings.NewReader(quorumtoolMonitor+"         5          1 n5 (local)\n"))
	if nd.q.Quorate || nd.q.Ring != "4.d" || !slices.Equal(nd.q.Members, []int{4, 5}) {
		t.Fatalf("second block: %+v", nd.q)
	}
	if s := corosyncSample(5, 5, nd.q); s.PL || s.Leader || s.Primary || s.Full {
		t.Errorf("node 5 without quorum: %+v", s)
	}
}
