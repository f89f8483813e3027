package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/groupd/groupd/internal/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// trKind is the input a trace line records.
type trKind uint8

const (
	trDeliver trKind = iota + 1
	trTick
	trSaved
	trSaveFailed
	trPeerDown
	trStart
	trCrash
	trNote
)

// entry is one trace line, kept unformatted: formatting every event would
// cost more than simulating it, and only the last few are ever printed.
type entry struct {
	at   int64
	node wire.NodeID
	kind trKind
	msg  wire.Message // trDeliver
	arg  uint64       // counter (saves, start, crash) or peer (trPeerDown)
	text string       // trNote
	out  invitation.Output
}

// noise reports whether a line says nothing but "beacons": received, or
// sent by a timer.
func (e *entry) noise() bool {
	if e.kind != trTick && !(e.kind == trDeliver && e.msg.Body.Type() == wire.TypeBeacon) {
		return false
	}
	if e.out.Persist != nil || len(e.out.Events) > 0 {
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
	case trDeliver:
		fmt.Fprintf(&b, " ← %s", e.msg)
	case trTick:
		b.WriteString(" tick")
	case trSaved:
		fmt.Fprintf(&b, " saved counter=%d", e.arg)
	case trSaveFailed:
		fmt.Fprintf(&b, " save FAILED counter=%d", e.arg)
	case trPeerDown:
		fmt.Fprintf(&b, " peer-down %d", e.arg)
	case trStart:
		fmt.Fprintf(&b, " START counter=%d", e.arg)
	case trCrash:
		fmt.Fprintf(&b, " CRASH durable=%d", e.arg)
	case trNote:
		b.WriteString(" ## ")
		b.WriteString(e.text)
	}
	for _, ev := range e.out.Events {
		fmt.Fprintf(&b, "\n      %s: %s", ev.Reason, ev.New)
	}
	if p := e.out.Persist; p != nil {
		fmt.Fprintf(&b, "\n      %s", p)
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
