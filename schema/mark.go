package schema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/wire"
)

// Mark kinds: the lab's own records, in the order a run meets them.
const (
	KindStart     = "start"     // a daemon was launched (spec: nodes)
	KindPartition = "partition" // spec "1,2|3,4,5"
	KindOneway    = "oneway"    // spec "1->3"
	KindLoss      = "loss"      // spec "20%" or "20% from 1,2"
	KindDelay     = "delay"     // spec "50ms±10ms" (+ " from 1,2")
	KindHeal      = "heal"      // spec "all" or "partitions"
	KindKill      = "kill"      // kill -9 (spec: nodes)
	KindStop      = "stop"      // SIGTERM (spec: nodes)
	KindRestart   = "restart"   // stop then start (spec: node)
	KindWipe      = "wipe"      // data dir removed (spec: node)
	KindRestore   = "restore"   // data dir replaced by an older copy (spec: node)
	KindQuiet     = "quiet"     // chaos: an L1 check point (spec: a label)
	KindCheck     = "check"     // a check point (spec "L1", "L1 LIST", "L2 LIST")
	KindEnd       = "end"       // the run is over; later records are its shutdown
	KindPause     = "pause"     // SIGSTOP: the process is frozen, not dead (spec: nodes); a note
	KindResume    = "resume"    // SIGCONT after a pause (spec: nodes); a note
)

// Mark is one thing the lab did, or a check point: one line of the lab's
// RUN/history.ndjson (beside the events), or of the faults.ndjson that
// `groupd timeline --faults` draws:
//
//	{"time":"2026-11-21T10:00:04Z","kind":"partition","spec":"1,2|3"}
type Mark struct {
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	Spec string    `json:"spec"`
	// Label says what a check point checks, for reports.
	Label string `json:"label,omitempty"`
}

// Down reports whether the mark takes its nodes' processes away (kill,
// stop, restart): what they say after it is not checked, and a timeline
// draws them down until their next event.
func (m Mark) Down() bool {
	return m.Kind == KindKill || m.Kind == KindStop || m.Kind == KindRestart
}

// Nodes returns the nodes a mark about processes or data dirs names (start,
// kill, stop, restart, wipe, restore, pause, resume: its spec is a node
// list), nil for other kinds, and an error for such a mark whose spec is
// not a node list.
func (m Mark) Nodes() ([]wire.NodeID, error) {
	switch m.Kind {
	case KindStart, KindKill, KindStop, KindRestart, KindWipe, KindRestore, KindPause, KindResume:
		return ParseIDs(m.Spec)
	}
	return nil, nil
}

// ParseIDs reads a node list: "3", "1,2,5", "3-5", "1,4-6". IDs are
// positive; a list may not name a node twice.
func ParseIDs(spec string) ([]wire.NodeID, error) {
	var out []wire.NodeID
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
		}
		if err1 != nil || err2 != nil || a == 0 || b < a || b-a > 1<<16 {
			return nil, fmt.Errorf("bad node list %q (want e.g. 1,2,4-6)", spec)
		}
		for i := a; i <= b; i++ {
			if slices.Contains(out, wire.NodeID(i)) {
				return nil, fmt.Errorf("node list %q names node %d twice", spec, i)
			}
			out = append(out, wire.NodeID(i))
		}
	}
	return out, nil
}

// FormatIDs writes a node list as ParseIDs reads it, with runs of three or
// more as ranges: [1 2 3 5] is "1-3,5".
func FormatIDs(ids []wire.NodeID) string {
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		switch {
		case j-i >= 2:
			fmt.Fprintf(&b, "%d-%d", ids[i], ids[j])
		case j > i:
			fmt.Fprintf(&b, "%d,%d", ids[i], ids[j])
		default:
			fmt.Fprintf(&b, "%d", ids[i])
		}
		i = j + 1
	}
	return b.String()
}
