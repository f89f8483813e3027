package timeline

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/groupd/groupd/schema"
)

// Options shape the picture. The zero value is usable.
type Options struct {
	// Title is printed at the top; default "groupd timeline".
	Title string
	// Width is the picture's width in pixels; default 1000, at least 400.
	Width int
	// RowHeight is the height of one node's row in pixels; default 24, at
	// least 12.
	RowHeight int
	// Start and End fix the time axis; zero means from the data (the first
	// and last event or fault, plus a small margin after the last).
	Start, End time.Time
	// Warn, if set, is called once per kind of skipped input, e.g.
	// "timeline: skipped 3 malformed event lines".
	Warn func(msg string)
}

// ErrNoEvents is returned (wrapped) by Render when the events input holds
// no valid event.
var ErrNoEvents = errors.New("timeline: no valid event in the input")

// Render reads events (and faults, which may be nil) and writes the SVG
// timeline to w. Malformed lines are skipped and counted; the only input
// error is an events input without a single valid event.
func Render(w io.Writer, events io.Reader, faults io.Reader, opts Options) error {
	evs, badEvents, err := ReadEvents(events)
	if err != nil {
		return err
	}
	var fs []schema.Mark
	badFaults := 0
	if faults != nil {
		fs, badFaults, err = ReadFaults(faults)
		if err != nil {
			return err
		}
	}
	if len(evs) == 0 {
		if badEvents > 0 {
			return fmt.Errorf("%w (%d malformed lines skipped)", ErrNoEvents, badEvents)
		}
		return ErrNoEvents
	}
	if opts.Warn != nil {
		if badEvents > 0 {
			opts.Warn(fmt.Sprintf("timeline: skipped %d malformed event line%s", badEvents, plural(badEvents)))
		}
		if badFaults > 0 {
			opts.Warn(fmt.Sprintf("timeline: skipped %d malformed fault line%s", badFaults, plural(badFaults)))
		}
	}
	p := newPicture(Build(evs, fs, opts.Start, opts.End), opts)
	p.badEvents, p.badFaults = badEvents, badFaults
	return p.write(w)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
