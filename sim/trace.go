package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// trKind is what a trace line records besides an input.
type trKind uint8

const (
	trInput trKind = iota // an input to a node (in)
	trStart
	trCrash
	trYield
	trNote
)

// entry is one trace line, kept unformatted: formatting every event would
// cost more than simulating it, and only the last few are ever printed.
type entry struct {
	at   int64
	node wire.NodeID
	kind trKind
	in   invitation.Input
	text string // trNote; the state file for trStart and trCrash
	out  invitation.Output
}

// noise reports whether a line says nothing but "beacons": received, or
// sent by a timer.
func (e *entry) noise() bool {
	if e.kind != trInput {
		return false
	}
	switch in := e.in.(type) {
	case invitation.Tick:
	case invitation.Receive:
		if in.Msg.Body.Type() != wire.TypeBeacon {
			return false
		}
	default:
		return false
	}
	if e.out.Save != nil || len(e.out.Events) > 0 || len(e.out.Notices) > 0 || len(e.out.Created) > 0 {
		return false
	}
	for _, m := range e.out.Messages {
		if m.Msg.Body.Type() != wire.TypeBeacon {
			return false
		}
	}
	return true
}

func (e *entry) String() string {
	var b strings.Builder
	b.WriteString(invariant.FormatTime(Epoch.Add(durationNs(e.at))))
	if e.node != 0 {
		fmt.Fprintf(&b, " n%d", e.node)
	}
	switch e.kind {
	case trInput:
		if in, ok := e.in.(invitation.Receive); ok {
			fmt.Fprintf(&b, " ← %s", in.Msg)
		} else if st, ok := e.in.(fmt.Stringer); ok {
			b.WriteString(" " + st.String())
		}
	case trStart:
		b.WriteString(" START " + e.text)
	case trCrash:
		b.WriteString(" CRASH " + e.text)
	case trYield:
		b.WriteString(" YIELDED its ID to another process and exits")
	case trNote:
		b.WriteString(" ## ")
		b.WriteString(e.text)
	}
	for _, ev := range e.out.Events {
		fmt.Fprintf(&b, "\n      %s: %s", ev.Reason, ev.New)
	}
	for _, g := range e.out.Created {
		fmt.Fprintf(&b, "\n      created %s", g)
	}
	for _, nt := range e.out.Notices {
		fmt.Fprintf(&b, "\n      NOTICE %s", nt)
	}
	if p := e.out.Save; p != nil {
		fmt.Fprintf(&b, "\n      save %s", p)
	}
	for _, m := range e.out.Messages {
		if m.Msg.Body.Type() == wire.TypeBeacon {
			continue
		}
		fmt.Fprintf(&b, "\n      %s", m)
	}
	return b.String()
}

// ring keeps the last lines of the trace.
type ring struct {
	lines []entry
	next  int
	full  bool
}

func newRing(n int) ring { return ring{lines: make([]entry, n)} }

func (r *ring) add(e entry) {
	if len(r.lines) == 0 {
		return
	}
	r.lines[r.next] = e
	r.next++
	if r.next == len(r.lines) {
		r.next, r.full = 0, true
	}
}

func (r *ring) render() string {
	var b strings.Builder
	emit := func(es []entry) {
		for i := range es {
			b.WriteString(es[i].String())
			b.WriteByte('\n')
		}
	}
	if r.full {
		emit(r.lines[r.next:])
	}
	emit(r.lines[:r.next])
	return b.String()
}

// record adds a line to the trace (and the live trace writer).
func (s *Sim) record(e entry) {
	if s.cfg.TraceAll || !e.noise() {
		s.trace.add(e)
		if s.cfg.Trace != nil {
			fmt.Fprintln(s.cfg.Trace, e.String())
		}
	}
	if s.err != nil && s.err.Trace == "" {
		s.err.Trace = s.trace.render()
	}
}

func durationNs(ns int64) time.Duration { return time.Duration(ns) }
