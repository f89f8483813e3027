package invitation

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/wire"
)

func at(ms int) time.Time { return epoch.Add(time.Duration(ms) * time.Millisecond) }

func mem(ids ...wire.NodeID) []wire.Member {
	ms := make([]wire.Member, len(ids))
	for i, id := range ids {
		ms[i] = wire.Member{ID: id, Priority: 100}
	}
	return ms
}

// fresh returns a node right after New: waiting for its first save.
func fresh(t *testing.T, id wire.NodeID, counter uint64) *Node {
	t.Helper()
	n, err := New(Config{ID: id, Priority: 100, Counter: counter, Timing: DefaultTiming()}, epoch)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// coordinator returns node id as Normal coordinator of group 5.id with the
// given members (which should include id).
func coordinator(t *testing.T, id wire.NodeID, members ...wire.NodeID) *Node {
	t.Helper()
	n := fresh(t, id, 4)
	n.Persisted(epoch, 5)
	for _, m := range members {
		if m != id {
			n.up[m] = &member{m: wire.Member{ID: m, Priority: 100}, lastHeard: epoch}
		}
	}
	n.members = mem(members...)
	n.version = 1
	n.nextBeacon = epoch.Add(time.Hour) // keep beacons out of the expected sends
	n.Output()
	n.last = n.Status()
	return n
}

// participant returns node id as Normal participant of group g.
func participant(t *testing.T, id wire.NodeID, g wire.GroupNumber, members ...wire.NodeID) *Node {
	t.Helper()
	n := fresh(t, id, 0)
	n.pending = nil
	n.state = wire.StateNormal
	n.group = g
	n.members = mem(members...)
	n.version = 1
	n.lastYes = epoch
	n.nextAYT = epoch.Add(n.t.AliveInterval)
	n.nextBeacon = epoch.Add(time.Hour)
	n.maxSeen = g.Seq
	n.Output()
	n.last = n.Status()
	return n
}

// reorganizing returns node id waiting for the Ready of group g.
func reorganizing(t *testing.T, id wire.NodeID, g wire.GroupNumber) *Node {
	t.Helper()
	n := participant(t, id, wire.GroupNumber{Seq: 1, ID: g.ID}, id, g.ID)
	n.join(epoch, g)
	n.Output()
	n.last = n.Status()
	return n
}

func from(id wire.NodeID, g wire.GroupNumber, st wire.State, body wire.Body) wire.Message {
	return wire.Message{Header: wire.Header{From: id, Priority: 100, Group: g, State: st}, Body: body}
}

func g(seq uint64, id wire.NodeID) wire.GroupNumber { return wire.GroupNumber{Seq: seq, ID: id} }

// sends summarises an output as "to:Type" strings, sorted.
func sends(o Output) []string {
	var s []string
	for _, e := range o.Messages {
		s = append(s, fmt.Sprintf("%d:%s", e.To, e.Msg.Body.Type()))
	}
	slices.Sort(s)
	return s
}

func TestTransitions(t *testing.T) {
	N, E, R := wire.StateNormal, wire.StateElection, wire.StateReorganization
	cases := []struct {
		name  string
		setup func(t *testing.T) *Node
		input func(n *Node)
		state wire.State
		group wire.GroupNumber // zero: don't check
		sent  []string         // nil: don't check; empty: nothing sent
		save  bool             // a Persist is requested
	}{
		{
			name:  "boot asks to persist and sends nothing but a groupless beacon",
			setup: func(t *testing.T) *Node { return fresh(t, 7, 41) },
			input: func(n *Node) { n.Tick(epoch) },
			state: E, sent: []string{"0:Beacon"}, save: true,
		},
		{
			name:  "persisted counter forms a singleton group",
			setup: func(t *testing.T) *Node { return fresh(t, 7, 41) },
			input: func(n *Node) { n.Output(); n.Persisted(at(2), 42); n.Tick(at(2)) },
			state: N, group: g(42, 7), sent: []string{"0:Beacon"},
		},
		{
			name:  "a confirmation for another counter does not create a group",
			setup: func(t *testing.T) *Node { return fresh(t, 7, 41) },
			input: func(n *Node) { n.Output(); n.Persisted(at(2), 40) },
			state: E,
		},
		{
			name:  "failed save keeps the node in election and retries later",
			setup: func(t *testing.T) *Node { return fresh(t, 7, 41) },
			input: func(n *Node) {
				n.Output()
				n.PersistFailed(at(2), 42, errors.New("no space"))
				n.Tick(at(500))
				if n.HasOutput() && n.Output().Persist != nil {
					panic("retried too early")
				}
				n.Tick(at(1002))
			},
			state: E, save: true,
		},
		{
			name:  "coordinator answers AreYouCoordinator",
			setup: func(t *testing.T) *Node { return coordinator(t, 7, 7) },
			input: func(n *Node) { n.Step(at(1), from(9, g(2, 9), N, wire.AreYouCoordinator{})) },
			state: N, sent: []string{"9:Yes"},
		},
		{
			name:  "participant ignores AreYouCoordinator",
			setup: func(t *testing.T) *Node { return participant(t, 2, g(5, 7), 2, 7) },
			input: func(n *Node) { n.Step(at(1), from(3, g(2, 3), N, wire.AreYouCoordinator{})) },
			state: N, sent: []string{},
		},
		{
			name: "merging coordinator ignores AreYouCoordinator",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 7)
				n.startMerge(at(0), []wire.NodeID{3})
				n.Output()
				return n
			},
			input: func(n *Node) { n.Step(at(1), from(9, g(2, 9), N, wire.AreYouCoordinator{})) },
			state: E, sent: []string{},
		},
		{
			name:  "coordinator accepts a higher inviter and forwards to its members",
			setup: func(t *testing.T) *Node { return coordinator(t, 7, 2, 5, 7) },
			input: func(n *Node) { n.Step(at(1), from(9, g(8, 9), E, wire.Invitation{Group: g(8, 9)})) },
			state: R, group: g(8, 9), sent: []string{"2:Invitation", "5:Invitation", "9:Accept"},
		},
		{
			name:  "coordinator ignores a lower inviter",
			setup: func(t *testing.T) *Node { return coordinator(t, 7, 2, 7) },
			input: func(n *Node) { n.Step(at(1), from(3, g(8, 3), E, wire.Invitation{Group: g(8, 3)})) },
			state: N, group: g(5, 7), sent: []string{},
		},
		{
			name: "invitation during the accept window (Election) is ignored",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 7)
				n.startMerge(at(0), []wire.NodeID{3})
				n.Persisted(at(1), n.pending.seq)
				n.Output()
				return n
			},
			input: func(n *Node) { n.Step(at(2), from(9, g(8, 9), E, wire.Invitation{Group: g(8, 9)})) },
			state: E, group: g(6, 7), sent: []string{},
		},
		{
			name: "invitation while the merge number is still being saved wins for a higher inviter",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 2, 7)
				n.startMerge(at(0), []wire.NodeID{3})
				n.Output()
				return n
			},
			input: func(n *Node) { n.Step(at(1), from(9, g(8, 9), E, wire.Invitation{Group: g(8, 9)})) },
			state: R, group: g(8, 9), sent: []string{"2:Invitation", "9:Accept"},
		},
		{
			name:  "invitation during Reorganization is ignored",
			setup: func(t *testing.T) *Node { return reorganizing(t, 2, g(8, 9)) },
			input: func(n *Node) { n.Step(at(1), from(12, g(9, 12), E, wire.Invitation{Group: g(9, 12)})) },
			state: R, group: g(8, 9), sent: []string{},
		},
		{
			name:  "a repeated invitation repeats the Accept",
			setup: func(t *testing.T) *Node { return reorganizing(t, 2, g(8, 9)) },
			input: func(n *Node) { n.Step(at(1), from(9, g(8, 9), E, wire.Invitation{Group: g(8, 9)})) },
			state: R, group: g(8, 9), sent: []string{"9:Accept"},
		},
		{
			name:  "participant follows its coordinator's forwarded invitation",
			setup: func(t *testing.T) *Node { return participant(t, 2, g(5, 7), 2, 7) },
			input: func(n *Node) { n.Step(at(1), from(7, g(5, 7), N, wire.Invitation{Group: g(8, 9)})) },
			state: R, group: g(8, 9), sent: []string{"9:Accept"},
		},
		{
			name:  "participant ignores an inviter ranked below its coordinator",
			setup: func(t *testing.T) *Node { return participant(t, 2, g(5, 7), 2, 7) },
			input: func(n *Node) { n.Step(at(1), from(4, g(8, 4), E, wire.Invitation{Group: g(8, 4)})) },
			state: N, group: g(5, 7), sent: []string{},
		},
		{
			name:  "participant ignores a reordered older invitation of its coordinator",
			setup: func(t *testing.T) *Node { return participant(t, 2, g(5, 7), 2, 7) },
			input: func(n *Node) { n.Step(at(1), from(7, g(5, 7), E, wire.Invitation{Group: g(3, 7)})) },
			state: N, group: g(5, 7), sent: []string{},
		},
		{
			name:  "Ready ends Reorganization and is acknowledged",
			setup: func(t *testing.T) *Node { return reorganizing(t, 2, g(8, 9)) },
			input: func(n *Node) {
				n.Step(at(1), from(9, g(8, 9), R, wire.Ready{Group: g(8, 9), Version: 1, Total: 2, Members: mem(2, 9)}))
			},
			state: N, group: g(8, 9), sent: []string{"9:ReadyAck"},
		},
		{
			name:  "a Ready without me keeps waiting",
			setup: func(t *testing.T) *Node { return reorganizing(t, 2, g(8, 9)) },
			input: func(n *Node) {
				n.Step(at(1), from(9, g(8, 9), R, wire.Ready{Group: g(8, 9), Version: 1, Total: 2, Members: mem(3, 9)}))
			},
			state: R, sent: []string{},
		},
		{
			name:  "a Ready in two chunks completes only when both arrived",
			setup: func(t *testing.T) *Node { return reorganizing(t, 2, g(8, 9)) },
			input: func(n *Node) {
				n.Step(at(1), from(9, g(8, 9), R, wire.Ready{Group: g(8, 9), Version: 1, Total: 3, Offset: 2, Members: mem(9)}))
				if n.state != wire.StateReorganization {
					panic("completed early")
				}
				n.Step(at(2), from(9, g(8, 9), R, wire.Ready{Group: g(8, 9), Version: 1, Total: 3, Members: mem(2, 5)}))
			},
			state: N, sent: []string{"9:ReadyAck"},
		},
		{
			name:  "a Ready from another group is ignored",
			setup: func(t *testing.T) *Node { return reorganizing(t, 2, g(8, 9)) },
			input: func(n *Node) {
				n.Step(at(1), from(9, g(7, 9), N, wire.Ready{Group: g(7, 9), Version: 1, Total: 2, Members: mem(2, 9)}))
			},
			state: R, sent: []string{},
		},
		{
			name:  "an oversized Ready is refused",
			setup: func(t *testing.T) *Node { return reorganizing(t, 2, g(8, 9)) },
			input: func(n *Node) {
				n.Step(at(1), from(9, g(8, 9), R, wire.Ready{Group: g(8, 9), Version: 1, Total: MaxGroupSize + 1, Members: mem(2)}))
			},
			state: R, sent: []string{},
		},
		{
			name:  "a duplicate Ready is acknowledged again",
			setup: func(t *testing.T) *Node { return participant(t, 2, g(8, 9), 2, 9) },
			input: func(n *Node) {
				n.Step(at(1), from(9, g(8, 9), N, wire.Ready{Group: g(8, 9), Version: 1, Total: 2, Members: mem(2, 9)}))
			},
			state: N, sent: []string{"9:ReadyAck"},
		},
		{
			name:  "a Ready that drops me sends me to Recovery",
			setup: func(t *testing.T) *Node { return participant(t, 2, g(8, 9), 2, 5, 9) },
			input: func(n *Node) {
				n.Step(at(1), from(9, g(8, 9), N, wire.Ready{Group: g(8, 9), Version: 2, Total: 2, Members: mem(5, 9)}))
			},
			state: E, save: true,
		},
		{
			name:  "Reorganization without Ready ends in Recovery",
			setup: func(t *testing.T) *Node { return reorganizing(t, 2, g(8, 9)) },
			input: func(n *Node) { n.Tick(epoch.Add(DefaultTiming().reorgTimeout())) },
			state: E, save: true,
		},
		{
			name:  "participant probes its coordinator every AliveInterval",
			setup: func(t *testing.T) *Node { return participant(t, 2, g(5, 7), 2, 7) },
			input: func(n *Node) { n.Tick(at(250)) },
			state: N, sent: []string{"7:AreYouThere"},
		},
		{
			name:  "silent coordinator: a survivor below others tips off the highest and holds back",
			setup: func(t *testing.T) *Node { return participant(t, 2, g(5, 7), 2, 4, 6, 7) },
			input: func(n *Node) { n.Tick(at(751)) },
			state: E, sent: []string{"6:Election"},
		},
		{
			name:  "silent coordinator: then bully asks the higher survivors",
			setup: func(t *testing.T) *Node { return participant(t, 2, g(5, 7), 2, 4, 6, 7) },
			input: func(n *Node) { n.Tick(at(751)); n.Output(); n.Tick(at(850)); n.Tick(at(851)) },
			state: E, sent: []string{"4:Election", "6:Election"},
		},
		{
			name:  "a No from the coordinator starts bully",
			setup: func(t *testing.T) *Node { return participant(t, 2, g(5, 7), 2, 4, 7) },
			input: func(n *Node) {
				n.Step(at(1), from(7, g(6, 7), N, wire.No{Query: wire.TypeAreYouThere}))
			},
			state: E, sent: []string{"4:Election"},
		},
		{
			name:  "memberlist declaring the coordinator dead starts bully",
			setup: func(t *testing.T) *Node { return participant(t, 2, g(5, 7), 2, 4, 7) },
			input: func(n *Node) { n.PeerDown(at(1), 7) },
			state: E, sent: []string{"4:Election"},
		},
		{
			name: "a held-back survivor answers a lower survivor's Election",
			setup: func(t *testing.T) *Node {
				n := participant(t, 4, g(5, 7), 2, 4, 6, 7)
				n.PeerDown(at(0), 7)
				n.Output()
				return n
			},
			input: func(n *Node) { n.Step(at(10), from(2, g(5, 7), E, wire.Election{Group: g(5, 7)})) },
			state: E, sent: []string{"2:Answer"},
		},
		{
			name: "a held-back survivor joins the highest survivor without an election",
			setup: func(t *testing.T) *Node {
				n := participant(t, 2, g(5, 7), 2, 4, 6, 7)
				n.PeerDown(at(0), 7)
				n.Output()
				return n
			},
			input: func(n *Node) {
				n.Step(at(20), from(6, g(6, 6), E, wire.Invitation{Group: g(6, 6)}))
				n.Tick(at(110)) // past the hold-back: no Election now
			},
			state: R, group: g(6, 6), sent: []string{"6:Accept"},
		},
		{
			name:  "the highest survivor wins at once and saves a number first",
			setup: func(t *testing.T) *Node { return participant(t, 6, g(5, 7), 2, 4, 6, 7) },
			input: func(n *Node) { n.PeerDown(at(1), 7) },
			state: E, sent: []string{}, save: true,
		},
		{
			name: "the winner invites the survivors, not the failed coordinator",
			setup: func(t *testing.T) *Node {
				n := participant(t, 6, g(5, 7), 2, 4, 6, 7)
				n.PeerDown(at(1), 7)
				n.Output()
				return n
			},
			input: func(n *Node) { n.Persisted(at(3), n.pending.seq) },
			state: E, group: g(6, 6), sent: []string{"2:Invitation", "4:Invitation"},
		},
		{
			name:  "a participant that still hears its coordinator answers Election and probes",
			setup: func(t *testing.T) *Node { return participant(t, 4, g(5, 7), 2, 4, 7) },
			input: func(n *Node) { n.Step(at(100), from(2, g(5, 7), E, wire.Election{Group: g(5, 7)})) },
			state: N, sent: []string{"2:Answer", "7:AreYouThere"},
		},
		{
			name: "an unanswered probe starts bully",
			setup: func(t *testing.T) *Node {
				n := participant(t, 4, g(5, 7), 2, 4, 6, 7)
				n.Step(at(100), from(2, g(5, 7), E, wire.Election{Group: g(5, 7)}))
				n.Output()
				return n
			},
			input: func(n *Node) { n.Tick(at(201)) },
			state: E, sent: []string{"6:Election"},
		},
		{
			name: "a probe answered in time keeps the node Normal",
			setup: func(t *testing.T) *Node {
				n := participant(t, 4, g(5, 7), 2, 4, 7)
				n.Step(at(100), from(2, g(5, 7), E, wire.Election{Group: g(5, 7)}))
				n.Output()
				return n
			},
			input: func(n *Node) {
				n.Step(at(150), from(7, g(5, 7), N, wire.Yes{Query: wire.TypeAreYouThere, Version: 1}))
				n.Tick(at(201))
			},
			state: N, sent: []string{},
		},
		{
			name: "bully: an Answer, then no invitation, then a second round, then Recovery",
			setup: func(t *testing.T) *Node {
				n := participant(t, 2, g(5, 7), 2, 4, 7)
				n.PeerDown(at(0), 7)
				n.Tick(at(100)) // held back for an AnswerTimeout
				n.Output()
				return n
			},
			input: func(n *Node) {
				n.Step(at(110), from(4, g(5, 7), E, wire.Answer{Group: g(5, 7)}))
				n.Tick(at(610)) // ElectionTimeout: round 2
				n.Step(at(620), from(4, g(5, 7), E, wire.Answer{Group: g(5, 7)}))
				n.Output()
				n.Tick(at(1120)) // second failure
			},
			state: E, save: true,
		},
		{
			name: "bully survivor accepts the winner's invitation",
			setup: func(t *testing.T) *Node {
				n := participant(t, 2, g(5, 7), 2, 4, 7)
				n.PeerDown(at(0), 7)
				n.Step(at(10), from(4, g(5, 7), E, wire.Answer{Group: g(5, 7)}))
				n.Output()
				return n
			},
			input: func(n *Node) { n.Step(at(20), from(4, g(6, 4), E, wire.Invitation{Group: g(6, 4)})) },
			state: R, group: g(6, 4), sent: []string{"4:Accept"},
		},
		{
			name: "false suspicion: the coordinator's Yes returns the node to Normal",
			setup: func(t *testing.T) *Node {
				n := participant(t, 2, g(5, 7), 2, 4, 7)
				n.Tick(at(751))
				n.Output()
				return n
			},
			input: func(n *Node) { n.Step(at(760), from(7, g(5, 7), N, wire.Yes{Query: wire.TypeAreYouThere, Version: 1})) },
			state: N, group: g(5, 7),
		},
		{
			name:  "coordinator answers a member's AreYouThere",
			setup: func(t *testing.T) *Node { return coordinator(t, 7, 2, 7) },
			input: func(n *Node) { n.Step(at(1), from(2, g(5, 7), N, wire.AreYouThere{Group: g(5, 7)})) },
			state: N, sent: []string{"2:Yes"},
		},
		{
			name:  "coordinator says No to a node it does not count",
			setup: func(t *testing.T) *Node { return coordinator(t, 7, 2, 7) },
			input: func(n *Node) { n.Step(at(1), from(3, g(5, 7), N, wire.AreYouThere{Group: g(5, 7)})) },
			state: N, sent: []string{"3:No"},
		},
		{
			name:  "restarted coordinator says No for its old group",
			setup: func(t *testing.T) *Node { return coordinator(t, 7, 7) },
			input: func(n *Node) { n.Step(at(1), from(3, g(2, 7), N, wire.AreYouThere{Group: g(2, 7)})) },
			state: N, sent: []string{"3:No"},
		},
		{
			name: "coordinator re-invites a straggler of its previous group",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 2, 3, 7)
				n.startMerge(at(0), nil)
				n.Persisted(at(2), n.pending.seq)
				n.Step(at(3), from(2, g(6, 7), R, wire.Accept{Group: g(6, 7)}))
				n.Tick(at(203))
				n.Output()
				return n
			},
			input: func(n *Node) { n.Step(at(210), from(3, g(5, 7), N, wire.AreYouThere{Group: g(5, 7)})) },
			group: g(6, 7), state: R, sent: []string{"3:Invitation"},
		},
		{
			name: "accept window closes: Ready to those who accepted",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 7)
				n.startMerge(at(0), []wire.NodeID{3, 5})
				n.Persisted(at(2), n.pending.seq)
				n.Output()
				return n
			},
			input: func(n *Node) {
				n.Step(at(3), from(3, g(6, 7), R, wire.Accept{Group: g(6, 7)}))
				n.Tick(at(202))
			},
			state: R, group: g(6, 7), sent: []string{"3:Ready"},
		},
		{
			name: "all Ready acknowledged: Normal",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 7)
				n.startMerge(at(0), []wire.NodeID{3})
				n.Persisted(at(2), n.pending.seq)
				n.Step(at(3), from(3, g(6, 7), R, wire.Accept{Group: g(6, 7)}))
				n.Tick(at(202))
				n.Output()
				return n
			},
			input: func(n *Node) { n.Step(at(203), from(3, g(6, 7), N, wire.ReadyAck{Group: g(6, 7), Version: 1})) },
			state: N, group: g(6, 7),
		},
		{
			name: "lost Ready is retransmitted",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 7)
				n.startMerge(at(0), []wire.NodeID{3})
				n.Persisted(at(2), n.pending.seq)
				n.Step(at(3), from(3, g(6, 7), R, wire.Accept{Group: g(6, 7)}))
				n.Tick(at(202))
				n.Output()
				return n
			},
			input: func(n *Node) { n.Tick(at(302)) },
			state: R, sent: []string{"3:Ready"},
		},
		{
			name: "a member that never acknowledges is dropped with a new version",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 7)
				n.startMerge(at(0), []wire.NodeID{3, 5})
				n.Persisted(at(2), n.pending.seq)
				n.Step(at(3), from(3, g(6, 7), R, wire.Accept{Group: g(6, 7)}))
				n.Step(at(3), from(5, g(6, 7), R, wire.Accept{Group: g(6, 7)}))
				n.Tick(at(202))
				n.Step(at(203), from(3, g(6, 7), N, wire.ReadyAck{Group: g(6, 7), Version: 1}))
				n.Output()
				return n
			},
			input: func(n *Node) { n.Tick(at(702)) },
			state: N, sent: []string{"3:Ready"},
		},
		{
			name: "late Accept joins with a new version",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 7)
				n.startMerge(at(0), []wire.NodeID{3})
				n.Persisted(at(2), n.pending.seq)
				n.Tick(at(202))
				n.Output()
				return n
			},
			input: func(n *Node) { n.Step(at(300), from(3, g(6, 7), R, wire.Accept{Group: g(6, 7)})) },
			state: N, group: g(6, 7), sent: []string{"3:Ready"},
		},
		{
			name: "lost Accept: the invitee repeats it",
			setup: func(t *testing.T) *Node {
				return reorganizing(t, 2, g(8, 9))
			},
			input: func(n *Node) { n.Tick(at(100)) },
			state: R, sent: []string{"9:Accept"},
		},
		{
			name: "restart with a counter higher than anyone has seen",
			setup: func(t *testing.T) *Node {
				return fresh(t, 3, 1000)
			},
			input: func(n *Node) {
				if p := n.Output().Persist; p == nil || p.Counter != 1001 {
					panic(fmt.Sprintf("persist %v, want 1001", p))
				}
				n.Persisted(at(1), 1001)
			},
			state: N, group: g(1001, 3),
		},
		{
			name: "a number is chosen above every number seen",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 7)
				n.Step(at(1), from(3, g(90, 3), N, wire.Beacon{}))
				n.Output()
				return n
			},
			input: func(n *Node) {
				n.startMerge(at(2), []wire.NodeID{3})
				if p := n.out.Persist; p == nil || p.Counter != 91 {
					panic(fmt.Sprintf("persist %v, want 91", p))
				}
			},
			state: E, save: true,
		},
		{
			name: "check: a lower coordinator's Yes starts a merge at once",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 7)
				n.Step(at(1), from(3, g(2, 3), N, wire.Beacon{}))
				n.Output()
				return n
			},
			input: func(n *Node) {
				n.Step(at(3), from(3, g(2, 3), N, wire.Yes{Query: wire.TypeAreYouCoordinator}))
				n.Tick(at(102))
			},
			state: E, save: true,
		},
		{
			name: "check: a higher coordinator delays the merge",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 7)
				n.Step(at(0), from(9, g(2, 9), N, wire.Beacon{}))
				n.Step(at(1), from(3, g(2, 3), N, wire.Beacon{}))
				n.Output()
				return n
			},
			input: func(n *Node) {
				n.Step(at(3), from(3, g(2, 3), N, wire.Yes{Query: wire.TypeAreYouCoordinator}))
				n.Step(at(3), from(9, g(2, 9), N, wire.Yes{Query: wire.TypeAreYouCoordinator}))
				n.Tick(at(102))
			},
			state: N, save: false,
		},
		{
			name: "an invitation cancels a pending merge",
			setup: func(t *testing.T) *Node {
				n := coordinator(t, 7, 7)
				n.Step(at(0), from(9, g(2, 9), N, wire.Beacon{}))
				n.Step(at(1), from(3, g(2, 3), N, wire.Beacon{}))
				n.Step(at(3), from(3, g(2, 3), N, wire.Yes{Query: wire.TypeAreYouCoordinator}))
				n.Step(at(3), from(9, g(2, 9), N, wire.Yes{Query: wire.TypeAreYouCoordinator}))
				n.Tick(at(102))
				n.Output()
				return n
			},
			input: func(n *Node) {
				n.Step(at(150), from(9, g(3, 9), E, wire.Invitation{Group: g(3, 9)}))
				n.Tick(at(500))
			},
			state: R, group: g(3, 9), save: false,
		},
		{
			name:  "a lower coordinator's AreYouCoordinator prompts an early check",
			setup: func(t *testing.T) *Node { return coordinator(t, 7, 7) },
			input: func(n *Node) { n.Step(at(1), from(3, g(2, 3), N, wire.AreYouCoordinator{})) },
			state: N, sent: []string{"3:AreYouCoordinator", "3:Yes"},
		},
		{
			name:  "messages from myself and bodiless messages are ignored",
			setup: func(t *testing.T) *Node { return coordinator(t, 7, 7) },
			input: func(n *Node) {
				n.Step(at(1), from(7, g(5, 7), N, wire.AreYouCoordinator{}))
				n.Step(at(1), from(3, g(5, 7), N, nil))
			},
			state: N, sent: []string{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.setup(t)
			tc.input(n)
			o := n.Output()
			s := n.Status()
			if s.State != tc.state {
				t.Errorf("state %s, want %s (%s)", s.State, tc.state, s)
			}
			if !tc.group.IsZero() && s.Group != tc.group {
				t.Errorf("group %s, want %s", s.Group, tc.group)
			}
			if tc.sent != nil {
				got := sends(o)
				if tc.sent == nil {
					tc.sent = []string{}
				}
				if strings.Join(got, " ") != strings.Join(tc.sent, " ") {
					t.Errorf("sent %v, want %v", got, tc.sent)
				}
			}
			if (o.Persist != nil) != tc.save {
				t.Errorf("persist %v, want %v", o.Persist, tc.save)
			}
			checkNoUnsavedNumber(t, n, o)
		})
	}
}

// checkNoUnsavedNumber fails if any message carries a group number of this
// node above its persisted counter.
func checkNoUnsavedNumber(t *testing.T, n *Node, o Output) {
	t.Helper()
	for _, e := range o.Messages {
		nums := []wire.GroupNumber{e.Msg.Group}
		switch b := e.Msg.Body.(type) {
		case wire.Invitation:
			nums = append(nums, b.Group)
		case wire.Ready:
			nums = append(nums, b.Group)
		}
		for _, num := range nums {
			if num.ID == n.ID() && num.Seq > n.counter {
				t.Errorf("%s carries %s before counter %d was saved", e, num, num.Seq)
			}
		}
	}
}
