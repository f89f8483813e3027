package sim

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// epochMS is the Epoch in Unix milliseconds: new sequences are above the
// wall clock, which the simulator starts there.
var epochMS = uint64(Epoch.UnixMilli())

var bigNumber = regexp.MustCompile(`\b\d{10,}\b`)

// TestScripts runs the simulator scenarios in testdata/*.txt, using only
// the simulator's exported API. Regenerate the expected output with
//
//	go test ./sim -run TestScripts -rewrite
//
// and read the diff. Every run is checked for S1–S4, LT1–LT2 and the
// machine's contract after every event (a violation fails the script
// unless the command says expect=INVARIANT); settle and converged check L1,
// check-failover L2.
//
// Group numbers and counters print relative to the simulator's Epoch in
// milliseconds (946684800000, 2000-01-01): e+201.6 is sequence
// 946684800201 created by node 6, so the wall-clock floor under new numbers
// reads as the virtual time of their creation; e-9799.3 comes from a clock
// 10s behind. Times are the virtual clock since the Epoch.
//
// The commands, one per line of a script:
//
//   - new n=6 [seed=1] [prio=(200,100,...)] [timing=lan|fast]
//     [timings=(lan,fast,...)] [election=bully|ring]
//     [elections=(bully,ring,...)] [keyed] [detect=partitions|off]
//     [spread=DURATION] [clocks=(0,-10s,...)] [drifts=(0.005,-0.005,...)]
//     [expect=N] [tb=ID] [nopreempt] [view-primary] [seeds-only]: a new
//     simulation (expect: quorum mode; view-primary: the lease's negative
//     control; seeds-only: discovery without multicast).
//   - run DURATION: run; prints the numbers created, notices, starts,
//     crashes and yields. run-until node=N state=S [role=R]
//     [max=DURATION]: run until node N is in that state.
//   - settle [coord=N] [above=MARK] [same=MARK]: run T_heal and check L1,
//     who coordinates, and that the number grew, or did not change.
//     converged IDS [coord=N]: check L1 among one side of a partition.
//     converge [max=DURATION]: run until L1 holds (lossy networks).
//   - check-failover [coord=N]: crash the coordinator, run T_failover and
//     check L2. failed-over IDS [coord=N]: check L2 for these survivors.
//   - partition IDS IDS..., isolate N, cut FROM TO, cut-broadcasts
//     FROMS TO (multicast alone, one way), heal, quiet,
//     net [loss=P] [jitter=D] [dup=P] [reorder=P] [reorder-delay=D],
//     save-failure P (every save fails with probability P).
//   - crash N, restart N, wipe N, restore N k=K, clock N OFFSET, dup N,
//     set-durable N counter=MARK (a crashed node's state file).
//   - mark NAME [plus=N] (remember the group's sequence, plus N),
//     durable N [covers=MARK] (print a state file, check it covers MARK).
//   - status (every node's view), notices (raised since the last
//     notices), counts (datagrams by type since the last counts),
//     created (how many group numbers were created since the last
//     created), leader N [same] (node N's leadership; same: unchanged),
//     primaries (quorum mode: every primary leadership so far, with its
//     term and when it began and ended, its lease's end).
//
// IDS are comma-separated node IDs.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			var h script
			datadriven.RunTest(t, f, h.run)
		})
	}
}

// rel prints the sequences and counters in s relative to epochMS.
func rel(s string) string {
	return bigNumber.ReplaceAllStringFunc(s, func(w string) string {
		v, err := strconv.ParseUint(w, 10, 64)
		if err != nil || v+1e9 < epochMS || v > epochMS+1e9 {
			return w
		}
		if v >= epochMS {
			return "e+" + strconv.FormatUint(v-epochMS, 10)
		}
		return "e-" + strconv.FormatUint(epochMS-v, 10)
	})
}

func relGroup(g wire.GroupNumber) string { return rel(g.String()) }

// script is the state of one script: the simulation, what its trace said
// since the last command, and the marks.
type script struct {
	s       *Sim
	log     *traceLog
	marks   map[string]uint64
	notices int
	leader  invitation.Status
	dups    map[int32]wire.NodeID // slots of second processes
	counts  Counts                // at the last counts command
}

// traceLog keeps the trace lines worth printing: starts, crashes, yields,
// numbers created and notices; and counts the numbers created.
type traceLog struct {
	lines   []string
	created int
}

var traceTime = regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{6}`)

func (l *traceLog) Write(p []byte) (int, error) {
	lines := strings.Split(strings.TrimRight(string(p), "\n"), "\n")
	head := lines[0]
	at, rest, _ := strings.Cut(head, " ")
	if tm, err := time.Parse("15:04:05.000000", at); err == nil && traceTime.MatchString(at) {
		at = tm.Sub(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)).String()
	}
	node, what, _ := strings.Cut(rest, " ")
	switch {
	case strings.HasPrefix(what, "START"), strings.HasPrefix(what, "CRASH"), strings.HasPrefix(what, "YIELDED"):
		word, rest, _ := strings.Cut(what, " ")
		l.lines = append(l.lines, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", at, node, strings.ToLower(word), rest)))
	}
	for _, c := range lines[1:] {
		c = strings.TrimSpace(c)
		switch {
		case strings.HasPrefix(c, "created "):
			l.lines = append(l.lines, fmt.Sprintf("%s %s %s", at, node, c))
			l.created++
		case strings.HasPrefix(c, "NOTICE "):
			l.lines = append(l.lines, fmt.Sprintf("%s %s notice: %s", at, node, c[len("NOTICE "):]))
		}
	}
	return len(p), nil
}

func (l *traceLog) flush(b *strings.Builder) {
	for _, line := range l.lines {
		b.WriteString(rel(line))
		b.WriteByte('\n')
	}
	l.lines = l.lines[:0]
}

func (h *script) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "new" && h.s == nil {
		d.Fatalf(t, "no simulation: start with new")
	}
	if d.Cmd == "new" {
		h.newSim(t, d)
		return fmt.Sprintf("T_heal %v, T_failover %v\n", h.s.HealBound(), h.s.FailoverBound())
	}
	var b strings.Builder
	var err error
	handled := false
	for _, cmd := range []func(*testing.T, *datadriven.TestData, *strings.Builder) (bool, error){h.runCmd, h.faultCmd, h.reportCmd} {
		if handled, err = cmd(t, d, &b); handled {
			break
		}
	}
	if !handled {
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	// The trace's lines come first: they are what happened during the
	// command.
	var out strings.Builder
	h.log.flush(&out)
	out.WriteString(b.String())
	h.failure(t, d, &out, err)
	return out.String()
}

// runCmd runs a command that runs the simulation and checks L1 or L2.
func (h *script) runCmd(t *testing.T, d *datadriven.TestData, b *strings.Builder) (handled bool, err error) {
	switch d.Cmd {
	case "run":
		err = h.s.RunFor(duration(t, d, 0))
	case "run-until":
		err = h.runUntil(t, d, b)
	case "settle", "converge":
		if d.Cmd == "settle" {
			err = h.s.RunFor(h.s.HealBound())
		} else {
			var took time.Duration
			took, err = h.s.Converge(durationArg(t, d, "max", time.Minute))
			fmt.Fprintf(b, "converged after %v\n", took.Truncate(10*time.Millisecond))
		}
		if err == nil {
			err = h.s.CheckConverged()
		}
		if err == nil {
			h.converged(t, d, b, h.s.Statuses())
		}
	case "converged", "failed-over":
		// L1 among one side, or L2 for the given survivors.
		ids := nodeIDs(t, d, 0)
		check, show := h.s.CheckConvergedAmong, h.converged
		if d.Cmd == "failed-over" {
			check, show = h.s.CheckFailover, h.failedOver
		}
		if err = check(ids); err == nil {
			show(t, d, b, h.views(ids))
		}
	case "check-failover":
		sts := h.s.Statuses()
		if len(sts) < 2 || !h.s.Converged() {
			d.Fatalf(t, "check-failover needs a converged group of two or more")
		}
		fmt.Fprintf(b, "crash coordinator %d\n", sts[0].Group.ID)
		if err = h.s.Failover(); err == nil {
			h.failedOver(t, d, b, h.s.Statuses())
		}
	default:
		return false, nil
	}
	return true, err
}

// faultCmd runs a command that changes the network or a node.
func (h *script) faultCmd(t *testing.T, d *datadriven.TestData, b *strings.Builder) (handled bool, err error) {
	switch d.Cmd {
	case "partition":
		var sides [][]wire.NodeID
		for i := range d.CmdArgs {
			sides = append(sides, nodeIDs(t, d, i))
		}
		h.s.Partition(sides...)
	case "isolate":
		h.s.Isolate(nodeID(t, d, 0))
	case "cut":
		h.s.Cut(nodeID(t, d, 0), nodeID(t, d, 1))
	case "cut-broadcasts":
		to := nodeID(t, d, 1)
		for _, from := range nodeIDs(t, d, 0) {
			h.s.CutBroadcast(from, to)
		}
	case "pause":
		h.s.Pause(nodeID(t, d, 0), duration(t, d, 1))
	case "heal":
		h.s.Heal()
	case "quiet":
		h.s.Quiet()
	case "net":
		n := LAN()
		d.MaybeScanArgs(t, "loss", &n.Loss)
		d.MaybeScanArgs(t, "dup", &n.Dup)
		d.MaybeScanArgs(t, "reorder", &n.Reorder)
		n.Jitter = durationArg(t, d, "jitter", n.Jitter)
		n.ReorderDelay = durationArg(t, d, "reorder-delay", n.ReorderDelay)
		h.s.SetNet(n)
	case "save-failure":
		p, perr := strconv.ParseFloat(d.CmdArgs[0].Key, 64)
		if perr != nil {
			d.Fatalf(t, "save-failure: %v", perr)
		}
		err = h.s.Play([]Step{{Kind: StepSaveFailure, P: p}})
	case "crash":
		h.s.Crash(nodeID(t, d, 0))
	case "restart":
		h.s.Restart(nodeID(t, d, 0))
	case "wipe":
		err = h.s.Wipe(nodeID(t, d, 0))
	case "restore":
		var k int
		d.ScanArgs(t, "k", &k)
		err = h.s.Restore(nodeID(t, d, 0), k)
		fmt.Fprintf(b, "state file %s\n", rel(h.s.Durable(nodeID(t, d, 0)).String()))
	case "clock":
		off, perr := time.ParseDuration(d.CmdArgs[1].Key)
		if perr != nil {
			d.Fatalf(t, "clock: %v", perr)
		}
		h.s.SetClock(nodeID(t, d, 0), off)
	case "dup":
		slot := h.s.StartDuplicate(nodeID(t, d, 0))
		if h.dups == nil {
			h.dups = map[int32]wire.NodeID{}
		}
		h.dups[slot] = nodeID(t, d, 0)
	case "set-durable":
		var mark string
		d.ScanArgs(t, "counter", &mark)
		err = h.s.SetDurable(nodeID(t, d, 0), invitation.Durable{Counter: h.mark(t, d, mark)})
	default:
		return false, nil
	}
	return true, err
}

// reportCmd runs a command that prints what the simulation did or holds.
func (h *script) reportCmd(t *testing.T, d *datadriven.TestData, b *strings.Builder) (handled bool, err error) {
	switch d.Cmd {
	case "mark":
		var plus uint64
		d.MaybeScanArgs(t, "plus", &plus)
		sts := h.s.Statuses()
		if len(sts) == 0 {
			d.Fatalf(t, "mark: no live node")
		}
		if h.marks == nil {
			h.marks = map[string]uint64{}
		}
		h.marks[d.CmdArgs[0].Key] = sts[0].Group.Seq + plus
		fmt.Fprintf(b, "%s = %s\n", d.CmdArgs[0].Key, rel(strconv.FormatUint(h.marks[d.CmdArgs[0].Key], 10)))
	case "durable":
		id := nodeID(t, d, 0)
		du := h.s.Durable(id)
		fmt.Fprintf(b, "state file of %d: %s\n", id, rel(du.String()))
		var mark string
		if d.MaybeScanArgs(t, "covers", &mark) {
			if seq := h.mark(t, d, mark); du.Counter < seq || du.LastGroup.Seq != seq {
				d.Fatalf(t, "state file of %d (%s) does not cover group %d", id, du, seq)
			}
		}
	case "status":
		h.status(b)
	case "notices":
		for _, nr := range h.s.Notices()[h.notices:] {
			who := fmt.Sprintf("n%d", nr.Slot+1)
			if int(nr.Slot) >= h.s.N() {
				who = fmt.Sprintf("n%d (second process)", h.dups[nr.Slot])
			}
			fmt.Fprintf(b, "%s: %s\n", who, rel(nr.Notice.String()))
		}
		h.notices = len(h.s.Notices())
	case "counts":
		c := h.s.Counts()
		d := c.Sub(h.counts)
		h.counts = c
		for _, ty := range wire.Types() {
			if d.Sent[ty] > 0 {
				fmt.Fprintf(b, "%s %d ", ty, d.Sent[ty])
			}
		}
		b.WriteString("\n")
	case "created":
		fmt.Fprintf(b, "numbers created: %d\n", h.log.created)
		h.log.created = 0
	case "leader":
		h.leaderCmd(t, d, b)
	case "primaries":
		for _, p := range h.s.Primaries() {
			to := "open"
			switch {
			case !p.Open && p.To.After(h.s.Now()):
				to = "running, lease to " + p.To.Sub(Epoch).Truncate(time.Millisecond).String()
			case !p.Open:
				to = p.To.Sub(Epoch).Truncate(time.Millisecond).String()
			}
			fmt.Fprintf(b, "n%d term %s primary %v – %s\n", p.Node, relGroup(p.Term), p.From.Sub(Epoch).Truncate(time.Millisecond), to)
		}
	default:
		return false, nil
	}
	return true, err
}

// failure prints the violations of err; one the command does not expect
// fails the script.
func (h *script) failure(t *testing.T, d *datadriven.TestData, b *strings.Builder, err error) {
	if err == nil {
		if d.HasArg("expect") {
			d.Fatalf(t, "no violation, want one")
		}
		return
	}
	var f *Failure
	if !errors.As(err, &f) {
		d.Fatalf(t, "%v", err)
	}
	var want string
	d.MaybeScanArgs(t, "expect", &want)
	seen := false
	for _, v := range f.Violations {
		fmt.Fprintf(b, "VIOLATION %s\n", rel(v.String()))
		seen = seen || v.Invariant == want
	}
	if !seen {
		t.Errorf("%s: %v", d.Pos, err)
	}
}

func (h *script) newSim(t *testing.T, d *datadriven.TestData) {
	cfg := Config{Seed: 1, Trace: nil}
	d.ScanArgs(t, "n", &cfg.N)
	d.MaybeScanArgs(t, "seed", &cfg.Seed)
	if a, ok := d.Arg("prio"); ok {
		for _, v := range a.Vals {
			p, err := strconv.ParseUint(v, 10, 8)
			if err != nil {
				d.Fatalf(t, "prio: %v", err)
			}
			cfg.Priorities = append(cfg.Priorities, uint8(p))
		}
	}
	profile := func(name string) invitation.Timing {
		switch name {
		case "lan", "":
			return invitation.DefaultTiming()
		case "fast":
			return invitation.FastTiming()
		}
		d.Fatalf(t, "unknown timing %q", name)
		return invitation.Timing{}
	}
	var name string
	d.MaybeScanArgs(t, "timing", &name)
	cfg.Timing = profile(name)
	if a, ok := d.Arg("timings"); ok {
		for _, v := range a.Vals {
			cfg.NodeTimings = append(cfg.NodeTimings, profile(v))
		}
	}
	var alg string
	if d.MaybeScanArgs(t, "election", &alg) {
		cfg.Election = invitation.Election(alg)
	}
	if a, ok := d.Arg("elections"); ok {
		for _, v := range a.Vals {
			cfg.NodeElections = append(cfg.NodeElections, invitation.Election(v))
		}
	}
	if a, ok := d.Arg("clocks"); ok {
		for _, v := range a.Vals {
			off, err := time.ParseDuration(v)
			if err != nil {
				d.Fatalf(t, "clocks: %v", err)
			}
			cfg.ClockOffsets = append(cfg.ClockOffsets, off)
		}
	}
	if a, ok := d.Arg("drifts"); ok {
		for _, v := range a.Vals {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				d.Fatalf(t, "drifts: %v", err)
			}
			cfg.Drift = append(cfg.Drift, f)
		}
	}
	d.MaybeScanArgs(t, "expect", &cfg.Quorum.Expect)
	var tb uint64
	if d.MaybeScanArgs(t, "tb", &tb) {
		cfg.Quorum.TieBreaker = wire.NodeID(tb)
	}
	cfg.NoPreempt = d.HasArg("nopreempt")
	cfg.ViewPrimary = d.HasArg("view-primary")
	cfg.SeedsOnly = d.HasArg("seeds-only")
	cfg.Keyed = d.HasArg("keyed")
	var det string
	if d.MaybeScanArgs(t, "detect", &det) {
		switch det {
		case "partitions":
			cfg.Detect.Partitions = true
		case "off":
			cfg.Detect.Off = true
		default:
			d.Fatalf(t, "unknown detect %q", det)
		}
	}
	cfg.StartSpread = durationArg(t, d, "spread", 0)
	h.log = &traceLog{}
	cfg.Trace = h.log
	cfg.Repro = fmt.Sprintf("go test ./sim -run TestScripts/%s", strings.TrimSuffix(strings.TrimPrefix(d.Pos, "testdata/"), ".txt"))
	s, err := New(cfg)
	if err != nil {
		d.Fatalf(t, "New: %v", err)
	}
	*h = script{s: s, log: h.log}
}

func (h *script) runUntil(t *testing.T, d *datadriven.TestData, b *strings.Builder) error {
	var node wire.NodeID
	var state, role string
	d.ScanArgs(t, "node", &node)
	d.ScanArgs(t, "state", &state)
	d.MaybeScanArgs(t, "role", &role)
	took, ok, err := h.s.RunUntil(func() bool {
		st, up := h.s.Status(node)
		return up && st.State.String() == state && (role == "" || st.Role().String() == role)
	}, Until{Poll: time.Millisecond, Max: durationArg(t, d, "max", time.Minute)})
	if err == nil {
		if !ok {
			d.Fatalf(t, "node %d not %s %s within %v", node, state, role, took)
		}
		fmt.Fprintf(b, "node %d %s %s after %v\n", node, state, role, took)
	}
	return err
}

// converged prints one line for a group that satisfies L1, and checks
// the coordinator and the number's growth the command asks for.
func (h *script) converged(t *testing.T, d *datadriven.TestData, b *strings.Builder, sts []invitation.Status) {
	st := sts[0]
	c := h.s.View(st.Group.ID)
	fmt.Fprintf(b, "L1: group %s v%d [%s]%s\n", relGroup(st.Group), st.Version, ids(st.MemberIDs()), leaderOf(c))
	h.expectCoord(t, d, st)
	var mark string
	if d.MaybeScanArgs(t, "above", &mark) && st.Group.Seq <= h.mark(t, d, mark) {
		d.Fatalf(t, "group %s is not above %s", st.Group, mark)
	}
	if d.MaybeScanArgs(t, "same", &mark) && st.Group.Seq != h.mark(t, d, mark) {
		d.Fatalf(t, "group %s changed since %s", st.Group, mark)
	}
}

func (h *script) failedOver(t *testing.T, d *datadriven.TestData, b *strings.Builder, sts []invitation.Status) {
	st := sts[0]
	fmt.Fprintf(b, "L2: survivors in %s v%d [%s]\n", relGroup(st.Group), st.Version, ids(st.MemberIDs()))
	h.expectCoord(t, d, st)
}

func (h *script) expectCoord(t *testing.T, d *datadriven.TestData, st invitation.Status) {
	var want wire.NodeID
	if d.MaybeScanArgs(t, "coord", &want) && st.Group.ID != want {
		d.Fatalf(t, "coordinator %d, want %d", st.Group.ID, want)
	}
}

func leaderOf(c invitation.Status) string {
	if !c.Leader {
		return ""
	}
	return fmt.Sprintf(", leader %d term %s since %v", c.ID, relGroup(c.Term), c.LeaderSince.Sub(Epoch).Truncate(time.Microsecond))
}

// leaderCmd prints node N's leadership; with same, it checks that the term
// and its start are those printed last.
func (h *script) leaderCmd(t *testing.T, d *datadriven.TestData, b *strings.Builder) {
	id := nodeID(t, d, 0)
	st, up := h.s.Status(id)
	if !up || !st.Leader {
		fmt.Fprintf(b, "node %d is not leader\n", id)
		if d.HasArg("same") {
			d.Fatalf(t, "node %d lost its leadership", id)
		}
		return
	}
	fmt.Fprintf(b, "node %d leader: term %s since %v, coordinating %s\n", id, relGroup(st.Term), st.LeaderSince.Sub(Epoch).Truncate(time.Microsecond), relGroup(st.Group))
	if d.HasArg("same") && (h.leader.ID != id || st.Term != h.leader.Term || !st.LeaderSince.Equal(h.leader.LeaderSince)) {
		d.Fatalf(t, "node %d's leadership changed: term %s since %v, was %s since %v", id, st.Term, st.LeaderSince, h.leader.Term, h.leader.LeaderSince)
	}
	h.leader = st
}

func (h *script) status(b *strings.Builder) {
	for id := wire.NodeID(1); int(id) <= h.s.N(); id++ {
		st, up := h.s.Status(id)
		if !up {
			fmt.Fprintf(b, "%d: down, state file %s\n", id, rel(h.s.Durable(id).String()))
			continue
		}
		extra := ""
		if st.Leader {
			extra += " leader(" + relGroup(st.Term) + ")"
		}
		if st.Degraded() {
			extra += " degraded"
		}
		fmt.Fprintf(b, "%d: %s %s %s v%d [%s]%s\n", id, st.State, st.Role(), relGroup(st.Group), st.Version, ids(st.MemberIDs()), extra)
	}
}

// views returns the last reported views of the given nodes.
func (h *script) views(ids []wire.NodeID) []invitation.Status {
	sts := make([]invitation.Status, len(ids))
	for i, id := range ids {
		sts[i] = h.s.View(id)
	}
	return sts
}

func (h *script) mark(t *testing.T, d *datadriven.TestData, name string) uint64 {
	v, ok := h.marks[name]
	if !ok {
		d.Fatalf(t, "no mark %q", name)
	}
	return v
}

func ids(xs []wire.NodeID) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatUint(uint64(x), 10)
	}
	return strings.Join(s, " ")
}

// nodeIDs parses the i-th argument as comma-separated node IDs.
func nodeIDs(t *testing.T, d *datadriven.TestData, i int) []wire.NodeID {
	if i >= len(d.CmdArgs) {
		d.Fatalf(t, "want node IDs as argument %d", i+1)
	}
	var out []wire.NodeID
	for _, f := range strings.Split(d.CmdArgs[i].Key, ",") {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			d.Fatalf(t, "node IDs %q: %v", d.CmdArgs[i].Key, err)
		}
		out = append(out, wire.NodeID(v))
	}
	slices.Sort(out)
	return out
}

func nodeID(t *testing.T, d *datadriven.TestData, i int) wire.NodeID {
	xs := nodeIDs(t, d, i)
	if len(xs) != 1 {
		d.Fatalf(t, "want one node ID, got %v", xs)
	}
	return xs[0]
}

// duration parses the i-th argument as a duration.
func duration(t *testing.T, d *datadriven.TestData, i int) time.Duration {
	if i >= len(d.CmdArgs) {
		d.Fatalf(t, "want a duration as argument %d", i+1)
	}
	v, err := time.ParseDuration(d.CmdArgs[i].Key)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	return v
}

func durationArg(t *testing.T, d *datadriven.TestData, key string, def time.Duration) time.Duration {
	var s string
	if !d.MaybeScanArgs(t, key, &s) {
		return def
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return v
}
