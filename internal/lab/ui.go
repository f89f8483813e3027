package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/ui"
)

// The lab view (`lab.sh ui`, and the browser test): package ui's page in
// lab mode, fed by every node's API over its unix socket and by the fault
// marks of history.ndjson. It is read-only, like the page:
//
//	GET /ui/          the page
//	GET /lab/info     {"prefix":"gd","nodes":16,"dir":"/tmp/groupd-lab"}
//	GET /lab/status   [{"node":1,"status":{...}|null,"error":"...","members":[...]|null,"members_error":"..."}...]:
//	                  every node's GET /v1/status and GET /v1/members (that node's own view of
//	                  the others, each member object as the daemon sent it), asked all at once,
//	                  within uiStatusTimeout; error and members_error only when set
//	GET /lab/events   NDJSON: every node's /v1/events lines as the daemon sent them (each
//	                  starts with a snapshot), {"node":I,"down":true,"time":...,"error":...}
//	                  when node I's stream breaks (it is followed again every second), and
//	                  {"mark":{...}} for each fault mark of history.ndjson (those of the last
//	                  markBacklog first, then new ones as they are appended)

// markBacklog is how far back /lab/events starts with the marks: the
// page's timeline shows five minutes.
const markBacklog = 10 * time.Minute

// uiMarkKinds are the marks the timeline draws: what the lab did to the
// network and the daemons (not check points).
var uiMarkKinds = map[string]bool{
	schema.KindStart: true, schema.KindPartition: true, schema.KindOneway: true, schema.KindLoss: true,
	schema.KindDelay: true, schema.KindHeal: true, schema.KindKill: true, schema.KindStop: true,
	schema.KindRestart: true, schema.KindWipe: true,
}

// UIHandler returns the lab view's handler. hosts are the Host headers it
// accepts (ui.LoopbackHosts of the port it listens on); none accepts any.
func (l *Lab) UIHandler(hosts ...string) http.Handler {
	mux := http.NewServeMux()
	page := ui.Handler()
	mux.Handle("/ui/", page)
	mux.Handle("/ui", page)
	mux.HandleFunc("/lab/info", func(w http.ResponseWriter, r *http.Request) {
		writeUIJSON(w, map[string]any{"prefix": l.cfg.Prefix, "nodes": l.cfg.Nodes, "dir": l.cfg.Dir})
	})
	mux.HandleFunc("/lab/status", l.uiStatus)
	mux.HandleFunc("/lab/events", l.uiEvents)
	ok := func(path string) bool {
		switch path {
		case "/lab/info", "/lab/status", "/lab/events", "/ui":
			return true
		}
		return strings.HasPrefix(path, ui.Prefix)
	}
	return ui.Guard(mux, ok, hosts...)
}

func writeUIJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}

// uiNode is one node's answer in /lab/status: its GET /v1/status and its
// GET /v1/members (its own view of every node it knows, passed on as the
// daemon sent it), each null with its error when the node did not answer.
type uiNode struct {
	Node    int             `json:"node"`
	Status  *schema.Status  `json:"status"`
	Error   string          `json:"error,omitempty"`
	Members json.RawMessage `json:"members"`
	// MembersError is why Members is null (a daemon that answers its
	// status but not its members is rare: a restart in between).
	MembersError string `json:"members_error,omitempty"`
}

// uiStatusTimeout bounds /lab/status: the page polls it every second or
// faster, and a node that is frozen (SIGSTOP) or starting would hold every
// poll.
const uiStatusTimeout = 500 * time.Millisecond

// uiStatus asks every node for its status and its members, all at once; a
// node that does not answer within uiStatusTimeout is reported with its
// error (the page shows it as unreachable).
func (l *Lab) uiStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), uiStatusTimeout)
	defer cancel()
	out := make([]uiNode, l.cfg.Nodes)
	var wg sync.WaitGroup
	for i := 1; i <= l.cfg.Nodes; i++ {
		out[i-1].Node = i
		wg.Go(func() {
			st, err := l.Client(i).Status(ctx)
			if err != nil {
				out[i-1].Error = err.Error()
				return
			}
			out[i-1].Status = &st
		})
		wg.Go(func() {
			raw, _, err := l.Client(i).MembersRaw(ctx)
			if err != nil {
				out[i-1].MembersError = err.Error()
				return
			}
			out[i-1].Members = raw
		})
	}
	wg.Wait()
	writeUIJSON(w, out)
}

// uiEvents merges every node's event stream and the history's marks into
// one NDJSON stream until the client goes away.
func (l *Lab) uiEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	lines := make(chan []byte, 256)
	var wg sync.WaitGroup
	defer wg.Wait() // the followers stop with ctx
	defer cancel()
	send := func(b []byte) bool {
		select {
		case lines <- b:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for i := 1; i <= l.cfg.Nodes; i++ {
		wg.Go(func() { l.uiFollow(ctx, i, send) })
	}
	wg.Go(func() { l.uiMarks(ctx, send) })

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-lines:
			if _, err := w.Write(b); err != nil {
				return // the browser went away
			}
			// Write what else is queued before flushing: one chunk
			// per burst, and the page renders once per chunk.
			for more := true; more; {
				select {
				case b := <-lines:
					if _, err := w.Write(b); err != nil {
						return
					}
				default:
					more = false
				}
			}
			flusher.Flush()
		}
	}
}

// uiFollow passes on node i's events, following its stream again a second
// after it breaks (the daemon was killed, restarted, not started yet).
func (l *Lab) uiFollow(ctx context.Context, i int, send func([]byte) bool) {
	for ctx.Err() == nil {
		err := l.uiStream(ctx, i, send)
		if ctx.Err() != nil {
			return
		}
		b, _ := json.Marshal(map[string]any{"node": i, "down": true, "time": time.Now().UTC(), "error": errString(err)})
		if !send(append(b, '\n')) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (l *Lab) uiStream(ctx context.Context, i int, send func([]byte) bool) error {
	s, err := l.Client(i).Watch(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		line, err := s.NextRaw()
		if err != nil {
			return err
		}
		// NextRaw's line is the scanner's buffer: copy it.
		b := make([]byte, len(line)+1)
		copy(b, line)
		b[len(line)] = '\n'
		if !send(b) {
			return ctx.Err()
		}
	}
}

func errString(err error) string {
	if err == nil || errors.Is(err, io.EOF) {
		return "the daemon ended its event stream"
	}
	return err.Error()
}

// uiMarks passes on the marks of history.ndjson: those of the last
// markBacklog, then those appended later (it polls the file: other
// processes append to it, and it has no other signal).
func (l *Lab) uiMarks(ctx context.Context, send func([]byte) bool) {
	path := filepath.Join(l.cfg.Dir, HistoryFile)
	since := time.Now().Add(-markBacklog)
	var off int64
	var partial []byte
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		f, err := os.Open(path)
		if err == nil {
			if fi, err := f.Stat(); err == nil && fi.Size() < off {
				off, partial = 0, nil // replaced: read it again
			}
			if _, err := f.Seek(off, io.SeekStart); err == nil {
				br := bufio.NewReaderSize(f, 64<<10)
				for {
					chunk, err := br.ReadBytes('\n')
					off += int64(len(chunk))
					if err != nil {
						// An unfinished last line: keep it for the next read.
						partial = append(partial, chunk...)
						break
					}
					line := append(partial, chunk...)
					partial = nil
					if b := uiMark(line, since); b != nil && !send(b) {
						f.Close()
						return
					}
				}
			}
			f.Close()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// uiMark returns the line for /lab/events of a history line that is a
// mark the page draws, at or after since, or nil.
func uiMark(line []byte, since time.Time) []byte {
	if !strings.Contains(string(line), `"kind"`) {
		return nil // an event: the followers send those from the daemons
	}
	var m schema.Mark
	if json.Unmarshal(line, &m) != nil || !uiMarkKinds[m.Kind] || m.Time.Before(since) {
		return nil
	}
	b, err := json.Marshal(map[string]schema.Mark{"mark": m})
	if err != nil {
		return nil
	}
	return append(b, '\n')
}
