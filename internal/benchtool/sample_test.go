package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// serveMetrics serves body as /metrics on node i's API socket of run.
func serveMetrics(t *testing.T, l lab, i int, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(l.sock(i)), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", l.sock(i))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

func TestSentByType(t *testing.T) {
	dir, err := os.MkdirTemp("", "gd") // short: socket paths are limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l := lab{run: dir}
	serveMetrics(t, l, 1, `# HELP groupd_messages_sent_total Wire messages sent, by type.
# TYPE groupd_messages_sent_total counter
groupd_messages_sent_total{type="Beacon"} 10
groupd_messages_sent_total{type="Election"} 0
# TYPE groupd_bytes_sent_total counter
groupd_bytes_sent_total{type="Beacon"} 450
# TYPE go_goroutines gauge
go_goroutines 12
`)
	serveMetrics(t, l, 2, `# TYPE groupd_messages_sent_total counter
groupd_messages_sent_total{type="Beacon"} 5
groupd_messages_sent_total{type="Ready"} 3
`)
	got, err := sentByType(context.Background(), l, []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	want := sent{
		msgs:  map[string]float64{"Beacon": 15, "Election": 0, "Ready": 3},
		bytes: map[string]float64{"Beacon": 450},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sentByType = %+v, want %+v", got, want)
	}
	if _, err := sentByType(context.Background(), l, []int{1, 3}); err == nil {
		t.Error("a node without a daemon gave no error")
	}

	after := sent{msgs: map[string]float64{"Beacon": 35, "Election": 0, "Ready": 3, "Invitation": 4}}
	if got, want := perSecond(want.msgs, after.msgs, 2), map[string]float64{"Beacon": 10, "Invitation": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("perSecond = %v, want %v", got, want)
	}
}
