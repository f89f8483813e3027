package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/groupd/groupd/group"
)

// Client timeouts. Dialling the local API is immediate when a daemon runs;
// a request that takes longer than requestTimeout means a stuck daemon.
const (
	dialTimeout    = 2 * time.Second
	requestTimeout = 5 * time.Second
)

// apiFlag is the --api flag of the client commands.
func apiFlag() *cli.StringFlag {
	return &cli.StringFlag{
		Name:    "api",
		Usage:   "address of the daemon's local API: `HOST:PORT` or unix:/path",
		Value:   group.DefaultAPI,
		EnvVars: []string{"GROUPD_API"},
	}
}

// jsonFlag is the --json flag of the client commands.
func jsonFlag(usage string) *cli.BoolFlag {
	return &cli.BoolFlag{Name: "json", Usage: usage}
}

// parseAPIAddr checks an API address: "unix:/path/to.sock" or "host:port".
// It returns the network ("unix" or "tcp") and the address to dial.
func parseAPIAddr(addr string) (network, address string, err error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return "", "", fmt.Errorf("--api %q: no socket path after unix:", addr)
		}
		return "unix", path, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", fmt.Errorf("--api %q: want HOST:PORT or unix:/path", addr)
	}
	if host == "" {
		return "", "", fmt.Errorf("--api %q: no host (use 127.0.0.1:%s for loopback)", addr, port)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", "", fmt.Errorf("--api %q: port %q is not in 1-65535", addr, port)
	}
	return "tcp", addr, nil
}

// apiClient talks to the daemon's local HTTP API over TCP or a unix socket.
type apiClient struct {
	addr string // as given, for messages
	base string // URL prefix
	http *http.Client
}

// newAPIClient returns a client for the API at addr. timeout bounds each
// whole request (0: none, for streams).
func newAPIClient(addr string, timeout time.Duration) (*apiClient, error) {
	network, address, err := parseAPIAddr(addr)
	if err != nil {
		return nil, &exitError{code: exitConfig, err: err}
	}
	dialer := &net.Dialer{Timeout: dialTimeout}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, address)
		},
		ResponseHeaderTimeout: requestTimeout,
		DisableCompression:    true, // streams must arrive line by line
	}
	base := "http://" + address
	if network == "unix" {
		base = "http://unix" // the host is ignored by DialContext
	}
	return &apiClient{
		addr: addr,
		base: base,
		http: &http.Client{Transport: tr, Timeout: timeout},
	}, nil
}

// get sends GET path and returns the response if its status is 200. When no
// daemon answers it returns an exit-1 error "no daemon answering at ADDR".
func (a *apiClient) get(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return nil, failure("%s: %w", path, err)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // drop the `Get "http://...":` prefix
		}
		return nil, failure("no daemon answering at %s: %w", a.addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		line, _ := bufio.NewReader(io.LimitReader(resp.Body, 512)).ReadString('\n')
		line = strings.TrimSpace(line)
		if line == "" {
			line = "(no body)"
		}
		return nil, failure("daemon at %s answered GET %s with %s: %s", a.addr, path, resp.Status, line)
	}
	return resp, nil
}

// getBody sends GET path and returns the whole body (at most maxBody bytes).
func (a *apiClient) getBody(ctx context.Context, path string) ([]byte, error) {
	resp, err := a.get(ctx, path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, failure("reading %s from daemon at %s: %w", path, a.addr, err)
	}
	if len(body) > maxBody {
		return nil, failure("answer to %s from daemon at %s is larger than %d bytes", path, a.addr, maxBody)
	}
	return body, nil
}

// maxBody bounds an API answer (and one event line): a member list of
// invitation.MaxGroupSize entries fits many times over.
const maxBody = 16 << 20
