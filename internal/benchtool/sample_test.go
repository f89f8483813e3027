//go:build linux

package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	netlab "github.com/groupd/groupd/internal/lab"
)

// serveMetrics serves body as /metrics on node i's API socket of l.
func serveMetrics(t *testing.T, l *netlab.Lab, i int, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(l.Sock(i)), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", l.Sock(i))
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
	// A lab known by its run dir only: nothing of it is up.
	state := `{"nodes":3,"prefix":"tt","subnet":"10.99.0.0/24","profile":"lan"}`
	if err := os.WriteFile(filepath.Join(dir, "lab.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := netlab.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
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
	got, err := sentByType(l, []int{1, 2})
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
	if _, err := sentByType(l, []int{1, 3}); err == nil {
		t.Error("a node without a daemon gave no error")
	}

	after := sent{msgs: map[string]float64{"Beacon": 35, "Election": 0, "Ready": 3, "Invitation": 4}}
	if got, want := perSecond(want.msgs, after.msgs, 2), map[string]float64{"Beacon": 10, "Invitation": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("perSecond = %v, want %v", got, want)
	}
}

// TestProcReader reads this test process and the loopback interface, and
// checks that the values move the way the work done here moves them.
func TestProcReader(t *testing.T) {
	pr, err := newProcReader()
	if err != nil {
		t.Skip(err) // no /proc
	}
	pid := os.Getpid()
	c0, err := pr.cpuSeconds(pid)
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the count moves by 50 ms (the clock ticks are 10
	// ms). Under load this process gets a fraction of a core, so the
	// wall time it takes is no measure: only a count that never moves,
	// within a generous limit, is a failure.
	var c1 float64
	start := time.Now()
	for c1 = c0; c1-c0 < 0.05 && time.Since(start) < 20*time.Second; {
		for t := time.Now(); time.Since(t) < 20*time.Millisecond; {
		}
		if c1, err = pr.cpuSeconds(pid); err != nil {
			t.Fatal(err)
		}
	}
	if c1-c0 < 0.05 {
		t.Errorf("cpuSeconds went from %v to %v in %v of busy work", c0, c1, time.Since(start))
	}
	t.Logf("cpuSeconds moved by 50 ms in %v of wall time", time.Since(start).Round(time.Millisecond))
	if _, err := pr.cpuSeconds(1 << 30); err == nil {
		t.Error("cpuSeconds of no process gave no error")
	}

	rss, peak := selfMemKiB()
	if rss < 1024 || peak < rss || selfPeakKiB() < rss {
		t.Errorf("selfMemKiB = %v KiB, peak %v KiB", rss, peak)
	}
	if got := pr.rssKiB(pid); got < rss/2 || got > rss*2 {
		t.Errorf("rssKiB(self) = %v KiB, VmRSS %v KiB", got, rss)
	}
	if pss, threads := pr.pssKiB(pid); pss <= 0 || pss > 2*rss || threads < 2 {
		t.Errorf("pssKiB(self) = %v KiB, %d threads (Go runs several)", pss, threads)
	}

	before, err := pr.received([]string{"lo", "no-such-if0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before["no-such-if0"]; ok || len(before) != 1 {
		t.Fatalf("received = %v, want lo only", before)
	}
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 10 {
		if _, err := c.WriteTo(make([]byte, 100), c.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := pr.received([]string{"lo"})
	if d := after["lo"][0] - before["lo"][0]; d < 10 {
		t.Errorf("lo received %v packets more after 10 sent to it", d)
	}
	if d := after["lo"][1] - before["lo"][1]; d < 10*100 {
		t.Errorf("lo received %v bytes more after 10 datagrams of 100", d)
	}
}
