package invitation_test

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// TestMachine runs the scripts in testdata/: one node, driven only through
// its public API (New, Step, Output, Status, NextDeadline), and the trace
// of what it did as the expected output. Regenerate with
//
//	go test ./invitation -run TestMachine -rewrite
//
// and read the diff: every line is a claim about the design.
//
// The scripts' clock starts at the Unix epoch (1970-01-01 00:00:00 UTC),
// so that the wall-clock floor under new group numbers (a new sequence is
// above the wall clock in milliseconds) reads as the time since the start:
// a number created at 200ms with nothing higher saved or seen is 201.id.
//
// Commands (times in milliseconds since the start; boots in hex, by default
// b000 + the node's ID; a peer's message is built from the arguments, with
// defaults that make it an ordinary peer: priority 100, Normal and settled
// when it has a group, lan timing):
//
//	new id=7 [prio=100] [counter=N] [last=S.I] [timing=lan|fast] [election=bully|ring]
//	    [boot=HEX] [at=MS] [seed=N] [autosave] [expect=N] [tb=ID] [term=S.I] [rule=N]
//	    [nopreempt] [view-primary]
//	        a new machine (the previous one is dropped). autosave confirms
//	        every save at once, as the daemon's synchronous store does.
//	        expect and tb are its quorum settings; term and rule what its
//	        state file kept of its term floor and of its quorum rule.
//	recv from=3 [type=Beacon|...|none] [prio=100] [group=S.I] [state=normal|election|reorganization]
//	    [flags=(settled,degraded,incumbent,fresh)|none] [boot=HEX] [timing=lan|fast|lan-ring|fast-ring|none]
//	    [expect=N] [tb=ID] [voters=N] [tie=ID] [age=MS]
//	    [g=S.I] [v=N] [n=N] [hw=N] [query=AreYouCoordinator|AreYouThere]
//	    [members=(1,2,3/150)] [total=N] [offset=N] [round=N] [cand=ID]
//	        one message. group is the sender's header (zero: it has no group,
//	        and it is then not settled unless flags says so); g is the group
//	        the body names (default: group). expect and tb are the quorum
//	        settings the peer announces (default: the node's own), voters and
//	        tie the rule it applies (default: its settings); age how long its
//	        process has run (default 0: it started just now).
//	tick [ms=N] [quiet] [every=MS from=... (as recv; type defaults to Beacon)]
//	        let N ms pass, ticking at every deadline on the way as a runtime
//	        does; quiet counts the ticks that only beaconed instead of
//	        printing them. With every, the message described is received
//	        every MS on the way (a coordinator's heartbeat, typically).
//	saved [counter=N last=S.I]     the outstanding save (or the one named) succeeded
//	save-failed [err=TEXT]         the outstanding save failed
//	peer-down id=3                 the failure detector's verdict
//	peer-left id=3                 node 3 left gracefully (memberlist)
//	autosave on|off                confirm saves at once, or not
//	status                         the status line alone
//
// Every command prints what the machine output (messages as their String,
// with the header's settled flag, the boot they are addressed to and any
// timing other than lan's; the save asked for; events as
// "event REASON: new view"; created numbers; notices), then a status line:
// the view, leadership, the durable state, and the next deadline. A message
// or a created number of the node's above its saved counter fails the test.
func TestMachine(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

var epoch = time.Unix(0, 0).UTC()

// profiles are the timings a script names, with the wire.Timing each
// announces.
var profiles = map[string]struct {
	t   invitation.Timing
	alg invitation.Election
}{
	"lan":       {invitation.DefaultTiming(), invitation.ElectionBully},
	"fast":      {invitation.FastTiming(), invitation.ElectionBully},
	"lan-ring":  {invitation.DefaultTiming(), invitation.ElectionRing},
	"fast-ring": {invitation.FastTiming(), invitation.ElectionRing},
}

// announced is what a node with timing t and algorithm alg tells others.
func announced(t invitation.Timing, alg invitation.Election) wire.Timing {
	a := wire.Timing{AliveInterval: t.AliveInterval, AliveTimeout: t.AliveTimeout, AnswerTimeout: t.AnswerTimeout,
		AcceptWindow: t.AcceptWindow, ReadyTimeout: t.ReadyTimeout, ElectionTimeout: t.ElectionTimeout,
		MemberTimeout: t.MemberTimeout, Lease: t.Lease, Election: wire.AlgBully}
	if alg == invitation.ElectionRing {
		a.Election = wire.AlgRing
	}
	return a
}

func timingName(a wire.Timing) string {
	if a.IsZero() {
		return "none"
	}
	for _, name := range []string{"lan", "fast", "lan-ring", "fast-ring"} {
		p := profiles[name]
		if announced(p.t, p.alg) == a {
			return name
		}
	}
	return "(" + a.String() + ")"
}

type harness struct {
	t        *testing.T
	q        invitation.Quorum // the node's, which its peers announce by default
	n        *invitation.Node
	now      time.Time
	save     *invitation.Durable // the save asked for and not yet answered
	autosave bool
}

func ms(t time.Time) string { return t.Sub(epoch).String() }

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	h.t = t
	if d.Cmd != "new" && h.n == nil {
		d.Fatalf(t, "no machine: start with new")
	}
	var b strings.Builder
	switch d.Cmd {
	case "new":
		h.newNode(t, d)
	case "recv":
		h.step(&b, "", invitation.Receive{Msg: h.message(t, d)})
	case "tick":
		h.tick(t, d, &b)
	case "saved":
		in := invitation.Saved{Durable: h.durable(t, d)}
		h.answered(in.Durable)
		h.step(&b, "", in)
	case "save-failed":
		in := invitation.SaveFailed{Durable: h.durable(t, d), Err: "disk full"}
		d.MaybeScanArgs(t, "err", &in.Err)
		h.answered(in.Durable)
		h.step(&b, "", in)
	case "peer-down", "peer-left":
		var id uint64
		d.ScanArgs(t, "id", &id)
		h.step(&b, "", invitation.PeerDown{ID: wire.NodeID(id), Left: d.Cmd == "peer-left"})
	case "autosave":
		h.autosave = d.HasArg("on")
	case "status":
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	b.WriteString(h.status())
	return b.String()
}

func (h *harness) newNode(t *testing.T, d *datadriven.TestData) {
	var id, counter uint64
	var at int64
	prio := uint64(wire.DefaultPriority)
	d.ScanArgs(t, "id", &id)
	d.MaybeScanArgs(t, "prio", &prio)
	d.MaybeScanArgs(t, "counter", &counter)
	d.MaybeScanArgs(t, "at", &at)
	cfg := invitation.Config{ID: wire.NodeID(id), Priority: uint8(prio), Boot: hexArg(t, d, 0xb000+id),
		Durable: invitation.Durable{Counter: counter}}
	if d.HasArg("last") {
		cfg.Durable.LastGroup = group(t, d, "last")
	}
	name := "lan"
	d.MaybeScanArgs(t, "timing", &name)
	p, ok := profiles[name]
	if !ok {
		d.Fatalf(t, "unknown timing %q", name)
	}
	cfg.Timing, cfg.Election = p.t, p.alg
	var alg string
	if d.MaybeScanArgs(t, "election", &alg) {
		cfg.Election = invitation.Election(alg)
	}
	if d.HasArg("seed") {
		var seed int64
		d.ScanArgs(t, "seed", &seed)
		cfg.Rand = rand.New(rand.NewSource(seed))
	}
	var expect, tb uint64
	d.MaybeScanArgs(t, "expect", &expect)
	d.MaybeScanArgs(t, "tb", &tb)
	cfg.Quorum = invitation.Quorum{Expect: int(expect), TieBreaker: wire.NodeID(tb)}
	h.q = cfg.Quorum
	cfg.NoPreempt = d.HasArg("nopreempt")
	cfg.ViewPrimary = d.HasArg("view-primary")
	if d.HasArg("term") {
		cfg.Durable.Term = group(t, d, "term")
	}
	var voters uint64
	if d.MaybeScanArgs(t, "rule", &voters) {
		cfg.Durable.Rule = wire.Quorum{Voters: uint32(voters)}
	}
	h.now = epoch.Add(time.Duration(at) * time.Millisecond)
	n, err := invitation.New(cfg, h.now)
	if err != nil {
		d.Fatalf(t, "New: %v", err)
	}
	h.n, h.save, h.autosave = n, nil, d.HasArg("autosave")
}

// durable is the state a saved or save-failed answers: the outstanding
// save, or the one the arguments name.
func (h *harness) durable(t *testing.T, d *datadriven.TestData) invitation.Durable {
	if d.HasArg("counter") {
		var du invitation.Durable
		d.ScanArgs(t, "counter", &du.Counter)
		if d.HasArg("last") {
			du.LastGroup = group(t, d, "last")
		}
		return du
	}
	if h.save == nil {
		d.Fatalf(t, "no save outstanding")
	}
	return *h.save
}

// hexArg returns the boot=HEX argument, or def.
func hexArg(t *testing.T, d *datadriven.TestData, def uint64) uint64 {
	var s string
	if !d.MaybeScanArgs(t, "boot", &s) {
		return def
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		d.Fatalf(t, "boot: %v", err)
	}
	return v
}

// answered forgets the outstanding save if du answers it.
func (h *harness) answered(du invitation.Durable) {
	if h.save != nil && *h.save == du {
		h.save = nil
	}
}

func group(t *testing.T, d *datadriven.TestData, key string) wire.GroupNumber {
	var s string
	d.ScanArgs(t, key, &s)
	g, err := wire.ParseGroupNumber(s)
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return g
}

// tick lets time pass, ticking at every deadline on the way, and with
// every=MS delivers the message the other arguments describe (a beacon by
// default) every MS, starting MS from now.
func (h *harness) tick(t *testing.T, d *datadriven.TestData, b *strings.Builder) {
	var n, every int64
	d.MaybeScanArgs(t, "ms", &n)
	end := h.now.Add(time.Duration(n) * time.Millisecond)
	var beat wire.Message
	var nextBeat time.Time
	if d.MaybeScanArgs(t, "every", &every) {
		beat = h.message(t, d)
		nextBeat = h.now.Add(time.Duration(every) * time.Millisecond)
	}
	quiet, beaconOnly, beats := d.HasArg("quiet"), 0, 0
	same, last := 0, time.Time{}
	for steps := 0; ; steps++ {
		if steps > 100000 {
			tail := b.String()
			d.Fatalf(t, "more than 100000 inputs before %s (at %s); output so far ends:\n%s", ms(end), ms(h.now), tail[max(0, len(tail)-3000):])
		}
		dl := h.n.NextDeadline()
		if !nextBeat.IsZero() && !nextBeat.After(end) && (dl.IsZero() || nextBeat.Before(dl)) {
			// The message comes before the next deadline.
			h.now = nextBeat
			nextBeat = nextBeat.Add(time.Duration(every) * time.Millisecond)
			beats++
			var one strings.Builder
			if h.step(&one, "  ", invitation.Receive{Msg: beat}) {
				fmt.Fprintf(b, "@%s recv %s\n%s", ms(h.now), beat.Body.Type(), one.String())
			}
			continue
		}
		if dl.IsZero() || dl.After(end) {
			break
		}
		if dl.After(h.now) {
			h.now = dl
		}
		if h.now.Equal(last) {
			if same++; same > 4 {
				d.Fatalf(t, "livelock: still due at %s after 4 ticks", ms(h.now))
			}
		} else {
			same, last = 0, h.now
		}
		var one strings.Builder
		if h.step(&one, "  ", invitation.Tick{}) {
			if quiet && one.Len() > 0 && onlyBeacons(one.String()) {
				beaconOnly++
				continue
			}
			fmt.Fprintf(b, "@%s\n%s", ms(h.now), one.String())
		}
	}
	h.now = end
	if beats > 0 {
		fmt.Fprintf(b, "(received from %d: %d)\n", beat.From, beats)
	}
	if beaconOnly > 0 {
		fmt.Fprintf(b, "(beacon-only ticks: %d)\n", beaconOnly)
	}
}

func onlyBeacons(s string) bool {
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if !strings.Contains(l, " Beacon(") {
			return false
		}
	}
	return true
}

// step feeds one input at the current time and prints its output,
// confirming saves at once with autosave. It reports whether anything was
// output.
func (h *harness) step(b *strings.Builder, indent string, in invitation.Input) bool {
	h.n.Step(h.now, in)
	did := false
	for {
		o := h.n.Output()
		if o.Empty() {
			return did
		}
		did = true
		h.print(b, indent, o)
		if o.Save == nil {
			return true
		}
		h.save = o.Save
		if !h.autosave {
			return true
		}
		fmt.Fprintf(b, "%s(saved)\n", indent)
		h.save = nil
		h.n.Step(h.now, invitation.Saved{Durable: *o.Save})
	}
}

func (h *harness) print(b *strings.Builder, indent string, o invitation.Output) {
	for _, e := range o.Messages {
		fmt.Fprintf(b, "%s%s\n", indent, h.envelope(e))
		h.checkSaved(e.Msg)
	}
	if o.Save != nil {
		fmt.Fprintf(b, "%ssave %s\n", indent, o.Save)
	}
	for _, e := range o.Events {
		fmt.Fprintf(b, "%sevent %s: %s\n", indent, e.Reason, e.New)
	}
	for _, g := range o.Created {
		fmt.Fprintf(b, "%screated %s\n", indent, g)
		h.checkNumber(g, "created")
	}
	for _, nt := range o.Notices {
		fmt.Fprintf(b, "%snotice %s\n", indent, nt)
	}
}

// checkSaved fails the test if m carries a number of the node's above its
// saved counter: nothing may carry a new number before its save is
// confirmed (the design's first rule; S1 in the simulator).
func (h *harness) checkSaved(m wire.Message) {
	h.checkNumber(m.Group, m.String())
	if g, ok := invariant.BodyGroup(m.Body); ok {
		h.checkNumber(g, m.String())
	}
}

func (h *harness) checkNumber(g wire.GroupNumber, what string) {
	if du := h.n.Durable(); g.ID == h.n.ID() && g.Seq > du.Counter {
		h.t.Errorf("%s carries %s before its sequence was saved (counter %d)", what, g, du.Counter)
	}
}

// lan is what a node on the default profile announces.
var lan = announced(invitation.DefaultTiming(), invitation.ElectionBully)

// envelope is an outgoing message's String, with what it leaves out that
// the scripts check: the settled flag, the boot it answers, and timing
// other than lan's.
func (h *harness) envelope(e wire.Envelope) string {
	s := e.String()
	if e.Msg.Flags&wire.FlagSettled != 0 {
		s += " settled"
	}
	if e.ToBoot != 0 {
		s += fmt.Sprintf(" to-boot=%x", e.ToBoot)
	}
	if a, ok := bodyTiming(e.Msg.Body); ok && a != lan {
		s += " timing=" + timingName(a)
	}
	if q, ok := bodyQuorum(e.Msg.Body); ok {
		q.Age = 0 // the process's age, not a setting
		if q != h.agreeing() {
			s += " quorum=(" + q.String() + ")"
		}
	}
	return s
}

// agreeing is what a node with the harness node's settings announces when
// it applies them as they are.
func (h *harness) agreeing() wire.Quorum {
	if !h.q.Enabled() {
		return wire.Quorum{}
	}
	return wire.Quorum{Expect: uint32(h.q.Expect), TieBreaker: h.q.TieBreaker, Voters: uint32(h.q.Expect), Tie: h.q.TieBreaker}
}

// bodyQuorum returns the quorum settings a body announces, if it is of a
// type that carries them.
func bodyQuorum(b wire.Body) (wire.Quorum, bool) {
	switch b := b.(type) {
	case wire.Beacon:
		return b.Quorum, true
	case wire.Accept:
		return b.Quorum, true
	case wire.BeatAck:
		return b.Quorum, true
	}
	return wire.Quorum{}, false
}

// bodyTiming returns the timing a body announces, if it is of a type that
// carries one.
func bodyTiming(b wire.Body) (wire.Timing, bool) {
	if bc, ok := b.(wire.Beacon); ok {
		return bc.Timing, true
	}
	if inv, ok := b.(wire.Invitation); ok {
		return inv.Timing, true
	}
	r, ok := b.(wire.Ready)
	return r.Timing, ok
}

func (h *harness) status() string {
	st := h.n.Status()
	var b strings.Builder
	b.WriteString("status " + st.String())
	if st.Leader {
		fmt.Fprintf(&b, " | leader since %s", ms(st.LeaderSince))
	}
	if st.Degraded() {
		fmt.Fprintf(&b, " | error %s", st.PersistError)
	}
	du := h.n.Durable()
	if !st.LeaseUntil.IsZero() {
		fmt.Fprintf(&b, " | lease until %s", ms(st.LeaseUntil))
	}
	fmt.Fprintf(&b, " | durable %d %s", du.Counter, du.LastGroup)
	if !du.Term.IsZero() {
		fmt.Fprintf(&b, " term %s", du.Term)
	}
	if h.n.Stopped() {
		b.WriteString(" | STOPPED")
	} else {
		fmt.Fprintf(&b, " | next %s", ms(h.n.NextDeadline()))
	}
	b.WriteByte('\n')
	return b.String()
}

var states = map[string]wire.State{
	"normal": wire.StateNormal, "election": wire.StateElection, "reorganization": wire.StateReorganization,
}

// message builds a peer's message from a recv command's arguments.
func (h *harness) message(t *testing.T, d *datadriven.TestData) wire.Message {
	var from, prio uint64
	typ := "Beacon"
	prio = uint64(wire.DefaultPriority)
	d.ScanArgs(t, "from", &from)
	d.MaybeScanArgs(t, "type", &typ)
	d.MaybeScanArgs(t, "prio", &prio)
	m := wire.Message{Header: wire.Header{Version: wire.Version, From: wire.NodeID(from), Priority: uint8(prio),
		Boot: hexArg(t, d, 0xb000+from)}}
	if d.HasArg("group") {
		m.Group = group(t, d, "group")
	}
	m.State = wire.StateNormal
	if m.Group.IsZero() {
		m.State = wire.StateElection
	} else {
		m.Flags |= wire.FlagSettled
	}
	var st string
	if d.MaybeScanArgs(t, "state", &st) {
		s, ok := states[st]
		if !ok {
			d.Fatalf(t, "unknown state %q", st)
		}
		m.State = s
	}
	if a, ok := d.Arg("flags"); ok {
		m.Flags = 0
		for _, f := range a.Vals {
			switch f {
			case "settled":
				m.Flags |= wire.FlagSettled
			case "degraded":
				m.Flags |= wire.FlagDegraded
			case "incumbent":
				m.Flags |= wire.FlagIncumbent
			case "fresh":
				m.Flags |= wire.FlagFresh
			case "primary":
				m.Flags |= wire.FlagPrimary
			case "none", "":
			default:
				d.Fatalf(t, "unknown flag %q", f)
			}
		}
	}
	g := m.Group
	if d.HasArg("g") {
		g = group(t, d, "g")
	}
	timing := lan
	var tn string
	if d.MaybeScanArgs(t, "timing", &tn) {
		if tn == "none" {
			timing = wire.Timing{}
		} else if p, ok := profiles[tn]; ok {
			timing = announced(p.t, p.alg)
		} else {
			d.Fatalf(t, "unknown timing %q", tn)
		}
	}
	var v, size, hw, total, offset, round, cand, beat uint64
	d.MaybeScanArgs(t, "beat", &beat)
	var term, held wire.GroupNumber
	if d.HasArg("term") {
		term = group(t, d, "term")
	}
	if d.HasArg("held") {
		held = group(t, d, "held")
	}
	d.MaybeScanArgs(t, "v", &v)
	d.MaybeScanArgs(t, "n", &size)
	d.MaybeScanArgs(t, "hw", &hw)
	d.MaybeScanArgs(t, "offset", &offset)
	d.MaybeScanArgs(t, "round", &round)
	d.MaybeScanArgs(t, "cand", &cand)
	query := wire.TypeAreYouThere
	var q string
	if d.MaybeScanArgs(t, "query", &q) {
		switch q {
		case "AreYouThere":
		case "AreYouCoordinator":
			query = wire.TypeAreYouCoordinator
		default:
			d.Fatalf(t, "unknown query %q", q)
		}
	}
	var members []wire.Member
	if a, ok := d.Arg("members"); ok {
		for _, s := range a.Vals {
			mb := wire.Member{Priority: wire.DefaultPriority}
			idStr, prioStr, hasPrio := strings.Cut(s, "/")
			id, err := strconv.ParseUint(idStr, 10, 64)
			if err != nil {
				d.Fatalf(t, "members: %v", err)
			}
			mb.ID = wire.NodeID(id)
			if hasPrio {
				p, err := strconv.ParseUint(prioStr, 10, 8)
				if err != nil {
					d.Fatalf(t, "members: %v", err)
				}
				mb.Priority = uint8(p)
			}
			members = append(members, mb)
		}
	}
	total = uint64(len(members))
	d.MaybeScanArgs(t, "total", &total)
	candidate := wire.Member{ID: wire.NodeID(cand), Priority: wire.DefaultPriority}
	// A peer announces the node's own quorum settings unless told
	// otherwise: expect=N tb=ID (its settings; its rule follows them)
	// and voters=N tie=ID (its rule).
	quorum := h.agreeing()
	var qe, qtb, qv, qtie uint64
	if d.MaybeScanArgs(t, "expect", &qe) {
		quorum.Expect, quorum.Voters = uint32(qe), uint32(qe)
	}
	if d.MaybeScanArgs(t, "tb", &qtb) {
		quorum.TieBreaker, quorum.Tie = wire.NodeID(qtb), wire.NodeID(qtb)
	}
	if d.MaybeScanArgs(t, "voters", &qv) {
		quorum.Voters = uint32(qv)
	}
	if d.MaybeScanArgs(t, "tie", &qtie) {
		quorum.Tie = wire.NodeID(qtie)
	}
	var age uint64
	if d.MaybeScanArgs(t, "age", &age) {
		quorum.Age = uint32(age)
	}
	if typ == "none" {
		return m // no body: a message the machine must ignore
	}
	// Every body the scripts send, built from the arguments.
	bodies := []wire.Body{
		wire.Beacon{HighWater: hw, Version: v, Size: uint32(size), Timing: timing, Beat: beat, AckReq: d.HasArg("ackreq"), Term: term, Quorum: quorum},
		wire.AreYouCoordinator{}, wire.Yes{Query: query, Version: v}, wire.No{Query: query},
		wire.AreYouThere{Group: g}, wire.Invitation{Group: g, Timing: timing}, wire.Accept{Group: g, Term: term, Quorum: quorum},
		wire.BeatAck{Group: g, Beat: beat, Grant: d.HasArg("grant"), Term: term, Quorum: quorum},
		wire.Decline{Group: g, Held: held},
		wire.Ready{Group: g, Version: v, Timing: timing, Total: uint32(total), Offset: uint32(offset), Members: members},
		wire.ReadyAck{Group: g, Version: v}, wire.Election{Group: g}, wire.Answer{Group: g},
		wire.RingElection{Group: g, Round: uint32(round), Candidate: candidate},
		wire.RingAck{Group: g, Of: wire.TypeRingElection, Round: uint32(round), Candidate: candidate},
	}
	for _, b := range bodies {
		if b.Type().String() == typ {
			m.Body = b
		}
	}
	if m.Body == nil {
		d.Fatalf(t, "unknown message type %q", typ)
	}
	m.Type = m.Body.Type()
	if _, ok := bodyTiming(m.Body); !ok && d.HasArg("timing") {
		d.Fatalf(t, "%s carries no timing", typ)
	}
	return m
}
