//go:build linux

package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns the two ends of a new pseudo-terminal: the one a program
// writes to as its terminal, and the one that reads what it wrote.
func openPTY(t *testing.T) (term, reader *os.File) {
	t.Helper()
	reader, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { reader.Close() })
	if err := unix.IoctlSetPointerInt(int(reader.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(reader.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the terminal end: %v", err)
	}
	t.Cleanup(func() { term.Close() })
	return term, reader
}

// TestLogFormat: --log-format auto (the default) writes console lines to a
// terminal and JSON elsewhere; console and json force one.
func TestLogFormat(t *testing.T) {
	for _, tc := range []struct {
		format   string
		terminal bool
		json     bool
	}{
		{"auto", true, false},
		{"auto", false, true},
		{"console", false, false},
		{"console", true, false},
		{"json", true, true},
		{"json", false, true},
	} {
		where := "a file"
		if tc.terminal {
			where = "a terminal"
		}
		t.Run(tc.format+" to "+where, func(t *testing.T) {
			var w, r *os.File
			if tc.terminal {
				w, r = openPTY(t)
			} else {
				var err error
				if r, w, err = os.Pipe(); err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				defer w.Close()
			}
			log, err := newLogger(w, "info", tc.format)
			if err != nil {
				t.Fatal(err)
			}
			log.Info().Uint64("node", 3).Msg("hello")
			r.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 4096)
			n, err := r.Read(buf)
			if err != nil {
				t.Fatalf("read what the logger wrote: %v", err)
			}
			line := string(buf[:n])
			if got := strings.HasPrefix(line, "{"); got != tc.json || !strings.Contains(line, "hello") {
				t.Errorf("wrote %q; want JSON: %v", line, tc.json)
			}
			if !tc.json && !strings.Contains(line, "node=") {
				t.Errorf("wrote %q; want a console line with node=3", line)
			}
		})
	}
}
