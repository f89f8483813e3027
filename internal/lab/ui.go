package lab

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
//	GET /lab/links    {"time":T,"cuts":[{"from":1,"to":3,"kind":"partition"|"oneway","since":T}...],
//	                  "degraded":[{"kind":"loss"|"delay","spec":"20%"|"50ms±10ms","from":[1,2]|null,"since":T}...]}:
//	                  what the lab has cut and degraded now, from the fault marks of the current
//	                  run's history (LinksNow); "from" null is every sender; both lists [] when none

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
	links := &uiLinks{tail: historyTail{path: filepath.Join(l.cfg.Dir, HistoryFile)}}
	mux.HandleFunc("/lab/links", links.serve)
	ok := func(path string) bool {
		switch path {
		case "/lab/info", "/lab/status", "/lab/events", "/lab/links", "/ui":
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
	since := time.Now().Add(-markBacklog)
	tail := historyTail{path: filepath.Join(l.cfg.Dir, HistoryFile)}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		tail.read(func(line []byte) bool {
			b := uiMark(line, since)
			return b == nil || send(b)
		})
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// historyTail reads the lines appended to a history file since its last
// read (other processes append to it). A file that shrank or is another
// file (a new run's) was replaced: it is read from its start, and read
// reports it.
type historyTail struct {
	path    string
	file    os.FileInfo // the file read last, to tell it was replaced
	off     int64
	partial []byte
}

// read calls each for every complete line appended since the last read,
// until each returns false. It reports whether the file was replaced (read
// again from its start); a missing file is no error: nothing was appended.
func (t *historyTail) read(each func(line []byte) bool) (reset bool) {
	f, err := os.Open(t.path)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil {
		if fi.Size() < t.off || t.file != nil && !os.SameFile(fi, t.file) {
			t.off, t.partial, reset = 0, nil, true
		}
		t.file = fi
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return reset
	}
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		chunk, err := br.ReadBytes('\n')
		t.off += int64(len(chunk))
		if err != nil {
			// An unfinished last line: keep it for the next read.
			t.partial = append(t.partial, chunk...)
			return reset
		}
		line := append(t.partial, chunk...)
		t.partial = nil
		if !each(line) {
			return reset
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

// ---------------------------------------------------------------- links

// uiLinks serves /lab/links from the fault marks of the current run's
// history, read incrementally: each request reads only what was appended
// since the last one.
type uiLinks struct {
	mu    sync.Mutex
	tail  historyTail
	marks []schema.Mark // the marks LinksNow reads, in file order
}

func (u *uiLinks) serve(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	var fresh []schema.Mark
	replaced := u.tail.read(func(line []byte) bool {
		if m, ok := linkMark(line); ok {
			fresh = append(fresh, m)
		}
		return true
	})
	if replaced {
		u.marks = nil // what was read before is another run's
	}
	u.marks = append(u.marks, fresh...)
	cuts, degraded := LinksNow(u.marks)
	u.mu.Unlock()
	if cuts == nil {
		cuts = []LinkCut{}
	}
	if degraded == nil {
		degraded = []LinkDegradation{}
	}
	writeUIJSON(w, Links{Time: time.Now().UTC(), Cuts: cuts, Degraded: degraded})
}

// linkMark returns the mark of a history line when it is one LinksNow
// reads.
func linkMark(line []byte) (schema.Mark, bool) {
	if !strings.Contains(string(line), `"kind"`) {
		return schema.Mark{}, false // an event
	}
	var m schema.Mark
	if json.Unmarshal(line, &m) != nil {
		return m, false
	}
	switch m.Kind {
	case schema.KindPartition, schema.KindOneway, schema.KindLoss, schema.KindDelay, schema.KindHeal, schema.KindEnd:
		return m, true
	}
	return m, false
}

// LinkCut is a link the lab has cut: every packet from From to To is
// dropped, since Since, by a partition (Kind "partition", both directions
// of every pair across sides) or a one-way cut (Kind "oneway").
type LinkCut struct {
	From  int       `json:"from"`
	To    int       `json:"to"`
	Kind  string    `json:"kind"`
	Since time.Time `json:"since"`
}

// LinkDegradation is loss or delay in place: Kind "loss" (Spec "20%") or
// "delay" (Spec "50ms" or "50ms±10ms") on the packets of the senders From,
// or of every node when From is null.
type LinkDegradation struct {
	Kind  string    `json:"kind"`
	Spec  string    `json:"spec"`
	From  []int     `json:"from"`
	Since time.Time `json:"since"`
}

// Links is the network as the lab's fault marks leave it (GET /lab/links).
type Links struct {
	Time     time.Time         `json:"time"`
	Cuts     []LinkCut         `json:"cuts"`
	Degraded []LinkDegradation `json:"degraded"`
}

// LinksNow derives what is cut and degraded after marks (a history's, in
// any order), as the lab's fault commands change it (faults.go): a
// partition replaces the previous partition and leaves the one-way cuts;
// one-way cuts add up; loss and delay are one degradation, replaced as a
// whole by the next (whose marks share its time); heal "partitions" removes
// partitions and one-way cuts, any other heal everything, as does the end
// of a run (the lab is torn down). A pair cut both ways is listed once per
// kind. Marks whose spec does not parse are skipped. Other marks (kills,
// check points) change nothing. The timeline (package timeline) draws the
// same marks as windows; this is their state at the last mark, pair by
// pair.
func LinksNow(marks []schema.Mark) (cuts []LinkCut, degraded []LinkDegradation) {
	ms := slices.Clone(marks)
	slices.SortStableFunc(ms, func(a, b schema.Mark) int { return a.Time.Compare(b.Time) })
	type pair struct {
		from, to int
		kind     string
	}
	cut := map[pair]time.Time{}
	drop := func(kind string) {
		for p := range cut {
			if kind == "" || p.kind == kind {
				delete(cut, p)
			}
		}
	}
	for _, m := range ms {
		switch m.Kind {
		case schema.KindPartition:
			sides, ok := partitionSides(m.Spec)
			if !ok {
				continue
			}
			drop(schema.KindPartition)
			for k, side := range sides {
				for o, other := range sides {
					if o == k {
						continue
					}
					for _, a := range side {
						for _, b := range other {
							cut[pair{a, b, schema.KindPartition}] = m.Time
						}
					}
				}
			}
		case schema.KindOneway:
			pairs, ok := onewayPairs(m.Spec)
			if !ok {
				continue
			}
			for _, c := range pairs {
				p := pair{c[0], c[1], schema.KindOneway}
				if _, had := cut[p]; !had {
					cut[p] = m.Time
				}
			}
		case schema.KindLoss, schema.KindDelay:
			spec, from, ok := degradationSpec(m.Spec)
			if !ok {
				continue
			}
			// One Degrade marks its loss and its delay at one time; a
			// mark at another time is a new Degrade, which replaces both.
			degraded = slices.DeleteFunc(degraded, func(d LinkDegradation) bool { return !d.Since.Equal(m.Time) || d.Kind == m.Kind })
			degraded = append(degraded, LinkDegradation{Kind: m.Kind, Spec: spec, From: from, Since: m.Time})
		case schema.KindHeal:
			drop("")
			if strings.TrimSpace(m.Spec) != "partitions" {
				degraded = nil
			}
		case schema.KindEnd:
			drop("")
			degraded = nil
		}
	}
	for p, since := range cut {
		cuts = append(cuts, LinkCut{From: p.from, To: p.to, Kind: p.kind, Since: since})
	}
	slices.SortFunc(cuts, func(a, b LinkCut) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), strings.Compare(a.Kind, b.Kind))
	})
	return cuts, degraded
}

// partitionSides reads a partition's spec, "1,2|3,4,5", into its sides (at
// least two, a node on one side at most).
func partitionSides(spec string) ([][]int, bool) {
	parts := strings.Split(spec, "|")
	if len(parts) < 2 {
		return nil, false
	}
	seen := map[int]bool{}
	sides := make([][]int, len(parts))
	for k, p := range parts {
		ids, err := schema.ParseIDs(p)
		if err != nil {
			return nil, false
		}
		for _, id := range ids {
			if seen[int(id)] {
				return nil, false
			}
			seen[int(id)] = true
			sides[k] = append(sides[k], int(id))
		}
	}
	return sides, true
}

// onewayPairs reads a one-way cut's spec, "1->3" or "1->5,2->5".
func onewayPairs(spec string) ([][2]int, bool) {
	var out [][2]int
	for _, p := range strings.Split(spec, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(p), "->")
		if !ok {
			return nil, false
		}
		from, err1 := strconv.Atoi(strings.TrimSpace(a))
		to, err2 := strconv.Atoi(strings.TrimSpace(b))
		if err1 != nil || err2 != nil || from < 1 || to < 1 || from == to {
			return nil, false
		}
		out = append(out, [2]int{from, to})
	}
	return out, len(out) > 0
}

// degradationSpec splits a loss or delay spec, "20%" or "50ms±10ms from
// 1,2", into the amount and the senders (nil for every node).
func degradationSpec(spec string) (string, []int, bool) {
	amount, nodes, some := strings.Cut(strings.TrimSpace(spec), " from ")
	amount = strings.TrimSpace(amount)
	if amount == "" {
		return "", nil, false
	}
	if !some {
		return amount, nil, true
	}
	ids, err := schema.ParseIDs(nodes)
	if err != nil {
		return "", nil, false
	}
	from := make([]int, len(ids))
	for i, id := range ids {
		from[i] = int(id)
	}
	return amount, from, true
}
