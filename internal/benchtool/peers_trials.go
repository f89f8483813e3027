package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// altWait is how long a trial waits, after its figure, for the peer's
// other view outputs to agree too (serf's handler gets events coalesced
// for up to 3 s).
const altWait = 15 * time.Second

// altFigures waits for the other sources to agree on set and returns
// their figures, from t0. Views older than fresh do not count.
func altFigures(ts []*peerTracker, set []int, fresh, t0 time.Time) (map[string]float64, string) {
	if len(ts) < 2 {
		return nil, ""
	}
	out := map[string]float64{}
	var notes []string
	for _, t := range ts[1:] {
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

// ---- wait ------------------------------------------------------------------

func cmdPeersWait(args []string) error {
	p := newPeersFlags("wait", 120*time.Second)
	spec, err := p.parse(args)
	if err != nil {
		return err
	}
	start := time.Now()
	t := p.trackers(spec)[0]
	v, err := t.waitAgreed(rangeInts(1, p.n), time.Time{}, start.Add(p.timeout))
	if err != nil {
		return err
	}
	peersSay("%-10s N=%-3d agree: %s (waited %.1fs)", spec.name, p.n, v, time.Since(start).Seconds())
	return nil
}

// ---- cold start ------------------------------------------------------------

func cmdPeersCold(args []string) error {
	p := newPeersFlags("cold", 180*time.Second)
	since := p.fs.Float64("since", 0, "unix time (seconds) when the start of all N was called")
	spec, err := p.parse(args)
	if err != nil {
		return err
	}
	if *since <= 0 {
		return errors.New("--since is needed")
	}
	whole := int64(*since)
	t0 := time.Unix(whole, int64((*since-float64(whole))*1e9))
	all := rangeInts(1, p.n)
	ts := p.trackers(spec)
	v, err := ts[0].waitAgreed(all, t0, t0.Add(p.timeout))
	if err != nil {
		return fmt.Errorf("cold start: %w", err)
	}
	r := PeerResult{Kind: "cold", Peer: spec.name, N: p.n, Trial: p.trial, Source: ts[0].src,
		Seconds: secs(ts[0].doneAt(all).Sub(t0)), Leader: v.Leader, View: v.String(),
		FaultTime: t0, Load: load()}
	r.Alt, r.Note = altFigures(ts, all, t0, t0)
	if spec.check != nil {
		r.Check = spec.check(&p.cfg, all, v)
	}
	peersSay("%-10s N=%-3d cold  trial %d: %.3fs to one view (%s)%s", spec.name, p.n, p.trial, r.Seconds, r.View, altSay(r.Alt))
	return emit(r)
}

func altSay(alt map[string]float64) string {
	var b strings.Builder
	for k, v := range alt {
		fmt.Fprintf(&b, "; %s %.3fs", k, v)
	}
	return b.String()
}

// ---- failover --------------------------------------------------------------

func cmdPeersFailover(args []string) error {
	p := newPeersFlags("failover", 90*time.Second)
	victimF := p.fs.Int("victim", 0, "node to kill (default: the leader; for a peer without one, node N)")
	phase := p.fs.Duration("phase", time.Second, "random wait in [0, phase) before the kill")
	spec, err := p.parse(args)
	if err != nil {
		return err
	}
	all := rangeInts(1, p.n)
	ts := p.trackers(spec)
	v0, err := ts[0].waitAgreed(all, time.Time{}, time.Now().Add(p.timeout))
	if err != nil {
		return fmt.Errorf("before the kill: %w", err)
	}
	victim := *victimF
	if victim == 0 {
		victim = v0.Leader
	}
	if victim == 0 {
		victim = p.n
	}
	survivors := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == victim })
	pids, err := readPids(spec.pidFiles(&p.cfg, victim))
	if err != nil {
		return fmt.Errorf("victim %d: %w", victim, err)
	}
	ph := phaseSleep(*phase)
	if err := pollAll(ts); err != nil {
		return err
	}
	tKill := time.Now()
	for _, t := range ts {
		t.setMark(tKill)
	}
	for k, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && k == 0 {
			return fmt.Errorf("kill -9 %d (node %d): %w", pid, victim, err)
		}
	}
	fresh := tKill
	if spec.vrrp {
		fresh = time.Time{} // BACKUPs that stay BACKUP do not change
	}
	v, err := ts[0].waitAgreed(survivors, fresh, tKill.Add(p.timeout))
	if err != nil {
		return fmt.Errorf("survivors did not agree: %w", err)
	}
	r := PeerResult{Kind: "failover", Peer: spec.name, N: p.n, Trial: p.trial, Source: ts[0].src,
		Seconds: secs(ts[0].doneAt(survivors).Sub(tKill)), PhaseS: secs(ph),
		Victim: victim, LeaderBefore: v0.Leader, Leader: v.Leader, View: v.String(),
		FaultTime: tKill, Load: load()}
	if first := ts[0].firstAt(survivors); !first.IsZero() {
		r.DetectS = peersSecsPtr(first.Sub(tKill))
	}
	r.Alt, r.Note = altFigures(ts, survivors, fresh, tKill)
	if spec.check != nil {
		r.Check = spec.check(&p.cfg, survivors, v)
	}
	peersSay("%-10s N=%-3d failover trial %d: killed %d (pids %v); %.3fs to %s%s", spec.name, p.n, p.trial,
		victim, pids, r.Seconds, r.View, altSay(r.Alt))
	return emit(r)
}

// ---- heal ------------------------------------------------------------------

func cmdPeersHeal(args []string) error {
	p := newPeersFlags("heal", 120*time.Second)
	hold := p.fs.Duration("hold", 10*time.Second, "how long the partition lasts, from the moment partition.sh returned")
	phase := p.fs.Duration("phase", time.Second, "random wait in [0, phase) before the partition")
	spec, err := p.parse(args)
	if err != nil {
		return err
	}
	all := rangeInts(1, p.n)
	k := p.n / 2
	a, b := rangeInts(1, k), rangeInts(k+1, p.n)
	ts := p.trackers(spec)
	if _, err := ts[0].waitAgreed(all, time.Time{}, time.Now().Add(p.timeout)); err != nil {
		return fmt.Errorf("before the partition: %w", err)
	}
	ph := phaseSleep(*phase)
	spec2 := fmt.Sprintf("1-%d|%d-%d", k, k+1, p.n)
	if k == 1 {
		spec2 = fmt.Sprintf("1|%d-%d", k+1, p.n)
	}
	tPart := time.Now()
	if out, err := exec.Command(filepath.Join(p.cfg.netem, "partition.sh"), spec2).CombinedOutput(); err != nil {
		return fmt.Errorf("partition.sh %s: %v: %s", spec2, err, out)
	}
	tPartEnd := time.Now()
	// Membership views must all have changed since the partition; a
	// keepalived BACKUP on the MASTER's side does not change.
	fresh := tPart
	if spec.vrrp {
		fresh = time.Time{}
	}
	deadline := tPartEnd.Add(*hold + p.timeout)
	for {
		if err := ts[0].poll(); err != nil {
			return err
		}
		_, okA := ts[0].agreed(a, fresh)
		_, okB := ts[0].agreed(b, fresh)
		if okA && okB {
			break
		}
		if time.Now().After(deadline) {
			heal := exec.Command(filepath.Join(p.cfg.netem, "heal.sh"), "--partitions")
			_ = heal.Run()
			return fmt.Errorf("the sides %s | %s did not form their own views within %s of the partition (healed): %s",
				joinInts(a), joinInts(b), *hold+p.timeout, ts[0].describe())
		}
		time.Sleep(pollEvery)
	}
	split := secs(ts[0].doneAt(all).Sub(tPartEnd))
	time.Sleep(time.Until(tPartEnd.Add(*hold)))
	if err := pollAll(ts); err != nil {
		return err
	}
	tHeal := time.Now()
	for _, t := range ts {
		t.setMark(tHeal)
	}
	if out, err := exec.Command(filepath.Join(p.cfg.netem, "heal.sh"), "--partitions").CombinedOutput(); err != nil {
		return fmt.Errorf("heal.sh: %v: %s", err, out)
	}
	tHealEnd := time.Now()
	v, err := ts[0].waitAgreed(all, fresh, tHealEnd.Add(p.timeout))
	if err != nil {
		return fmt.Errorf("no single view after the heal: %w", err)
	}
	done := ts[0].doneAt(all)
	r := PeerResult{Kind: "heal", Peer: spec.name, N: p.n, Trial: p.trial, Source: ts[0].src,
		Seconds: secs(done.Sub(tHealEnd)), FromCmdS: secs(done.Sub(tHeal)),
		CmdS: secs(tHealEnd.Sub(tHeal)), PartCmdS: secs(tPartEnd.Sub(tPart)),
		SplitS: &split, PhaseS: secs(ph), Leader: v.Leader, View: v.String(),
		FaultTime: tHealEnd, Load: load()}
	if first := ts[0].firstAt(all); !first.IsZero() {
		r.DetectS = peersSecsPtr(first.Sub(tHealEnd))
	}
	r.Alt, r.Note = altFigures(ts, all, fresh, tHealEnd)
	if spec.check != nil {
		r.Check = spec.check(&p.cfg, all, v)
	}
	peersSay("%-10s N=%-3d heal  trial %d: %.3fs after heal.sh to %s (split took %.3fs)%s", spec.name, p.n, p.trial,
		r.Seconds, r.View, split, altSay(r.Alt))
	return emit(r)
}

// ---- cross-checks with the peers' own tools --------------------------------

// nsOutput runs a command in node i's namespace and keeps what it printed
// in the node's directory of peer (KEEP), the last run of each kind.
func nsOutput(c *peersCfg, peer string, i int, keep, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", c.ns(i), name}, args...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	_ = os.WriteFile(c.peerFile(peer, i, keep), out.Bytes(), 0o644)
	return out.Bytes(), err
}

// checkQuorumtool asks every node of set with `corosync-quorumtool -s`
// and compares its ring and members with the view read from the logs.
func checkQuorumtool(c *peersCfg, set []int, v pview) string {
	var bad []string
	for _, i := range set {
		out, err := nsOutput(c, "corosync", i, "quorumtool-s.txt", "corosync-quorumtool", "-s")
		q, perr := parseQuorumtool(bytes.NewReader(out))
		if perr != nil {
			// It exits 2 when the node is not quorate; only a parse
			// failure is a failure.
			bad = append(bad, fmt.Sprintf("node %d: %v (%v)", i, perr, err))
			continue
		}
		if q.Ring != v.ID || !slices.Equal(q.Members, v.Members) {
			bad = append(bad, fmt.Sprintf("node %d: ring %s members %s", i, q.Ring, joinInts(q.Members)))
		}
	}
	if len(bad) > 0 {
		return "corosync-quorumtool -s DISAGREES with the log: " + strings.Join(bad, "; ")
	}
	return "corosync-quorumtool -s on nodes " + joinInts(set) + ": ring " + v.ID + ", members " + joinInts(v.Members) + ", as in the log"
}

// checkSerfMembers asks every node of set with `serf members` and
// compares its alive members with the view read from the agent's log.
func checkSerfMembers(c *peersCfg, set []int, v pview) string {
	var bad []string
	for _, i := range set {
		out, err := nsOutput(c, "serf", i, "serf-members.txt", "serf", "members")
		alive, perr := parseSerfMembers(bytes.NewReader(out))
		if perr != nil {
			bad = append(bad, fmt.Sprintf("node %d: %v (%v)", i, perr, err))
			continue
		}
		if !slices.Equal(alive, v.Members) {
			bad = append(bad, "node "+strconv.Itoa(i)+": alive "+joinInts(alive))
		}
	}
	if len(bad) > 0 {
		return "serf members DISAGREES with the log: " + strings.Join(bad, "; ")
	}
	return "serf members on nodes " + joinInts(set) + ": alive " + joinInts(v.Members) + ", as in the log"
}
