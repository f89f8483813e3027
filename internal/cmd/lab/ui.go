package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/ui"
)

// ui serves the lab view (lab.Lab.UIHandler: the page, /lab/info,
// /lab/status, /lab/events, /lab/runs and the runs' histories)
// on loopback until SIGINT or SIGTERM: `lab.sh ui [--listen ADDR]`.
func (c *cli) ui(l *lab.Lab, args []string) error {
	listen := "127.0.0.1:0"
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--listen" && len(args) > 1:
			listen, args = args[1], args[2:]
		case strings.HasPrefix(a, "--listen="):
			listen, args = strings.TrimPrefix(a, "--listen="), args[1:]
		default:
			return usageError("usage: lab.sh ui [--listen 127.0.0.1:PORT]")
		}
	}
	host, _, err := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); err != nil || host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageError("ui: --listen %q: want a loopback HOST:PORT such as 127.0.0.1:8080", listen)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("ui: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	srv := &http.Server{Handler: l.UIHandler(ui.LoopbackHosts(port)...), ReadHeaderTimeout: 5 * time.Second}
	ctx, cancel := signalContext()
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	c.say("live view of %d node(s) at http://%s%s (read-only; Ctrl-C stops)", l.N(), ln.Addr(), ui.Prefix)
	select {
	case <-ctx.Done():
		srv.Close() // the event streams never end by themselves
		<-done
		return nil
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("ui: %w", err)
	}
}
