package timeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// maxLine bounds one NDJSON line; longer lines are counted as malformed.
const maxLine = 1 << 20

// Fault is one line of faults.ndjson, written by the lab scripts.
type Fault struct {
	Time time.Time `json:"time"`
	Kind string    `json:"kind"` // partition | oneway | loss | delay | heal | kill | restart
	Spec string    `json:"spec"` // e.g. "1,2|3,4,5", "1>3", "20%", "3"
}

// Node returns the node a kill or restart fault is about, or 0.
func (f Fault) Node() wire.NodeID {
	if f.Kind != "kill" && f.Kind != "restart" {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(f.Spec), 10, 64)
	if err != nil {
		return 0
	}
	return wire.NodeID(n)
}

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

// ReadFaults reads newline-delimited Fault JSON, skipping and counting
// lines without a time or a kind. The faults come back sorted by time.
func ReadFaults(r io.Reader) (faults []Fault, skipped int, err error) {
	err = readLines(r, func(line []byte) {
		var f Fault
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
