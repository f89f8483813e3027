package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/groupd/groupd/client"
	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/ui"
)

// Flag categories of `groupd ui`.
const (
	uiCatDaemon  = "API"
	uiCatBrowser = "Browser (a proxy for a unix-socket API)"
)

func uiCommand() *cli.Command {
	return &cli.Command{
		Name:      "ui",
		Category:  catQuery,
		Usage:     "print the URL of the live view in a browser (serve it for a unix-socket API)",
		ArgsUsage: " ",
		Description: "The daemon's API serves a live view of the group at /ui/: every node it knows,\n" +
			"grouped by group number, and a timeline of the last minutes, updated from the event\n" +
			"stream. It is read-only. When --api is HOST:PORT, ui checks that the daemon answers and\n" +
			"prints http://HOST:PORT/ui/. When --api is a unix socket, which a browser cannot open,\n" +
			"ui serves a proxy on loopback (--listen, an ephemeral port by default) that passes on\n" +
			"only GETs of /ui/ and of /v1/status, /v1/members and /v1/events, prints its URL and\n" +
			"runs until Ctrl-C. Exits 1 when no daemon answers, 2 on a bad flag.",
		Flags: []cli.Flag{
			// Listed here, --help comes first (see runCommand).
			cli.HelpFlag,
			&cli.StringFlag{
				Name:     "api",
				Category: uiCatDaemon,
				Usage:    "address of the daemon's local API: `HOST:PORT` or unix:/path",
				Value:    group.DefaultAPI,
				EnvVars:  []string{"GROUPD_API"},
			},
			&cli.StringFlag{
				Name:        "listen",
				Category:    uiCatBrowser,
				Usage:       "serve the view at `ADDR` (loopback only; also proxies a TCP API when set)",
				DefaultText: "127.0.0.1:0, a free port",
			},
		},
		Action: uiAction,
	}
}

func uiAction(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	api, err := newClient(c)
	if err != nil {
		return err
	}
	defer api.Close()
	network, address, _ := client.ParseAddr(api.Addr()) // newClient checked it
	listen := c.String("listen")
	if listen != "" {
		if err := loopbackOnly(listen); err != nil {
			return badConfig("--listen %q: %v", listen, err)
		}
	}
	ctx := c.Context
	qctx, cancel := context.WithTimeout(ctx, client.RequestTimeout)
	_, err = api.Status(qctx)
	cancel()
	if err != nil {
		return apiError(err)
	}
	if network == "tcp" && listen == "" {
		// The daemon serves the page itself.
		_, err := fmt.Fprintf(c.App.Writer, "http://%s%s\n", browserHost(address), ui.Prefix)
		return err
	}
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return failure("--listen %s: %w", listen, err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	srv := &http.Server{
		Handler:           ui.Proxy(network, address, ui.LoopbackHosts(port)...),
		ReadHeaderTimeout: 5 * time.Second,
	}
	url := "http://" + ln.Addr().String() + ui.Prefix
	fmt.Fprintf(c.App.Writer, "%s\n", url)
	if f, ok := c.App.Writer.(interface{ Flush() error }); ok {
		_ = f.Flush()
	}
	fmt.Fprintf(c.App.ErrWriter, "groupd: serving the live view of the daemon at %s on %s (read-only); Ctrl-C stops\n", api.Addr(), url)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		// The event streams never end by themselves: close, do not
		// wait for them.
		srv.Close()
		<-done
		return nil
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return failure("serving the live view: %w", err)
	}
}

// loopbackOnly accepts HOST:PORT whose host is a loopback address or
// localhost: the proxy hands out the group's state to whoever connects.
func loopbackOnly(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want HOST:PORT, e.g. 127.0.0.1:8080")
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("bad port %q", port)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return errors.New("the view is served on loopback only (127.0.0.1, ::1 or localhost)")
	}
	return nil
}

// browserHost is the host:port a browser on this machine uses for a
// daemon listening on address: an unspecified address (0.0.0.0, ::) is
// reached on loopback.
func browserHost(address string) string {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return address
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}
