//go:build linux

package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/groupd/groupd/client"
)

// apiServer serves a daemon's API on a unix socket: /v1/status always,
// /v1/leader only when leader is not 0 (its status code).
func apiServer(t *testing.T, status string, leader int, term string) *client.Client {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, status) })
	if leader != 0 {
		mux.HandleFunc("GET /v1/leader", func(w http.ResponseWriter, r *http.Request) {
			body := `{"leader":false,"id":5}`
			if leader == http.StatusOK {
				w.Header().Set(client.TermHeader, term)
				body = `{"leader":true,"id":5,"term":"` + term + `"}`
			}
			w.WriteHeader(leader)
			io.WriteString(w, body)
		})
	}
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := client.New("unix:" + sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

const leaderStatus = `{"id":5,"state":"normal","role":"coordinator","group":"20.5","coordinator":5,"members":[1,2,3,4,5],` +
	`"version":1,"primary":true,"expect":5,"leader":true,"leader_since":"2026-11-26T12:00:00Z","term":"17.5"}`

const minorityStatus = `{"id":5,"state":"normal","role":"coordinator","group":"20.5","coordinator":5,"members":[4,5],` +
	`"version":1,"primary":false,"expect":5,"leader":true,"leader_since":"2026-11-26T12:00:00Z","term":"17.5"}`

// TestGroupdProber: /v1/leader where the daemon has it, /v1/status (leader
// && primary) where it answers 404.
func TestGroupdProber(t *testing.T) {
	cases := []struct {
		name         string
		status       string
		leader       int
		term         string
		want         exclSample
		wantFallback bool
	}{
		{"old daemon, primary leader", leaderStatus, 0, "", exclSample{PL: true, Leader: true, Primary: true, Term: exclTerm{Seq: 17, ID: 5}, Full: true}, true},
		{"old daemon, leader of a minority", minorityStatus, 0, "", exclSample{Leader: true, Term: exclTerm{Seq: 17, ID: 5}}, true},
		{"new daemon, 200", minorityStatus, http.StatusOK, "21.5", exclSample{PL: true, Leader: true, Primary: true, Term: exclTerm{Seq: 21, ID: 5}, Full: true}, false},
		{"new daemon, 503", leaderStatus, http.StatusServiceUnavailable, "", exclSample{Full: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := apiServer(t, tc.status, tc.leader, tc.term)
			g := &groupdProber{client: func(int) *client.Client { return c }, n: 5}
			for k := 0; k < 2; k++ { // the second poll goes straight to the endpoint chosen
				got, err := g.probe(context.Background(), 5)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("poll %d: %+v, want %+v", k+1, got, tc.want)
				}
			}
			if g.noLeader.Load() != tc.wantFallback {
				t.Errorf("fell back to /v1/status: %v, want %v (source %q)", g.noLeader.Load(), tc.wantFallback, g.source())
			}
		})
	}
}
