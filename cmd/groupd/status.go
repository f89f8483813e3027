package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/wire"
)

func statusCommand() *cli.Command {
	return queryCommand("status", "show this node's group, role and coordinator (from the local API)",
		"Asks the daemon at --api for GET /v1/status. With --json, prints the object exactly as\n"+
			"the API returns it, on one line. Exits 1 when no daemon answers, and 3 when the daemon\n"+
			"runs with --expect and this node is not in the primary partition (scripts can gate on it).",
		"print the status object as JSON, on one line", statusAction)
}

func statusAction(c *cli.Context, api *client.Client) error {
	body, st, err := api.StatusRaw(c.Context)
	if err != nil {
		return apiError(err)
	}
	if c.Bool("json") {
		err = printJSONLine(c.App.Writer, api.Addr(), body)
	} else {
		err = printStatus(c.App.Writer, st, time.Now())
	}
	if err != nil {
		return err
	}
	if st.Expect > 0 && !st.Primary {
		return cli.Exit(fmt.Sprintf("not in the primary partition (%d members, --expect %d)", len(st.Members), st.Expect), exitNotPrimary)
	}
	return nil
}

// printStatus prints st as aligned "key: value" lines. The age of since is
// measured against the daemon's own clock (st.Time) when it sent one, else
// against now.
func printStatus(w io.Writer, st group.Status, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	line("id", strconv.FormatUint(uint64(st.ID), 10))
	if st.Name != "" {
		line("name", st.Name)
	}
	line("priority", strconv.FormatUint(uint64(st.Priority), 10))
	line("state", st.State.String())
	line("role", st.Role.String())
	if st.Group.IsZero() {
		line("group", "none yet (listening for a group to join)")
	} else {
		line("group", st.Group.String()+" (formed "+st.GroupFormed().Format("2006-01-02T15:04:05.000Z07:00")+")")
	}
	coord := strconv.FormatUint(uint64(st.Coordinator), 10)
	if st.CoordinatorName != "" {
		coord += " (" + st.CoordinatorName + ")"
	}
	line("coordinator", coord)
	line("members", fmt.Sprintf("%s (%d)", joinIDs(st.Members), len(st.Members)))
	if st.Leader {
		line("leader", fmt.Sprintf("yes, term %s, since %s", st.Term, sinceText(st.LeaderSince, st.Time, now)))
	} else {
		line("leader", "no")
	}
	line("since", sinceText(st.Since, st.Time, now))
	if len(st.Tags) > 0 {
		line("tags", strings.Join(sortedKV(st.Tags), " "))
	}
	if st.Expect > 0 {
		p := "no"
		if st.Primary {
			p = "yes"
		}
		line("primary", fmt.Sprintf("%s (%d of --expect %d)", p, len(st.Members), st.Expect))
		if r := st.Rule; r != nil && (r.Voters != st.Expect || r.TieBreaker != st.TieBreaker) {
			rule := fmt.Sprintf("a majority of %d", r.Voters)
			if r.TieBreaker != 0 {
				rule += fmt.Sprintf(", or half holding %d", r.TieBreaker)
			} else if st.TieBreaker != 0 {
				rule += fmt.Sprintf(" (tie-breaker %d not in force)", st.TieBreaker)
			}
			if len(r.Extra) > 0 {
				rule += fmt.Sprintf("; more than one process of %s", joinIDs(r.Extra))
			}
			line("quorum rule", rule)
		}
	}
	for _, m := range st.QuorumMismatches {
		line("quorum", fmt.Sprintf("node %d differs: %s", m.Peer, m.Detail))
	}
	if st.PersistError != "" {
		line("persist error", st.PersistError+" (degraded: creates no group number, steps aside)")
	}
	if d := st.DuplicateID; d != nil {
		line("duplicate id", fmt.Sprintf("another process with this ID at %s (boot %x), seen %s",
			orDash(d.Addr), d.Boot, sinceText(d.Since, st.Time, now)))
	}
	for _, m := range st.TimingMismatches {
		line("timing", fmt.Sprintf("node %d differs: %s", m.Peer, m.Detail))
	}
	return tw.Flush()
}

// sinceText renders since with its age: "2026-11-21T10:00:00Z (1m12s ago)",
// or "-" when the daemon sent none.
func sinceText(since, at, now time.Time) string {
	if since.IsZero() {
		return "-"
	}
	if !at.IsZero() {
		now = at
	}
	return fmt.Sprintf("%s (%s ago)", since.Format(time.RFC3339), formatAge(now.Sub(since)))
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
func joinIDs(ids []wire.NodeID) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(uint64(id), 10)
	}
	return strings.Join(s, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sortedKV renders tags as "k=v" in key order.
func sortedKV(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
