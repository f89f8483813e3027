//go:build linux

package main

// benchtool suite: groupd's benchmark suite of issue 6 (scripts/bench/run.sh
// calls it): failover against keepalived, heal, steady state and
// footprint, lab scale, the simulator's messages and scale; raw results
// as NDJSON in the results directory, then `benchtool report`.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	netlab "github.com/groupd/groupd/internal/lab"
)

// suite is one run of the suite, with its sizes and trials.
type suite struct {
	b          *bench
	sections   string
	foSizes    []int
	foTrials   int
	ring       bool
	healSizes  []int
	healTrials int
	steady     time.Duration
	simTrials  int
	simScale   string
	simLimit   string
	simMem     int
}

func cmdSuite(args []string) error {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "N = 3, 5 for failover (3 trials each), heal at N = 5, 10 s steady windows, simulator at N <= 1000, no lab scale")
	out := fs.String("out", "", "results directory (default /tmp/groupd-bench-TIME)")
	only := fs.String("only", "", "sections, comma-separated: failover,heal,steady,labscale,sim,scale (default: all; --quick skips labscale)")
	trials := fs.Int("trials", 0, "failover trials per N and implementation (default 20; quick 3)")
	force := fs.Bool("force", false, "take down a lab of this prefix that is already up")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s := &suite{foSizes: []int{3, 5, 16}, foTrials: 20, ring: true, healSizes: []int{5, 16, 32}, healTrials: 15, steady: time.Minute,
		simTrials: 200, simScale: "100,1000,2000,5000", simLimit: "15m", simMem: 8, sections: "failover,heal,steady,sim,scale,labscale"}
	if *quick {
		*s = suite{foSizes: []int{3, 5}, foTrials: 3, healSizes: []int{5}, healTrials: 3, steady: 10 * time.Second,
			simTrials: 20, simScale: "100,1000", simLimit: "60s", simMem: 4, sections: "failover,heal,steady,sim,scale"}
	}
	if *trials > 0 {
		s.foTrials = *trials
	}
	if *only != "" {
		if _, err := listFlag(*only, []string{"failover", "heal", "steady", "labscale", "sim", "scale"}, "--only"); err != nil {
			return err
		}
		s.sections = *only
	}
	var err error
	if s.b, err = newBench("bench", *out, netlab.DefaultPrefix, netlab.DefaultSubnet, *force); err != nil {
		return err
	}
	defer s.b.finish()
	if s.want("failover") || s.want("steady") {
		if err := s.b.install([]string{"keepalived", "ping"}, []string{"keepalived", "iputils-ping"}); err != nil {
			return err
		}
	}
	ka, _ := exec.Command("keepalived", "--version").CombinedOutput()
	line, _, _ := strings.Cut(string(ka), "\n")
	if err := s.b.writeEnv("sections:   "+s.sections, "keepalived: "+line); err != nil {
		return err
	}
	if err := s.run(); err != nil {
		return err
	}
	s.b.section("report")
	s.b.finish()
	if err := cmdReport([]string{"--dir", s.b.out}); err != nil {
		return err
	}
	return printSections(s.b.path("summary.md"), "## Failover (lab)", "## Heal (lab)")
}

func (s *suite) want(section string) bool {
	return strings.Contains(","+s.sections+",", ","+section+",")
}

func (s *suite) run() error {
	for _, n := range s.foSizes {
		if s.want("failover") {
			if err := s.failover(n); err != nil {
				return err
			}
		}
	}
	for _, n := range s.healSizes {
		if s.want("heal") {
			if err := s.heal(n); err != nil {
				s.b.note("notes.ndjson", Note{What: "heal", N: n, Note: err.Error()})
			}
		}
	}
	if s.want("steady") {
		if err := s.steadyState(5); err != nil {
			return err
		}
	}
	if s.want("labscale") {
		for _, n := range []int{32, 48, 64} {
			if err := s.b.scale(n, scaleOpts{kinds: []string{"execd"}, colds: 1, heals: 2, failovers: 2, idle: 20 * time.Second,
				file: "lab-scale.ndjson", diagnose: true}); err != nil {
				s.b.say("lab scale stops at N=%d: %v", n, err)
				break
			}
		}
	}
	// Nothing of the lab may run during the simulator's wall-clock figures.
	s.b.closeLab()
	if s.want("sim") {
		s.simulator()
	}
	if s.want("scale") {
		s.b.section("simulator scale: N=%s (limit %s and %d GiB per N)", s.simScale, s.simLimit, s.simMem)
		// One process per N, so each peak RSS is its own, and a memory
		// guard ends a size cleanly before the kernel's OOM killer would.
		for _, n := range strings.Split(s.simScale, ",") {
			if err := s.b.runSelf("sim-scale.ndjson", "sim-scale", "--n", n, "--limit", s.simLimit, "--mem", strconv.Itoa(s.simMem)); err != nil {
				s.b.note("notes.ndjson", Note{What: "sim-scale", N: atoi(n), Note: fmt.Sprintf("benchtool sim-scale: %v (killed?)", err)})
			}
		}
	}
	return nil
}

// lanLab brings up a lab of n nodes running groupd lan, converged; with
// ka, keepalived too, node N its MASTER.
func (s *suite) lanLab(n int, ka bool) (*netlab.Lab, *peerTrials, error) {
	l, err := s.b.labUp(n, "lan")
	if err != nil {
		return nil, nil, err
	}
	e := s.b.peerEnv(context.Background(), l)
	procs, err := newPeerProcs(e, "keepalived")
	if err != nil {
		return nil, nil, err
	}
	m := &peerTrials{spec: peerSpecs["keepalived"], e: e, procs: procs}
	all := netlab.Span(1, n)
	if _, err := l.Start(all...); err != nil {
		return nil, nil, err
	}
	if ka {
		if err := procs.startAll(); err != nil {
			return nil, nil, err
		}
		if _, err := m.wait(all, 30*time.Second); err != nil {
			return nil, nil, fmt.Errorf("keepalived: node %d did not become the only MASTER: %w", n, err)
		}
	}
	_, _, err = l.WaitFor("converge", all, 60*time.Second, netlab.Converged(all))
	return l, m, err
}

// failover runs the failover trials at N: groupd lan and keepalived
// interleaved (both run in every namespace), then groupd fast, then ring.
func (s *suite) failover(n int) error {
	s.b.section("failover N=%d: groupd lan + keepalived (interleaved), then fast%s", n, map[bool]string{true: ", then ring"}[s.ring])
	l, ka, err := s.lanLab(n, true)
	if err != nil {
		return err
	}
	defer ka.procs.stopAll()
	if !fileExists(s.b.path("rtt.json")) {
		s.rtt(l)
	}
	restart := func() error {
		if _, err := l.Restart(n, false); err != nil {
			return err
		}
		_, _, err := l.WaitFor("restarted", netlab.Span(1, n), 60*time.Second, netlab.Converged(netlab.Span(1, n)))
		return err
	}
	for t := 1; t <= s.foTrials; t++ {
		s.keep("failover.ndjson", "failover-groupd-lan", n, t)(labFailover(l, n, "groupd-lan", t, time.Second, 30*time.Second))
		if err := restart(); err != nil {
			return err
		}
		pr, err := ka.failover(t)
		s.keep("failover.ndjson", "failover-keepalived", n, t)(keepalivedResult(pr, n), err)
		if err := ka.revive(); err != nil {
			return fmt.Errorf("keepalived: node %d did not take over again: %w", n, err)
		}
	}
	for _, run := range []struct {
		impl, profile string
		args          []string
		phase         time.Duration
	}{{"groupd-fast", "fast", nil, 200 * time.Millisecond}, {"groupd-ring", "lan", []string{"--election", "ring"}, time.Second}} {
		if run.impl == "groupd-ring" && !s.ring {
			continue
		}
		all := netlab.Span(1, n)
		if err := errors.Join(l.Stop(all...), l.Configure(s.b.bin, run.profile, run.args)); err != nil {
			return err
		}
		if _, err := l.Start(all...); err != nil {
			return err
		}
		for t := 1; t <= s.foTrials; t++ {
			s.keep("failover.ndjson", "failover-"+run.impl, n, t)(labFailover(l, n, run.impl, t, run.phase, 30*time.Second))
			if err := restart(); err != nil {
				return err
			}
		}
	}
	return nil
}

// keepalivedResult is a keepalived failover as the suite counts it: the
// first survivor to change its state (to MASTER) after the kill.
func keepalivedResult(p PeerResult, n int) Result {
	r := Result{Kind: "failover", Impl: "keepalived", Source: "lab", N: n, Trial: p.Trial, PhaseS: p.PhaseS, Victim: p.Victim,
		Coordinator: p.First, Highest: p.First == n-1, FaultTime: p.FaultTime, Load: p.Load}
	if p.DetectS != nil {
		r.Seconds = *p.DetectS
	}
	return r
}

// keep returns what writes a trial's line into file, or a note that it
// failed.
func (s *suite) keep(file, what string, n, t int) func(Result, error) {
	return func(r Result, err error) {
		if err != nil {
			s.b.note("notes.ndjson", Note{What: what, N: n, Trial: t, Note: fmt.Sprintf("trial %d failed: %v", t, err)})
			return
		}
		if err := s.b.emit(file, r); err != nil {
			s.b.say("%v", err)
		}
	}
}

// rtt pings node 2 from node 1, 100 times, with the daemons running.
func (s *suite) rtt(l *netlab.Lab) {
	cmd, err := l.Command(1, "ping", "-q", "-c", "100", "-i", "0.02", l.Addr(2).String())
	if err != nil {
		return
	}
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`= ([0-9.]+)/([0-9.]+)/([0-9.]+)`).FindStringSubmatch(string(out))
	if m == nil {
		s.b.note("notes.ndjson", Note{What: "rtt", N: l.N(), Note: fmt.Sprintf("ping gave no RTT: %v: %s", err, out)})
		return
	}
	_ = os.WriteFile(s.b.path("rtt.json"), fmt.Appendf(nil, `{"min_ms":%s,"avg_ms":%s,"max_ms":%s,"count":100}`+"\n", m[1], m[2], m[3]), 0o644)
	s.b.say("RTT node 1 -> node 2: min/avg/max %s/%s/%s ms", m[1], m[2], m[3])
}

// heal runs the heal trials at N.
func (s *suite) heal(n int) error {
	s.b.section("heal N=%d (%d trials, partition halves for 10 s)", n, s.healTrials)
	l, err := s.b.labUp(n, "lan")
	if err != nil {
		return err
	}
	all := netlab.Span(1, n)
	if _, err := l.Start(all...); err != nil {
		return err
	}
	if _, _, err := l.WaitFor("converge", all, 180*time.Second, netlab.Converged(all)); err != nil {
		return fmt.Errorf("the lab did not converge within 180 s after start: %w", err)
	}
	for t := 1; t <= s.healTrials; t++ {
		r, err := labHeal(l, "groupd-lan", t, 10*time.Second, time.Second, 90*time.Second)
		s.keep("heal.ndjson", "heal", n, t)(r, err)
		if err != nil {
			_, _ = l.Heal(false)
			if _, _, err := l.WaitFor("converge", all, 120*time.Second, netlab.Converged(all)); err != nil {
				return err
			}
		}
	}
	return nil
}

// steadyState measures three windows on N nodes: groupd alone, groupd
// and keepalived together (the footprint comparison), keepalived alone.
func (s *suite) steadyState(n int) error {
	s.b.section("steady state and footprint, N=%d, windows of %v", n, s.steady)
	l, ka, err := s.lanLab(n, false)
	if err != nil {
		return err
	}
	defer ka.procs.stopAll()
	time.Sleep(5 * time.Second)
	set := func(label string, i int, p peerProcs, sets map[string][]int) {
		if pids, err := p.pids(i); err == nil {
			sets[label] = pids
		}
	}
	groupd := map[string][]int{}
	set(fmt.Sprintf("groupd coordinator (node %d)", n), n, labProcs{l}, groupd)
	set("groupd participant (node 1)", 1, labProcs{l}, groupd)
	windows := []struct {
		label string
		sets  map[string][]int
		ready func() error
	}{
		{"groupd only", groupd, func() error { return nil }},
		{"groupd + keepalived", nil, func() error {
			if err := ka.procs.startAll(); err != nil {
				return err
			}
			_, err := ka.wait(netlab.Span(1, n), 30*time.Second)
			time.Sleep(2 * time.Second)
			return err
		}},
		{"keepalived only", nil, func() error { err := l.Stop(netlab.Span(1, n)...); time.Sleep(2 * time.Second); return err }},
	}
	for k, w := range windows {
		if err := w.ready(); err != nil {
			return err
		}
		sets := w.sets
		if sets == nil {
			sets = map[string][]int{}
			if k == 1 {
				for label, pids := range groupd {
					sets[label] = pids
				}
			}
			set(fmt.Sprintf("keepalived MASTER (node %d, all processes)", n), n, ka.procs, sets)
			set("keepalived BACKUP (node 1, all processes)", 1, ka.procs, sets)
		}
		smp, err := window(l, w.label, s.steady, sets, k < 2)
		if err != nil {
			return err
		}
		if err := s.b.emit("steady.ndjson", smp); err != nil {
			return err
		}
	}
	return nil
}

// simulator runs the simulator's failover and heal counts, the standalone
// bully and the ring tests, each in a process of its own.
func (s *suite) simulator() {
	s.b.section("simulator: failover (bully lan/fast, ring) and heal counts (N=3,5,16,32; %d seeds), standalone bully, ring tests", s.simTrials)
	tr := strconv.Itoa(s.simTrials)
	for _, run := range [][]string{
		{"--n", "3,5,16,32", "--trials", tr, "--profile", "lan"},
		{"--n", "3,5,16", "--trials", tr, "--profile", "fast", "--what", "failover"},
		{"--n", "3,5,16,32", "--trials", tr, "--election", "ring", "--what", "failover"},
	} {
		if err := s.b.runSelf("sim.ndjson", append([]string{"sim-msgs"}, run...)...); err != nil {
			s.b.note("notes.ndjson", Note{What: "sim-msgs", Note: fmt.Sprintf("%v failed: %v", run, err)})
		}
	}
	if err := s.b.runSelf("bully.ndjson", "bully", "--n", "2,4,15"); err != nil {
		s.b.note("notes.ndjson", Note{What: "bully", Note: err.Error()})
	}
	cmd := exec.Command("go", "test", "./ring", "-count=1", "-run", "TestSeedFormulas|TestGroupdMode", "-v")
	cmd.Dir = s.b.env.Repo
	out, err := cmd.CombinedOutput()
	var kept []string
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if !regexp.MustCompile(`^=== (RUN|PAUSE|CONT)`).MatchString(line) {
			kept = append(kept, line)
		}
	}
	_ = os.WriteFile(s.b.path("ring-test.txt"), []byte(strings.Join(kept, "")), 0o644)
	if err != nil {
		s.b.note("notes.ndjson", Note{What: "ring-test", Note: "go test ./ring failed; see ring-test.txt"})
	}
}

// printSections prints the sections of a Markdown file that begin with
// one of the headings, each up to the next heading.
func printSections(path string, headings ...string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	on := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			on = false
			for _, h := range headings {
				on = on || line == h
			}
		}
		if on {
			fmt.Println(line)
		}
	}
	return nil
}

func atoi(s string) int {
	v, _ := strconv.Atoi(s)
	return v
}
