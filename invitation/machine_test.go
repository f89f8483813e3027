package invitation_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

func TestParseElection(t *testing.T) {
	for in, want := range map[string]invitation.Election{"": invitation.ElectionBully, "bully": invitation.ElectionBully, "ring": invitation.ElectionRing} {
		if got, err := invitation.ParseElection(in); err != nil || got != want {
			t.Errorf("ParseElection(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := invitation.ParseElection("raft"); err == nil {
		t.Error("ParseElection(raft) accepted")
	}
}

func TestNewRejects(t *testing.T) {
	ok := invitation.Config{ID: 1, Boot: 1, Timing: invitation.DefaultTiming()}
	bad := func(f func(*invitation.Timing)) invitation.Timing {
		tm := invitation.DefaultTiming()
		f(&tm)
		return tm
	}
	tests := []struct {
		name string
		edit func(c *invitation.Config)
		want string
	}{
		{"ID 0", func(c *invitation.Config) { c.ID = 0 }, "node ID must not be 0"},
		{"boot 0", func(c *invitation.Config) { c.Boot = 0 }, "boot nonce must not be 0"},
		{"unknown election", func(c *invitation.Config) { c.Election = "raft" }, `unknown election algorithm "raft"`},
		{"zero interval", func(c *invitation.Config) { c.Timing = bad(func(t *invitation.Timing) { t.CheckInterval = 0 }) },
			"Timing.CheckInterval must be > 0"},
		{"sub-millisecond interval", func(c *invitation.Config) {
			c.Timing = bad(func(t *invitation.Timing) { t.AnswerTimeout += time.Microsecond })
		}, "Timing.AnswerTimeout must be a whole number of milliseconds"},
		{"alive timeout too short", func(c *invitation.Config) {
			c.Timing = bad(func(t *invitation.Timing) { t.AliveTimeout = t.AliveInterval })
		}, "Timing.AliveTimeout (250ms) must be >= Timing.AliveInterval + Timing.AnswerTimeout (350ms)"},
		{"member timeout too short", func(c *invitation.Config) {
			c.Timing = bad(func(t *invitation.Timing) { t.MemberTimeout = 2 * t.AliveInterval })
		}, "Timing.MemberTimeout (500ms) must be >= 3 × Timing.AliveInterval (750ms)"},
		{"peer timeout below beacon interval", func(c *invitation.Config) {
			c.Timing = bad(func(t *invitation.Timing) { t.PeerTimeout = t.BeaconInterval - time.Millisecond })
		}, "Timing.PeerTimeout (999ms) must be >= Timing.BeaconInterval (1s)"},
	}
	if _, err := invitation.New(ok, time.Unix(0, 0)); err != nil {
		t.Fatalf("a valid config: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			_, err := invitation.New(c, time.Unix(0, 0))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// machine drives one node through the public API for a Go test, confirming
// every save at once (as the daemon's synchronous store does) and keeping
// every event.
type machine struct {
	n      *invitation.Node
	now    time.Time
	events []invitation.Event
	sent   []wire.Envelope
}

func newMachine(t *testing.T, id wire.NodeID) *machine {
	t.Helper()
	n, err := invitation.New(invitation.Config{ID: id, Priority: wire.DefaultPriority, Boot: 0xb000 + uint64(id),
		Timing: invitation.DefaultTiming()}, epoch)
	if err != nil {
		t.Fatal(err)
	}
	return &machine{n: n, now: epoch}
}

func (m *machine) step(in invitation.Input) {
	m.n.Step(m.now, in)
	for {
		o := m.n.Output()
		m.events = append(m.events, o.Events...)
		m.sent = append(m.sent, o.Messages...)
		if o.Save == nil {
			return
		}
		m.n.Step(m.now, invitation.Saved{Durable: *o.Save})
	}
}

// tick ticks at every deadline until d has passed.
func (m *machine) tick(d time.Duration) {
	end := m.now.Add(d)
	for dl := m.n.NextDeadline(); !dl.IsZero() && !dl.After(end); dl = m.n.NextDeadline() {
		m.now = later(m.now, dl)
		m.step(invitation.Tick{})
	}
	m.now = end
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (m *machine) recv(from wire.NodeID, g wire.GroupNumber, st wire.State, body wire.Body) {
	m.step(invitation.Receive{Msg: wire.Message{Header: wire.Header{Version: wire.Version, Type: body.Type(), From: from,
		Priority: wire.DefaultPriority, Flags: wire.FlagSettled, Boot: 0xb000 + uint64(from), Group: g, State: st}, Body: body}})
}

// joined returns node id as a Normal participant of g with the given
// members, having joined at the end of its boot window.
func joined(t *testing.T, id wire.NodeID, g wire.GroupNumber, members ...wire.NodeID) *machine {
	t.Helper()
	m := newMachine(t, id)
	m.recv(g.ID, g, wire.StateNormal, wire.Invitation{Group: g})
	m.tick(200 * time.Millisecond)
	ms := make([]wire.Member, len(members))
	for i, id := range members {
		ms[i] = wire.Member{ID: id, Priority: wire.DefaultPriority}
	}
	m.recv(g.ID, g, wire.StateReorganization, wire.Ready{Group: g, Version: 1, Total: uint32(len(ms)), Members: ms})
	if st := m.n.Status(); st.State != wire.StateNormal || st.Group != g {
		t.Fatalf("setup: %s, want Normal in %s", st, g)
	}
	return m
}

// TestReasonOfCreatedGroup: the Event for the view in which a node adopts
// a number it created names why it created it, whether it forms the group
// alone or invites others: a node without a group "recovery", a merging
// coordinator or a participant taking over "merge", the winner of a
// failover "election" (group/metrics.go counts an election once, at its
// start). "members" would say the member list changed in place.
func TestReasonOfCreatedGroup(t *testing.T) {
	g := func(seq uint64, id wire.NodeID) wire.GroupNumber { return wire.GroupNumber{Seq: seq, ID: id} }
	tests := []struct {
		name string
		run  func(t *testing.T) *machine
		want invitation.Reason
	}{
		{"a node without a group inviting the nodes it heard", func(t *testing.T) *machine {
			m := newMachine(t, 7)
			m.recv(3, wire.GroupNumber{}, wire.StateElection, wire.Beacon{})
			m.tick(200 * time.Millisecond)
			return m
		}, invitation.ReasonRecovery},
		{"a coordinator merging a lower one", func(t *testing.T) *machine {
			m := newMachine(t, 7)
			m.tick(200 * time.Millisecond)
			m.recv(3, g(150, 3), wire.StateNormal, wire.Beacon{Version: 1, Size: 1})
			m.recv(3, g(150, 3), wire.StateNormal, wire.Yes{Query: wire.TypeAreYouCoordinator, Version: 1})
			m.tick(100 * time.Millisecond)
			return m
		}, invitation.ReasonMerge},
		{"the winner of a failover", func(t *testing.T) *machine {
			m := joined(t, 7, g(90, 9), 3, 7, 9)
			m.step(invitation.PeerDown{ID: 9})
			return m
		}, invitation.ReasonElection},
		{"the winner of a failover, alone", func(t *testing.T) *machine {
			m := joined(t, 7, g(90, 9), 7, 9)
			m.step(invitation.PeerDown{ID: 9})
			return m
		}, invitation.ReasonElection},
		{"a participant taking over", func(t *testing.T) *machine {
			// 7, its coordinator, says it cannot save: 3 outranks it,
			// and after a CheckInterval of that it takes over.
			m := joined(t, 3, g(90, 7), 3, 7)
			beat := wire.Message{Header: wire.Header{Version: wire.Version, Type: wire.TypeBeacon, From: 7,
				Priority: wire.DefaultPriority, Flags: wire.FlagSettled | wire.FlagDegraded, Boot: 0xb007,
				Group: g(90, 7), State: wire.StateNormal}, Body: wire.Beacon{Version: 1, Size: 2}}
			for range 6 {
				m.step(invitation.Receive{Msg: beat})
				m.tick(250 * time.Millisecond)
			}
			return m
		}, invitation.ReasonMerge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.run(t)
			st := m.n.Status()
			if st.Role() != invitation.Coordinator {
				t.Fatalf("setup: %s, want a coordinator of a new group", st)
			}
			for _, e := range m.events {
				if e.New.Group == st.Group && e.Old.Group != st.Group {
					if e.Reason != tc.want {
						t.Fatalf("adopting %s was reported as %q, want %q (%s)", st.Group, e.Reason, tc.want, e)
					}
					return
				}
			}
			t.Fatalf("no event reported the move to %s: %v", st.Group, m.events)
		})
	}
}

// Example: three nodes on a perfect network with 1 ms latency form one
// group coordinated by the highest-ranked node. The loop plays the
// runtime: it delivers messages, confirms saves, and ticks every
// millisecond. Group numbers are above the wall clock in milliseconds:
// the scripts' clock starts at 1970, and the number is created at the end
// of the boot window, at 200ms.
func Example() {
	start := time.Unix(0, 0)
	nodes := map[wire.NodeID]*invitation.Node{}
	for id := wire.NodeID(1); id <= 3; id++ {
		n, err := invitation.New(invitation.Config{ID: id, Priority: wire.DefaultPriority, Boot: uint64(id),
			Timing: invitation.DefaultTiming()}, start)
		if err != nil {
			panic(err)
		}
		nodes[id] = n
	}
	type delivery struct {
		to  wire.NodeID
		msg wire.Message
	}
	var inflight []delivery
	for now := start; now.Before(start.Add(2 * time.Second)); now = now.Add(time.Millisecond) {
		arriving := inflight
		inflight = nil
		for _, d := range arriving {
			nodes[d.to].Step(now, invitation.Receive{Msg: d.msg})
		}
		for id := wire.NodeID(1); id <= 3; id++ {
			n := nodes[id]
			n.Step(now, invitation.Tick{})
			for out := n.Output(); !out.Empty(); out = n.Output() {
				if out.Save != nil {
					// A real runtime fsyncs the state file here.
					n.Step(now, invitation.Saved{Durable: *out.Save})
				}
				for _, e := range out.Messages {
					for to := wire.NodeID(1); to <= 3; to++ {
						if to != id && (e.To == to || e.To == wire.Broadcast) {
							inflight = append(inflight, delivery{to, e.Msg})
						}
					}
				}
			}
		}
	}
	for id := wire.NodeID(1); id <= 3; id++ {
		s := nodes[id].Status()
		fmt.Printf("node %d: %s %s in group %s with members %v\n", id, s.State, s.Role(), s.Group, s.MemberIDs())
	}
	// Output:
	// node 1: normal participant in group 201.3 with members [1 2 3]
	// node 2: normal participant in group 201.3 with members [1 2 3]
	// node 3: normal coordinator in group 201.3 with members [1 2 3]
}

// TestInviteWaitFollowsAnnouncedTiming: a node without a group that heard
// a higher-ranked node waits for that node's invitation: its boot window,
// its save and a round trip (Timing.inviteWait). That is a timeout applied
// to the other node's phases, which design §3.8 says follow what that node
// announced. A fast node (boot window 40ms) that hears a lan node boot
// (boot window 200ms) must not give up on it, and create a number of its
// own, before the lan node can invite it (in sim/testdata/operator.txt's
// "fast node among lan ones" it did, at 121ms: a number spent for nothing).
func TestInviteWaitFollowsAnnouncedTiming(t *testing.T) {
	fast := invitation.FastTiming()
	boot := 2 * fast.AnswerTimeout // the fast node's boot window
	announce := func(tm invitation.Timing) wire.Timing {
		return wire.Timing{AliveInterval: tm.AliveInterval, AliveTimeout: tm.AliveTimeout,
			AnswerTimeout: tm.AnswerTimeout, AcceptWindow: tm.AcceptWindow, ReadyTimeout: tm.ReadyTimeout,
			ElectionTimeout: tm.ElectionTimeout, MemberTimeout: tm.MemberTimeout, Election: wire.AlgBully}
	}
	lan := invitation.DefaultTiming()
	// inviteWait of a timing: a boot window and an accept window.
	wait := func(tm invitation.Timing) time.Duration { return 2*tm.AnswerTimeout + tm.AcceptWindow }
	tests := []struct {
		name   string
		group  wire.GroupNumber // the higher node's: zero while it boots
		timing wire.Timing
		want   time.Duration // when the fast node gives up and asks to save a number
	}{
		{"a booting lan node", wire.GroupNumber{}, announce(lan), boot + wait(lan)},
		{"a booting fast node", wire.GroupNumber{}, announce(fast), boot + wait(fast)},
		{"a lan coordinator", wire.GroupNumber{Seq: 150, ID: 7}, announce(lan), boot + wait(lan)},
		{"a node that announced no timing", wire.GroupNumber{Seq: 150, ID: 7}, wire.Timing{}, boot + wait(fast)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := invitation.New(invitation.Config{ID: 3, Priority: wire.DefaultPriority, Boot: 3, Timing: fast}, epoch)
			if err != nil {
				t.Fatal(err)
			}
			h := wire.Header{Version: wire.Version, Type: wire.TypeBeacon, From: 7, Priority: wire.DefaultPriority,
				Boot: 7, Group: tc.group, State: wire.StateElection}
			if !tc.group.IsZero() {
				h.State, h.Flags = wire.StateNormal, wire.FlagSettled
			}
			n.Step(epoch, invitation.Receive{Msg: wire.Message{Header: h, Body: wire.Beacon{Version: 1, Size: 1, Timing: tc.timing}}})
			for now := epoch; now.Before(epoch.Add(time.Second)); now = now.Add(time.Millisecond) {
				n.Step(now, invitation.Tick{})
				if o := n.Output(); o.Save != nil {
					if got := now.Sub(epoch); got != tc.want {
						t.Fatalf("the fast node gave up on 7's invitation at %v, want %v", got, tc.want)
					}
					return
				}
			}
			t.Fatalf("the fast node never gave up on 7's invitation (want at %v)", tc.want)
		})
	}
}

// TestPacedBeacons: a lone coordinator broadcasts its beacon every
// BeaconInterval while it hears up to 16 broadcasters (itself included),
// and paces it by their number beyond that (beacon.go, paced): 64 of them, a
// beacon every 4 s. Beacons sent to one node and heartbeats are not paced.
func TestPacedBeacons(t *testing.T) {
	other := wire.GroupNumber{Seq: 50, ID: 1} // the broadcasters are members of another group, reorganizing
	for _, tc := range []struct {
		loud     int // nodes heard broadcasting beacons, every second
		min, max int // this node's broadcast beacons in 12 s
	}{
		{0, 11, 13},
		{15, 11, 13},
		{63, 3, 4},
	} {
		t.Run(fmt.Sprintf("%d broadcasters", tc.loud), func(t *testing.T) {
			m := newMachine(t, 900)
			m.tick(time.Second)
			if st := m.n.Status(); st.Role() != invitation.Coordinator || st.State != wire.StateNormal {
				t.Fatalf("setup: %s, want a lone Normal coordinator", st)
			}
			count := func() (n int) {
				for _, e := range m.sent {
					if _, ok := e.Msg.Body.(wire.Beacon); ok && e.To == wire.Broadcast {
						if e.Msg.Flags&wire.FlagBroadcast == 0 {
							t.Fatalf("a broadcast without FlagBroadcast: %v", e.Msg)
						}
						n++
					} else if ok && e.Msg.Flags&wire.FlagBroadcast != 0 {
						t.Fatalf("a unicast with FlagBroadcast: %v", e.Msg)
					}
				}
				return n
			}
			hear := func() {
				for id := wire.NodeID(2); id < wire.NodeID(2+tc.loud); id++ {
					m.step(invitation.Receive{Msg: wire.Message{Header: wire.Header{Version: wire.Version, Type: wire.TypeBeacon,
						From: id, Priority: wire.DefaultPriority, Flags: wire.FlagSettled | wire.FlagBroadcast, Boot: 0xb000 + uint64(id),
						Group: other, State: wire.StateReorganization}, Body: wire.Beacon{HighWater: 50}}})
				}
			}
			for range 8 { // warm up: the count of broadcasters settles
				hear()
				m.tick(time.Second)
			}
			m.sent = nil
			for range 12 {
				hear()
				m.tick(time.Second)
			}
			if got := count(); got < tc.min || got > tc.max {
				t.Errorf("%d broadcast beacons in 12 s, want %d to %d", got, tc.min, tc.max)
			}
		})
	}
}

// TestStalledParticipant: a participant judges its coordinator on
// heartbeats it has read. Its ticks come late (Due is the deadline they
// were armed for); the coordinator is alive (the heartbeats that waited
// behind the late tick are read just after it, for the first three
// ticks) or dead. One stall must not start an election when the
// coordinator is alive; when it is dead, the election must come however
// late every tick is.
func TestStalledParticipant(t *testing.T) {
	g := wire.GroupNumber{Seq: 90, ID: 9}
	tm := invitation.DefaultTiming()
	first := func(l time.Duration) func(int) time.Duration {
		return func(i int) time.Duration {
			if i == 0 {
				return l
			}
			return 0
		}
	}
	every := func(l time.Duration) func(int) time.Duration { return func(int) time.Duration { return l } }
	tests := []struct {
		name  string
		late  func(tick int) time.Duration
		alive bool
		// electBy bounds, after the last heartbeat, when a dead
		// coordinator's survivor elects; zero: it must not elect
		// while the coordinator is alive.
		electBy time.Duration
	}{
		{"on time, coordinator dead", every(0), false, tm.AliveTimeout + time.Millisecond},
		{"one stall of 1.5 s, coordinator alive", first(1500 * time.Millisecond), true, 0},
		{"two stalls of 1.5 s, coordinator alive", func(i int) time.Duration {
			if i == 0 || i == 1 {
				return 1500 * time.Millisecond
			}
			return 0
		}, true, 0},
		{"one stall of 1.5 s, coordinator dead", first(1500 * time.Millisecond), false,
			tm.AliveInterval + tm.AnswerTimeout + 1500*time.Millisecond + tm.AnswerTimeout + time.Millisecond},
		{"every tick 500 ms late, coordinator dead", every(500 * time.Millisecond), false, tm.AliveTimeout + 3*500*time.Millisecond + tm.AnswerTimeout},
		{"every tick 1.5 s late, coordinator dead", every(1500 * time.Millisecond), false, tm.AliveTimeout + 3*1500*time.Millisecond + tm.AnswerTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := joined(t, 3, g, 3, 7, 9)
			beat := func() { m.recv(9, g, wire.StateNormal, wire.Beacon{Version: 1, Size: 3}) }
			beat()
			last := m.now
			alive := tc.alive
			for i := 0; i < 12; i++ {
				dl := m.n.NextDeadline()
				m.now = later(m.now, dl.Add(tc.late(i)))
				m.step(invitation.Tick{Due: dl})
				if alive {
					beat() // what waited in the socket, read after the tick
					last = m.now
				}
				if st := m.n.Status(); st.State == wire.StateElection {
					if tc.electBy == 0 && alive {
						t.Fatalf("tick %d: elected on a stall while its coordinator is alive: %s", i, st)
					}
					if took := m.now.Sub(last); tc.electBy != 0 && took > tc.electBy {
						t.Fatalf("elected %v after the last heartbeat, want by %v", took, tc.electBy)
					}
					return
				}
				alive = alive && i < 2 // the coordinator dies after the third tick
			}
			if tc.electBy != 0 {
				t.Fatalf("no election after 12 ticks (%v after the last heartbeat): %s", m.now.Sub(last), m.n.Status())
			}
		})
	}
}

// TestNextTimer: NextTimer names the timer NextDeadline is for, and a Tick
// then runs it. A participant that hears nothing from its coordinator
// asks it AreYouThere, then gives up on it: it wins the election (the
// only survivor) and leaves the group.
func TestNextTimer(t *testing.T) {
	g := wire.GroupNumber{Seq: 500, ID: 9}
	m := joined(t, 1, g, 1, 9)
	m.sent = nil
	var fired []string
	for i := 0; m.n.Status().Group == g; i++ {
		name, at := m.n.NextTimer()
		if name == "" || at.IsZero() || !at.Equal(m.n.NextDeadline()) {
			t.Fatalf("NextTimer = %q, %v; NextDeadline = %v", name, at, m.n.NextDeadline())
		}
		if i > 100 {
			t.Fatalf("still in %s after 100 ticks: %v", g, fired)
		}
		fired = append(fired, name)
		m.now = later(m.now, at)
		m.step(invitation.Tick{})
	}
	asked := 0
	for _, e := range m.sent {
		if _, ok := e.Msg.Body.(wire.AreYouThere); ok && e.To == g.ID {
			asked++
		}
	}
	if asked == 0 || fired[0] != "are-you-there" || fired[len(fired)-1] != "alive" {
		t.Fatalf("timers fired %v, %d AreYouThere sent; want are-you-there first, alive last", fired, asked)
	}
}

// TestTimingFieldGoName: every TimingField's GoName is the Timing field its
// Field points at, and the table covers every field of Timing.
func TestTimingFieldGoName(t *testing.T) {
	var tm invitation.Timing
	v := reflect.ValueOf(&tm).Elem()
	fields := invitation.TimingFields()
	if len(fields) != v.NumField() {
		t.Errorf("TimingFields lists %d fields, Timing has %d", len(fields), v.NumField())
	}
	for _, f := range fields {
		sf := v.FieldByName(f.GoName())
		if !sf.IsValid() {
			t.Errorf("%s: Timing has no field %s", f.Name, f.GoName())
			continue
		}
		if sf.Addr().Interface() != f.Field(&tm) {
			t.Errorf("%s: GoName %s is not the field it points at", f.Name, f.GoName())
		}
	}
}
