package lab

import (
	"fmt"
	"time"

	"github.com/groupd/groupd/invitation"
)

// Pred judges the views of a set of nodes, in the order of the set, as
// the recorded history shows them: invariant.IsConverged (L1) or
// invariant.IsFailedOver (L2).
type Pred = func([]invitation.Status) bool

// Measure returns the first instant at or after from at which the
// recorded history shows ok on the views of ids (history.FirstTime). It
// is the one definition of when a lab converged, failed over or healed,
// for the end-to-end tests, the experiments and the benchmarks alike:
// the daemons' own event times, never when someone polled. Call it once
// polling (WaitFor) saw the condition hold; it gives the recorders up to
// wait to deliver the events that show it.
func (l *Lab) Measure(from time.Time, ids []int, ok Pred, wait time.Duration) (time.Time, error) {
	deadline := time.Now().Add(wait)
	for {
		h, err := l.History()
		if err != nil {
			return time.Time{}, err
		}
		if at, found := h.FirstTime(from, IDs(ids), ok); found {
			return at, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("lab: nodes %s: the recorded events never show the condition after %s (the recorder lost events?)",
				FormatIDs(ids), from.Format(time.RFC3339Nano))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FirstReaction is the time of the first event of ids at or after from
// that is not a snapshot (history.FirstEvent): how soon a node reacted to
// a fault. Zero when none did.
func (l *Lab) FirstReaction(from time.Time, ids []int) time.Time {
	h, err := l.History()
	if err != nil {
		return time.Time{}
	}
	ev, _ := h.FirstEvent(from, IDs(ids))
	return ev.Time
}
