package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/groupd/groupd/internal/history"
	"github.com/groupd/groupd/internal/lab"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// status shows the lab (lab.sh status).
func (c *cli) status(e lab.Env) error {
	l, err := c.open(e)
	if err != nil && strings.Contains(err.Error(), "no lab is up") {
		fmt.Printf("lab: not up (run dir %s)\n", e.Dir)
		return nil
	}
	if err != nil {
		return err
	}
	cfg := l.Config()
	fmt.Printf("lab: %d node(s), run dir %s, binary %s, profile %s\n", l.N(), e.Dir, cfg.Bin, cfg.Profile)
	br := l.Bridge()
	if b, err := os.ReadFile("/sys/class/net/" + br + "/bridge/multicast_snooping"); err == nil {
		state, _ := os.ReadFile("/sys/class/net/" + br + "/operstate")
		fmt.Printf("bridge %s: %s, multicast snooping %s\n", br, strings.TrimSpace(string(state)), strings.TrimSpace(string(b)))
	} else {
		fmt.Printf("bridge %s: missing (run lab.sh up %d)\n", br, l.N())
	}
	if m, err := l.Mechanism(); err == nil {
		fmt.Printf("faults: loss/delay with %s; partitions and cuts with iptables\n", m)
	}
	ids := lab.Span(1, l.N())
	sts, _ := l.Views(ids)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "node\tns\taddress\tdaemon\tfaults\tview (state group coordinator members)")
	for _, i := range ids {
		daemon, view := "stopped", "-"
		if pid, err := l.PID(i); err == nil {
			daemon = "pid " + strconv.Itoa(pid)
			view = "down"
			if s, ok := sts[i]; ok {
				view = fmt.Sprintf("%s %s %d %s", s.State, s.Group, s.Coordinator, joinIDs(s.Members))
			}
		}
		rules := "?"
		if n, err := l.FaultRules(i); err == nil {
			rules = strconv.Itoa(n)
		}
		fmt.Fprintf(w, "%d\t%s\t%v/%d\t%s\t%s\t%s\n", i, l.NS(i), l.Addr(i), cfg.Subnet.Bits(), daemon, rules, view)
	}
	return w.Flush()
}

// export writes the history as the two files `groupd timeline` reads.
func (c *cli) export(e lab.Env, dir string) error {
	h, err := lab.ReadHistory(e.Dir)
	if err != nil {
		return err
	}
	if err := writeHistory(h, dir, time.Time{}); err != nil {
		return err
	}
	c.say("wrote %s and %s", filepath.Join(dir, "events.ndjson"), filepath.Join(dir, "faults.ndjson"))
	return nil
}

// writeHistory writes h's events before until (zero: all) to
// dir/events.ndjson and its faults (the marks `groupd timeline --faults`
// draws: not the lab's starts, stops and checks) to dir/faults.ndjson.
func writeHistory(h *history.History, dir string, until time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ev, err := os.Create(filepath.Join(dir, "events.ndjson"))
	if err != nil {
		return err
	}
	err = h.WriteEvents(ev, until)
	if cerr := ev.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a one-way cut "1->3" stays as the lab wrote it
	for _, m := range h.Marks() {
		switch m.Kind {
		case schema.KindStart, schema.KindStop, schema.KindCheck, schema.KindEnd, schema.KindWipe, schema.KindRestore:
			continue
		}
		if !until.IsZero() && m.Time.After(until) {
			continue
		}
		m.Time = m.Time.UTC()
		if err := enc.Encode(m); err != nil {
			return fmt.Errorf("encoding the %s mark at %s: %w", m.Kind, m.Time.Format(time.RFC3339Nano), err)
		}
	}
	return os.WriteFile(filepath.Join(dir, "faults.ndjson"), b.Bytes(), 0o644)
}

func joinIDs(ids []wire.NodeID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(uint64(id), 10)
	}
	return strings.Join(s, ",")
}

// timeline draws timeline.svg with `groupd timeline`.
func (x *experiment) timeline() {
	title := fmt.Sprintf("groupd %s, %d nodes (profile %s)", x.scenario, x.n, x.e.Profile)
	ev, fa, svg := filepath.Join(x.out, "events.ndjson"), filepath.Join(x.out, "faults.ndjson"), filepath.Join(x.out, "timeline.svg")
	out, err := exec.Command(x.l.Config().Bin, "timeline", ev, "--faults", fa, "--title", title, "-o", svg).CombinedOutput()
	if err != nil {
		out, err = exec.Command(x.l.Config().Bin, "timeline", ev, "--faults", fa, "-o", svg).CombinedOutput()
	}
	if err != nil {
		_ = os.Remove(svg)
		x.c.warn("no timeline: %v: %s", err, strings.TrimSpace(string(out)))
	} else if s := strings.TrimSpace(string(out)); s != "" {
		fmt.Fprintf(os.Stderr, "timeline: %s\n", s)
	}
}
