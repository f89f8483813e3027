package group

import (
	"testing"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

func TestKindOf(t *testing.T) {
	g := wire.GroupNumber{Seq: 7, ID: 3}
	for _, tc := range []struct {
		name string
		msg  wire.Message
		want pktKind
	}{
		{"heartbeat", wire.Message{Header: wire.Header{From: 3, Group: g}, Body: wire.Beacon{Beat: 9}}, kindHeartbeat},
		{"coordinator's unnumbered beacon", wire.Message{Header: wire.Header{From: 3, Group: g}, Body: wire.Beacon{}}, kindBeacon},
		{"numbered beacon of a non-coordinator", wire.Message{Header: wire.Header{From: 4, Group: g}, Body: wire.Beacon{Beat: 9}}, kindBeacon},
		{"booting node's beacon", wire.Message{Header: wire.Header{From: 4}, Body: wire.Beacon{}}, kindBeacon},
		{"ack", wire.Message{Header: wire.Header{From: 4, Group: g}, Body: wire.BeatAck{Group: g, Beat: 9}}, kindAck},
		{"invitation", wire.Message{Header: wire.Header{From: 3, Group: g}, Body: wire.Invitation{Group: g}}, kindOther},
		{"are you there", wire.Message{Header: wire.Header{From: 4, Group: g}, Body: wire.AreYouThere{}}, kindOther},
	} {
		if got := kindOf(tc.msg); got != tc.want {
			t.Errorf("%s: kind %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestRelationOf(t *testing.T) {
	g := wire.GroupNumber{Seq: 7, ID: 3}
	coord := Status{ID: 3, Role: wire.RoleCoordinator, Group: g, Coordinator: 3, Members: []wire.NodeID{1, 3}}
	member := Status{ID: 1, Role: wire.RoleParticipant, Group: g, Coordinator: 3, Members: []wire.NodeID{1, 2, 3}}
	alone := Status{ID: 1}
	for _, tc := range []struct {
		name    string
		st      Status
		id      wire.NodeID
		inGroup bool
		want    relation
	}{
		{"self", coord, 3, true, relSelf},
		{"self without a group", alone, 1, false, relSelf},
		{"coordinator's member", coord, 1, true, relMember},
		{"coordinator's outsider", coord, 5, false, relOutside},
		{"member's coordinator", member, 3, true, relCoordinator},
		{"fellow member", member, 2, true, relFellow},
		{"member's outsider", member, 5, false, relOutside},
		{"without a group", alone, 3, false, relOutside},
	} {
		if got := relationOf(tc.st, tc.st.ID, tc.id, tc.inGroup); got != tc.want {
			t.Errorf("%s: relation %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestReachOf(t *testing.T) {
	tm := invitation.DefaultTiming()
	now := time.Unix(1_800_000_000, 0)
	ago := func(d time.Duration, k pktKind) evidence { return evidence{from: 2, at: now.Add(-d), kind: k} }
	coordAgo := func(d time.Duration) evidence { return evidence{from: 3, at: now.Add(-d), kind: kindHeartbeat} }
	never := evidence{}
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	ack, ackQ := tm.AckLate(false), tm.AckLate(true)
	if ackQ >= ack {
		t.Fatalf("the test wants a quorum ack window (%v) shorter than the plain one (%v)", ackQ, ack)
	}
	if want := tm.AckInterval + tm.AliveInterval + tm.AnswerTimeout; ack != want {
		t.Fatalf("ack window %v, want %v", ack, want)
	}
	alive, peer := tm.AliveTimeout, tm.PeerTimeout
	d1, d2 := alive/3, alive*2/3 // within AliveTimeout, d1 fresher
	up := func(basis string, age, window time.Duration) schema.Reach {
		return schema.Reach{State: ReachUp, Basis: basis, AgeMS: ms(age), WindowMS: ms(window)}
	}
	lost := func(basis string, age, window time.Duration) schema.Reach {
		return schema.Reach{State: ReachLost, Basis: basis, AgeMS: ms(age), WindowMS: ms(window)}
	}
	unknown := func(basis string, age, window time.Duration) schema.Reach {
		return schema.Reach{State: ReachUnknown, Basis: basis, AgeMS: ms(age), WindowMS: ms(window)}
	}
	none := func(window time.Duration) schema.Reach {
		return schema.Reach{State: ReachUnknown, Basis: schema.BasisNone, AgeMS: -1, WindowMS: ms(window)}
	}
	vouched := func(r schema.Reach) schema.Reach { r.Basis, r.Via = schema.BasisCoordinator, 3; return r }
	const H, A = schema.BasisHeartbeat, schema.BasisAck

	for _, tc := range []struct {
		name   string
		rel    relation
		direct evidence
		coord  evidence
		quorum bool
		want   schema.Reach
	}{
		{"self", relSelf, never, never, false, schema.Reach{State: ReachSelf, Basis: schema.BasisNone, AgeMS: -1}},
		{"self, heard (its own multicast)", relSelf, ago(0, kindBeacon), never, false, schema.Reach{State: ReachSelf, Basis: schema.BasisNone, AgeMS: -1}},

		// This node coordinates; the peer is its member and acknowledges.
		{"member acked now", relMember, ago(0, kindAck), never, false, up(A, 0, ack)},
		{"member acked at the window", relMember, ago(ack, kindAck), never, false, up(A, ack, ack)},
		{"member acked past the window", relMember, ago(ack+time.Millisecond, kindAck), never, false, lost(A, ack+time.Millisecond, ack)},
		{"member, quorum, at its window", relMember, ago(ackQ, kindAck), never, true, up(A, ackQ, ackQ)},
		{"member, quorum, past its window", relMember, ago(ackQ+time.Millisecond, kindAck), never, true, lost(A, ackQ+time.Millisecond, ackQ)},
		{"member, quorum window is shorter", relMember, ago(ack, kindAck), never, true, lost(A, ack, ackQ)},
		{"member's last packet a ReadyAck", relMember, ago(time.Millisecond, kindOther), never, false, up(schema.BasisPacket, time.Millisecond, ack)},
		{"member never heard", relMember, never, never, false, none(ack)},

		// This node is a member; the peer is its coordinator.
		{"coordinator beat now", relCoordinator, ago(0, kindHeartbeat), never, false, up(H, 0, alive)},
		{"coordinator at the window", relCoordinator, ago(alive, kindHeartbeat), never, true, up(H, alive, alive)},
		{"coordinator past the window", relCoordinator, ago(alive+time.Millisecond, kindHeartbeat), never, false, lost(H, alive+time.Millisecond, alive)},
		{"coordinator never heard", relCoordinator, never, never, false, none(alive)},

		// This node is a member; the peer is a fellow member.
		{"fellow via coordinator", relFellow, never, coordAgo(d1), false, vouched(up(H, d1, alive))},
		{"fellow via coordinator at the window", relFellow, never, coordAgo(alive), false, vouched(up(H, alive, alive))},
		{"fellow via coordinator past the window", relFellow, never, coordAgo(alive + time.Millisecond), false, vouched(lost(H, alive+time.Millisecond, alive))},
		{"fellow heard after the coordinator", relFellow, ago(d1, kindOther), coordAgo(d2), false, up(schema.BasisPacket, d1, alive)},
		{"fellow heard before the coordinator", relFellow, ago(d2, kindOther), coordAgo(d1), false, vouched(up(H, d1, alive))},
		{"fellow heard, coordinator never", relFellow, ago(d1, kindBeacon), never, false, up(schema.BasisBeacon, d1, alive)},
		{"fellow heard long ago, coordinator never", relFellow, ago(alive+time.Millisecond, kindBeacon), never, false, lost(schema.BasisBeacon, alive+time.Millisecond, alive)},
		{"fellow heard long ago, after the coordinator", relFellow, ago(alive+time.Millisecond, kindOther), coordAgo(alive + 2*time.Millisecond), false, vouched(lost(H, alive+2*time.Millisecond, alive))},
		{"fellow and coordinator never heard", relFellow, never, never, false, none(alive)},

		// The peer is outside this node's group.
		{"outsider never heard", relOutside, never, coordAgo(0), false, none(0)},
		{"outsider heartbeat within", relOutside, ago(alive, kindHeartbeat), never, false, up(H, alive, alive)},
		{"outsider heartbeat stopped", relOutside, ago(alive+time.Millisecond, kindHeartbeat), never, false, lost(H, alive+time.Millisecond, alive)},
		{"outsider ack within", relOutside, ago(ack, kindAck), never, false, up(A, ack, ack)},
		{"outsider ack stopped", relOutside, ago(ack+time.Millisecond, kindAck), never, false, lost(A, ack+time.Millisecond, ack)},
		{"outsider ack, quorum", relOutside, ago(ackQ+time.Millisecond, kindAck), never, true, lost(A, ackQ+time.Millisecond, ackQ)},
		{"outsider heartbeat stopped at PeerTimeout", relOutside, ago(peer, kindHeartbeat), never, false, lost(H, peer, alive)},
		{"outsider heartbeat stopped long ago", relOutside, ago(peer+time.Millisecond, kindHeartbeat), never, false, unknown(H, peer+time.Millisecond, alive)},
		{"outsider ack stopped long ago", relOutside, ago(peer+time.Millisecond, kindAck), never, false, unknown(A, peer+time.Millisecond, ack)},
		{"outsider beacon within", relOutside, ago(peer, kindBeacon), never, false, up(schema.BasisBeacon, peer, peer)},
		{"outsider beacon old", relOutside, ago(peer+time.Millisecond, kindBeacon), never, false, unknown(schema.BasisBeacon, peer+time.Millisecond, peer)},
		{"outsider invitation within", relOutside, ago(time.Second, kindOther), never, false, up(schema.BasisPacket, time.Second, peer)},
		{"outsider invitation old", relOutside, ago(peer+time.Millisecond, kindOther), never, false, unknown(schema.BasisPacket, peer+time.Millisecond, peer)},

		// Ages are rounded up: up exactly when age_ms <= window_ms.
		{"age just under the window", relCoordinator, ago(alive-time.Millisecond/2, kindHeartbeat), never, false, up(H, alive, alive)},
		{"age a nanosecond past the window", relCoordinator, ago(alive+1, kindHeartbeat), never, false, lost(H, alive+time.Millisecond, alive)},
		// A packet noted after the answer's instant is fresh, not negative.
		{"packet after now", relCoordinator, ago(-time.Millisecond, kindHeartbeat), never, false, up(H, 0, alive)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reachOf(tc.rel, tc.direct, tc.coord, now, tm, tc.quorum); got != tc.want {
				t.Errorf("reach %+v, want %+v", got, tc.want)
			}
		})
	}
}

// memberOf returns id's entry in ms.
func memberOf(ms []Member, id wire.NodeID) (Member, bool) {
	for _, m := range ms {
		if m.ID == id {
			return m, true
		}
	}
	return Member{}, false
}

// TestMembersReach runs the rule on live agents (issue 26): in a formed
// group every node is up from each one's own evidence, on the basis its
// relation gives; a node cut off is lost from both sides within its
// window, whatever memberlist still says.
func TestMembersReach(t *testing.T) {
	t.Parallel()
	c := newCluster(t, memMulticast)
	for id := wire.NodeID(1); id <= 3; id++ {
		c.start(id, "")
	}
	c.waitConverged(convergeBound(c))
	coord, member := c.node(3).a, c.node(1).a
	tm := c.timing
	want := func(a *Agent, id wire.NodeID, ok func(Reach) bool) func() bool {
		return func() bool {
			m, found := memberOf(a.Members(), id)
			return found && ok(m.Reach)
		}
	}
	isUp := func(basis string) func(Reach) bool {
		return func(r Reach) bool { return r.State == ReachUp && r.Basis == basis }
	}
	// Acknowledgements come every AckInterval; the first may take one.
	bound := tm.AckLate(false) + time.Second
	waitFor(t, bound, "the coordinator to see its members up on their acks", func() bool {
		return want(coord, 1, isUp(schema.BasisAck))() && want(coord, 2, isUp(schema.BasisAck))()
	})
	waitFor(t, bound, "a member to see its coordinator up on its heartbeats", want(member, 3, isUp(schema.BasisHeartbeat)))
	waitFor(t, bound, "a member to see a fellow up, vouched for by the coordinator", want(member, 2, func(r Reach) bool {
		return r.State == ReachUp && (r.Basis == schema.BasisCoordinator && r.Via == 3 || r.AgeMS <= tm.AliveTimeout.Milliseconds())
	}))
	if m, _ := memberOf(member.Members(), 1); m.Reach.State != ReachSelf {
		t.Errorf("own row: %+v", m.Reach)
	}

	cut := time.Now()
	c.nw.Partition([]string{hostIP(1)})
	lost := func(r Reach) bool { return r.State == ReachLost }
	// The member's coordinator is lost past AliveTimeout (as an
	// outsider whose heartbeats stopped, once the member gives up on
	// it); the coordinator's member past the ack window.
	waitFor(t, tm.AliveTimeout+time.Second, "the cut-off member to see its coordinator lost", want(member, 3, lost))
	m, _ := memberOf(member.Members(), 3)
	t.Logf("%v after the cut the member sees the coordinator %+v, gossip %s", time.Since(cut), m.Reach, m.Gossip)
	waitFor(t, tm.AckLate(false)+time.Second, "the coordinator to see the cut-off member lost", want(coord, 1, lost))
	m, _ = memberOf(coord.Members(), 1)
	t.Logf("%v after the cut the coordinator sees the member %+v, gossip %s", time.Since(cut), m.Reach, m.Gossip)
}
