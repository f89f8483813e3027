// Package ui is groupd's live view in a browser: one page (HTML, CSS and
// plain JS drawing SVG, embedded in the binary, nothing fetched from
// elsewhere) that shows every node a daemon knows, grouped by group number,
// and a scrolling timeline, updated from the API's event stream.
//
// The daemon's API serves the page at /ui/ (Handler). `groupd ui` serves
// it on loopback TCP when the API is a unix socket, through Proxy, which
// passes on only the read-only GETs the page needs. The network lab's `lab.sh ui`
// serves the same page in lab mode (internal/lab): the page asks GET
// /lab/info first, and when it answers, reads /lab/status and /lab/events
// (every node of the lab, and the lab's fault marks) instead of /v1/*.
//
// This package has no dependencies inside groupd, so that package group
// can mount Handler.
package ui

import (
	"context"
	"embed"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Prefix is where the page lives.
const Prefix = "/ui/"

// Assets returns the page's files (index.html, app.js, style.css).
func Assets() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic("ui: embedded assets: " + err.Error()) // the embed directive guarantees the directory
	}
	return sub
}

// Size returns the page's weight: the bytes of all its files.
func Size() (int64, error) {
	var n int64
	err := fs.WalkDir(Assets(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

// csp allows the page its own files and its own origin's API, nothing
// else: no inline script, no other site (the page needs none, and a
// reflected string could then not run).
const csp = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the page under Prefix (mount it at "GET /ui/"); GET /ui
// redirects there. Only GET and HEAD are answered.
func Handler() http.Handler {
	files := http.StripPrefix(Prefix, http.FileServerFS(Assets()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the live view is read-only", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// The page is tiny and changes with the binary: always revalidate.
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// ProxyPaths are the daemon's paths the proxy passes on: the page and the
// three read-only API endpoints it reads. Everything else (/metrics,
// /healthz, pprof) is refused: the proxy exposes the view, not the API.
var ProxyPaths = []string{"/v1/status", "/v1/members", "/v1/events"}

// allowed reports whether the proxy passes on a request for path.
func allowed(path string) bool {
	if path == "/ui" || strings.HasPrefix(path, Prefix) {
		return true
	}
	for _, p := range ProxyPaths {
		if path == p {
			return true
		}
	}
	return false
}

// Proxy returns a reverse proxy to the daemon API at network/address
// ("unix", "/run/groupd.sock"), restricted to GET and HEAD of the page and
// ProxyPaths, with no query string. Streams are passed on as they come
// (the event stream is flushed per line). Requests whose Host is not one
// of hosts (the address the proxy listens on, as the browser writes it)
// are refused, so that another site cannot reach it by pointing a DNS
// name at 127.0.0.1; an empty hosts accepts any.
func Proxy(network, address string, hosts ...string) http.Handler {
	target := &url.URL{Scheme: "http", Host: "groupd"} // the host is ignored: Dial goes to address
	dialer := &net.Dialer{Timeout: 2 * time.Second}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.RawQuery = ""
			pr.Out.Header.Del("Cookie")
			pr.Out.Header.Del("Authorization")
		},
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, network, address)
			},
			DisableCompression:    true,
			ResponseHeaderTimeout: 5 * time.Second,
		},
		FlushInterval: -1, // NDJSON events: every write at once
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "groupd ui: the daemon at "+network+":"+address+" does not answer: "+err.Error(), http.StatusBadGateway)
		},
	}
	return Guard(rp, allowed, hosts...)
}

// Guard wraps next so that it only sees GET and HEAD requests of paths
// ok accepts, without a body, addressed to one of hosts (any when hosts is
// empty). The lab view uses it too.
func Guard(next http.Handler, ok func(path string) bool, hosts ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(hosts) > 0 && !hostAllowed(r.Host, hosts) {
			http.Error(w, "unexpected Host header: open the URL groupd printed", http.StatusMisdirectedRequest)
			return
		}
		if !ok(r.URL.Path) {
			http.Error(w, "not part of the live view", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the live view is read-only", http.StatusMethodNotAllowed)
			return
		}
		if r.ContentLength > 0 {
			http.Error(w, "a GET has no body", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func hostAllowed(host string, hosts []string) bool {
	for _, h := range hosts {
		if strings.EqualFold(host, h) {
			return true
		}
	}
	return false
}

// LoopbackHosts returns the Host headers a browser sends to a server on
// loopback port port: 127.0.0.1:port, localhost:port and [::1]:port.
func LoopbackHosts(port string) []string {
	return []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port}
}
