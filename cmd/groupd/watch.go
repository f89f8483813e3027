package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// apiEvent is one line of GET /v1/events (newline-delimited JSON). The first
// line of a stream is a "snapshot" event with the current status and no old
// status.
type apiEvent struct {
	Time   string     `json:"time"` // RFC 3339
	Node   uint64     `json:"node"`
	Reason string     `json:"reason"` // recovery, election, merge, invited, ready, members, confirmed, persist-failed, snapshot
	Old    *apiStatus `json:"old"`
	New    *apiStatus `json:"new"`
}

func watchCommand() *cli.Command {
	return &cli.Command{
		Name:      "watch",
		Usage:     "stream this node's group changes (from the local API)",
		ArgsUsage: " ",
		Description: "Follows GET /v1/events of the daemon at --api and prints one line per event, or with\n" +
			"--json each newline-delimited JSON event as received. The first event is a snapshot of\n" +
			"the current status. Exits 0 on Ctrl-C or when the daemon ends the stream, 1 when no\n" +
			"daemon answers or the connection breaks.",
		Flags: []cli.Flag{
			apiFlag(),
			jsonFlag("print each event as the JSON line the API sends"),
		},
		Action: watchAction,
	}
}

func watchAction(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	api, err := newAPIClient(c.String("api"), 0)
	if err != nil {
		return err
	}
	ctx := c.Context
	resp, err := api.get(ctx, "/v1/events")
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while connecting
		}
		return err
	}
	defer resp.Body.Close()

	asJSON := c.Bool("json")
	out := c.App.Writer
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxBody)
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		if asJSON {
			if _, err := fmt.Fprintf(out, "%s\n", line); err != nil {
				return failure("writing event: %w", err)
			}
		} else {
			var ev apiEvent
			if err := json.Unmarshal(line, &ev); err != nil {
				return failure("daemon at %s sent an event that is not valid JSON: %w", api.addr, err)
			}
			if _, err := fmt.Fprintln(out, formatEvent(ev, time.Local)); err != nil {
				return failure("writing event: %w", err)
			}
		}
		if f, ok := out.(interface{ Flush() error }); ok {
			if err := f.Flush(); err != nil {
				return failure("writing event: %w", err)
			}
		}
	}
	err = sc.Err()
	switch {
	case ctx.Err() != nil:
		return nil // Ctrl-C
	case err == nil || errors.Is(err, io.EOF):
		if !asJSON {
			fmt.Fprintf(c.App.ErrWriter, "groupd: daemon at %s ended the event stream\n", api.addr)
		}
		return nil
	default:
		return failure("lost the event stream from daemon at %s: %w", api.addr, err)
	}
}

// formatEvent renders an event on one line, its time in loc:
//
//	10:00:01.234 node 3 merge: 16.3 coordinator -> 17.3 coordinator [1 2 3]
func formatEvent(ev apiEvent, loc *time.Location) string {
	var b strings.Builder
	if t, err := time.Parse(time.RFC3339Nano, ev.Time); err == nil {
		b.WriteString(t.In(loc).Format("15:04:05.000"))
	} else {
		b.WriteString(orDash(ev.Time))
	}
	fmt.Fprintf(&b, " node %d %s:", ev.Node, orDash(ev.Reason))
	if ev.Old != nil {
		b.WriteString(" " + briefStatus(*ev.Old) + " ->")
	}
	if ev.New != nil {
		b.WriteString(" " + briefStatus(*ev.New))
		b.WriteString(" [" + strings.TrimPrefix(joinIDs(ev.New.Members), "-") + "]")
		if ev.New.PersistError != "" {
			b.WriteString(" persist error: " + ev.New.PersistError)
		}
	}
	return b.String()
}

// briefStatus renders a status as "17.3 coordinator", adding the state
// when it is not normal: "18.5 participant (reorganization)".
func briefStatus(s apiStatus) string {
	out := orDash(s.Group) + " " + orDash(s.Role)
	if s.State != "" && s.State != "normal" {
		out += " (" + s.State + ")"
	}
	return out
}
