//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// nodeFeed follows one node's view output: it reads what was appended to
// the file since the last poll and keeps the node's current view and when
// that view began, by the node's own times.
type nodeFeed struct {
	path    string
	off     int64
	partial []byte
	p       viewParser

	cur   pview
	since time.Time // At of the line that brought cur (the first one, if repeated)
	seen  bool
	// changes after mark: the earliest, for the first reaction to a fault.
	mark       time.Time
	firstAfter time.Time
}

// poll reads the lines appended since the last call. A file that shrank
// (rewritten) is read again from its start.
func (f *nodeFeed) poll() error {
	fh, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return err
	}
	if st.Size() < f.off {
		f.off, f.partial = 0, nil
	}
	if st.Size() == f.off {
		return nil
	}
	if _, err := fh.Seek(f.off, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(fh, st.Size()-f.off))
	if err != nil {
		return err
	}
	f.off += int64(len(data))
	data = append(f.partial, data...)
	for {
		k := bytes.IndexByte(data, '\n')
		if k < 0 {
			break
		}
		f.line(string(data[:k]))
		data = data[k+1:]
	}
	f.partial = slices.Clone(data)
	return nil
}

func (f *nodeFeed) line(s string) {
	v, ok := f.p.parse(strings.TrimRight(s, "\r"))
	if !ok {
		return
	}
	if !f.seen || !f.cur.same(v) {
		f.since = v.At
		if !f.mark.IsZero() && !v.At.Before(f.mark) && (f.firstAfter.IsZero() || v.At.Before(f.firstAfter)) {
			f.firstAfter = v.At
		}
	}
	f.cur, f.seen = v, true
}

// peerTracker follows the views of nodes 1..N of one peer through one of
// its view sources.
type peerTracker struct {
	spec  *peerSpec
	src   string
	nodes map[int]*nodeFeed
}

func newPeerTracker(spec *peerSpec, src peerSource, e *peerEnv) *peerTracker {
	t := &peerTracker{spec: spec, src: src.name, nodes: map[int]*nodeFeed{}}
	for i := 1; i <= e.n; i++ {
		t.nodes[i] = &nodeFeed{path: e.file(spec.name, i, src.file), p: src.parser()}
	}
	return t
}

func (t *peerTracker) poll() error {
	for _, f := range t.nodes {
		if err := f.poll(); err != nil {
			return err
		}
	}
	return nil
}

// setMark makes firstAt report the earliest view change at or after at.
func (t *peerTracker) setMark(at time.Time) {
	for _, f := range t.nodes {
		f.mark, f.firstAfter = at, time.Time{}
	}
}

// firstAt is the earliest change after the mark among set, and whose it
// was (zero if none).
func (t *peerTracker) firstAt(set []int) (first time.Time, who int) {
	for _, i := range set {
		if f := t.nodes[i]; f != nil && !f.firstAfter.IsZero() && (first.IsZero() || f.firstAfter.Before(first)) {
			first, who = f.firstAfter, i
		}
	}
	return first, who
}

// doneAt is when the last of set reached its current view.
func (t *peerTracker) doneAt(set []int) time.Time {
	var d time.Time
	for _, i := range set {
		if f := t.nodes[i]; f != nil && f.seen && f.since.After(d) {
			d = f.since
		}
	}
	return d
}

// agreed reports whether the nodes of set agree on one view of exactly
// set (see agreeOn), and its leader. With fresh non-zero, every node's
// view must have begun at or after it (a cold start: views left in the
// files by earlier processes do not count).
func (t *peerTracker) agreed(set []int, fresh time.Time) (pview, bool) {
	views := map[int]pview{}
	for _, i := range set {
		f := t.nodes[i]
		if f == nil || !f.seen || (!fresh.IsZero() && f.since.Before(fresh)) {
			return pview{}, false
		}
		views[i] = f.cur
	}
	return agreeOn(t.spec, views, set)
}

// agreeOn is the condition every measure waits for, per peer:
//
//   - a membership (corosync, serf, JGroups): every node of set has
//     exactly set as its members; where the peer has them, the same view
//     id and the same leader, a member of set (groupd's is invariant L1
//     or L2 on its recorded history: peerTrials);
//   - VRRP (keepalived): the highest node of set (the highest priority,
//     100 + I, which preemption makes MASTER in the end) is MASTER, the
//     others BACKUP. "Exactly one MASTER" alone also holds for a moment
//     when a lower node wins the first election and a higher one
//     preempts it later.
//
// It returns the agreed view (the first node's, with Leader set).
func agreeOn(spec *peerSpec, views map[int]pview, set []int) (pview, bool) {
	if len(set) == 0 {
		return pview{}, false
	}
	if spec.vrrp {
		master := 0
		for _, i := range set {
			switch views[i].State {
			case "MASTER":
				if master != 0 {
					return pview{}, false
				}
				master = i
			case "BACKUP":
			default:
				return pview{}, false
			}
		}
		if master == 0 || master != slices.Max(set) {
			return pview{}, false
		}
		return pview{State: "MASTER", Leader: master}, true
	}
	want := sortedInts(set)
	first := views[set[0]]
	for _, i := range set {
		v := views[i]
		if !slices.Equal(v.Members, want) {
			return pview{}, false
		}
		if spec.hasID && v.ID != first.ID {
			return pview{}, false
		}
		if spec.hasLeader && (v.Leader != first.Leader || !slices.Contains(want, v.Leader)) {
			return pview{}, false
		}
	}
	return first, true
}

// describe lists the nodes' current views, for error messages.
func (t *peerTracker) describe() string {
	ids := make([]int, 0, len(t.nodes))
	for i := range t.nodes {
		ids = append(ids, i)
	}
	sort.Ints(ids)
	var b strings.Builder
	for _, i := range ids {
		f := t.nodes[i]
		if !f.seen {
			fmt.Fprintf(&b, "[%d: no view] ", i)
			continue
		}
		fmt.Fprintf(&b, "[%d: %s since %s] ", i, f.cur, f.since.Format("15:04:05.000"))
	}
	return strings.TrimSpace(b.String())
}

// pollEvery is how often the trackers read the files. The figures come
// from the times in the files, so it only bounds how late a wait returns.
const pollEvery = 25 * time.Millisecond

// waitAgreed polls until set agrees (see agreed) or the deadline passes.
func (t *peerTracker) waitAgreed(set []int, fresh, deadline time.Time) (pview, error) {
	for {
		if err := t.poll(); err != nil {
			return pview{}, err
		}
		if v, ok := t.agreed(set, fresh); ok {
			return v, nil
		}
		if time.Now().After(deadline) {
			return pview{}, fmt.Errorf("%s: nodes %s did not agree (source %s); views: %s",
				t.spec.name, joinInts(set), t.src, t.describe())
		}
		time.Sleep(pollEvery)
	}
}
