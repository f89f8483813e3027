package group

import (
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// TestSubscriberCopiesShareNothing: the statuses a subscriber gets (the
// snapshot, and the old and new views of every event) and Agent.Status's
// are the caller's own. A caller that changes their members, member
// priorities, tags, timing mismatches or duplicate leaves the agent's
// status as it was.
func TestSubscriberCopiesShareNothing(t *testing.T) {
	cfg := newTestConfig(t)
	cfg.ID = 1
	cfg.Tags = map[string]string{"role": "db"}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	p := &a.pub
	ready := func(members ...wire.Member) {
		p.change(time.Now(), invitation.Event{Reason: invitation.ReasonReady, New: invitation.Status{
			ID: 1, Priority: cfg.Priority, State: wire.StateNormal, Group: wire.GroupNumber{Seq: 5, ID: 1},
			Members: members, Version: uint64(len(members))}})
	}
	ready(wire.Member{ID: 1, Priority: 100}, wire.Member{ID: 2, Priority: 50})
	p.notice(invitation.Notice{Kind: invitation.NoticeTimingMismatch, Peer: 2,
		Ours: wire.Timing{AliveInterval: time.Second}, Theirs: wire.Timing{AliveInterval: 2 * time.Second}})
	p.duplicateSeen(0xbeef, &net.UDPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 7950}, time.Now())

	events, stop := a.Subscribe()
	defer stop()
	snap := <-events
	ready(wire.Member{ID: 1, Priority: 100}, wire.Member{ID: 2, Priority: 50}, wire.Member{ID: 3, Priority: 70})
	ev := <-events
	if ev.Old == nil || len(ev.New.Members) != 3 || len(snap.New.Members) != 2 {
		t.Fatalf("snapshot %s, then %s", snap, ev)
	}
	want := a.Status()
	if len(want.Tags) == 0 || len(want.TimingMismatches) == 0 || want.DuplicateID == nil || len(want.MemberPriorities) != 3 {
		t.Fatalf("the agent's status lacks what the test changes: %+v", want)
	}

	for _, st := range []*Status{&snap.New, ev.Old, &ev.New, &want} {
		st.Members[0] = 99
		st.MemberPriorities[0] = 7
		st.Tags["role"] = "scribbled"
		st.Tags["extra"] = "x"
		st.TimingMismatches[0].Detail = "scribbled"
		st.DuplicateID.Addr = "scribbled"
	}

	got := a.Status()
	if got.Members[0] != 1 || got.MemberPriorities[0] != 100 || !reflect.DeepEqual(got.Tags, map[string]string{"role": "db"}) ||
		got.TimingMismatches[0].Detail == "scribbled" || got.DuplicateID.Addr != "10.0.0.9:7950" {
		t.Errorf("a subscriber's or a caller's changes reached the agent: %+v", got)
	}
	// And one subscriber's changes reach no other.
	events2, stop2 := a.Subscribe()
	defer stop2()
	if s2 := (<-events2).New; s2.Members[0] != 1 || s2.Tags["role"] != "db" || s2.DuplicateID.Addr != "10.0.0.9:7950" {
		t.Errorf("a later snapshot carries an earlier subscriber's changes: %+v", s2)
	}
}
