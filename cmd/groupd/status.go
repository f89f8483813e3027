package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
)

// apiStatus is the JSON object of GET /v1/status and of the "old" and "new"
// fields of an event (see /work/contract.md). The client decodes it on its
// own so that it keeps working against daemons of other versions: unknown
// fields are ignored, missing ones stay zero.
type apiStatus struct {
	ID           uint64   `json:"id"`
	Priority     uint8    `json:"priority"`
	State        string   `json:"state"` // normal, election or reorganization
	Role         string   `json:"role"`  // coordinator or participant
	Group        string   `json:"group"` // seq.id
	Coordinator  uint64   `json:"coordinator"`
	Members      []uint64 `json:"members"` // sorted
	Version      uint64   `json:"version"`
	Since        string   `json:"since"` // RFC 3339: when Group last changed
	Counter      uint64   `json:"counter"`
	Incarnation  uint64   `json:"incarnation"`
	PersistError string   `json:"persist_error"`
	Time         string   `json:"time"` // RFC 3339: when the daemon answered
	Primary      bool     `json:"primary"`
	Expect       int      `json:"expect"` // 0: primary-partition mode off
}

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show this node's group, role and coordinator (from the local API)",
		ArgsUsage: " ",
		Description: "Asks the daemon at --api for GET /v1/status. With --json, prints the object exactly as\n" +
			"the API returns it, on one line. Exits 1 when no daemon answers, and 3 when the daemon\n" +
			"runs with --expect and this node is not in the primary partition (scripts can gate on it).",
		Flags: []cli.Flag{
			apiFlag(),
			jsonFlag("print the status object as JSON, on one line"),
		},
		Action: statusAction,
	}
}

func statusAction(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	api, err := newAPIClient(c.String("api"), requestTimeout)
	if err != nil {
		return err
	}
	body, err := api.getBody(c.Context, "/v1/status")
	if err != nil {
		return err
	}
	var st apiStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return failure("daemon at %s sent a status that is not valid JSON: %w", api.addr, err)
	}
	if c.Bool("json") {
		err = printJSONLine(c.App.Writer, api.addr, body)
	} else {
		err = printStatus(c.App.Writer, st, time.Now())
	}
	if err != nil {
		return err
	}
	if st.Expect > 0 && !st.Primary {
		return &exitError{code: exitNotPrimary, err: fmt.Errorf("not in the primary partition (%d members, --expect %d)", len(st.Members), st.Expect)}
	}
	return nil
}

// printJSONLine prints a JSON document from the API compacted onto one line.
func printJSONLine(w io.Writer, addr string, body []byte) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, body); err != nil {
		return failure("daemon at %s sent invalid JSON: %w", addr, err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// printStatus prints st as aligned "key: value" lines. The age of since is
// measured against the daemon's own clock (st.Time) when it sent one, else
// against now.
func printStatus(w io.Writer, st apiStatus, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	line("id", strconv.FormatUint(st.ID, 10))
	line("priority", strconv.FormatUint(uint64(st.Priority), 10))
	line("state", orDash(st.State))
	line("role", orDash(st.Role))
	line("group", orDash(st.Group))
	line("coordinator", strconv.FormatUint(st.Coordinator, 10))
	line("members", fmt.Sprintf("%s (%d)", joinIDs(st.Members), len(st.Members)))
	line("since", sinceText(st.Since, st.Time, now))
	if st.Expect > 0 {
		p := "no"
		if st.Primary {
			p = "yes"
		}
		line("primary", fmt.Sprintf("%s (%d of --expect %d)", p, len(st.Members), st.Expect))
	}
	if st.PersistError != "" {
		line("persist error", st.PersistError)
	}
	return tw.Flush()
}

// sinceText renders since with its age: "2026-11-21T10:00:00Z (1m12s ago)".
func sinceText(since, at string, now time.Time) string {
	t, err := time.Parse(time.RFC3339Nano, since)
	if err != nil || t.IsZero() {
		return orDash(since)
	}
	if daemonNow, err := time.Parse(time.RFC3339Nano, at); err == nil {
		now = daemonNow
	}
	return fmt.Sprintf("%s (%s ago)", t.Format(time.RFC3339), formatAge(now.Sub(t)))
}

// formatAge rounds an age for people: tenths of a second below ten
// seconds, whole seconds above.
func formatAge(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
	case d < 10*time.Second:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Second)
	}
	return d.String()
}

// joinIDs renders ids separated by spaces, "-" if there are none.
func joinIDs(ids []uint64) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
