package timeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/groupd/groupd/schema"
)

// maxLine bounds one NDJSON line; longer lines are counted as malformed.
const maxLine = 1 << 20

// ReadEvents reads newline-delimited schema.Event JSON (GET /v1/events,
// `groupd watch --json`). Blank lines are ignored; lines that are not such
// an event with a time, a node (or new.id) and a new status are skipped and
// counted in skipped. The events come back sorted by time (stable for
// equal times). err is set only when the reader fails; an input with no
// valid event is not an error here (Render decides).
func ReadEvents(r io.Reader) (events []schema.Event, skipped int, err error) {
	err = readLines(r, func(line []byte) {
		var e schema.Event
		// A line without "new" leaves New zero, whose State is not
		// valid: no status was recorded.
		if json.Unmarshal(line, &e) != nil || e.Time.IsZero() || !e.New.State.Valid() {
			skipped++
			return
		}
		if e.Node == 0 {
			e.Node = e.New.ID
		}
		if e.Node == 0 {
			skipped++
			return
		}
		events = append(events, e)
	}, func() { skipped++ })
	sort.SliceStable(events, func(i, j int) bool { return events[i].Time.Before(events[j].Time) })
	return events, skipped, err
}

// ReadFaults reads the lab's marks (faults.ndjson: newline-delimited
// schema.Mark JSON), skipping and counting lines without a time or a kind.
// The marks come back sorted by time.
func ReadFaults(r io.Reader) (faults []schema.Mark, skipped int, err error) {
	err = readLines(r, func(line []byte) {
		var f schema.Mark
		if json.Unmarshal(line, &f) != nil || f.Time.IsZero() || f.Kind == "" {
			skipped++
			return
		}
		faults = append(faults, f)
	}, func() { skipped++ })
	sort.SliceStable(faults, func(i, j int) bool { return faults[i].Time.Before(faults[j].Time) })
	return faults, skipped, err
}

// readLines calls fn for every non-blank line and tooLong for every line
// longer than maxLine (which is skipped).
func readLines(r io.Reader, fn func([]byte), tooLong func()) error {
	br := bufio.NewReaderSize(r, 64*1024)
	var buf []byte
	discarding := false
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(chunk) > 0 || (err == nil && !isPrefix) {
			if !discarding {
				buf = append(buf, chunk...)
				if len(buf) > maxLine {
					discarding = true
					buf = buf[:0]
				}
			}
			if !isPrefix {
				if discarding {
					tooLong()
				} else if line := bytes.TrimSpace(buf); len(line) > 0 {
					fn(line)
				}
				buf = buf[:0]
				discarding = false
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if discarding {
					tooLong()
				} else if line := bytes.TrimSpace(buf); len(line) > 0 {
					fn(line)
				}
				return nil
			}
			return fmt.Errorf("timeline: read: %w", err)
		}
	}
}
