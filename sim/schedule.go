package sim

import (
	"fmt"
	"io"
	"math/rand"
	"strings"
	"time"

	"github.com/groupd/groupd/invariant"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// StepKind is what one step of a Schedule does.
type StepKind uint8

const (
	StepRun            StepKind = iota + 1 // run for D
	StepNet                                // set the network model to Net
	StepPartition                          // split into Sides
	StepCut                                // cut From → To
	StepHeal                               // remove partitions and cuts
	StepCrash                              // crash Node
	StepCrashCoord                         // crash the Node-th live coordinator (mod their number)
	StepRestart                            // restart Node
	StepRestartSome                        // restart each crashed node with probability P
	StepSaveFailure                        // set the save failure probability to P
	StepQuietCheck                         // quiet network, restart crashed nodes with probability P, run T_heal, check L1
	StepFailoverCheck                      // (after StepQuietCheck) crash the coordinator, run T_failover, check L2
	StepWipe                               // crash Node and empty its state file (it restarts with a sane clock)
	StepRestore                            // crash Node and put back its state file of K saves ago (sane clock)
	StepClock                              // Node's clock at its next start moves by D (may be negative)
	StepDuplicateCheck                     // (after StepQuietCheck) start a second process with the ID of the Node-th live node; it must give way
	StepCutBroadcast                       // cut the broadcasts From → To (unicast passes)
	StepHost                               // set the host model to Host (Quiet puts back the config's)
	StepPause                              // pause Node's process for D (Quiet resumes it)
	StepDuplicateSplit                     // (after StepQuietCheck) split off a side, start a second process with the ID of the Node-th live node on the other side, run D, stop it
	StepSuspend                            // suspend Node's host for D: no CPU, and its monotonic clock stands still (Quiet resumes it)
)

// Step is one step of a Schedule.
type Step struct {
	Kind     StepKind
	D        time.Duration
	Net      Net
	Sides    [][]wire.NodeID
	From, To wire.NodeID
	Node     wire.NodeID
	// P is the save failure probability (StepSaveFailure), or the
	// probability that each crashed node is restarted (StepQuietCheck).
	P float64
	// K is how many saves back StepRestore goes.
	K int
	// Host is the host model StepHost sets.
	Host Host
}

func (st Step) String() string {
	switch st.Kind {
	case StepRun:
		return "run " + st.D.String()
	case StepNet:
		n := st.Net
		return fmt.Sprintf("net base=%v jitter=%v loss=%.2f dup=%.2f reorder=%.2f/%v", n.Base, n.Jitter, n.Loss, n.Dup, n.Reorder, n.ReorderDelay)
	case StepPartition:
		return fmt.Sprint("partition ", st.Sides)
	case StepCut:
		return fmt.Sprintf("cut %d→%d", st.From, st.To)
	case StepCutBroadcast:
		return fmt.Sprintf("cut broadcasts %d→%d", st.From, st.To)
	case StepHeal:
		return "heal"
	case StepHost:
		return st.Host.String()
	case StepPause:
		return fmt.Sprintf("pause %d for %v", st.Node, st.D)
	case StepSuspend:
		return fmt.Sprintf("suspend %d for %v", st.Node, st.D)
	case StepCrash:
		return fmt.Sprintf("crash %d", st.Node)
	case StepCrashCoord:
		return fmt.Sprintf("crash coordinator #%d", st.Node)
	case StepRestart:
		return fmt.Sprintf("restart %d", st.Node)
	case StepRestartSome:
		return fmt.Sprintf("restart each crashed node with p=%.2f", st.P)
	case StepSaveFailure:
		return fmt.Sprintf("save-failure %.2f", st.P)
	case StepQuietCheck:
		return fmt.Sprintf("quiet, restart each crashed node with p=%.1f, run T_heal, check L1", st.P)
	case StepFailoverCheck:
		return "crash the coordinator, run T_failover, check L2"
	case StepWipe:
		return fmt.Sprintf("crash %d and wipe its state file", st.Node)
	case StepRestore:
		return fmt.Sprintf("crash %d and restore its state file of %d saves ago", st.Node, st.K)
	case StepClock:
		return fmt.Sprintf("clock of %d moves %+v at its next start", st.Node, st.D)
	case StepDuplicateCheck:
		return fmt.Sprintf("start a second process with the ID of live node #%d, run T_heal, check it gave way and the group is undisturbed", st.Node)
	case StepDuplicateSplit:
		return fmt.Sprintf("split off a side, start a second process with the ID of live node #%d on the other side, run %v, stop it", st.Node, st.D)
	}
	return fmt.Sprintf("step(%d)", st.Kind)
}

// Schedule is a scenario: a simulation config and the steps to run on it.
type Schedule struct {
	Config Config
	Steps  []Step
}

func (sc Schedule) String() string {
	var b strings.Builder
	c := sc.Config
	fmt.Fprintf(&b, "seed %d: N=%d priorities=%v start-spread=%v detect-partitions=%v detect-off=%v codec=%v keyed=%v election=%s timing(check=%v alive=%v) T_heal=%v T_failover=%v quorum=%s no-preempt=%v view-primary=%v seeds-only=%v\n",
		c.Seed, c.N, c.Priorities, c.StartSpread, c.Detect.Partitions, c.Detect.Off, c.Codec, c.Keyed, c.Election, c.Timing.CheckInterval, c.Timing.AliveInterval,
		c.Timing.HealBoundFor(c.Election, c.N), c.Timing.FailoverBoundFor(c.Election, c.N), c.Quorum, c.NoPreempt, c.ViewPrimary, c.SeedsOnly)
	for i, d := range c.Drift {
		if d != 0 {
			fmt.Fprintf(&b, "  node %d clock rate: %+.3f %%\n", i+1, 100*d)
		}
	}
	for i, t := range c.NodeTimings {
		if t != (invitation.Timing{}) {
			fmt.Fprintf(&b, "  node %d timing: check=%v alive=%v answer=%v\n", i+1, t.CheckInterval, t.AliveInterval, t.AnswerTimeout)
		}
	}
	for i, a := range c.NodeElections {
		if a != "" {
			fmt.Fprintf(&b, "  node %d election: %s\n", i+1, a)
		}
	}
	for i, o := range c.ClockOffsets {
		if o != 0 {
			fmt.Fprintf(&b, "  node %d clock: %+v\n", i+1, o)
		}
	}
	for i, q := range c.NodeQuorums {
		if q.Enabled() {
			fmt.Fprintf(&b, "  node %d quorum: %s\n", i+1, q)
		}
	}
	for i, st := range sc.Steps {
		fmt.Fprintf(&b, "  %2d %s\n", i, st)
	}
	return b.String()
}

// RandomSchedule generates a schedule from a seed: N in [2, 20], random
// priorities, then phases of faults — partitions into 2 or 3 sides, one-way
// cuts, one-way cuts of broadcasts alone, an overloaded host, 0–30 % loss, duplication, jitter and reordering, crashes and
// restarts of random nodes and of coordinators, failing saves — with quiet
// periods (and sometimes a coordinator crash) checked in between, and a
// final quiet period after which L1 must hold.
func RandomSchedule(seed int64) Schedule {
	g := newScheduleGen(seed)
	r := g.r
	if g.cfg.NodeQuorums != nil {
		// Settings that disagree are found out by hearing each other:
		// what the rule protects against is a split of nodes that met.
		g.add(Step{Kind: StepQuietCheck, P: 1})
	}
	g.add(Step{Kind: StepRun, D: time.Duration(r.Int63n(int64(3 * time.Second)))})
	phases := 3 + r.Intn(6)
	for p := 0; p < phases; p++ {
		for k := 1 + r.Intn(3); k > 0; k-- {
			g.fault()
		}
		g.hostAndOperatorFaults()
		d := 200*time.Millisecond + time.Duration(r.Int63n(int64(5*time.Second)))
		if r.Intn(3) == 0 {
			d = 10*time.Millisecond + time.Duration(r.Int63n(int64(300*time.Millisecond)))
		}
		g.add(Step{Kind: StepRun, D: d})
		if r.Intn(4) == 0 {
			g.quiet()
		}
	}
	g.quiet()
	return Schedule{Config: g.cfg, Steps: g.steps}
}

// scheduleGen draws one random schedule. Each kind of fault added since
// the first draws from a source of its own, seeded from the seed, so that
// adding it left every other draw, and so every older seed's schedule, as
// it was.
type scheduleGen struct {
	cfg   Config
	n     int
	r     *rand.Rand // the first: size, network faults, crashes, phases
	op    *rand.Rand // operator faults and mixed configurations
	mc    *rand.Rand // cuts of multicast alone
	hs    *rand.Rand // an overloaded host
	ps    *rand.Rand // stalled processes
	ds    *rand.Rand // quorum settings that disagree; second processes across a split
	ss    *rand.Rand // suspended hosts
	steps []Step
	// Which of the later kinds of fault this schedule has.
	opFaults, deafness, overload, stalls, dupSplit, suspends bool
}

func newScheduleGen(seed int64) *scheduleGen {
	g := &scheduleGen{r: rand.New(rand.NewSource(seed))}
	g.n = 2 + g.r.Intn(19)
	g.cfg = g.baseConfig(seed)
	g.operatorConfig(seed)
	epochConfig(&g.cfg, g.n, rand.New(rand.NewSource(seed^0x1ea5e)))
	// A quarter of the schedules cut multicast alone, one way, between
	// some nodes.
	g.mc = rand.New(rand.NewSource(seed ^ 0x4e110))
	g.deafness = g.mc.Intn(4) == 0
	// A quarter of the schedules overload the host the nodes share for
	// some phases: a CPU that handles 50 to 1,000 deliveries a second,
	// so that the LAN's own traffic delays and sheds its packets.
	g.hs = rand.New(rand.NewSource(seed ^ 0xc0de))
	g.overload = g.hs.Intn(4) == 0
	// A quarter of the schedules stall processes: a node gets no CPU for
	// up to three seconds, then handles its late timer and what it was
	// told meanwhile.
	g.ps = rand.New(rand.NewSource(seed ^ 0x57a11))
	g.stalls = g.ps.Intn(4) == 0
	// A fifth of the schedules suspend a host (a laptop lid, a VM
	// paused by its hypervisor) for up to twenty seconds: its monotonic
	// clock stands still meanwhile, so that, back, it finds its lease
	// running on that clock.
	g.ss = rand.New(rand.NewSource(seed ^ 0x5b5e4d))
	g.suspends = g.ss.Intn(5) == 0
	// In quorum mode, a third of the schedules give some nodes other
	// settings (--expect below the group's size or above it, as in a
	// rolling change; tie-breakers that disagree), and a third start a
	// second process with an ID in use on the other side of a split.
	g.ds = rand.New(rand.NewSource(seed ^ 0xd15a9))
	if g.cfg.Quorum.Enabled() {
		g.misconfigure()
		g.dupSplit = g.ds.Intn(3) == 0
	}
	return g
}

// misconfigure gives, in a third of the quorum-mode schedules, some nodes
// quorum settings of their own: an --expect below the group's size or
// above it (a rolling change of --expect), or another tie-breaker. The
// nodes then count by the strictest rule any of them announces, which
// keeps LP1 as long as every node was heard before the first fault (the
// schedule starts with a quiet, converged LAN: RandomSchedule) and no
// node loses its state file meanwhile (what it knew of the others is in
// it: such a schedule wipes and restores none).
func (g *scheduleGen) misconfigure() {
	r, n, cfg := g.ds, g.n, &g.cfg
	if r.Intn(3) != 0 || n < 2 {
		return
	}
	g.opFaults = false
	cfg.NodeQuorums = make([]invitation.Quorum, n)
	for i := range cfg.NodeQuorums {
		if r.Intn(2) != 0 {
			continue
		}
		q := cfg.Quorum
		switch r.Intn(3) {
		case 0:
			q.Expect = max(1, n-1-r.Intn(2))
		case 1:
			q.Expect = n + 1 + r.Intn(2)
		default:
			q.Expect = n
			if n%2 == 1 {
				q.Expect = n + 1
			}
			q.TieBreaker = wire.NodeID(1 + r.Intn(n))
		}
		if q.TieBreaker != 0 && q.Expect%2 != 0 {
			q.TieBreaker = 0
		}
		cfg.NodeQuorums[i] = q
	}
}

// baseConfig draws the first configuration: size, start, profile,
// priorities, failure detector; the codec and the ring by seed.
func (g *scheduleGen) baseConfig(seed int64) Config {
	r, n := g.r, g.n
	cfg := Config{
		N:           n,
		Seed:        seed,
		Timing:      invitation.DefaultTiming(),
		StartSpread: time.Duration(r.Int63n(int64(2 * time.Second))),
		Repro:       fmt.Sprintf("go test ./sim -run TestRandomSchedules -seed=%d -v", seed),
	}
	if r.Intn(4) == 0 {
		cfg.Timing = invitation.FastTiming()
	}
	if r.Intn(2) == 0 {
		cfg.Priorities = make([]uint8, n)
		for i := range cfg.Priorities {
			cfg.Priorities[i] = []uint8{50, 100, 150, 200}[r.Intn(4)]
		}
	}
	cfg.Detect.Partitions = r.Intn(2) == 0
	cfg.Codec = seed%2 == 0 // every other seed sends each message through wire.Encode and Decode
	if seed%3 == 0 {
		// A third of the seeds run the ring election among survivors.
		// Chosen by seed, not drawn, so other seeds keep their schedules.
		cfg.Election = invitation.ElectionRing
	}
	if r.Intn(8) == 0 {
		cfg.Detect.Off = true
	}
	return cfg
}

// operatorConfig draws the operator's faults and mixed configurations:
// keys, profiles and algorithms mixed among the nodes, clocks set apart,
// and whether the schedule loses state, moves clocks and duplicates IDs.
func (g *scheduleGen) operatorConfig(seed int64) {
	op, n, cfg := rand.New(rand.NewSource(seed^0x0fa017)), g.n, &g.cfg
	g.op = op
	cfg.Keyed = op.Intn(5) == 0
	if op.Intn(6) == 0 {
		// Some nodes on the fast profile among lan ones, or the reverse.
		mixTimings(cfg, n, func() bool { return op.Intn(3) == 0 })
	}
	if op.Intn(6) == 0 {
		cfg.NodeElections = make([]invitation.Election, n)
		for i := range cfg.NodeElections {
			cfg.NodeElections[i] = []invitation.Election{invitation.ElectionBully, invitation.ElectionRing}[op.Intn(2)]
		}
	}
	if op.Intn(4) == 0 {
		cfg.ClockOffsets = make([]time.Duration, n)
		for i := range cfg.ClockOffsets {
			cfg.ClockOffsets[i] = time.Duration(op.Int63n(int64(20*time.Second))) - 10*time.Second
		}
	}
	g.opFaults = op.Intn(3) == 0 // a third of the schedules lose state, move clocks, duplicate IDs
}

// epochConfig draws the lease and group numbers as epochs (issues 23,
// 28): a third of the schedules run in quorum mode (some with a
// tie-breaker, some without preemption), a third drift their clocks'
// rates apart (within the 1 % the lease allows), a quarter start every
// node within a few milliseconds on mixed profiles (creations that race),
// and a fifth discover without multicast (seeds only).
func epochConfig(cfg *Config, n int, lq *rand.Rand) {
	if lq.Intn(3) == 0 {
		cfg.Quorum = invitation.Quorum{Expect: n}
		if n%2 == 0 && lq.Intn(2) == 0 {
			cfg.Quorum.TieBreaker = wire.NodeID(1 + lq.Intn(n))
		}
		cfg.NoPreempt = lq.Intn(3) == 0
	}
	if lq.Intn(3) == 0 {
		cfg.Drift = make([]float64, n)
		for i := range cfg.Drift {
			cfg.Drift[i] = (lq.Float64()*2 - 1) * 0.45 * invitation.DriftAllowance * 2
		}
	}
	if lq.Intn(4) == 0 {
		cfg.StartSpread = time.Duration(lq.Int63n(int64(30 * time.Millisecond)))
		if cfg.NodeTimings == nil {
			mixTimings(cfg, n, func() bool { return lq.Intn(2) == 0 })
		}
	}
	cfg.SeedsOnly = lq.Intn(5) == 0
}

func (g *scheduleGen) add(st ...Step) { g.steps = append(g.steps, st...) }

// ids returns k distinct random nodes.
func (g *scheduleGen) ids(k int) []wire.NodeID {
	p := g.r.Perm(g.n)[:k]
	out := make([]wire.NodeID, k)
	for i, x := range p {
		out[i] = wire.NodeID(x + 1)
	}
	return out
}

func (g *scheduleGen) node() wire.NodeID { return wire.NodeID(1 + g.r.Intn(g.n)) }

// quiet adds a quiet check, sometimes followed by a failover check and a
// duplicate's.
func (g *scheduleGen) quiet() {
	r := g.r
	p := 0.7
	if r.Intn(3) == 0 {
		p = 1
	}
	g.add(Step{Kind: StepQuietCheck, P: p})
	if r.Intn(3) == 0 {
		g.add(Step{Kind: StepFailoverCheck})
	}
	if g.opFaults && g.op.Intn(3) == 0 {
		g.add(Step{Kind: StepDuplicateCheck, Node: wire.NodeID(g.op.Intn(20))})
	}
	if g.dupSplit && g.ds.Intn(2) == 0 {
		g.add(Step{Kind: StepDuplicateSplit, Node: wire.NodeID(g.ds.Intn(20)),
			D: time.Second + time.Duration(g.ds.Int63n(int64(6*time.Second)))})
	}
}

// fault adds one of the first kinds of fault: a network model, a
// partition, cuts, crashes and restarts, a heal, failing saves.
func (g *scheduleGen) fault() {
	r, n := g.r, g.n
	switch r.Intn(10) {
	case 0, 1:
		g.add(Step{Kind: StepNet, Net: g.network()})
	case 2, 3:
		sides := 2 + r.Intn(2)
		perm := g.ids(n)
		var ss [][]wire.NodeID
		cuts := make([]int, 0, sides-1)
		for i := 1; i < sides; i++ {
			cuts = append(cuts, 1+r.Intn(max(n-1, 1)))
		}
		prev := 0
		for _, c := range sortInts(cuts) {
			if c > prev {
				ss = append(ss, perm[prev:c])
				prev = c
			}
		}
		ss = append(ss, perm[prev:])
		g.add(Step{Kind: StepPartition, Sides: ss})
	case 4:
		if a, b := g.node(), g.node(); a != b {
			g.add(Step{Kind: StepCut, From: a, To: b})
		}
	case 5:
		g.add(Step{Kind: StepCrash, Node: g.node()})
	case 6:
		g.add(Step{Kind: StepCrashCoord, Node: wire.NodeID(r.Intn(4))})
	case 7:
		g.add(Step{Kind: StepRestartSome, P: 0.3 + 0.7*r.Float64()})
	case 9:
		// A one-way partition: nothing from one set reaches the other.
		perm := g.ids(n)
		k := 1 + r.Intn(max(n-1, 1))
		for _, a := range perm[:k] {
			for _, b := range perm[k:] {
				g.add(Step{Kind: StepCut, From: a, To: b})
			}
		}
	case 8:
		if r.Intn(2) == 0 {
			g.add(Step{Kind: StepHeal})
		} else {
			g.add(Step{Kind: StepSaveFailure, P: 0.3 * r.Float64()})
		}
	}
}

// network draws a network model: loss, duplication, jitter (sometimes
// beyond the round-trip bound the timers assume: only safety is expected
// to hold then) and reordering.
func (g *scheduleGen) network() Net {
	r, t := g.r, g.cfg.Timing
	nt := LAN()
	nt.Loss = 0.3 * r.Float64()
	if r.Intn(2) == 0 {
		nt.Dup = 0.1 * r.Float64()
	}
	nt.Jitter = time.Duration(r.Int63n(int64(t.AnswerTimeout / 5)))
	if r.Intn(6) == 0 {
		nt.Jitter = time.Duration(r.Int63n(int64(3 * t.AnswerTimeout)))
	}
	if r.Intn(2) == 0 {
		nt.Reorder = 0.2 * r.Float64()
		nt.ReorderDelay = time.Duration(r.Int63n(int64(t.AnswerTimeout / 3)))
	}
	return nt
}

// hostAndOperatorFaults adds a phase's later kinds of fault, each from its
// own source: broadcasts cut to one node, the host's load, stalled
// processes, the operator's faults.
func (g *scheduleGen) hostAndOperatorFaults() {
	n := g.n
	if mc := g.mc; g.deafness && mc.Intn(2) == 0 {
		// One node deaf to the broadcasts of some others, or of
		// everyone.
		to := wire.NodeID(1 + mc.Intn(n))
		for from := wire.NodeID(1); int(from) <= n; from++ {
			if from != to && mc.Intn(2) == 0 {
				g.add(Step{Kind: StepCutBroadcast, From: from, To: to})
			}
		}
	}
	if hs := g.hs; g.overload && hs.Intn(2) == 0 {
		h := Host{Cores: 1 + hs.Intn(2), PerDelivery: time.Millisecond + time.Duration(hs.Int63n(int64(19*time.Millisecond)))}
		if hs.Intn(3) == 0 {
			h = Host{} // the load passes
		}
		g.add(Step{Kind: StepHost, Host: h})
	}
	if ps := g.ps; g.stalls {
		for k := ps.Intn(3); k > 0; k-- {
			d := 50*time.Millisecond + time.Duration(ps.Int63n(int64(3*time.Second)))
			g.add(Step{Kind: StepPause, Node: wire.NodeID(1 + ps.Intn(n)), D: d})
		}
	}
	if ss := g.ss; g.suspends && ss.Intn(2) == 0 {
		d := 200*time.Millisecond + time.Duration(ss.Int63n(int64(20*time.Second)))
		g.add(Step{Kind: StepSuspend, Node: wire.NodeID(1 + ss.Intn(n)), D: d})
	}
	if op := g.op; g.opFaults {
		for k := op.Intn(3); k > 0; k-- {
			id := wire.NodeID(1 + op.Intn(n))
			switch op.Intn(3) {
			case 0:
				g.add(Step{Kind: StepWipe, Node: id})
			case 1:
				g.add(Step{Kind: StepRestore, Node: id, K: 1 + op.Intn(6)})
			case 2:
				g.add(Step{Kind: StepClock, Node: id, D: time.Duration(op.Int63n(int64(20*time.Second))) - 10*time.Second})
			}
		}
	}
}

func sortInts(xs []int) []int {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
	return xs
}

// Run executes the schedule on a new simulation. trace, if not nil,
// receives the live trace. The error is a *Failure (with the seed, the
// violations and the trace) or a configuration error.
func (sc Schedule) Run(trace io.Writer) (*Sim, error) {
	cfg := sc.Config
	cfg.Trace = trace
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return s, s.Play(sc.Steps)
}

// Play runs steps on s.
func (s *Sim) Play(steps []Step) error {
	for i, st := range steps {
		switch st.Kind {
		case StepNet, StepPartition, StepCut, StepCutBroadcast, StepHeal, StepHost:
			// They note themselves.
		default:
			s.Note("step %d: %s", i, st)
		}
		if err := s.step(st); err != nil {
			return err
		}
	}
	return s.Err()
}

func (s *Sim) step(st Step) error {
	switch st.Kind {
	case StepRun:
		return s.RunFor(st.D)
	case StepNet:
		s.SetNet(st.Net)
	case StepPartition:
		s.Partition(st.Sides...)
	case StepCut:
		s.Cut(st.From, st.To)
	case StepCutBroadcast:
		s.CutBroadcast(st.From, st.To)
	case StepHeal:
		s.Heal()
	case StepHost:
		s.SetHost(st.Host)
	case StepPause:
		s.Pause(st.Node, st.D)
	case StepSuspend:
		s.Suspend(st.Node, st.D)
	case StepCrash:
		s.Crash(st.Node)
	case StepCrashCoord:
		var cs []wire.NodeID
		for _, n := range s.nodes {
			if n.alive && n.last.Role() == invitation.Coordinator {
				cs = append(cs, n.id)
			}
		}
		if len(cs) > 0 {
			s.Crash(cs[int(st.Node)%len(cs)])
		}
	case StepRestart:
		s.Restart(st.Node)
	case StepRestartSome:
		s.restartSome(st.P)
	case StepSaveFailure:
		s.cfg.SaveFailure = st.P
	case StepQuietCheck:
		// A node booting is a change too: quiet starts once all have.
		if s.now < s.lastStart {
			if err := s.runTo(s.lastStart); err != nil {
				return err
			}
		}
		s.Quiet()
		s.cfg.SaveFailure = 0
		s.restartSome(st.P)
		if len(s.LiveIDs()) == 0 || s.cfg.SeedsOnly && !s.Alive(1) && (s.cfg.N < 2 || !s.Alive(2)) {
			// Without multicast, L1 assumes a seed runs: nodes that
			// started while every seed was down know of nobody else.
			s.Restart(1)
		}
		s.rejoinSeeds()
		if err := s.RunFor(s.HealBound()); err != nil {
			return err
		}
		return s.CheckConverged()
	case StepFailoverCheck:
		return s.Failover()
	case StepWipe, StepRestore:
		s.Crash(st.Node)
		n := s.nodes[s.index(st.Node)]
		// The assumption the wall-clock floor rests on: after losing its
		// state a node's clock is not behind the numbers it created or
		// adopted, which follow the fastest clock of the LAN (see
		// docs/design.md). A node whose clock went back keeps its state.
		n.saneClock = true
		if st.Kind == StepWipe {
			return s.Wipe(st.Node)
		}
		return s.Restore(st.Node, st.K)
	case StepClock:
		n := s.nodes[s.index(st.Node)]
		s.SetClock(st.Node, n.nextOffset+st.D)
	case StepDuplicateCheck:
		return s.DuplicateCheck(int(st.Node))
	case StepDuplicateSplit:
		return s.DuplicateSplit(int(st.Node), st.D)
	}
	return nil
}

// DuplicateSplit models an operator's mistake during a partition: the
// live nodes of a converged group are split in two at random, a second
// process with the ID of the k-th live node (mod their number) starts on
// the side without it, with an empty state file, and runs for d; then it
// is stopped. LP1 holds throughout, the second process's primary
// leaderships included (it may lead its side: it is a process like any
// other there): it is fresh where its ID is known, so neither side counts
// it twice (design §8). It is a no-op unless L1 holds now with at least
// three live nodes, and in quorum mode only.
func (s *Sim) DuplicateSplit(k int, d time.Duration) error {
	sts := s.Statuses()
	if len(sts) < 3 || !s.Converged() || !s.cfg.quorumMode() {
		return nil
	}
	id := sts[k%len(sts)].ID
	var a, b []wire.NodeID
	for i, st := range sts {
		switch {
		case st.ID == id:
			a = append(a, st.ID)
		case len(b) == 0 || (i+k)%2 == 0:
			b = append(b, st.ID)
		default:
			a = append(a, st.ID)
		}
	}
	s.Partition(a, b)
	n := s.addSlot(id, true)
	n.split = true
	s.side[n.slot] = s.side[s.index(b[0])]
	s.Note("a second process with ID %d starts on the other side (slot %d)", id, n.slot)
	s.boot(n)
	if err := s.RunFor(d); err != nil {
		return err
	}
	s.crashSlot(n)
	// The daemons' address books send the ID's traffic to the first
	// process again: memberlist reports the second one's address dead,
	// and the first one's alive (group's peerBook).
	for _, o := range s.nodes {
		if sl, ok := o.route[id]; ok && sl == n.slot {
			delete(o.route, id)
		}
	}
	s.Note("the second process with ID %d (slot %d) is stopped", id, n.slot)
	return nil
}

// DuplicateCheck starts a second process with the ID of the k-th live node
// (mod their number) of a converged group, runs T_heal, and checks that it
// gave way without creating a number (invariant D1 is checked throughout),
// that the group's number and coordinator are unchanged, and L1. It is a
// no-op unless L1 holds now, and, without multicast (Config.SeedsOnly),
// unless a seed runs: a process started then finds nobody (the daemon's
// case too: --join seeds that are all down), so its network is not
// connected.
func (s *Sim) DuplicateCheck(k int) error {
	sts := s.Statuses()
	if s.cfg.SeedsOnly && !s.Alive(1) && (s.cfg.N < 2 || !s.Alive(2)) {
		s.Note("no duplicate check: without multicast, a second process finds nobody while every seed is down")
		return nil
	}
	if len(sts) == 0 || !s.Converged() {
		return nil
	}
	before := sts[0].Group
	id := sts[k%len(sts)].ID
	slot := s.StartDuplicate(id)
	if err := s.RunFor(s.HealBound()); err != nil {
		return err
	}
	var vs []invariant.Violation
	if s.SlotAlive(slot) {
		vs = append(vs, invariant.Violation{Invariant: "D1", Time: s.Now(), Nodes: []wire.NodeID{id},
			Detail: fmt.Sprintf("the second process with ID %d still runs after T_heal", id)})
	}
	if after := s.Statuses(); len(after) > 0 && after[0].Group != before {
		vs = append(vs, invariant.Violation{Invariant: "D1", Time: s.Now(), Group: after[0].Group, Nodes: []wire.NodeID{id},
			Detail: fmt.Sprintf("the group changed from %s to %s while a second process with ID %d came and went", before, after[0].Group, id)})
	}
	if err := s.failNow(vs); err != nil {
		return err
	}
	return s.CheckConverged()
}

// restartSome restarts each crashed node with probability p.
func (s *Sim) restartSome(p float64) {
	for _, n := range s.nodes {
		if !n.alive && n.inc > 0 && s.rnd.Float64() < p {
			s.Restart(n.id)
		}
	}
}

// Failover crashes the coordinator of a converged group, runs
// T_failover and checks L2 on the survivors. It is a no-op unless L1 holds
// now with at least two live nodes.
func (s *Sim) Failover() error {
	sts := s.Statuses()
	if len(sts) < 2 || !s.Converged() {
		return nil
	}
	c := sts[0].Group.ID
	var survivors []wire.NodeID
	for _, st := range sts {
		if st.ID != c {
			survivors = append(survivors, st.ID)
		}
	}
	s.Crash(c)
	if err := s.RunFor(s.FailoverBound()); err != nil {
		return err
	}
	return s.CheckFailover(survivors)
}

// mixTimings gives the nodes for which other says so the other profile
// (fast among lan, or lan among fast): one draw per node, in order.
func mixTimings(cfg *Config, n int, other func() bool) {
	alt := invitation.FastTiming()
	if cfg.Timing == alt {
		alt = invitation.DefaultTiming()
	}
	cfg.NodeTimings = make([]invitation.Timing, n)
	for i := range cfg.NodeTimings {
		if other() {
			cfg.NodeTimings[i] = alt
		}
	}
}
