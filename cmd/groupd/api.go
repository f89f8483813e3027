package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/group"
)

// queryCommand is a command that asks the daemon's local API (status,
// members, watch): it takes no arguments, has --api and --json, and its
// action gets a client of the daemon at --api.
func queryCommand(name, usage, description, jsonUsage string, action func(*cli.Context, *client.Client) error) *cli.Command {
	return &cli.Command{
		Name:        name,
		Category:    catQuery,
		Usage:       usage,
		ArgsUsage:   " ",
		Description: description,
		Flags: []cli.Flag{
			&cli.StringFlag{
				Name:    "api",
				Usage:   "address of the daemon's local API: `HOST:PORT` or unix:/path",
				Value:   group.DefaultAPI,
				EnvVars: []string{"GROUPD_API"},
			},
			&cli.BoolFlag{Name: "json", Usage: jsonUsage},
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			api, err := newClient(c)
			if err != nil {
				return err
			}
			defer api.Close()
			return action(c, api)
		},
	}
}

// newClient returns a client of the daemon at --api. An address that
// cannot be used is a usage error (exit 2), named by its flag.
func newClient(c *cli.Context) (*client.Client, error) {
	cl, err := client.New(c.String("api"))
	var ae *client.AddrError
	switch {
	case errors.As(err, &ae):
		return nil, badConfig("--api %q: %s", ae.Addr, ae.Problem)
	case err != nil:
		return nil, badConfig("--api: %w", err)
	}
	return cl, nil
}

// noDaemonHint follows "no daemon answering at ADDR: ...": the two things
// a newcomer has most likely got wrong.
const noDaemonHint = " (is `groupd run` running? --api or GROUPD_API must give its address)"

// apiError gives an error of the client its exit code, 1: the daemon is not
// there, may not be reached by this user (the client's message says so and
// how to fix it), or answered with an error.
func apiError(err error) error {
	if errors.Is(err, client.ErrNoDaemon) {
		return failure("%w%s", err, noDaemonHint)
	}
	return failure("%w", err)
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
