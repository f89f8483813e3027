package group

import (
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

func TestGossipGaps(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ms := func(ids ...wire.NodeID) []wire.Member {
		var out []wire.Member
		for _, id := range ids {
			out = append(out, wire.Member{ID: id, Priority: wire.DefaultPriority})
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		gossip      map[wire.NodeID]string // memberlist's last news, by node
		members     []wire.Member
		wantAddr    string
		wantMissing int
	}{
		{"all listed", map[wire.NodeID]string{2: GossipAlive, 3: GossipAlive, 5: GossipAlive}, ms(1, 2, 3, 5), "10.0.0.5:7951", 0},
		{"two missing", map[wire.NodeID]string{5: GossipAlive}, ms(1, 2, 3, 5), "10.0.0.5:7951", 2},
		{"a dead member counts", map[wire.NodeID]string{2: GossipDead, 3: GossipAlive, 5: GossipAlive}, ms(1, 2, 3, 5), "10.0.0.5:7951", 1},
		{"coordinator not alive: nothing to sync with", map[wire.NodeID]string{5: GossipDead}, ms(1, 2, 5), "", 0},
		{"coordinator unknown", map[wire.NodeID]string{2: GossipAlive}, ms(1, 2, 5), "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newPeerBook(1)
			for id, st := range tc.gossip {
				b.noteGossip(id, st, "10.0.0."+string(rune('0'+id))+":7951", nil, nil, now)
			}
			addr, missing := b.gossipGaps(5, tc.members)
			if addr != tc.wantAddr || missing != tc.wantMissing {
				t.Errorf("gossipGaps = %q, %d; want %q, %d", addr, missing, tc.wantAddr, tc.wantMissing)
			}
		})
	}
}
