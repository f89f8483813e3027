package driver_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/groupd/groupd/driver"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

var epoch = time.Unix(0, 0).UTC()

func at(ms int) time.Time { return epoch.Add(time.Duration(ms) * time.Millisecond) }

func config(id wire.NodeID) invitation.Config {
	return invitation.Config{ID: id, Priority: wire.DefaultPriority, Boot: 0xb000 + uint64(id),
		Timing: invitation.DefaultTiming()}
}

// env is a runtime for tests: it records every call in order, keeps the
// state file, and saves synchronously (failing with fail, if set) unless
// async is set.
type env struct {
	async bool
	fail  error
	calls []string
	sent  []wire.Envelope
	saved invitation.Durable // what the store holds
	// violations of "nothing announced before the data dir covers it".
	early []string
	id    wire.NodeID
}

func (e *env) Send(m wire.Envelope) {
	e.calls = append(e.calls, "send "+m.Msg.Body.Type().String())
	e.sent = append(e.sent, m)
	for _, g := range groups(m.Msg) {
		if g.ID == e.id && g.Seq > e.saved.Counter {
			e.early = append(e.early, fmt.Sprintf("sent %s with counter %d saved", m, e.saved.Counter))
		}
	}
}

func (e *env) Save(d invitation.Durable) (bool, error) {
	e.calls = append(e.calls, "save "+d.String())
	if e.async {
		return false, nil
	}
	if e.fail != nil {
		return true, e.fail
	}
	e.saved = d
	return true, nil
}

func (e *env) Report(now time.Time, out invitation.Output) {
	var parts []string
	for _, ev := range out.Events {
		parts = append(parts, string(ev.Reason))
	}
	for _, g := range out.Created {
		parts = append(parts, "created "+g.String())
		if g.Seq > e.saved.Counter {
			e.early = append(e.early, fmt.Sprintf("reported %s created with counter %d saved", g, e.saved.Counter))
		}
	}
	for _, n := range out.Notices {
		parts = append(parts, n.Kind.String())
	}
	e.calls = append(e.calls, "report "+strings.Join(parts, ", "))
}

func groups(m wire.Message) []wire.GroupNumber {
	gs := []wire.GroupNumber{m.Group}
	switch b := m.Body.(type) {
	case wire.Invitation:
		gs = append(gs, b.Group)
	case wire.Ready:
		gs = append(gs, b.Group)
	}
	return gs
}

func beacon(from wire.NodeID, g wire.GroupNumber) invitation.Receive {
	st := wire.StateNormal
	if g.IsZero() {
		st = wire.StateElection
	}
	return invitation.Receive{Msg: wire.Message{Header: wire.Header{Version: wire.Version, Type: wire.TypeBeacon,
		From: from, Priority: wire.DefaultPriority, Boot: 0xb000 + uint64(from), Group: g, State: st},
		Body: wire.Beacon{}}}
}

func TestStamping(t *testing.T) {
	tests := []struct {
		name        string
		next        func() uint64
		first, step uint64
	}{
		{"the driver counts from 1", nil, 1, 1},
		{"NextCounter draws them", func() func() uint64 {
			c := uint64(100)
			return func() uint64 { c += 10; return c }
		}(), 110, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &env{id: 7}
			d, err := driver.New(config(7), epoch, e, driver.Options{NextCounter: tc.next})
			if err != nil {
				t.Fatal(err)
			}
			// Beacons, then (a number saved at once) an invitation of
			// the node it heard, and the new group's first beacon.
			d.Tick(at(0))
			d.Tick(at(100))
			d.Step(at(150), beacon(3, wire.GroupNumber{}))
			d.Tick(at(200))
			d.Tick(at(200))
			var got, want []uint64
			for i, m := range e.sent {
				got = append(got, m.Msg.Counter)
				want = append(want, tc.first+uint64(i)*tc.step)
			}
			if len(got) < 5 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("counters %v, want %v", got, want)
			}
		})
	}
}

// TestSaveHandshake: a synchronous store's outcome is fed back at once
// (at the Clock's time if set), an asynchronous one's later through Step;
// the Save, then the Report, then the Sends, so that nothing is announced
// before the state file covers it.
func TestSaveHandshake(t *testing.T) {
	var inputs []string
	observe := func(now time.Time, in invitation.Input, out invitation.Output) {
		if in != nil {
			inputs = append(inputs, fmt.Sprintf("%v %s", now.Sub(epoch), in))
		}
	}
	t.Run("sync", func(t *testing.T) {
		inputs = nil
		e := &env{id: 7}
		clock := at(203)
		d, err := driver.New(config(7), epoch, e, driver.Options{Observer: observe, Clock: func() time.Time { return clock }})
		if err != nil {
			t.Fatal(err)
		}
		d.Tick(at(0))
		d.Step(at(10), beacon(3, wire.GroupNumber{})) // a node to invite
		e.calls = nil
		d.Tick(at(200)) // the boot window ends: a number, saved, then the invitation
		want := []string{
			"save counter=201 last=0.0", "send Beacon",
			"save counter=201 last=201.7 term=201.7", "report recovery, created 201.7", "send Invitation",
		}
		if got := strings.Join(e.calls, "; "); got != strings.Join(want, "; ") {
			t.Fatalf("calls:\n got  %s\n want %s", got, strings.Join(want, "; "))
		}
		// The save's outcome, and what it unblocked, happen at the
		// Clock's time (203ms), not the tick's.
		if got := strings.Join(inputs[len(inputs)-3:], "; "); got !=
			"200ms tick; 203ms saved counter=201 last=0.0; 203ms saved counter=201 last=201.7 term=201.7" {
			t.Fatalf("inputs: %s", got)
		}
		if len(e.early) > 0 {
			t.Fatal(e.early)
		}
	})
	t.Run("sync failing", func(t *testing.T) {
		inputs = nil
		e := &env{id: 7, fail: errors.New("no space left on device")}
		d, err := driver.New(config(7), epoch, e, driver.Options{Observer: observe})
		if err != nil {
			t.Fatal(err)
		}
		d.Tick(at(200))
		if got := inputs[len(inputs)-1]; got != "200ms save-failed counter=201 last=0.0: no space left on device" {
			t.Fatalf("last input %q", got)
		}
		st := d.Node().Status()
		if st.PersistError != "no space left on device" || st.Group.IsZero() == false {
			t.Fatalf("status %s (%q), want degraded without a group", st, st.PersistError)
		}
		if len(e.early) > 0 {
			t.Fatal(e.early)
		}
	})
	t.Run("async", func(t *testing.T) {
		e := &env{id: 7, async: true}
		d, err := driver.New(config(7), epoch, e, driver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d.Tick(at(200))
		if st := d.Node().Status(); !st.Group.IsZero() {
			t.Fatalf("a group before the save completed: %s", st)
		}
		e.calls = nil
		e.saved = invitation.Durable{Counter: 201}
		d.Step(at(204), invitation.Saved{Durable: invitation.Durable{Counter: 201}})
		want := "save counter=201 last=201.7 term=201.7; report recovery, created 201.7"
		if got := strings.Join(e.calls, "; "); got != want {
			t.Fatalf("calls %s, want %s", got, want)
		}
		if st := d.Node().Status(); st.Group != (wire.GroupNumber{Seq: 201, ID: 7}) || st.State != wire.StateNormal {
			t.Fatalf("status %s", st)
		}
	})
}

// TestTick: a tick runs every timer due by then, however late it comes,
// and leaves the deadline in the future.
func TestTick(t *testing.T) {
	e := &env{id: 7}
	d, err := driver.New(config(7), epoch, e, driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if dl := d.Deadline(); !dl.Equal(epoch) {
		t.Fatalf("first deadline %v, want the start (a beacon at once)", dl)
	}
	// Ticked 5s late: the boot window ended long ago; the singleton group
	// is formed and announced in this one call.
	if !d.Tick(at(5000)) {
		t.Fatal("Tick reports a livelock")
	}
	if st := d.Node().Status(); st.State != wire.StateNormal || st.Role() != invitation.Coordinator {
		t.Fatalf("after a late tick: %s", st)
	}
	if dl := d.Deadline(); !dl.After(at(5000)) {
		t.Fatalf("deadline %v is still due", dl.Sub(epoch))
	}
	// A tick before the deadline does nothing.
	n := len(e.calls)
	if !d.Tick(at(5001)) || len(e.calls) != n {
		t.Fatalf("an early tick acted: %v", e.calls[n:])
	}
	// A node that gave way to another process with its ID has no
	// deadline.
	dup := beacon(7, wire.GroupNumber{Seq: 9000, ID: 7})
	dup.Msg.Boot, dup.Msg.Flags = 0xffff, wire.FlagSettled
	d.Step(at(5002), dup)
	if !d.Node().Stopped() || !d.Deadline().IsZero() || !d.Tick(at(9999)) {
		t.Fatalf("stopped %v, deadline %v", d.Node().Stopped(), d.Deadline())
	}
}

// participant returns a driver of node 3 as a Normal participant of 90.7
// at 200ms.
func participant(t *testing.T, opts driver.Options) *driver.Driver {
	t.Helper()
	d, err := driver.New(config(3), epoch, &env{id: 3}, opts)
	if err != nil {
		t.Fatal(err)
	}
	g := wire.GroupNumber{Seq: 90, ID: 7}
	from := func(st wire.State, b wire.Body) invitation.Receive {
		return invitation.Receive{Msg: wire.Message{Header: wire.Header{Version: wire.Version, Type: b.Type(), From: 7,
			Priority: wire.DefaultPriority, Flags: wire.FlagSettled, Boot: 0xb007, Group: g, State: st}, Body: b}}
	}
	d.Step(epoch, from(wire.StateNormal, wire.Invitation{Group: g}))
	d.Tick(at(200))
	d.Step(at(200), from(wire.StateReorganization, wire.Ready{Group: g, Version: 1, Total: 2,
		Members: []wire.Member{{ID: 3, Priority: 100}, {ID: 7, Priority: 100}}}))
	if st := d.Node().Status(); st.State != wire.StateNormal || st.Group != g {
		t.Fatalf("setup: %s", st)
	}
	return d
}

// TestLazy: with Lazy, an input that makes a participant do nothing (its
// coordinator's heartbeat or Yes) keeps the scheduled deadline instead of
// asking the machine; that is sound if such an input never brings the
// machine's deadline forward, so the kept one is never later than the
// machine's. Without Lazy, the driver checks the claim (LazyMisses) and
// follows the machine exactly.
func TestLazy(t *testing.T) {
	g := wire.GroupNumber{Seq: 90, ID: 7}
	from7 := func(st wire.State, b wire.Body) invitation.Receive {
		return invitation.Receive{Msg: wire.Message{Header: wire.Header{Version: wire.Version, Type: b.Type(), From: 7,
			Priority: wire.DefaultPriority, Flags: wire.FlagSettled, Boot: 0xb007, Group: g, State: st}, Body: b}}
	}
	inputs := []invitation.Input{
		from7(wire.StateNormal, wire.Beacon{Version: 1, Size: 2}),
		from7(wire.StateNormal, wire.Yes{Query: wire.TypeAreYouThere, Version: 1}),
		from7(wire.StateNormal, wire.Beacon{Version: 2, Size: 2}), // a newer list announced
		invitation.PeerDown{ID: 5},
		from7(wire.StateNormal, wire.Yes{Query: wire.TypeAreYouThere, Version: 2}),
	}
	for _, lazy := range []bool{false, true} {
		t.Run(fmt.Sprint("lazy=", lazy), func(t *testing.T) {
			d := participant(t, driver.Options{Lazy: lazy})
			ms := 200
			for i := 0; i < 200; i++ {
				ms += 7
				now := at(ms)
				d.Tick(now)
				d.Step(now, inputs[i%len(inputs)])
				machine := d.Node().NextDeadline()
				if !lazy && !d.Deadline().Equal(machine) {
					t.Fatalf("at %v: deadline %v, the machine's %v", now.Sub(epoch), d.Deadline().Sub(epoch), machine.Sub(epoch))
				}
				if d.Deadline().After(machine) {
					t.Fatalf("at %v: deadline %v, after the machine's %v", now.Sub(epoch), d.Deadline().Sub(epoch), machine.Sub(epoch))
				}
			}
			if d.LazyMisses != 0 {
				t.Fatalf("%d lazy misses: %s", d.LazyMisses, d.FirstLazyMiss)
			}
			if st := d.Node().Status(); st.Group != g || st.State != wire.StateNormal {
				t.Fatalf("with heartbeats, %s", st)
			}
			// Lazy or not, ticking at the deadline catches up: without
			// heartbeats, 3 suspects 7 and, the only survivor, wins.
			for range 20 {
				d.Tick(d.Deadline())
			}
			if st := d.Node().Status(); st.Group.ID != 3 {
				t.Fatalf("without heartbeats, still %s", st)
			}
		})
	}
}

// record runs two nodes against each other for two seconds on a perfect
// network (1ms, ticks at every deadline, synchronous saves) with node 2's
// input log written, and returns the log.
func record(t *testing.T, next func() uint64) []byte {
	t.Helper()
	var log bytes.Buffer
	type delivery struct {
		at  time.Time
		to  wire.NodeID
		msg wire.Message
	}
	var q []delivery
	var now time.Time
	ds := map[wire.NodeID]*driver.Driver{}
	for id := wire.NodeID(1); id <= 2; id++ {
		cfg := config(id)
		cfg.Rand = rand.New(rand.NewSource(int64(id)))
		opts := driver.Options{Clock: func() time.Time { return now }}
		var w *driver.LogWriter
		if id == 2 {
			w = driver.NewLogWriter(&log, cfg, int64(id))
			opts.Observer, opts.NextCounter = w.Observe, next
		}
		e := &sender{from: id, send: func(m wire.Envelope) {
			for to := wire.NodeID(1); to <= 2; to++ {
				if to != m.Msg.From && (m.To == wire.Broadcast || m.To == to) {
					q = append(q, delivery{now.Add(time.Millisecond), to, m.Msg})
				}
			}
		}}
		d, err := driver.New(cfg, epoch, e, opts)
		if err != nil {
			t.Fatal(err)
		}
		ds[id] = d
		defer func() {
			if w != nil && w.Err() != nil {
				t.Fatal(w.Err())
			}
		}()
	}
	for now = epoch; now.Before(at(2000)); now = now.Add(time.Millisecond) {
		due := q
		q = nil
		for _, x := range due {
			if x.at.After(now) {
				q = append(q, x)
				continue
			}
			ds[x.to].Step(now, invitation.Receive{Msg: x.msg})
		}
		for id := wire.NodeID(1); id <= 2; id++ {
			ds[id].Tick(now)
		}
	}
	if st := ds[2].Node().Status(); st.Group.ID != 2 || st.State != wire.StateNormal || len(st.Members) != 2 {
		t.Fatalf("the recorded run did not converge: %s", st)
	}
	return log.Bytes()
}

// sender is a runtime whose Send goes to a function and whose store always
// works.
type sender struct {
	from wire.NodeID
	send func(wire.Envelope)
}

func (s *sender) Send(m wire.Envelope)                  { s.send(m) }
func (s *sender) Save(invitation.Durable) (bool, error) { return true, nil }
func (s *sender) Report(time.Time, invitation.Output)   {}

// replayCases are logs derived from a recorded one, and what Replay says
// of each: how many inputs it replays (the one that fails included), and
// its error, whose line number is the line of the file (1 is the header).
func replayCases(t *testing.T) []struct {
	name  string
	log   []byte
	n     int
	error string // "": none; %d: the line
	line  int
} {
	log := record(t, nil)
	lines := strings.Split(strings.TrimSuffix(string(log), "\n"), "\n")
	if len(lines) < 20 {
		t.Fatalf("a short log: %d lines", len(lines))
	}
	join := func(ls []string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }
	tamper := func(i int, old, new string) []byte {
		ls := append([]string(nil), lines...)
		if !strings.Contains(ls[i], old) {
			t.Fatalf("line %d has no %q: %s", i+1, old, ls[i])
		}
		ls[i] = strings.Replace(ls[i], old, new, 1)
		return join(ls)
	}
	// The line of the number created: tamper with its output.
	created := -1
	for i, l := range lines {
		if strings.Contains(l, `"created"`) {
			created = i
			break
		}
	}
	if created < 0 {
		t.Fatal("node 2 created no number")
	}
	return []struct {
		name  string
		log   []byte
		n     int
		error string
		line  int
	}{
		{"the whole log", log, len(lines) - 2, "", 0},
		{"cut after a line", join(lines[:len(lines)/2]), len(lines)/2 - 2, "", 0},
		{"cut within a line", log[:len(join(lines[:10]))-5], 7, "driver: input log line %d: unexpected EOF", 10},
		{"an output changed", tamper(created, `"created":["`, `"created":["1`), created - 1,
			"driver: replay diverged at line %d:", created + 1},
		// Line 3 is the first tick, which beaconed.
		{"an input changed", tamper(2, `"kind":"tick"`, `"kind":"peer-down","peer":1`), 1,
			"driver: replay diverged at line %d:", 3},
		{"an unknown input", tamper(2, `"kind":"tick"`, `"kind":"reboot"`), 0,
			`driver: input log line %d: unknown input kind "reboot"`, 3},
		{"no start line", join(append(lines[:1:1], lines[2:]...)), 0,
			"driver: input log: the first line must be the machine's start", 0},
		{"another version", tamper(0, `"groupd_input_log":1`, `"groupd_input_log":2`), 0,
			"driver: input log version 2, want 1", 0},
		{"not a log", []byte("hello\n"), 0, "driver: input log header:", 0},
	}
}

// TestReplay: a recorded log replays; a changed, cut or foreign one is
// refused, after as many inputs as it replays.
func TestReplay(t *testing.T) {
	for _, tc := range replayCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			n, err := driver.Replay(bytes.NewReader(tc.log))
			want, _, _ := strings.Cut(tc.error, "%d")
			switch {
			case tc.error == "" && err != nil:
				t.Fatalf("after %d inputs: %v", n, err)
			case tc.error != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
				t.Fatalf("error %v, want one starting %q", err, want)
			case n != tc.n:
				t.Fatalf("%d inputs replayed, want %d", n, tc.n)
			}
		})
	}
}

// TestReplayNamesTheLine: Replay's errors name the line of the log
// file they are about, so that an operator finds it.
func TestReplayNamesTheLine(t *testing.T) {
	for _, tc := range replayCases(t) {
		if tc.line == 0 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			_, err := driver.Replay(bytes.NewReader(tc.log))
			if want := fmt.Sprintf(tc.error, tc.line); err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("error %v, want one starting %q", err, want)
			}
		})
	}
}

// TestReplayWithNextCounter: the daemon stamps the machine's messages from
// a counter it shares with packets of its own (Challenge and Response,
// with a key), so the counters in its input log have gaps.
func TestReplayWithNextCounter(t *testing.T) {
	c := uint64(0)
	log := record(t, func() uint64 {
		c++
		if c == 5 {
			c++ // a Challenge went out in between
		}
		return c
	})
	if n, err := driver.Replay(bytes.NewReader(log)); err != nil {
		t.Fatalf("after %d inputs: %v", n, err)
	}
}
