package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// Read adds every record of r: NDJSON lines that are events (they have a
// "node") or marks (they have a "kind"), in any mix. Blank lines are
// skipped; unusable ones are kept in Bad. It returns how many records it
// added.
func (h *History) Read(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n, line := 0, 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if blank(b) {
			continue
		}
		var probe struct {
			Node *wire.NodeID `json:"node"`
			Kind *string      `json:"kind"`
		}
		err := json.Unmarshal(b, &probe)
		switch {
		case err != nil:
		case probe.Node != nil:
			var ev schema.Event
			if err = json.Unmarshal(b, &ev); err == nil {
				err = h.AddEvent(ev)
			}
		case probe.Kind != nil:
			var m schema.Mark
			if err = json.Unmarshal(b, &m); err == nil {
				_, err = h.AddMark(m)
			}
		default:
			err = errors.New("neither an event (no node) nor a mark (no kind)")
		}
		if err != nil {
			h.mu.Lock()
			h.bad = append(h.bad, fmt.Sprintf("line %d: %v", line, err))
			h.mu.Unlock()
			continue
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("history: reading line %d: %w", line+1, err)
	}
	return n, nil
}

// WriteEvents writes the events with time before until (zero: all), in time
// order, one JSON line each: the events.ndjson that `groupd timeline`
// reads.
func (h *History) WriteEvents(w io.Writer, until time.Time) error {
	bw := bufio.NewWriter(w)
	for _, ev := range h.Events(time.Time{}, until) {
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("history: encoding an event of node %d: %w", ev.Node, err)
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("history: writing events: %w", err)
	}
	return nil
}
