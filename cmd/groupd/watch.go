package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/wire"
)

func watchCommand() *cli.Command {
	return queryCommand("watch", "stream this node's group changes (from the local API)",
		"Follows GET /v1/events of the daemon at --api and prints one line per event, or with\n"+
			"--json each newline-delimited JSON event as received. The first event is a snapshot of\n"+
			"the current status. Exits 0 on Ctrl-C or when the daemon ends the stream, 1 when no\n"+
			"daemon answers or the connection breaks.",
		"print each event as the JSON line the API sends", watchAction)
}

func watchAction(c *cli.Context, api *client.Client) error {
	ctx := c.Context
	stream, err := api.Watch(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while connecting
		}
		return apiError(err)
	}
	defer stream.Close()

	asJSON := c.Bool("json")
	out := c.App.Writer
	for {
		line, err := stream.NextRaw()
		switch {
		case ctx.Err() != nil:
			return nil // Ctrl-C
		case errors.Is(err, io.EOF):
			if !asJSON {
				fmt.Fprintf(c.App.ErrWriter, "groupd: daemon at %s ended the event stream\n", api.Addr())
			}
			return nil
		case err != nil:
			return apiError(err)
		}
		if asJSON {
			_, err = fmt.Fprintf(out, "%s\n", line)
		} else {
			var ev group.Event
			if err := json.Unmarshal(line, &ev); err != nil {
				return failure("daemon at %s sent an event that is not valid JSON: %w", api.Addr(), err)
			}
			_, err = fmt.Fprintln(out, formatEvent(ev, time.Local))
		}
		if f, ok := out.(interface{ Flush() error }); ok && err == nil {
			err = f.Flush()
		}
		if err != nil {
			return failure("writing event: %w", err)
		}
	}
}

// formatEvent renders an event on one line, its time in loc:
//
//	10:00:01.234 node 3 merge: 16.3 coordinator -> 17.3 coordinator [1 2 3]
func formatEvent(ev group.Event, loc *time.Location) string {
	var b strings.Builder
	if ev.Time.IsZero() {
		b.WriteString("-")
	} else {
		b.WriteString(ev.Time.In(loc).Format("15:04:05.000"))
	}
	fmt.Fprintf(&b, " node %d", ev.Node)
	if ev.Name != "" {
		b.WriteString(" (" + ev.Name + ")")
	}
	fmt.Fprintf(&b, " %s:", orDash(ev.Reason))
	switch ev.Reason {
	case group.ReasonLeaderStart, group.ReasonLeaderStop:
		term := ev.New.Term
		if ev.Reason == group.ReasonLeaderStop && ev.Old != nil {
			term = ev.Old.Term
		}
		fmt.Fprintf(&b, " term %s, group %s", term, ev.New.Group)
		return b.String()
	case group.ReasonLeaderTerm:
		if ev.Old != nil {
			fmt.Fprintf(&b, " term %s -> %s, group %s", ev.Old.Term, ev.New.Term, ev.New.Group)
		} else {
			fmt.Fprintf(&b, " term %s, group %s", ev.New.Term, ev.New.Group)
		}
		return b.String()
	}
	if ev.Old != nil {
		b.WriteString(" " + briefStatus(*ev.Old) + " ->")
	}
	b.WriteString(" " + briefStatus(ev.New))
	b.WriteString(" [" + strings.TrimPrefix(joinIDs(ev.New.Members), "-") + "]")
	if ev.New.CoordinatorName != "" && ev.New.Coordinator != ev.Node {
		b.WriteString(" coordinator " + ev.New.CoordinatorName)
	}
	if ev.New.PersistError != "" {
		b.WriteString(" persist error: " + ev.New.PersistError)
	}
	if ev.Missed > 0 {
		fmt.Fprintf(&b, " (%d earlier events missed)", ev.Missed)
	}
	return b.String()
}

// briefStatus renders a status as "17.3 coordinator", adding the state
// when it is not normal: "18.5 participant (reorganization)".
func briefStatus(s group.Status) string {
	if s.Group.IsZero() {
		return "no group"
	}
	out := s.Group.String() + " " + s.Role.String()
	if s.State != wire.StateNormal {
		out += " (" + s.State.String() + ")"
	}
	return out
}
