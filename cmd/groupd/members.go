package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/group"
)

func membersCommand() *cli.Command {
	return queryCommand("members", "list the nodes this node knows (from the local API)",
		"Asks the daemon at --api for GET /v1/members and prints a table, or with --json the\n"+
			"array as the API returns it, on one line. Exits 1 when no daemon answers.\n\n"+
			"REACH is this node's own evidence that it hears the node (self, up, lost, unknown).\n"+
			"LEADER is yes for a node that announced it leads and is heard, stale for one that\n"+
			"announced it but is no longer heard (killed or cut off; gossip drops it later),\n"+
			"degraded for one that cannot save its state, - otherwise.",
		"print the members as a JSON array, on one line", membersAction)
}

func membersAction(c *cli.Context, api *client.Client) error {
	body, ms, err := api.MembersRaw(c.Context)
	if c.Bool("json") && body != nil {
		// The daemon's own bytes: a member list this client cannot
		// decode (a newer daemon's) is still printed.
		return printJSONLine(c.App.Writer, api.Addr(), body)
	}
	if err != nil {
		return apiError(err)
	}
	return printMembers(c.App.Writer, ms)
}

// printMembers prints ms as a table sorted by ID.
func printMembers(w io.Writer, ms []group.Member) error {
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// A QUORUM column only when some node's settings differ: it names
	// them (--expect, --tie-breaker) against this node's.
	quorum := false
	for _, m := range ms {
		quorum = quorum || m.Quorum != ""
	}
	head := "ID\tNAME\tPRIORITY\tADDR\tGOSSIP\tREACH\tIN GROUP\tGROUP\tLEADER\tTAGS"
	if quorum {
		head += "\tQUORUM"
	}
	fmt.Fprintln(tw, head)
	for _, m := range ms {
		in := "no"
		if m.InGroup {
			in = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s",
			strconv.FormatUint(uint64(m.ID), 10), orDash(m.Name), m.Priority, orDash(m.Addr), orDash(m.Gossip), reachCell(m.Reach), in,
			orDash(m.Group), leaderCell(m), orDash(strings.Join(sortedKV(m.Tags), " ")))
		if quorum {
			fmt.Fprintf(tw, "\t%s", orDash(m.Quorum))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// leaderCell renders a member's LEADER column: "yes" for a node that
// announced it leads and that this node hears (reach self or up, or a
// daemon too old to say), "stale" for one it announced it leads but this
// node no longer hears (reach lost or unknown: a leader killed, or cut
// off, that gossip has not yet declared dead, which takes up to
// --member-timeout), "degraded" for a node that cannot save its state,
// "-" for the rest. So two nodes never both show "yes" because one of
// them died.
func leaderCell(m group.Member) string {
	switch {
	case m.Leader && (m.Reach.State == group.ReachLost || m.Reach.State == group.ReachUnknown):
		return "stale"
	case m.Leader:
		return "yes"
	case m.Degraded:
		return "degraded"
	}
	return "-"
}

// reachCell renders a member's reach: its state, and unless there is no
// evidence, its age in seconds and its basis ("up 0.2s heartbeat", "lost
// 1.3s ack", "up 0.1s via 3"); "-" from a daemon that does not say.
func reachCell(r group.Reach) string {
	switch {
	case r.State == "":
		return "-"
	case r.State == group.ReachSelf || r.AgeMS < 0:
		return r.State
	}
	basis := r.Basis
	if r.Via != 0 { // basis "coordinator"
		basis = "via " + strconv.FormatUint(uint64(r.Via), 10)
	}
	return fmt.Sprintf("%s %.1fs %s", r.State, float64(r.AgeMS)/1000, basis)
}
