package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/groupd/groupd/group"
	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// subnet is the lab's /24. Each lab has its own bridge and namespaces, so
// two labs (of two test processes) may use the same addresses.
const subnet = "10.78.0"

// Fault chains, on INPUT inside each namespace (see the package doc).
const (
	chainPart = "GDE-PART"
	chainCut  = "GDE-CUT"
	chainLoss = "GDE-LOSS"
)

// lab is N namespaces on one bridge, each running (or ready to run) one
// groupd, with a recorder per node feeding one history.
type lab struct {
	t       *testing.T
	n       int
	profile string
	extra   []string // more `groupd run` arguments for every node, set before start
	timing  invitation.Timing
	dir     string // run dir: faults.ndjson, events.ndjson, nI/{data,api.sock,groupd.log,watch.log}
	br      string
	nodes   []*node // nodes[1..n]
	hist    *history

	ctx    context.Context // cancelled at teardown: stops the recorders
	cancel context.CancelFunc
	wg     sync.WaitGroup // recorders

	mu       sync.Mutex
	torn     bool
	faultLog *os.File
	host0    hostStats // at set-up
}

// node is one namespace and its daemon.
type node struct {
	l      *lab
	id     int
	ns     string
	veth   string
	ip     string
	dir    string
	sock   string
	client *http.Client

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{} // closed when cmd has exited
	launched time.Time
}

// labs are the labs up in this process, for teardownAll.
var (
	labsMu sync.Mutex
	labs   = map[*lab]bool{}
)

// newLab creates n namespaces on a bridge; nothing runs in them yet. The
// lab is torn down when t ends, whatever happens.
func newLab(t *testing.T, n int, profile string) *lab {
	t.Helper()
	requireLab(t)
	timing := invitation.DefaultTiming()
	if profile == "fast" {
		timing = invitation.FastTiming()
	}
	dir, err := os.MkdirTemp("", tag+"-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &lab{t: t, n: n, profile: profile, timing: timing, dir: dir, br: tag + "br",
		hist: newHistory(), ctx: ctx, cancel: cancel}
	if l.faultLog, err = os.OpenFile(filepath.Join(dir, "faults.ndjson"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		t.Fatal(err)
	}
	labsMu.Lock()
	labs[l] = true
	labsMu.Unlock()
	t.Cleanup(l.teardown)

	l.nodes = make([]*node, n+1)
	for i := 1; i <= n; i++ {
		nd := &node{l: l, id: i, ns: fmt.Sprintf("%s-%d", tag, i), veth: fmt.Sprintf("%sv%d", tag, i),
			ip: fmt.Sprintf("%s.%d", subnet, i), dir: filepath.Join(dir, "n"+strconv.Itoa(i))}
		nd.sock = filepath.Join(nd.dir, "api.sock")
		sock := nd.sock
		nd.client = &http.Client{
			Timeout: 2 * time.Second,
			Transport: &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, "unix", sock)
				},
				MaxIdleConnsPerHost: 1,
			},
		}
		if err := os.MkdirAll(filepath.Join(nd.dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		l.nodes[i] = nd
	}

	start := time.Now()
	l.host0 = readHostStats()
	// The bridge: no address (the root namespace does not route lab
	// traffic), multicast snooping off so beacons reach every port, no
	// STP delay, and no br_netfilter (a host FORWARD policy must not see
	// lab traffic).
	l.ip("link", "add", l.br, "type", "bridge")
	l.ip("link", "set", l.br, "type", "bridge", "mcast_snooping", "0", "stp_state", "0", "forward_delay", "0")
	_ = exec.Command("ip", "link", "set", l.br, "type", "bridge", "nf_call_iptables", "0").Run() // older iproute2: not fatal
	l.ip("link", "set", l.br, "up")
	var wg sync.WaitGroup
	errs := make([]error, n+1)
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func(nd *node) {
			defer wg.Done()
			errs[nd.id] = nd.setupNet(l.br)
		}(l.nodes[i])
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("e2e: setting up the lab: %v", err)
		}
	}
	if err := l.staticNeighbours(); err != nil {
		t.Fatalf("e2e: %v", err)
	}
	if noIptables == "" {
		if err := l.setupChains(); err != nil {
			t.Fatalf("e2e: setting up the fault chains: %v", err)
		}
	}
	t.Logf("lab: %d namespaces %s-1..%s-%d on bridge %s, %s.1..%s.%d/24, profile %s, run dir %s (set up in %.2fs)",
		n, tag, tag, n, l.br, subnet, subnet, n, profile, dir, time.Since(start).Seconds())
	return l
}

func (nd *node) setupNet(br string) error {
	steps := [][]string{
		{"netns", "add", nd.ns},
		{"link", "add", nd.veth, "type", "veth", "peer", "name", "eth0", "address", nd.mac(), "netns", nd.ns},
		{"link", "set", nd.veth, "master", br},
		{"link", "set", nd.veth, "up"},
		{"-n", nd.ns, "link", "set", "lo", "up"},
		{"-n", nd.ns, "addr", "add", nd.ip + "/24", "dev", "eth0"},
		{"-n", nd.ns, "link", "set", "eth0", "up"},
		{"-n", nd.ns, "route", "add", "224.0.0.0/4", "dev", "eth0"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// mac is node nd's eth0 address: fixed, so that every namespace can hold
// permanent neighbour entries for the others (see staticNeighbours).
func (nd *node) mac() string { return fmt.Sprintf("02:4e:00:00:%02x:%02x", nd.id>>8, nd.id&0xff) }

// staticNeighbours gives every node permanent ARP entries for the others.
// The kernel's neighbour table is shared by all namespaces (gc_thresh3,
// 1024 entries by default): a big lab elsewhere on the machine (64 nodes
// is 4032 entries) fills it, and then our nodes cannot resolve each other
// and lose most unicast traffic, which looks like a protocol failure. With
// permanent entries made up front, resolution never happens again.
func (l *lab) staticNeighbours() error {
	var wg sync.WaitGroup
	errs := make([]error, l.n+1)
	for i := 1; i <= l.n; i++ {
		var b strings.Builder
		for j := 1; j <= l.n; j++ {
			if j != i {
				fmt.Fprintf(&b, "neigh replace %s lladdr %s dev eth0 nud permanent\n", l.nodes[j].ip, l.nodes[j].mac())
			}
		}
		wg.Add(1)
		go func(nd *node, batch string) {
			defer wg.Done()
			cmd := exec.Command("ip", "-n", nd.ns, "-batch", "-")
			cmd.Stdin = strings.NewReader(batch)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[nd.id] = fmt.Errorf("permanent neighbour entries in %s: %v: %s (is the host's neighbour table full? see dmesg and sysctl net.ipv4.neigh.default.gc_thresh3)",
					nd.ns, err, strings.TrimSpace(string(out)))
			}
		}(l.nodes[i], b.String())
	}
	wg.Wait()
	return errors.Join(errs...)
}

// hostStats are machine-wide counters that explain a failure the daemons
// are not to blame for.
type hostStats struct {
	backlogDrops uint64 // /proc/net/softnet_stat: packets dropped for a full per-CPU backlog
	neighFull    uint64 // /proc/net/stat/arp_cache table_fulls: neighbour table overflows
}

func readHostStats() hostStats {
	var h hostStats
	if b, err := os.ReadFile("/proc/net/softnet_stat"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 {
				v, _ := strconv.ParseUint(f[1], 16, 64)
				h.backlogDrops += v
			}
		}
	}
	if b, err := os.ReadFile("/proc/net/stat/arp_cache"); err == nil {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 1 {
			col := slices.Index(strings.Fields(lines[0]), "table_fulls")
			for _, line := range lines[1:] {
				if f := strings.Fields(line); col >= 0 && col < len(f) {
					v, _ := strconv.ParseUint(f[col], 16, 64)
					h.neighFull += v
				}
			}
		}
	}
	return h
}

// ip runs `ip ARGS`, failing the test on error.
func (l *lab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("e2e: ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
}

// all returns 1..n.
func (l *lab) all() []int { return span(1, l.n) }

// span returns a..b.
func span(a, b int) []int {
	var out []int
	for i := a; i <= b; i++ {
		out = append(out, i)
	}
	return out
}

// ---------------------------------------------------------------- daemons

// start launches the daemons of ids (all at once), waits until each
// answers /healthz and its recorder has received the first (snapshot)
// event, and returns the time at which all were up.
func (l *lab) start(ids ...int) time.Time {
	l.t.Helper()
	for _, i := range ids {
		l.nodes[i].launch()
	}
	for _, i := range ids {
		l.nodes[i].waitUp()
	}
	up := time.Now()
	for _, i := range ids {
		l.nodes[i].record()
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, i := range ids {
		for !l.hist.lastArrival(wire.NodeID(i)).After(l.nodes[i].launchedAt()) {
			if time.Now().After(deadline) {
				l.t.Fatalf("e2e: node %d: the recorder (groupd watch --json) got no snapshot within 10s; see %s", i, l.nodes[i].dir)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return up
}

// launch starts node nd's daemon in its namespace (`ip netns exec` execs
// groupd, so the pid is the daemon's).
func (nd *node) launch() {
	l := nd.l
	l.t.Helper()
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd != nil {
		select {
		case <-nd.done:
		default:
			l.t.Fatalf("e2e: node %d is already running", nd.id)
		}
	}
	_ = os.Remove(nd.sock)
	logf, err := os.OpenFile(filepath.Join(nd.dir, "groupd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		l.t.Fatal(err)
	}
	args := []string{"netns", "exec", nd.ns, groupdBin, "run",
		"--id", strconv.Itoa(nd.id), "--bind", nd.ip, "--interface", "eth0",
		"--data-dir", filepath.Join(nd.dir, "data"), "--api", "unix:" + nd.sock,
		"--profile", l.profile}
	args = append(args, l.extra...)
	fmt.Fprintf(logf, "%s e2e: starting: ip %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Pdeathsig: a daemon dies with the test binary, whatever kills it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	launched := time.Now() // before the process exists: its events all come later
	if err := cmd.Start(); err != nil {
		logf.Close()
		l.t.Fatalf("e2e: starting node %d: %v", nd.id, err)
	}
	done := make(chan struct{})
	nd.cmd, nd.done, nd.launched = cmd, done, launched
	l.hist.restart(nd.launched, wire.NodeID(nd.id))
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
}

// launchedAt is when the current process was launched (zero if never).
func (nd *node) launchedAt() time.Time {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.launched
}

func (nd *node) process() (*exec.Cmd, chan struct{}) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.cmd, nd.done
}

// waitUp waits until the daemon answers GET /healthz.
func (nd *node) waitUp() {
	l := nd.l
	l.t.Helper()
	_, done := nd.process()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := nd.client.Get("http://groupd/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-done:
			l.t.Fatalf("e2e: node %d exited at start; last lines of its log:\n%s", nd.id, nd.logTail(15))
		default:
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("e2e: node %d: no answer on %s within 10s (last error %v); log:\n%s", nd.id, nd.sock, err, nd.logTail(15))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (nd *node) logTail(n int) string {
	b, _ := os.ReadFile(filepath.Join(nd.dir, "groupd.log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// record runs `groupd watch --json` against the current daemon until it
// exits (reconnecting if the stream breaks while it lives), feeding the
// history.
func (nd *node) record() {
	l := nd.l
	_, done := nd.process()
	wlog, err := os.OpenFile(filepath.Join(nd.dir, "watch.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		l.t.Fatal(err)
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer wlog.Close()
		for {
			cmd := exec.CommandContext(l.ctx, groupdBin, "watch", "--json", "--api", "unix:"+nd.sock)
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			cmd.Stderr = wlog
			out, err := cmd.StdoutPipe()
			if err == nil {
				err = cmd.Start()
			}
			if err != nil {
				fmt.Fprintf(wlog, "e2e: starting groupd watch: %v\n", err)
				l.hist.addBad(fmt.Sprintf("node %d: cannot start groupd watch: %v", nd.id, err))
				return
			}
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 64<<10), 4<<20)
			for sc.Scan() {
				l.hist.addLine(wire.NodeID(nd.id), sc.Bytes())
			}
			_ = cmd.Wait()
			select {
			case <-done:
				return
			case <-l.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
				fmt.Fprintf(wlog, "%s e2e: the event stream ended while the daemon runs; reconnecting\n", time.Now().UTC().Format(time.RFC3339Nano))
			}
		}
	}()
}

// kill sends SIGKILL to node i's daemon and waits for it to die: from
// just before the signal (failover is measured from there, so the
// measurement errs on the long side) to when the process is gone.
func (l *lab) kill(i int) window {
	l.t.Helper()
	w := l.stop(i, syscall.SIGKILL)
	l.fault("kill", strconv.Itoa(i), w.start)
	return w
}

// stop sends sig to node i's daemon (SIGKILL after 3 s if still alive)
// and records its death in the history once it has exited.
func (l *lab) stop(i int, sig syscall.Signal) window {
	l.t.Helper()
	nd := l.nodes[i]
	cmd, done := nd.process()
	if cmd == nil {
		l.t.Fatalf("e2e: node %d never ran", i)
	}
	at := time.Now()
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		l.t.Logf("e2e: node %d still alive 3s after %v; SIGKILL", i, sig)
		_ = cmd.Process.Kill()
		<-done
	}
	gone := time.Now()
	l.hist.crash(gone, wire.NodeID(i))
	return window{at, gone}
}

// restart stops node i (SIGKILL when crash, else SIGTERM) and starts it
// again with the same data dir. It returns, once the new daemon is up and
// recorded, the instant the new process was launched: every later event of
// node i is the new process's.
func (l *lab) restart(i int, crash bool) time.Time {
	l.t.Helper()
	sig := syscall.SIGTERM
	if crash {
		sig = syscall.SIGKILL
	}
	w := l.stop(i, sig)
	l.fault("restart", strconv.Itoa(i), w.start)
	l.start(i)
	return l.nodes[i].launchedAt()
}

// ---------------------------------------------------------------- status

// status asks node i's daemon for GET /v1/status.
func (nd *node) status() (group.Status, error) {
	resp, err := nd.client.Get("http://groupd/v1/status")
	if err != nil {
		return group.Status{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return group.Status{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return group.Status{}, fmt.Errorf("GET /v1/status: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var s group.Status
	if err := json.Unmarshal(b, &s); err != nil {
		return group.Status{}, fmt.Errorf("GET /v1/status: %v: %s", err, b)
	}
	return s, nil
}

// views polls every node of ids once; a node that does not answer is
// missing from the map, with its error in errs.
func (l *lab) views(ids []int) (map[int]group.Status, map[int]error) {
	sts := make(map[int]group.Status, len(ids))
	errs := map[int]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := l.nodes[i].status()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[i] = err
			} else {
				sts[i] = s
			}
		}(i)
	}
	wg.Wait()
	return sts, errs
}

// cond judges polled views: "" when satisfied, else why not.
type cond func(sts map[int]group.Status) string

// waitFor polls the views of ids every 50 ms until c holds, failing the
// test after timeout. It returns the satisfying views and when they were
// seen. The timeouts given here are generous on purpose: the bounds are
// asserted on the recorded history (see measure), this only waits.
func (l *lab) waitFor(what string, ids []int, timeout time.Duration, c cond) (map[int]group.Status, time.Time) {
	l.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		sts, errs := l.views(ids)
		why := ""
		if len(errs) > 0 {
			for _, i := range ids {
				if err, ok := errs[i]; ok {
					why = fmt.Sprintf("node %d does not answer: %v", i, err)
					break
				}
			}
		} else {
			why = c(sts)
		}
		if why == "" {
			return sts, time.Now()
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("e2e: %s: not within %v: %s\nviews:\n%s", what, timeout, why, formatViews(ids, sts, errs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func formatViews(ids []int, sts map[int]group.Status, errs map[int]error) string {
	var b strings.Builder
	for _, i := range ids {
		if s, ok := sts[i]; ok {
			fmt.Fprintf(&b, "  node %d: %s %s group %s coordinator %d members %v v%d\n", i, s.State, s.Role, s.Group, s.Coordinator, s.Members, s.Version)
		} else {
			fmt.Fprintf(&b, "  node %d: down (%v)\n", i, errs[i])
		}
	}
	return b.String()
}

// invViews converts polled views to the checker's type.
func (l *lab) invViews(ids []int, sts map[int]group.Status) []invitation.Status {
	out := make([]invitation.Status, 0, len(ids))
	for _, i := range ids {
		out = append(out, l.hist.toInv(sts[i]))
	}
	return out
}

// convergedCond: the nodes of ids are Normal in one group coordinated by
// the highest-ranked of them, at one version, each listing exactly ids
// (invariant.Converged, the L1 predicate, on these nodes only).
func (l *lab) convergedCond(ids []int) cond {
	return func(sts map[int]group.Status) string {
		if vs := invariantConverged(l.invViews(ids, sts)); len(vs) > 0 {
			return vs[0].String()
		}
		return ""
	}
}

// failedOverCond: the survivors are Normal in one group coordinated by
// one of them, each listing them all (invariant.FailedOver, L2).
func (l *lab) failedOverCond(ids []int) cond {
	return func(sts map[int]group.Status) string {
		if vs := invariantFailedOver(l.invViews(ids, sts)); len(vs) > 0 {
			return vs[0].String()
		}
		return ""
	}
}

// ---------------------------------------------------------------- faults

// window of a fault: from just before it starts being applied to when it is
// fully in place. Times are measured from start (so they err on the long
// side); check points are placed after end (when the network is in the
// state the check assumes).
type window struct{ start, end time.Time }

// setupChains creates the fault chains in every namespace, empty, each
// jumped to from INPUT: faults then only replace a chain's rules.
func (l *lab) setupChains() error {
	rules := map[int]map[string][]string{}
	for i := 1; i <= l.n; i++ {
		rules[i] = map[string][]string{chainPart: nil, chainCut: nil, chainLoss: nil}
	}
	_, err := l.restore(rules, true)
	return err
}

// restore replaces, in every node of rules, each chain named with the
// rules given (none: empty it), with one iptables-restore per node, all in
// parallel. jumps adds the INPUT jumps (only at setup).
func (l *lab) restore(rules map[int]map[string][]string, jumps bool) (window, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	sp := window{start: time.Now()}
	for i, chains := range rules {
		var in strings.Builder
		in.WriteString("*filter\n")
		names := make([]string, 0, len(chains))
		for c := range chains {
			names = append(names, c)
		}
		slices.Sort(names)
		for _, c := range names {
			in.WriteString(":" + c + " - [0:0]\n") // declaring a chain flushes it
		}
		for _, c := range names {
			for _, r := range chains[c] {
				in.WriteString("-A " + c + " " + r + "\n")
			}
			if jumps {
				in.WriteString("-A INPUT -j " + c + "\n")
			}
		}
		in.WriteString("COMMIT\n")
		wg.Add(1)
		go func(nd *node, input string) {
			defer wg.Done()
			cmd := exec.Command("ip", "netns", "exec", nd.ns, "iptables-restore", "-w", "--noflush")
			cmd.Stdin = strings.NewReader(input)
			if out, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("iptables-restore in %s: %v: %s\ninput:\n%s", nd.ns, err, strings.TrimSpace(string(out)), input))
				mu.Unlock()
			}
		}(l.nodes[i], in.String())
	}
	wg.Wait()
	sp.end = time.Now()
	return sp, errors.Join(errs...)
}

// apply is restore for a fault, failing the test on error.
func (l *lab) apply(kind, spec string, rules map[int]map[string][]string) window {
	l.t.Helper()
	if noIptables != "" {
		l.t.Fatalf("e2e: %s", noIptables)
	}
	sp, err := l.restore(rules, false)
	if err != nil {
		l.t.Fatalf("e2e: %s %s: %v", kind, spec, err)
	}
	l.fault(kind, spec, sp.start)
	l.t.Logf("fault: %s %s (applied in %.0f ms)", kind, spec, float64(sp.end.Sub(sp.start).Microseconds())/1000)
	return sp
}

// partition cuts the lab into sides: nodes on different sides exchange no
// packets at all (drop on INPUT by source address, which also catches
// multicast). Nodes on no side keep reaching everyone. It replaces the
// previous partition.
func (l *lab) partition(sides ...[]int) window {
	l.t.Helper()
	rules := map[int]map[string][]string{}
	for i := 1; i <= l.n; i++ {
		rules[i] = map[string][]string{chainPart: nil}
	}
	var spec []string
	for k, side := range sides {
		spec = append(spec, joinInts(side))
		for _, i := range side {
			for j, other := range sides {
				if j == k {
					continue
				}
				for _, o := range other {
					rules[i][chainPart] = append(rules[i][chainPart], fmt.Sprintf("-s %s/32 -j DROP", l.nodes[o].ip))
				}
			}
		}
	}
	return l.apply("partition", strings.Join(spec, "|"), rules)
}

// oneway drops every packet from node from to each node of to (the
// reverse direction still flows). It replaces earlier one-way cuts.
func (l *lab) oneway(from int, to []int) window {
	l.t.Helper()
	rules := map[int]map[string][]string{}
	for i := 1; i <= l.n; i++ {
		rules[i] = map[string][]string{chainCut: nil}
	}
	var spec []string
	for _, i := range to {
		rules[i][chainCut] = []string{fmt.Sprintf("-s %s/32 -j DROP", l.nodes[from].ip)}
		spec = append(spec, fmt.Sprintf("%d->%d", from, i))
	}
	return l.apply("oneway", strings.Join(spec, ","), rules)
}

// loss drops pct % of the packets every node receives on eth0 (iptables
// statistic match: this kernel has no sch_netem). A round trip then
// loses 1-(1-p)², 36 % for 20 %.
func (l *lab) loss(pct int) window {
	l.t.Helper()
	rules := map[int]map[string][]string{}
	for i := 1; i <= l.n; i++ {
		rules[i] = map[string][]string{chainLoss: {fmt.Sprintf("-i eth0 -m statistic --mode random --probability %.4f -j DROP", float64(pct)/100)}}
	}
	return l.apply("loss", fmt.Sprintf("%d%%", pct), rules)
}

// heal removes every partition, cut and loss, in one iptables-restore per
// node; the network is connected from the returned end on.
func (l *lab) heal() window {
	l.t.Helper()
	rules := map[int]map[string][]string{}
	for i := 1; i <= l.n; i++ {
		rules[i] = map[string][]string{chainPart: nil, chainCut: nil, chainLoss: nil}
	}
	return l.apply("heal", "all", rules)
}

// fault appends a fault to RUN/faults.ndjson, in scripts/netem's format
// (so `groupd timeline events.ndjson --faults faults.ndjson` draws it).
func (l *lab) fault(kind, spec string, at time.Time) {
	b, _ := json.Marshal(map[string]string{"time": at.UTC().Format(time.RFC3339Nano), "kind": kind, "spec": spec})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.faultLog != nil {
		l.faultLog.Write(append(b, '\n'))
	}
}

func joinInts(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}

// ---------------------------------------------------------------- teardown

// teardown runs when the test ends, pass or fail: it stops the recorders
// and the daemons, checks the whole history (S1–S4), writes
// events.ndjson, and removes the namespaces and the bridge. The run dir is
// kept (and named) when the test failed.
func (l *lab) teardown() {
	t := l.t
	l.mu.Lock()
	if l.torn {
		l.mu.Unlock()
		return
	}
	l.torn = true
	l.mu.Unlock()
	defer func() {
		// Whatever happened above, the network goes.
		l.removeNetwork()
		labsMu.Lock()
		delete(labs, l)
		labsMu.Unlock()
		if t.Failed() {
			h := readHostStats()
			load, _ := os.ReadFile("/proc/loadavg")
			t.Logf("e2e: host during the test: load average %s; packets dropped for a full kernel backlog: %d; neighbour table overflows: %d (non-zero counts point at the machine, not the daemons)",
				strings.Join(strings.Fields(string(load))[:3], " "), h.backlogDrops-l.host0.backlogDrops, h.neighFull-l.host0.neighFull)
			t.Logf("e2e: logs, events.ndjson, faults.ndjson and data kept in %s", l.dir)
		} else {
			os.RemoveAll(l.dir)
		}
	}()

	end := time.Now()
	l.hist.end(end)
	l.checkDropped()
	l.killAll()
	l.cancel()
	waitTimeout(&l.wg, 5*time.Second)

	l.mu.Lock()
	if l.faultLog != nil {
		l.faultLog.Close()
		l.faultLog = nil
	}
	l.mu.Unlock()
	if err := l.hist.writeEvents(filepath.Join(l.dir, "events.ndjson")); err != nil {
		t.Errorf("e2e: writing events.ndjson: %v", err)
	}
	for _, b := range l.hist.badLines() {
		t.Errorf("e2e: recorder: %s", b)
	}
	res := l.hist.replay(end)
	const max = 40
	for k, v := range res.safety {
		if k == max {
			t.Errorf("invariants: … and %d more violations", len(res.safety)-max)
			break
		}
		t.Errorf("invariants: %s", v)
	}
	if len(res.safety) == 0 {
		t.Logf("invariants: S1–S4 hold over the whole history (%d events from %d nodes, %d group numbers created)",
			res.events, l.n, res.created)
	}
}

// checkDropped reads groupd_subscriber_dropped_events_total from every
// running daemon: events a slow subscriber (our recorder) did not get.
// The checks stay sound without them (a missing event leaves a view
// stale, it cannot invent a conflict), so this only warns.
func (l *lab) checkDropped() {
	for _, nd := range l.nodes {
		if nd == nil {
			continue
		}
		cmd, done := nd.process()
		if cmd == nil {
			continue
		}
		select {
		case <-done:
			continue
		default:
		}
		resp, err := nd.client.Get("http://groupd/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "groupd_subscriber_dropped_events_total "); ok && strings.TrimSpace(v) != "0" {
				l.t.Logf("e2e: warning: node %d dropped %s events for a slow subscriber (the recorder); its history has gaps", nd.id, strings.TrimSpace(v))
			}
		}
	}
}

// killAll SIGKILLs every daemon of the lab and waits for them.
func (l *lab) killAll() {
	for _, nd := range l.nodes {
		if nd == nil {
			continue
		}
		cmd, done := nd.process()
		if cmd == nil {
			continue
		}
		_ = cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}
}

// removeNetwork deletes the lab's namespaces (killing anything left in
// them) and its bridge. Deleting a namespace deletes its eth0 and so the
// veth pair; iptables rules live in the namespace and go with it.
func (l *lab) removeNetwork() {
	var wg sync.WaitGroup
	for _, nd := range l.nodes {
		if nd == nil {
			continue
		}
		wg.Add(1)
		go func(nd *node) {
			defer wg.Done()
			removeNamespace(nd.ns)
			_ = exec.Command("ip", "link", "del", nd.veth).Run()
		}(nd)
	}
	wg.Wait()
	_ = exec.Command("ip", "link", "del", l.br).Run()
}

// teardownAll is the emergency path (signal, imminent timeout): kill every
// daemon and remove every lab's network, without checks.
func teardownAll() {
	labsMu.Lock()
	ls := make([]*lab, 0, len(labs))
	for l := range labs {
		ls = append(ls, l)
	}
	labsMu.Unlock()
	for _, l := range ls {
		l.cancel()
		l.killAll()
		l.removeNetwork()
		fmt.Fprintf(os.Stderr, "e2e: %s: logs and data kept in %s\n", l.t.Name(), l.dir)
	}
}

func removeNamespace(ns string) {
	if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	_ = exec.Command("ip", "netns", "del", ns).Run()
}

var (
	leftoverNS   = regexp.MustCompile(`^gde([0-9a-z]+)-(?:[0-9]+|probe)$`)
	leftoverLink = regexp.MustCompile(`^gde([0-9a-z]+)(?:v[0-9]+|br)$`)
	leftoverBin  = regexp.MustCompile(`^gde([0-9a-z]+)-bin-[0-9]+$`)
)

// removeLeftovers deletes namespaces, veths and bridges named by the tag
// of a test process that is gone (and this process's own when own is
// set). A live e2e run's lab is left alone.
func removeLeftovers(own bool) {
	stale := func(t string) bool {
		pid, err := strconv.ParseInt(t, 36, 64)
		if err != nil {
			return false
		}
		if int(pid) == os.Getpid() {
			return own
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err != nil || !strings.Contains(string(cmdline), "e2e.test")
	}
	var removed []string
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			if m := leftoverNS.FindStringSubmatch(f[0]); m != nil && stale(m[1]) {
				removeNamespace(f[0])
				removed = append(removed, f[0])
			}
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		var links []string
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.SplitN(line, ": ", 3)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(f[1], "@")
			if m := leftoverLink.FindStringSubmatch(name); m != nil && stale(m[1]) {
				links = append(links, name)
			}
		}
		// veths first, then bridges
		slices.SortFunc(links, func(a, b string) int {
			return boolInt(strings.HasSuffix(a, "br")) - boolInt(strings.HasSuffix(b, "br"))
		})
		for _, name := range links {
			_ = exec.Command("ip", "link", "del", name).Run()
			removed = append(removed, name)
		}
	}
	// Binaries built by dead runs (their run dirs, kept for a failed
	// test, stay).
	bins, _ := filepath.Glob(filepath.Join(os.TempDir(), "gde*-bin-*"))
	for _, b := range bins {
		if m := leftoverBin.FindStringSubmatch(filepath.Base(b)); m != nil && stale(m[1]) {
			os.RemoveAll(b)
			removed = append(removed, b)
		}
	}
	if len(removed) > 0 && !own {
		fmt.Fprintf(os.Stderr, "e2e: removed leftovers of an earlier run: %s\n", strings.Join(removed, " "))
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	select {
	case <-c:
		return true
	case <-time.After(d):
		return false
	}
}

// ---------------------------------------------------------------- measuring

// slack is the margin added to the protocol's bounds (T_failover, T_heal)
// before asserting a measured time against them. The bounds are formulas
// of the protocol's intervals and assume the daemons run when their timers
// fire; on a loaded 2-core CI box (go test ./... runs other packages'
// tests at the same time, each daemon and recorder is a process) a
// timer can fire late and a packet can sit in a socket buffer while its
// reader is not scheduled. One second covers that with room, and is small
// next to T_heal (8.2 s) while still catching a missed protocol round
// trip in T_failover (2 s). GROUPD_E2E_SLACK overrides it for slower
// machines.
var slack = func() time.Duration {
	if s := os.Getenv("GROUPD_E2E_SLACK"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d >= 0 {
			return d
		}
	}
	return time.Second
}()

// isConverged is the L1 predicate (invariant.Converged) on a set of views.
func isConverged(sts []invitation.Status) bool { return len(invariantConverged(sts)) == 0 }

// isFailedOver is the L2 predicate (invariant.FailedOver).
func isFailedOver(sts []invitation.Status) bool { return len(invariantFailedOver(sts)) == 0 }

// measure returns how long after from the recorded history first shows ok
// on the views of ids. Call it once polling has seen ok hold; it gives the
// recorders up to 3 s to deliver the events that show it.
func (l *lab) measure(what string, from time.Time, ids []int, ok func([]invitation.Status) bool, polled time.Time) time.Duration {
	l.t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		if at, found := l.hist.firstTime(from, ids, ok); found {
			return at.Sub(from)
		}
		if time.Now().After(deadline) {
			l.t.Errorf("e2e: %s: polling saw it %.3fs after the fault, but the recorded events never show it (recorder lost events?); using the polled time",
				what, polled.Sub(from).Seconds())
			return polled.Sub(from)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkpoint places a check point at the instant at (waiting for the
// clock, and then briefly for the recorders, to pass it), replays the
// history up to now and fails the test if the check does not hold there.
// kind is recCheckL1 (every live node converged), recCheckL2 (ids, the
// survivors, failed over) or recCheckSide (ids converged among
// themselves).
func (l *lab) checkpoint(kind recKind, at time.Time, ids []int, what string) {
	l.t.Helper()
	id := l.hist.mark(kind, at, ids)
	if d := time.Until(at.Add(300 * time.Millisecond)); d > 0 {
		time.Sleep(d) // not an assertion: the check is about the instant at
	}
	res := l.hist.replay(time.Now())
	vs, ok := res.checks[id]
	switch {
	case !ok:
		l.t.Errorf("e2e: check point %q was not reached in the replay", what)
	case len(vs) > 0:
		for _, v := range vs {
			l.t.Errorf("%s: %s", what, v)
		}
	default:
		l.t.Logf("%s: holds", what)
	}
}
