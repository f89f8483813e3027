package lab

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
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
//	GET /lab/runs     [{"id":"current"|"20261121T100004Z","name":"current run"|"2026-11-21 10:00:04 UTC",
//	                  "current":bool,"started":T|null,"ended":T|null,"nodes":N,"bytes":B}...]: the
//	                  current run, then the archived ones of RUN/runs/ (ArchiveRun), newest first
//	GET /lab/history.ndjson           the current run's history so far (its complete lines)
//	GET /lab/runs/ID/history.ndjson   a listed run's history ("current" too); other IDs are 404

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
	runs := &uiRuns{l: l, cache: map[string]RunInfo{}}
	mux.HandleFunc("/lab/runs", runs.serveList)
	mux.HandleFunc("/lab/history.ndjson", func(w http.ResponseWriter, r *http.Request) { runs.serveHistory(w, r, CurrentRun) })
	mux.HandleFunc("/lab/runs/{id}/history.ndjson", func(w http.ResponseWriter, r *http.Request) { runs.serveHistory(w, r, r.PathValue("id")) })
	ok := func(path string) bool {
		switch path {
		case "/lab/info", "/lab/status", "/lab/events", "/lab/runs", "/lab/history.ndjson", "/ui":
			return true
		}
		if strings.HasPrefix(path, "/lab/runs/") && strings.HasSuffix(path, "/"+HistoryFile) {
			return true // the handler serves listed IDs only
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
// reports it, as it does when the file is gone.
type historyTail struct {
	path    string
	file    os.FileInfo // the file read last, to tell it was replaced
	off     int64
	partial []byte
}

// read calls each for every complete line appended since the last read,
// until each returns false. It reports whether the file was replaced (read
// again from its start) or removed; a missing file is no error: nothing
// was appended.
func (t *historyTail) read(each func(line []byte) bool) (reset bool) {
	f, err := os.Open(t.path)
	if err != nil {
		if t.file != nil && errors.Is(err, fs.ErrNotExist) {
			// Moved away (ArchiveRun): the next file is another.
			t.file, t.off, t.partial = nil, 0, nil
			return true
		}
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

// ---------------------------------------------------------------- runs

// Past runs: when `lab.sh up` starts a new run (no lab is up in the run
// dir), ArchiveRun moves the previous run's history.ndjson to
// RUN/runs/ID/history.ndjson, ID being the UTC time of its first line
// (20261121T100004Z); the MaxPastRuns newest are kept. The node dirs (data,
// logs) are not moved: a new run starts from the nodes' data as before.
const (
	PastRunsDir = "runs"
	MaxPastRuns = 10
	// CurrentRun is the ID of the run dir's own history in /lab/runs.
	CurrentRun = "current"
)

// pastRunID is the form of an archived run's ID (a directory name under
// RUN/runs): nothing else there is listed or served.
var pastRunID = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z(-[0-9]+)?$`)

// ArchiveRun starts a new run in run dir dir when no lab is up there (no
// lab.json: lab.sh down removed it): it moves the history.ndjson, if there
// is one that is not empty, to dir/runs/ID/ and removes the oldest archived
// runs beyond MaxPastRuns. It returns the archived run's ID ("" when there
// was nothing to keep, or a lab is up: the run goes on).
func ArchiveRun(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, stateFile)); !errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	src := filepath.Join(dir, HistoryFile)
	fi, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Size() == 0 {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	started := fi.ModTime()
	if first, _ := historyEnds(src); first != nil {
		started = *first
	}
	runs := filepath.Join(dir, PastRunsDir)
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	base := started.UTC().Format("20060102T150405Z")
	id := base
	for k := 2; ; k++ {
		err := os.Mkdir(filepath.Join(runs, id), 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("lab: %w", err)
		}
		id = base + "-" + strconv.Itoa(k)
	}
	if err := os.Rename(src, filepath.Join(runs, id, HistoryFile)); err != nil {
		return "", fmt.Errorf("lab: keeping the previous run's history: %w", err)
	}
	ids := pastRuns(dir)
	for _, old := range ids[min(len(ids), MaxPastRuns):] {
		if err := os.RemoveAll(filepath.Join(runs, old)); err != nil {
			return id, fmt.Errorf("lab: %w", err)
		}
	}
	return id, nil
}

// pastRuns returns the IDs of the archived runs of run dir dir, newest
// first.
func pastRuns(dir string) []string {
	ents, _ := os.ReadDir(filepath.Join(dir, PastRunsDir))
	var ids []string
	for _, e := range ents {
		if e.IsDir() && pastRunID.MatchString(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		// 20261121T100004Z-2 is newer than 20261121T100004Z.
		ta, na, _ := strings.Cut(a, "-")
		tb, nb, _ := strings.Cut(b, "-")
		x, _ := strconv.Atoi(na)
		y, _ := strconv.Atoi(nb)
		return cmp.Or(strings.Compare(tb, ta), cmp.Compare(y, x))
	})
	return ids
}

// RunInfo is one run of /lab/runs.
type RunInfo struct {
	// ID names the run in /lab/runs/ID/history.ndjson: CurrentRun, or
	// the UTC time of its first line (20261121T100004Z, -2 on a clash).
	ID string `json:"id"`
	// Name is for people: "current run" or the start time.
	Name    string `json:"name"`
	Current bool   `json:"current"`
	// Started and Ended are the times of its first and last lines (null
	// when it has none); the current run's Ended is its last line so far.
	Started *time.Time `json:"started"`
	Ended   *time.Time `json:"ended"`
	// Nodes is the lab's node count for the current run, else the highest
	// node number in the history (its events and its marks).
	Nodes int   `json:"nodes"`
	Bytes int64 `json:"bytes"`
}

// scanRun reads a whole history for its RunInfo's times and nodes.
func scanRun(path string) (RunInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return RunInfo{}, err
	}
	defer f.Close()
	var info RunInfo
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var line struct {
			Time time.Time `json:"time"`
			Node int       `json:"node"`
			Kind string    `json:"kind"`
			Spec string    `json:"spec"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Time.IsZero() {
			continue
		}
		t := line.Time
		if info.Started == nil {
			info.Started = &t
		}
		info.Ended = &t
		info.Nodes = max(info.Nodes, line.Node)
		// A run's start mark names its nodes; a node's events name it.
		if ids, err := (schema.Mark{Kind: line.Kind, Spec: line.Spec}).Nodes(); err == nil {
			for _, id := range ids {
				info.Nodes = max(info.Nodes, int(id))
			}
		}
	}
	return info, sc.Err()
}

// uiRuns serves /lab/runs and the runs' histories. The archived runs'
// infos are kept: those files no longer change.
type uiRuns struct {
	l     *Lab
	mu    sync.Mutex
	cache map[string]RunInfo // by ID, of archived runs
}

// list returns the current run and the archived ones, newest first.
func (u *uiRuns) list() []RunInfo {
	dir := u.l.cfg.Dir
	cur := RunInfo{ID: CurrentRun, Name: "current run", Current: true, Nodes: u.l.cfg.Nodes}
	if fi, err := os.Stat(filepath.Join(dir, HistoryFile)); err == nil {
		cur.Bytes = fi.Size()
		cur.Started, cur.Ended = historyEnds(filepath.Join(dir, HistoryFile))
	}
	out := []RunInfo{cur}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, id := range pastRuns(dir) {
		path := filepath.Join(dir, PastRunsDir, id, HistoryFile)
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		info, ok := u.cache[id]
		if !ok || info.Bytes != fi.Size() {
			info, _ = scanRun(path)
			info.ID, info.Bytes = id, fi.Size()
			info.Name = id
			if info.Started != nil {
				info.Name = info.Started.UTC().Format("2006-01-02 15:04:05 UTC")
			}
			u.cache[id] = info
		}
		out = append(out, info)
	}
	return out
}

// historyEnds returns the times of a history's first and last complete
// lines, reading only its ends (the current run's history grows large).
func historyEnds(path string) (first, last *time.Time) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	lineTime := func(b []byte) *time.Time {
		var line struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal(b, &line) != nil || line.Time.IsZero() {
			return nil
		}
		return &line.Time
	}
	br := bufio.NewReaderSize(f, 64<<10)
	if b, err := br.ReadBytes('\n'); err == nil {
		first = lineTime(b)
	}
	end := completeSize(f)
	const tail = 64 << 10
	buf := make([]byte, min(end, tail))
	if _, err := f.ReadAt(buf, end-int64(len(buf))); err != nil {
		return first, nil
	}
	buf = bytes.TrimRight(buf, "\n")
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 || int64(len(buf)) < tail {
		last = lineTime(buf[i+1:])
	}
	return first, last
}

// completeSize is the size of f up to the end of its last complete line
// (a writer may be halfway through the next).
func completeSize(f *os.File) int64 {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	size := fi.Size()
	buf := make([]byte, 4096)
	for end := size; end > 0; {
		n := min(end, int64(len(buf)))
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1
		}
		end -= n
	}
	return 0
}

func (u *uiRuns) serveList(w http.ResponseWriter, r *http.Request) {
	writeUIJSON(w, u.list())
}

// serveHistory serves a run's history.ndjson: the ID must be one of the
// listing (never a path joined from the request), and the current run's
// is served up to its last complete line.
func (u *uiRuns) serveHistory(w http.ResponseWriter, r *http.Request, id string) {
	var path string
	if id == CurrentRun {
		path = filepath.Join(u.l.cfg.Dir, HistoryFile)
	} else {
		for _, known := range pastRuns(u.l.cfg.Dir) {
			if known == id {
				path = filepath.Join(u.l.cfg.Dir, PastRunsDir, known, HistoryFile)
			}
		}
	}
	if path == "" {
		http.Error(w, "no such run (see /lab/runs)", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && id == CurrentRun {
		return // nothing recorded yet: an empty history
	}
	if err != nil {
		http.Error(w, "no history for this run", http.StatusNotFound)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.Error(w, "no history for this run", http.StatusNotFound)
		return
	}
	http.ServeContent(w, r, "", fi.ModTime(), io.NewSectionReader(f, 0, completeSize(f)))
}
