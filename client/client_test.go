package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// serve runs h on a unix socket in a temporary directory and returns its
// API address.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "unix:" + sock
}

const statusJSON = `{"id":3,"priority":100,"state":"normal","role":"coordinator","group":"17.3","coordinator":3,` +
	`"members":[1,2,3],"version":2,"since":"2026-11-21T10:00:00Z","counter":17,"incarnation":5,` +
	`"persist_error":"","time":"2026-11-21T10:00:01Z","primary":true,"expect":0}`

func TestStatusMembersEvents(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, statusJSON+"\n") })
	mux.HandleFunc("GET /v1/members", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `[{"id":1,"priority":100,"addr":"10.0.0.1:7950","gossip":"alive","in_group":true}]`)
	})
	mux.HandleFunc("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "{\"time\":\"2026-11-21T10:00:00Z\",\"node\":3,\"reason\":\"snapshot\",\"old\":null,\"new\":%s}\n\n", statusJSON)
		fmt.Fprintf(w, "{\"time\":\"2026-11-21T10:00:02Z\",\"node\":3,\"reason\":\"members\",\"old\":%s,\"new\":%s}\n", statusJSON, statusJSON)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "persist error: disk full\n")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# TYPE groupd_role_changes_total counter\ngroupd_role_changes_total 4\n")
	})
	c, err := New(serve(t, mux))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Group != (wire.GroupNumber{Seq: 17, ID: 3}) || len(st.Members) != 3 || st.Counter != 17 {
		t.Errorf("status = %v", st)
	}
	ms, err := c.Members(ctx)
	if err != nil || len(ms) != 1 || ms[0].Addr != "10.0.0.1:7950" || !ms[0].InGroup {
		t.Errorf("members = %v, %v", ms, err)
	}
	s, err := c.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for {
		e, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		reasons = append(reasons, e.Reason)
	}
	s.Close()
	if strings.Join(reasons, ",") != "snapshot,members" {
		t.Errorf("events = %v", reasons)
	}
	var he *HTTPError
	if err := c.Healthy(ctx); !errors.As(err, &he) || he.Code != 503 || he.Body != "persist error: disk full" {
		t.Errorf("healthz error = %v", err)
	}
	fams, err := c.Metrics(ctx)
	if err != nil || fams["groupd_role_changes_total"].GetMetric()[0].GetCounter().GetValue() != 4 {
		t.Errorf("metrics = %v, %v", fams, err)
	}
}

func TestNoDaemon(t *testing.T) {
	for _, addr := range []string{"unix:" + filepath.Join(t.TempDir(), "none.sock"), "127.0.0.1:1"} {
		c, err := New(addr)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Status(context.Background())
		if !errors.Is(err, ErrNoDaemon) || !strings.Contains(err.Error(), addr) {
			t.Errorf("%s: err = %v, want ErrNoDaemon naming the address", addr, err)
		}
	}
}

// TestPermission checks that a refused socket reads "permission denied",
// not "no daemon answering". Root may connect to any socket, so the
// classification is checked on the error the dialer returns to others.
func TestPermission(t *testing.T) {
	c, err := New("unix:/run/groupd.sock")
	if err != nil {
		t.Fatal(err)
	}
	dial := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)}
	err = c.connError(dial)
	if !errors.Is(err, ErrPermission) || errors.Is(err, ErrNoDaemon) || !strings.Contains(err.Error(), "0600") {
		t.Errorf("err = %v, want ErrPermission with a hint", err)
	}
	if os.Geteuid() == 0 {
		return
	}
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(filepath.Dir(sock), 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(filepath.Dir(sock), 0o700)
	c, _ = New("unix:" + sock)
	if _, err := c.Status(context.Background()); !errors.Is(err, ErrPermission) {
		t.Errorf("err = %v, want ErrPermission", err)
	}
}

func TestParseAddr(t *testing.T) {
	for _, tc := range []struct {
		in, network, addr, err string
	}{
		{"unix:/run/groupd.sock", "unix", "/run/groupd.sock", ""},
		{"127.0.0.1:7953", "tcp", "127.0.0.1:7953", ""},
		{"unix:", "", "", "no socket path"},
		{":7953", "", "", "no host"},
		{"localhost", "", "", "want HOST:PORT"},
		{"127.0.0.1:0", "", "", "not in 1-65535"},
	} {
		n, a, err := ParseAddr(tc.in)
		if tc.err != "" {
			var ae *AddrError
			if !errors.As(err, &ae) || ae.Addr != tc.in || !strings.Contains(ae.Problem, tc.err) {
				t.Errorf("ParseAddr(%q) err = %#v, want an *AddrError saying %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || n != tc.network || a != tc.addr {
			t.Errorf("ParseAddr(%q) = %q, %q, %v", tc.in, n, a, err)
		}
	}
}

func TestStreamEndsWithContext(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c, _ := New(serve(t, mux))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	s, err := c.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Next(); err == nil {
		t.Fatal("Next after the context ended returned no error")
	}
}

func TestLeader(t *testing.T) {
	cases := []struct {
		name    string
		code    int
		body    string
		want    schema.LeaderAnswer
		wantErr int // an *HTTPError with this code; -1 any other error
	}{
		{"leader", http.StatusOK, `{"leader":true,"id":3,"term":"17.3","lease_remaining_ms":812}`,
			schema.LeaderAnswer{Leader: true, ID: 3, Term: "17.3", LeaseRemainingMS: ptr(int64(812))}, 0},
		{"not leader", http.StatusServiceUnavailable, `{"leader":false,"id":3,"leader_id":5}`,
			schema.LeaderAnswer{ID: 3, LeaderID: 5}, 0},
		{"no endpoint", http.StatusNotFound, "404 page not found", schema.LeaderAnswer{}, http.StatusNotFound},
		{"not JSON", http.StatusOK, "leader", schema.LeaderAnswer{}, -1},
		{"code and body disagree", http.StatusOK, `{"leader":false}`, schema.LeaderAnswer{}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/leader" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tc.code)
				io.WriteString(w, tc.body+"\n")
			})))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got, err := c.Leader(context.Background())
			var he *HTTPError
			switch {
			case tc.wantErr > 0:
				if !errors.As(err, &he) || he.Code != tc.wantErr {
					t.Fatalf("err = %v, want an HTTPError %d", err, tc.wantErr)
				}
			case tc.wantErr < 0:
				if err == nil || errors.As(err, &he) {
					t.Fatalf("err = %v, want a decoding error", err)
				}
			case err != nil:
				t.Fatal(err)
			case !reflect.DeepEqual(got, tc.want):
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
