package group

import (
	"fmt"
	"time"
)

// Status.DuplicateID lasts while the other process does. It gives way
// within a boot window or two of its start (the one that started later
// does) and falls silent; the status forgets it once no packet of it has
// arrived for MemberTimeout, the time after which a silent member leaves a
// group too. The log line and groupd_duplicate_id_total keep the record.

// noteDuplicate records, on the loop, that a packet of another process
// with this node's ID arrived now.
func (a *Agent) noteDuplicate(now time.Time) { a.dupLast = now }

// expireDuplicate clears Status.DuplicateID once the other process has
// been silent for MemberTimeout. It runs on the loop, which wakes at
// least every maxLoopSleep.
func (a *Agent) expireDuplicate(now time.Time) {
	if a.dupLast.IsZero() || now.Sub(a.dupLast) < a.cfg.Timing.MemberTimeout {
		return
	}
	a.dupLast = time.Time{}
	p := &a.pub
	p.mu.Lock()
	d := p.dup
	p.dup = nil
	p.st.DuplicateID = nil
	p.mu.Unlock()
	if d != nil {
		a.log.Info().Uint64("id", uint64(a.id)).Str("other_addr", d.Addr).Str("other_boot", fmt.Sprintf("%016x", d.Boot)).
			Dur("silent", a.cfg.Timing.MemberTimeout).
			Msg(fmt.Sprintf("the other process with node ID %d (at %s) has been silent for %v: no longer a duplicate",
				a.id, orUnknown(d.Addr), a.cfg.Timing.MemberTimeout))
	}
}
