//go:build linux

package main

// Parsers of the view output of groupd's peers (corosync, serf, JGroups,
// keepalived), as peers_procs.go records it. Each parser
// reads one node's output, line by line, and says after each line what the
// node's view is, with the time the node itself gave it:
//
//	corosync    its log file, `timestamp: hires` (milliseconds, local time)
//	serf        its agent log, each line stamped on arrival (peerEnv.launch);
//	            and the event handler's log (scripts/bench/peers/serf-event.sh)
//	jgroups     PeersViewPrinter's stdout (scripts/bench/peers/PeersViewPrinter.java)
//	keepalived  its console log, each line stamped on arrival
//
// The command-line tools' outputs (corosync-quorumtool -s, serf members)
// are parsed too: they cross-check the final views of a trial.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/wire"
)

// pview is one node's view of the group: its members, its leader (0 where
// the peer has none) and the view's id where the peer numbers its views.
// keepalived has no membership; State is its VRRP state (MASTER, BACKUP,
// FAULT). groupd's State is its protocol state (normal, election,
// reorganization).
type pview struct {
	At      time.Time
	Members []int // sorted; nil for keepalived
	Leader  int
	ID      string
	State   string
}

// same reports whether two views are the same view (At aside).
func (v pview) same(o pview) bool {
	return v.Leader == o.Leader && v.ID == o.ID && v.State == o.State && slices.Equal(v.Members, o.Members)
}

func (v pview) String() string {
	var b strings.Builder
	if v.State != "" {
		b.WriteString(v.State)
	}
	if v.ID != "" {
		fmt.Fprintf(&b, " %s", v.ID)
	}
	if v.Leader != 0 {
		fmt.Fprintf(&b, " leader=%d", v.Leader)
	}
	if v.Members != nil {
		fmt.Fprintf(&b, " members=%s", joinInts(v.Members))
	}
	return strings.TrimSpace(b.String())
}

// viewParser reads one node's output a line at a time. ok reports that
// the line gave the node a view (a changed one or the same again).
type viewParser interface {
	parse(line string) (v pview, ok bool)
}

// ---- shared helpers --------------------------------------------------------

// parseEpoch reads "1795431443.257155" (seconds, any number of decimals)
// exactly, without going through a float.
func parseEpoch(s string) (time.Time, error) {
	whole, frac, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad time %q", s)
	}
	var ns int64
	if frac != "" {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		frac += strings.Repeat("0", 9-len(frac))
		if ns, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return time.Time{}, fmt.Errorf("bad time %q", s)
		}
	}
	return time.Unix(sec, ns), nil
}

// nodeNum turns a member name as the harness gives them ("n3") into the
// lab's node number (3). Names of another shape give 0.
func nodeNum(name string) int {
	if len(name) < 2 || name[0] != 'n' {
		return 0
	}
	i, err := strconv.Atoi(name[1:])
	if err != nil || i <= 0 {
		return 0
	}
	return i
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// idsOf turns node IDs into node numbers.
func idsOf(ids []wire.NodeID) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

func sortedInts(xs []int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

// ---- corosync --------------------------------------------------------------

// corosyncLogParser follows a corosync log written with `timestamp: hires`:
//
//	Nov 23 11:00:53.757 [25487] vm corosync notice  [TOTEM ] A new membership (2.d) was formed. Members left: 1
//	Nov 23 11:00:53.761 [25487] vm corosync notice  [QUORUM] Members[2]: 2 3
//	Nov 23 11:00:53.761 [25487] vm corosync notice  [MAIN  ] Completed service synchronization, ready to provide service.
//
// A view is installed by the "Completed service synchronization" line: the
// ring that was formed last (its id is REP.SEQ in hex; REP, the ring's
// representative, the lowest node id of the membership, is the leader)
// with the members of the last complete "[QUORUM] Members[k]:" list (long
// lists go on over several lines that end in a backslash).
type corosyncLogParser struct {
	now     func() time.Time // to give the log's times their year
	ring    string
	rep     int
	members []int // the last complete Members list since the ring
	acc     []int // a Members list being read
	accWant int
}

func newCorosyncLogParser(now func() time.Time) *corosyncLogParser {
	return &corosyncLogParser{now: now}
}

// corosyncTime parses "Nov 23 11:00:53.757" (local time, no year).
func corosyncTime(f []string, now time.Time) (time.Time, error) {
	if len(f) < 3 {
		return time.Time{}, errors.New("short line")
	}
	t, err := time.ParseInLocation("Jan 2 15:04:05.000", f[0]+" "+f[1]+" "+f[2], time.Local)
	if err != nil {
		return time.Time{}, err
	}
	// The year is the one that puts the time closest to now, before it
	// (allowing a day ahead for clock skew).
	t = t.AddDate(now.Year()-t.Year(), 0, 0)
	if t.After(now.Add(24 * time.Hour)) {
		t = t.AddDate(-1, 0, 0)
	}
	return t, nil
}

func (p *corosyncLogParser) parse(line string) (pview, bool) {
	f := strings.Fields(line)
	if len(f) < 6 {
		return pview{}, false
	}
	at, err := corosyncTime(f, p.now())
	if err != nil {
		return pview{}, false
	}
	switch {
	case strings.Contains(line, "Corosync Cluster Engine") && strings.Contains(line, "starting up"):
		*p = corosyncLogParser{now: p.now}
	case strings.Contains(line, "] A new membership ("):
		k := strings.Index(line, "] A new membership (")
		rest := line[k+len("] A new membership ("):]
		id, _, ok := strings.Cut(rest, ")")
		if !ok {
			return pview{}, false
		}
		repHex, _, _ := strings.Cut(id, ".")
		rep, err := strconv.ParseUint(repHex, 16, 32)
		if err != nil {
			return pview{}, false
		}
		p.ring, p.rep, p.members, p.acc, p.accWant = id, int(rep), nil, nil, 0
	case strings.Contains(line, "[QUORUM] Members["):
		k := strings.Index(line, "[QUORUM] Members[")
		rest := line[k+len("[QUORUM] Members["):]
		cnt, list, ok := strings.Cut(rest, "]:")
		if !ok {
			return pview{}, false
		}
		want, err := strconv.Atoi(cnt)
		if err != nil {
			return pview{}, false
		}
		if p.accWant != want {
			p.acc, p.accWant = nil, want
		}
		for _, s := range strings.Fields(strings.TrimSuffix(strings.TrimSpace(list), `\`)) {
			id, err := strconv.Atoi(s)
			if err != nil {
				p.acc, p.accWant = nil, 0
				return pview{}, false
			}
			p.acc = append(p.acc, id)
		}
		if len(p.acc) >= want {
			p.members, p.acc, p.accWant = sortedInts(p.acc), nil, 0
		}
	case strings.Contains(line, "Completed service synchronization"):
		if p.ring == "" || p.members == nil {
			return pview{}, false
		}
		return pview{At: at, Members: p.members, Leader: p.rep, ID: p.ring}, true
	}
	return pview{}, false
}

// quorumtoolStatus is what `corosync-quorumtool -s` says about the
// membership.
type quorumtoolStatus struct {
	Ring    string
	Rep     int
	Members []int
	Quorate bool
}

// parseQuorumtool reads the output of `corosync-quorumtool -s`.
func parseQuorumtool(r io.Reader) (quorumtoolStatus, error) {
	var q quorumtoolStatus
	sc := bufio.NewScanner(r)
	inMembers := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "Ring ID:"):
			q.Ring = strings.TrimSpace(strings.TrimPrefix(line, "Ring ID:"))
			repHex, _, _ := strings.Cut(q.Ring, ".")
			rep, err := strconv.ParseUint(repHex, 16, 32)
			if err != nil {
				return q, fmt.Errorf("ring id %q", q.Ring)
			}
			q.Rep = int(rep)
		case strings.HasPrefix(line, "Quorate:"):
			q.Quorate = strings.TrimSpace(strings.TrimPrefix(line, "Quorate:")) == "Yes"
		case strings.HasPrefix(line, "Nodeid") && strings.Contains(line, "Votes"):
			inMembers = true
		case inMembers && line != "" && !strings.HasPrefix(line, "---"):
			f := strings.Fields(line)
			id, err := strconv.Atoi(f[0])
			if err != nil {
				// A qdevice line (0x...) or the end of the table.
				continue
			}
			q.Members = append(q.Members, id)
		}
	}
	if err := sc.Err(); err != nil {
		return q, err
	}
	if q.Ring == "" {
		return q, errors.New("no Ring ID in corosync-quorumtool's output")
	}
	q.Members = sortedInts(q.Members)
	return q, nil
}

// ---- serf ------------------------------------------------------------------

// serfTable is a node's member table, rebuilt from serf's member events.
type serfTable map[int]string

func (t serfTable) apply(event string, names []string) bool {
	changed := false
	for _, name := range names {
		i := nodeNum(name)
		if i == 0 {
			continue
		}
		var st string
		switch event {
		case "join", "member-join", "update", "member-update":
			st = "alive"
		case "failed", "member-failed":
			st = "failed"
		case "leave", "member-leave":
			st = "left"
		case "reap", "member-reap":
			if _, ok := t[i]; ok {
				delete(t, i)
				changed = true
			}
			continue
		default:
			continue
		}
		if t[i] != st {
			t[i] = st
			changed = true
		}
	}
	return changed
}

func (t serfTable) alive() []int {
	out := []int{}
	for i, st := range t {
		if st == "alive" {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// serfLogParser follows a serf agent's log, each line stamped with the
// time it was read ("EPOCHREALTIME LINE"):
//
//	1795431573.509079     2026/11/23 10:59:32 [INFO] serf: EventMemberJoin: n2 10.91.0.2
//	1795431580.100200     2026/11/23 10:59:39 [INFO] serf: EventMemberFailed: n3 10.91.0.3
//
// These lines are written when serf changes its member table, before the
// agent hands the (coalesced) events to its handlers. The view is the set
// of alive members; serf has no leader. "agent: Serf agent starting"
// starts a new table.
type serfLogParser struct{ t serfTable }

var serfLogEvents = map[string]string{
	"EventMemberJoin":   "join",
	"EventMemberFailed": "failed",
	"EventMemberLeave":  "leave",
	"EventMemberUpdate": "update",
	"EventMemberReap":   "reap",
}

// cutEpoch splits a log line the scripts stamped "EPOCH rest" (see
// parseEpoch).
func cutEpoch(line string) (time.Time, string, bool) {
	stamp, rest, ok := strings.Cut(line, " ")
	if !ok {
		return time.Time{}, "", false
	}
	at, err := parseEpoch(stamp)
	return at, rest, err == nil
}

func (p *serfLogParser) parse(line string) (pview, bool) {
	at, rest, ok := cutEpoch(line)
	if !ok {
		return pview{}, false
	}
	if p.t == nil || strings.Contains(rest, "agent: Serf agent starting") {
		p.t = serfTable{}
	}
	k := strings.Index(rest, "serf: EventMember")
	if k < 0 {
		return pview{}, false
	}
	// "EventMemberFailed: n3 10.91.0.3", "EventMemberLeave (forced): n3 ...".
	f := strings.Fields(rest[k+len("serf: "):])
	if len(f) >= 2 && f[1] == "(forced):" {
		f = append([]string{f[0] + ":"}, f[2:]...)
	}
	if len(f) < 2 || !strings.HasSuffix(f[0], ":") {
		return pview{}, false
	}
	ev, ok := serfLogEvents[strings.TrimSuffix(f[0], ":")]
	if !ok {
		return pview{}, false
	}
	p.t.apply(ev, f[1:2])
	return pview{At: at, Members: p.t.alive()}, true
}

// serfHandlerParser follows the log of scripts/bench/peers/serf-event.sh:
//
//	1795431573.509079 member-join n1,n2,n3
//	1795431580.100200 member-failed n3
//	1795431590.000000 agent-start -
//
// ("agent-start" is written by the harness before it starts the agent.) The
// agent delivers member events to its handlers coalesced: after one second
// without a new event, or after three seconds at most.
type serfHandlerParser struct{ t serfTable }

func (p *serfHandlerParser) parse(line string) (pview, bool) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return pview{}, false
	}
	at, err := parseEpoch(f[0])
	if err != nil {
		return pview{}, false
	}
	if p.t == nil || f[1] == "agent-start" {
		p.t = serfTable{}
		if f[1] == "agent-start" {
			return pview{}, false
		}
	}
	if !strings.HasPrefix(f[1], "member-") {
		return pview{}, false
	}
	p.t.apply(f[1], strings.Split(f[2], ","))
	return pview{At: at, Members: p.t.alive()}, true
}

// parseSerfMembers reads `serf members` (the default text output):
//
//	n1  10.91.0.1:7946  alive
//	n3  10.91.0.3:7946  failed
//
// and returns the alive members.
func parseSerfMembers(r io.Reader) ([]int, error) {
	sc := bufio.NewScanner(r)
	var alive []int
	seen := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		i := nodeNum(f[0])
		if i == 0 {
			continue
		}
		seen = true
		if f[2] == "alive" {
			alive = append(alive, i)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !seen {
		return nil, errors.New("no member in serf members' output")
	}
	return sortedInts(alive), nil
}

// ---- JGroups ---------------------------------------------------------------

// jgroupsParser follows PeersViewPrinter's stdout:
//
//	1795431457.277498 view n2|2 n2 n2,n1
//	1795431496.628928 view n1|6 n1 n1,n2,n3 merge
//
// (time, view id, coordinator, members in view order, "merge" for a
// MergeView). Other lines (JGroups' own banner) are skipped. The leader is
// the view's coordinator, its first member.
type jgroupsParser struct{}

func (jgroupsParser) parse(line string) (pview, bool) {
	f := strings.Fields(line)
	if len(f) < 5 || f[1] != "view" {
		return pview{}, false
	}
	at, err := parseEpoch(f[0])
	if err != nil {
		return pview{}, false
	}
	var members []int
	for _, name := range strings.Split(f[4], ",") {
		i := nodeNum(name)
		if i == 0 {
			return pview{}, false
		}
		members = append(members, i)
	}
	coord := nodeNum(f[3])
	if coord == 0 {
		return pview{}, false
	}
	return pview{At: at, Members: sortedInts(members), Leader: coord, ID: f[2]}, true
}

// ---- keepalived ------------------------------------------------------------

// keepalivedLogParser follows keepalived's console log (-l), each line
// stamped with the time it was read:
//
//	1795433055.101 Mon Nov 23 11:24:15 2026: (VI_1) Entering BACKUP STATE (init)
//	1795433059.978 Mon Nov 23 11:24:19 2026: (VI_1) Entering MASTER STATE
//
// The VRRP process writes these lines as it changes state, in order.
// keepalived has no membership: the node's view is its VRRP state.
// "Starting Keepalived" begins a new process (no state yet), "Stopping"
// ends one.
type keepalivedLogParser struct{}

func (keepalivedLogParser) parse(line string) (pview, bool) {
	at, rest, ok := cutEpoch(line)
	if !ok {
		return pview{}, false
	}
	if k := strings.Index(rest, " Entering "); k >= 0 {
		f := strings.Fields(rest[k:])
		if len(f) >= 3 && f[2] == "STATE" {
			switch f[1] {
			case "MASTER", "BACKUP", "FAULT":
				return pview{At: at, State: f[1]}, true
			}
		}
		return pview{}, false
	}
	if strings.Contains(rest, ": Starting Keepalived") || strings.HasSuffix(rest, ": Stopping") {
		return pview{At: at, State: "STOP"}, true
	}
	return pview{}, false
}
