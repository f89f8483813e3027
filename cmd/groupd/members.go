package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
)

// apiMember is one element of the JSON array of GET /v1/members.
type apiMember struct {
	ID       uint64 `json:"id"`
	Priority uint8  `json:"priority"`
	Addr     string `json:"addr"`     // protocol (unicast) address
	Gossip   string `json:"gossip"`   // memberlist state: alive, suspect, dead or left
	InGroup  bool   `json:"in_group"` // in this node's current group
}

func membersCommand() *cli.Command {
	return &cli.Command{
		Name:      "members",
		Usage:     "list the nodes this node knows (from the local API)",
		ArgsUsage: " ",
		Description: "Asks the daemon at --api for GET /v1/members and prints a table, or with --json the\n" +
			"array as the API returns it, on one line. Exits 1 when no daemon answers.",
		Flags: []cli.Flag{
			apiFlag(),
			jsonFlag("print the members as a JSON array, on one line"),
		},
		Action: membersAction,
	}
}

func membersAction(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	api, err := newAPIClient(c.String("api"), requestTimeout)
	if err != nil {
		return err
	}
	body, err := api.getBody(c.Context, "/v1/members")
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSONLine(c.App.Writer, api.addr, body)
	}
	var ms []apiMember
	if err := json.Unmarshal(body, &ms); err != nil {
		return failure("daemon at %s sent a member list that is not valid JSON: %w", api.addr, err)
	}
	return printMembers(c.App.Writer, ms)
}

// printMembers prints ms as a table sorted by ID.
func printMembers(w io.Writer, ms []apiMember) error {
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPRIORITY\tADDR\tGOSSIP\tIN GROUP")
	for _, m := range ms {
		in := "no"
		if m.InGroup {
			in = "yes"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n",
			strconv.FormatUint(m.ID, 10), m.Priority, orDash(m.Addr), orDash(m.Gossip), in)
	}
	return tw.Flush()
}
