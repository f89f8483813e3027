//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	netlab "github.com/groupd/groupd/internal/lab"
)

// peerTrials measures one peer on the lab: groupd through the lab trials
// (its recorded history), any other peer through trackers of its nodes'
// view output. The definitions are the same for every peer
// (scripts/bench/README.md, "Peers").
type peerTrials struct {
	spec  *peerSpec
	e     *peerEnv
	procs peerProcs
	ts    []*peerTracker // one per source; nil for groupd
}

// Timeouts of the peers' trials.
const (
	peerColdTimeout = 180 * time.Second
	peerFailTimeout = 90 * time.Second
	peerHealTimeout = 180 * time.Second
	peerHold        = 10 * time.Second
	peerPhase       = time.Second
)

// altWait is how long a trial waits, after its figure, for the peer's
// other view outputs to agree too (serf's handler gets events coalesced
// for up to 3 s).
const altWait = 15 * time.Second

func (m *peerTrials) groupd() bool { return m.spec.sources == nil }

func (m *peerTrials) all() []int { return netlab.Span(1, m.e.n) }

// trackers follow the view files from their start (a fresh read).
func (m *peerTrials) trackers() []*peerTracker {
	m.ts = nil
	for _, src := range m.spec.sources {
		m.ts = append(m.ts, newPeerTracker(m.spec, src, m.e))
	}
	return m.ts
}

// wait waits until the nodes of set agree on one view.
func (m *peerTrials) wait(set []int, timeout time.Duration) (pview, error) {
	if m.groupd() {
		sts, _, err := m.e.l.WaitFor("agree", set, timeout, netlab.Converged(set))
		if err != nil {
			return pview{}, err
		}
		s := sts[set[len(set)-1]]
		return pview{Leader: int(s.Coordinator), ID: s.Group.String(), State: string(s.State), Members: idsOf(s.Members)}, nil
	}
	if m.ts == nil {
		m.trackers()
	}
	return m.ts[0].waitAgreed(set, time.Time{}, time.Now().Add(timeout))
}

// fromLab is a groupd lab trial as a peer's.
func fromLab(kind string, r Result, err error) (PeerResult, error) {
	p := PeerResult{Kind: kind, Peer: "groupd", N: r.N, Trial: r.Trial, Source: "events (the lab's recorded history)", Seconds: r.Seconds,
		FromCmdS: r.FromCmdS, CmdS: r.CmdS, PartCmdS: r.PartCmdS, PhaseS: r.PhaseS, Victim: r.Victim, Leader: r.Coordinator,
		View: "normal " + r.Group + " leader=" + strconv.Itoa(r.Coordinator), FaultTime: r.FaultTime, Load: r.Load}
	if r.DetectS != 0 {
		p.DetectS = &r.DetectS
	}
	if kind == "heal" {
		p.SplitS = &r.SplitS
	}
	return p, err
}

// cold starts all N at once and times it from the call to the agreement
// of all N, counting only views given after the call.
func (m *peerTrials) cold(t int) (PeerResult, error) {
	all := m.all()
	_ = m.procs.stopAll()
	if !m.groupd() {
		for _, src := range m.spec.sources {
			for _, i := range all {
				_ = os.Remove(m.e.file(m.spec.name, i, src.file))
			}
		}
	}
	t0 := time.Now()
	if err := m.procs.startAll(); err != nil {
		return PeerResult{}, err
	}
	if m.groupd() {
		r, err := labConverge(m.e.l, t0, "", peerColdTimeout)
		r.Trial = t
		return fromLab("cold", r, err)
	}
	for deadline := time.Now().Add(10 * time.Second); !m.allAlive(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return PeerResult{}, fmt.Errorf("not every process started or stayed up; see its logs")
		}
	}
	ts := m.trackers()
	v, err := ts[0].waitAgreed(all, t0, t0.Add(peerColdTimeout))
	if err != nil {
		return PeerResult{}, err
	}
	r := m.result("cold", t, v, ts[0].doneAt(all).Sub(t0), t0)
	r.Alt, r.Note = m.altFigures(all, t0, t0)
	m.check(&r, all, v)
	say("peers: %-10s N=%-3d cold  trial %d: %.3fs to one view (%s)%s", m.spec.name, m.e.n, t, r.Seconds, r.View, altSay(r.Alt))
	return r, nil
}

func (m *peerTrials) allAlive() bool {
	for _, i := range m.all() {
		if !m.procs.alive(i) {
			return false
		}
	}
	return true
}

// staggered starts one node every stagger and waits for one view.
func (m *peerTrials) staggered() error {
	_ = m.procs.stopAll()
	for _, i := range m.all() {
		if err := m.procs.start(i); err != nil {
			return err
		}
		time.Sleep(stagger)
	}
	m.ts = nil
	_, err := m.wait(m.all(), peerColdTimeout)
	return err
}

// revive starts the nodes whose processes are gone (after a kill) and
// waits for the agreement of all N.
func (m *peerTrials) revive() error {
	for _, i := range m.all() {
		if !m.procs.alive(i) {
			if err := m.procs.start(i); err != nil {
				return err
			}
		}
	}
	_, err := m.wait(m.all(), peerColdTimeout)
	return err
}

func (m *peerTrials) result(kind string, t int, v pview, d time.Duration, at time.Time) PeerResult {
	return PeerResult{Kind: kind, Peer: m.spec.name, N: m.e.n, Trial: t, Source: m.ts[0].src, Seconds: secs(d),
		Leader: v.Leader, View: v.String(), FaultTime: at, Load: load()}
}

func (m *peerTrials) check(r *PeerResult, set []int, v pview) {
	if m.spec.check != nil {
		r.Check = m.spec.check(m.e, set, v)
	}
}

// failover kills the leader (for a peer without one, node N) after a
// random phase and times until the survivors agree.
func (m *peerTrials) failover(t int) (PeerResult, error) {
	all := m.all()
	v0, err := m.wait(all, peerFailTimeout)
	if err != nil {
		return PeerResult{}, fmt.Errorf("before the kill: %w", err)
	}
	victim := v0.Leader
	if victim == 0 {
		victim = m.e.n
	}
	if m.groupd() {
		r, err := labFailover(m.e.l, victim, "groupd", t, peerPhase, peerFailTimeout)
		p, err := fromLab("failover", r, err)
		p.LeaderBefore = v0.Leader
		return p, err
	}
	survivors := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == victim })
	ph := phaseSleep(peerPhase)
	if err := pollAll(m.ts); err != nil {
		return PeerResult{}, err
	}
	for _, tr := range m.ts {
		tr.setMark(time.Now())
	}
	tKill, err := m.procs.kill(victim)
	if err != nil {
		return PeerResult{}, err
	}
	fresh := tKill
	if m.spec.vrrp {
		fresh = time.Time{} // BACKUPs that stay BACKUP do not change
	}
	v, err := m.ts[0].waitAgreed(survivors, fresh, tKill.Add(peerFailTimeout))
	if err != nil {
		return PeerResult{}, fmt.Errorf("survivors did not agree: %w", err)
	}
	r := m.result("failover", t, v, m.ts[0].doneAt(survivors).Sub(tKill), tKill)
	r.PhaseS, r.Victim, r.LeaderBefore = secs(ph), victim, v0.Leader
	if first, who := m.ts[0].firstAt(survivors); !first.IsZero() {
		d := secs(first.Sub(tKill))
		r.DetectS, r.First = &d, who
	}
	r.Alt, r.Note = m.altFigures(survivors, fresh, tKill)
	m.check(&r, survivors, v)
	say("peers: %-10s N=%-3d failover trial %d: killed %d; %.3fs to %s%s", m.spec.name, m.e.n, t, victim, r.Seconds, r.View, altSay(r.Alt))
	return r, nil
}

// heal partitions the lab into halves (1..N/2 | the rest), waits until
// each side agrees on itself, holds until 10 s after the partition was in
// place (longer if a side took longer), heals and times from the end of
// the heal to the agreement of all N.
func (m *peerTrials) heal(t int) (PeerResult, error) {
	if m.groupd() {
		r, err := labHeal(m.e.l, "groupd", t, peerHold, peerPhase, peerHealTimeout)
		return fromLab("heal", r, err)
	}
	l, n, all := m.e.l, m.e.n, m.all()
	a, b := netlab.Span(1, n/2), netlab.Span(n/2+1, n)
	if _, err := m.wait(all, peerHealTimeout); err != nil {
		return PeerResult{}, fmt.Errorf("before the partition: %w", err)
	}
	ph := phaseSleep(peerPhase)
	pw, err := l.Partition(a, b)
	if err != nil {
		return PeerResult{}, err
	}
	// Membership views must all have changed since the partition; a
	// keepalived BACKUP on the MASTER's side does not change.
	fresh := pw.Start
	if m.spec.vrrp {
		fresh = time.Time{}
	}
	tr := m.ts[0]
	for deadline := pw.End.Add(peerHold + peerHealTimeout); ; time.Sleep(pollEvery) {
		if err := tr.poll(); err != nil {
			return PeerResult{}, err
		}
		_, okA := tr.agreed(a, fresh)
		if _, okB := tr.agreed(b, fresh); okA && okB {
			break
		}
		if time.Now().After(deadline) {
			_, _ = l.Heal(true)
			return PeerResult{}, fmt.Errorf("the sides %s | %s did not form their own views within %v of the partition (healed): %s",
				joinInts(a), joinInts(b), peerHold+peerHealTimeout, tr.describe())
		}
	}
	split := secs(tr.doneAt(all).Sub(pw.End))
	time.Sleep(time.Until(pw.End.Add(peerHold)))
	if err := pollAll(m.ts); err != nil {
		return PeerResult{}, err
	}
	for _, x := range m.ts {
		x.setMark(time.Now())
	}
	hw, err := l.Heal(true)
	if err != nil {
		return PeerResult{}, err
	}
	v, err := tr.waitAgreed(all, fresh, hw.End.Add(peerHealTimeout))
	if err != nil {
		return PeerResult{}, fmt.Errorf("no single view after the heal: %w", err)
	}
	done := tr.doneAt(all)
	r := m.result("heal", t, v, done.Sub(hw.End), hw.End)
	r.FromCmdS, r.CmdS, r.PartCmdS, r.SplitS, r.PhaseS = secs(done.Sub(hw.Start)), secs(hw.End.Sub(hw.Start)), secs(pw.End.Sub(pw.Start)), &split, secs(ph)
	if first, _ := tr.firstAt(all); !first.IsZero() {
		d := secs(first.Sub(hw.End))
		r.DetectS = &d
	}
	r.Alt, r.Note = m.altFigures(all, fresh, hw.End)
	m.check(&r, all, v)
	say("peers: %-10s N=%-3d heal  trial %d: %.3fs after the heal to %s (split took %.3fs)%s", m.spec.name, n, t, r.Seconds, r.View, split, altSay(r.Alt))
	return r, nil
}

// altFigures waits for the other sources to agree on set and returns
// their figures, from t0. Views older than fresh do not count.
func (m *peerTrials) altFigures(set []int, fresh, t0 time.Time) (map[string]float64, string) {
	if len(m.ts) < 2 {
		return nil, ""
	}
	out := map[string]float64{}
	var notes []string
	for _, t := range m.ts[1:] {
		if _, err := t.waitAgreed(set, fresh, time.Now().Add(altWait)); err != nil {
			notes = append(notes, fmt.Sprintf("%s never agreed within %s of the figure", t.src, altWait))
			continue
		}
		out[t.src] = secs(t.doneAt(set).Sub(t0))
	}
	return out, strings.Join(notes, "; ")
}

func pollAll(ts []*peerTracker) error {
	for _, t := range ts {
		if err := t.poll(); err != nil {
			return err
		}
	}
	return nil
}

func altSay(alt map[string]float64) string {
	var b strings.Builder
	for k, v := range alt {
		fmt.Fprintf(&b, "; %s %.3fs", k, v)
	}
	return b.String()
}

// ---- cross-checks with the peers' own tools --------------------------------

// nsOutput runs a command in node i's namespace and keeps what it printed
// in the node's directory of peer (KEEP), the last run of each kind.
func (e *peerEnv) nsOutput(peer string, i int, keep, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", e.l.NS(i), name}, args...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	_ = os.WriteFile(e.file(peer, i, keep), out.Bytes(), 0o644)
	return out.Bytes(), err
}

// crossCheck asks every node of set with a peer's tool and compares what
// it parses with want; tool names it in the verdict.
func crossCheck(tool string, set []int, want string, ask func(i int) (string, error)) string {
	var bad []string
	for _, i := range set {
		got, err := ask(i)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("node %d: %v", i, err))
		case got != want:
			bad = append(bad, fmt.Sprintf("node %d: %s", i, got))
		}
	}
	if len(bad) > 0 {
		return tool + " DISAGREES with the log: " + strings.Join(bad, "; ")
	}
	return tool + " on nodes " + joinInts(set) + ": " + want + ", as in the log"
}

// checkQuorumtool asks every node of set with `corosync-quorumtool -s`
// and compares its ring and members with the view read from the logs.
func checkQuorumtool(e *peerEnv, set []int, v pview) string {
	return crossCheck("corosync-quorumtool -s", set, "ring "+v.ID+", members "+joinInts(v.Members), func(i int) (string, error) {
		out, err := e.nsOutput("corosync", i, "quorumtool-s.txt", "corosync-quorumtool", "-s")
		q, perr := parseQuorumtool(bytes.NewReader(out))
		if perr != nil {
			// It exits 2 when the node is not quorate; only a parse
			// failure is a failure.
			return "", fmt.Errorf("%v (%v)", perr, err)
		}
		return "ring " + q.Ring + ", members " + joinInts(q.Members), nil
	})
}

// checkSerfMembers asks every node of set with `serf members` and
// compares its alive members with the view read from the agent's log.
func checkSerfMembers(e *peerEnv, set []int, v pview) string {
	return crossCheck("serf members", set, "alive "+joinInts(v.Members), func(i int) (string, error) {
		out, err := e.nsOutput("serf", i, "serf-members.txt", "serf", "members")
		alive, perr := parseSerfMembers(bytes.NewReader(out))
		if perr != nil {
			return "", fmt.Errorf("%v (%v)", perr, err)
		}
		return "alive " + joinInts(alive), nil
	})
}
