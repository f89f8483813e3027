// Package client talks to a groupd daemon's local HTTP API: the one client
// of GET /v1/status, /v1/members, /v1/events, /v1/leader, /metrics and
// /healthz, and of POST /v1/exec (`groupd exec`'s guard), used
// by the groupd command, the benchmarks, the timeline and the tests.
//
// The API's JSON shapes are package schema's types (Status, Member, Event,
// LeaderAnswer), declared once for the daemon and its readers; a program
// that only reads the API does not link the daemon's runtime:
//
//	c, err := client.New("unix:/run/groupd.sock") // or "127.0.0.1:7953"
//	st, err := c.Status(ctx)                       // a schema.Status
//	s, err := c.Watch(ctx)                         // the event stream
//	for { e, err := s.Next(); ... }
//
// Errors say what went wrong in the operator's terms: errors.Is(err,
// ErrNoDaemon) when nothing answers at the address, errors.Is(err,
// ErrPermission) when the socket (mode 0600) or port may not be used by
// this user, and an *HTTPError when the daemon answered with a status other
// than 200.
package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/groupd/groupd/schema"
)

// Timeouts. Dialling a local API is immediate when a daemon runs; an
// answer that takes longer than RequestTimeout means a stuck daemon.
const (
	DialTimeout    = 2 * time.Second
	RequestTimeout = 5 * time.Second
)

// MaxBody bounds one API answer (and one event line): a member list of
// invitation.MaxGroupSize entries fits many times over.
const MaxBody = 16 << 20

var (
	// ErrNoDaemon: nothing answers at the address (no socket file,
	// connection refused, timeout).
	ErrNoDaemon = errors.New("no daemon answering")
	// ErrPermission: the address exists but this user may not connect
	// (a unix socket is mode 0600: run as the daemon's user, or root).
	ErrPermission = errors.New("permission denied")
)

// HTTPError is an answer with a status other than 200.
type HTTPError struct {
	Addr   string
	Method string // "" for GET
	Path   string
	Status string // "503 Service Unavailable"
	Code   int
	Body   string // the first line of the body
}

func (e *HTTPError) Error() string {
	m := e.Method
	if m == "" {
		m = http.MethodGet
	}
	return fmt.Sprintf("daemon at %s answered %s %s with %s: %s", e.Addr, m, e.Path, e.Status, e.Body)
}

// Client is a client of one daemon's API. It is safe for concurrent use.
type Client struct {
	addr    string // as given, for messages
	base    string // URL prefix
	hc      *http.Client
	network string
	address string
}

// AddrError is an API address that cannot be used, and why. The groupd
// command names its flag (--api) in front of Problem; other callers print
// Error.
type AddrError struct {
	Addr    string // as given
	Problem string // "want HOST:PORT or unix:/path"
}

func (e *AddrError) Error() string { return fmt.Sprintf("API address %q: %s", e.Addr, e.Problem) }

// ParseAddr checks an API address, "unix:/path/to.sock" or "host:port",
// and returns the network ("unix" or "tcp") and the address to dial. Its
// errors are *AddrError.
func ParseAddr(addr string) (network, address string, err error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return "", "", &AddrError{addr, "no socket path after unix:"}
		}
		return "unix", path, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", &AddrError{addr, "want HOST:PORT or unix:/path"}
	}
	if host == "" {
		return "", "", &AddrError{addr, fmt.Sprintf("no host (use 127.0.0.1:%s for loopback)", port)}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", "", &AddrError{addr, fmt.Sprintf("port %q is not in 1-65535", port)}
	}
	return "tcp", addr, nil
}

// New returns a client of the API at addr ("host:port" or "unix:/path").
// It does not connect: the first request does.
func New(addr string) (*Client, error) {
	network, address, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: DialTimeout}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, address)
		},
		ResponseHeaderTimeout: RequestTimeout,
		DisableCompression:    true, // streams must arrive line by line
		MaxIdleConnsPerHost:   2,
	}
	base := "http://" + address
	if network == "unix" {
		base = "http://unix" // the host is ignored by DialContext
	}
	return &Client{addr: addr, base: base, hc: &http.Client{Transport: tr}, network: network, address: address}, nil
}

// Addr returns the address the client was made for.
func (c *Client) Addr() string { return c.addr }

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// get sends GET path and returns the response if its status is 200.
func (c *Client) get(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.connError(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		line, _ := bufio.NewReader(io.LimitReader(resp.Body, 512)).ReadString('\n')
		line = strings.TrimSpace(line)
		if line == "" {
			line = "(no body)"
		}
		return nil, &HTTPError{Addr: c.addr, Path: path, Status: resp.Status, Code: resp.StatusCode, Body: line}
	}
	return resp, nil
}

// connError classifies a failure to reach the daemon.
func (c *Client) connError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // drop the `Get "http://...":` prefix
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		return err
	}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		hint := ""
		if c.network == "unix" {
			hint = " (the socket is mode 0600: run as the daemon's user, or root)"
		}
		return fmt.Errorf("%w on %s%s: %v", ErrPermission, c.addr, hint, err)
	}
	return fmt.Errorf("%w at %s: %w", ErrNoDaemon, c.addr, err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// body sends GET path and returns the whole body, at most MaxBody bytes.
func (c *Client) body(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	resp, err := c.get(ctx, path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s from daemon at %s: %w", path, c.addr, err)
	}
	if len(b) > MaxBody {
		return nil, fmt.Errorf("answer to %s from daemon at %s is larger than %d bytes", path, c.addr, MaxBody)
	}
	return b, nil
}

// StatusRaw returns GET /v1/status as the daemon sent it, and decoded.
func (c *Client) StatusRaw(ctx context.Context) ([]byte, schema.Status, error) {
	b, err := c.body(ctx, "/v1/status")
	if err != nil {
		return nil, schema.Status{}, err
	}
	var st schema.Status
	if err := json.Unmarshal(b, &st); err != nil {
		return b, schema.Status{}, fmt.Errorf("daemon at %s sent a status that is not valid: %w", c.addr, err)
	}
	return b, st, nil
}

// Status returns the node's current view (GET /v1/status).
func (c *Client) Status(ctx context.Context) (schema.Status, error) {
	_, st, err := c.StatusRaw(ctx)
	return st, err
}

// TermHeader is the header in which GET /v1/leader gives the node's term
// (schema.TermHeader).
const TermHeader = schema.TermHeader

// MembersRaw returns GET /v1/members as the daemon sent it, and decoded.
func (c *Client) MembersRaw(ctx context.Context) ([]byte, []schema.Member, error) {
	b, err := c.body(ctx, "/v1/members")
	if err != nil {
		return nil, nil, err
	}
	var ms []schema.Member
	if err := json.Unmarshal(b, &ms); err != nil {
		return b, nil, fmt.Errorf("daemon at %s sent a member list that is not valid: %w", c.addr, err)
	}
	return b, ms, nil
}

// Members returns the nodes the daemon knows (GET /v1/members).
func (c *Client) Members(ctx context.Context) ([]schema.Member, error) {
	_, ms, err := c.MembersRaw(ctx)
	return ms, err
}

// Leader asks GET /v1/leader: whether this node is the leader an
// application may act on (200) or not (503), with the daemon's answer,
// which carries the lease still to run in quorum mode. Other statuses are
// an *HTTPError.
func (c *Client) Leader(ctx context.Context) (schema.LeaderAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	const path = "/v1/leader"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return schema.LeaderAnswer{}, fmt.Errorf("GET %s: %w", path, err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return schema.LeaderAnswer{}, c.connError(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return schema.LeaderAnswer{}, fmt.Errorf("reading %s from daemon at %s: %w", path, c.addr, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
		line := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
		return schema.LeaderAnswer{}, &HTTPError{Addr: c.addr, Path: path, Status: resp.Status, Code: resp.StatusCode, Body: line}
	}
	var ans schema.LeaderAnswer
	if err := json.Unmarshal(b, &ans); err != nil {
		return schema.LeaderAnswer{}, fmt.Errorf("daemon at %s sent a leader answer that is not valid: %w", c.addr, err)
	}
	if ans.Leader != (resp.StatusCode == http.StatusOK) {
		return schema.LeaderAnswer{}, fmt.Errorf("daemon at %s answered %s with leader=%v", c.addr, resp.Status, ans.Leader)
	}
	return ans, nil
}

// Healthy returns nil when GET /healthz answers 200, the *HTTPError when
// the daemon answers otherwise (its body says why), or the connection
// error.
func (c *Client) Healthy(ctx context.Context) error {
	_, err := c.body(ctx, "/healthz")
	return err
}

// Metrics returns the daemon's Prometheus metrics (GET /metrics), parsed.
func (c *Client) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	b, err := c.body(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		return nil, fmt.Errorf("daemon at %s sent metrics that do not parse: %w", c.addr, err)
	}
	return fams, nil
}

// Stream is an open GET /v1/events. Next returns events in order; the
// first is a snapshot of the current status.
type Stream struct {
	c    *Client
	resp *http.Response
	sc   *bufio.Scanner
}

// Watch opens the event stream. It stays open until ctx is done, Close is
// called, or the daemon ends it.
func (c *Client) Watch(ctx context.Context) (*Stream, error) {
	resp, err := c.get(ctx, "/v1/events")
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), MaxBody)
	return &Stream{c: c, resp: resp, sc: sc}, nil
}

// NextRaw returns the next event line as the daemon sent it. At the end
// of the stream it returns io.EOF.
func (s *Stream) NextRaw() ([]byte, error) {
	for s.sc.Scan() {
		line := s.sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		return line, nil
	}
	if err := s.sc.Err(); err != nil {
		return nil, fmt.Errorf("lost the event stream from daemon at %s: %w", s.c.addr, err)
	}
	return nil, io.EOF
}

// Next returns the next event, decoded. At the end of the stream it
// returns io.EOF.
func (s *Stream) Next() (schema.Event, error) {
	line, err := s.NextRaw()
	if err != nil {
		return schema.Event{}, err
	}
	var e schema.Event
	if err := json.Unmarshal(line, &e); err != nil {
		return schema.Event{}, fmt.Errorf("daemon at %s sent an event that is not valid: %w", s.c.addr, err)
	}
	return e, nil
}

// Close ends the stream.
func (s *Stream) Close() error { return s.resp.Body.Close() }

// Guard is an open POST /v1/exec: the daemon's guard over the command
// `groupd exec` runs (schema.ExecGuard). It lives while the connection
// stays open: closing it (Close, or this process's death) tells the daemon
// to kill whatever is left in the guard's cgroup.
type Guard struct {
	// Info is the daemon's first line: the guard's ID, term and cgroup.
	Info   schema.ExecGuard
	c      *Client
	resp   *http.Response
	sc     *bufio.Scanner
	cancel context.CancelFunc
}

// Guard asks the daemon to guard a command exec is about to start in
// req.Term. ctx bounds the registration only (until the daemon's first
// line): the guard then lives until Close, whatever becomes of ctx. The
// daemon refuses with an *HTTPError: 409 when this node does not lead in
// that term, 429 when it keeps too many guards, 501 when it cannot make a
// cgroup here (no cgroup v2, not permitted; the body says which), 503 when
// it stops, 404 or 405 when it predates guards.
func (c *Client) Guard(ctx context.Context, req schema.ExecGuardRequest) (*Guard, error) {
	const path = "/v1/exec"
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", path, err)
	}
	// The request's own context outlives ctx once registered: cancelling
	// it would close the connection, and the daemon would kill the
	// command.
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	detach := context.AfterFunc(ctx, cancel)
	fail := func(err error) (*Guard, error) {
		cancel()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("POST %s: %w", path, context.Cause(ctx))
		}
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(life, http.MethodPost, c.base+path, strings.NewReader(string(body)))
	if err != nil {
		return fail(fmt.Errorf("POST %s: %w", path, err))
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return fail(c.connError(err))
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		line, _ := bufio.NewReader(io.LimitReader(resp.Body, 512)).ReadString('\n')
		line = strings.TrimSpace(line)
		if line == "" {
			line = "(no body)"
		}
		return fail(&HTTPError{Addr: c.addr, Method: http.MethodPost, Path: path, Status: resp.Status, Code: resp.StatusCode, Body: line})
	}
	g := &Guard{c: c, resp: resp, sc: bufio.NewScanner(resp.Body), cancel: cancel}
	g.sc.Buffer(make([]byte, 4096), 64<<10)
	first, err := g.next()
	if err == nil && first.Cgroup == "" {
		err = fmt.Errorf("daemon at %s opened guard %d without a cgroup", c.addr, first.ID)
	}
	if err == nil && !detach() {
		err = context.Cause(ctx) // ctx ended just as the first line came
	}
	if err != nil {
		resp.Body.Close()
		return fail(err)
	}
	g.Info = first
	return g, nil
}

// next reads the guard's next line.
func (g *Guard) next() (schema.ExecGuard, error) {
	for g.sc.Scan() {
		if len(strings.TrimSpace(g.sc.Text())) == 0 {
			continue
		}
		var e schema.ExecGuard
		if err := json.Unmarshal(g.sc.Bytes(), &e); err != nil {
			return schema.ExecGuard{}, fmt.Errorf("daemon at %s sent a guard line that is not valid: %w", g.c.addr, err)
		}
		return e, nil
	}
	if err := g.sc.Err(); err != nil {
		return schema.ExecGuard{}, fmt.Errorf("lost the guard's stream from daemon at %s: %w", g.c.addr, err)
	}
	return schema.ExecGuard{}, io.EOF
}

// End waits until the daemon ends the guard and returns its last line
// (End says why). A stream that breaks without one (the daemon died, or
// Close was called) is an error: io.EOF, or what broke it.
func (g *Guard) End() (schema.ExecGuard, error) {
	for {
		e, err := g.next()
		if err != nil {
			return e, err
		}
		if e.End != "" {
			return e, nil
		}
	}
}

// Close ends the guard: the connection closes, and the daemon kills
// whatever is left in its cgroup and removes it.
func (g *Guard) Close() error {
	err := g.resp.Body.Close()
	g.cancel()
	return err
}
