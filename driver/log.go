package driver

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"reflect"
	"sync"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/wire"
)

// An input log records everything a machine was fed and everything it
// answered, so that a run of the real daemon can be replayed, input by
// input, through a new machine (Replay): the machine is deterministic, so
// the outputs must come out the same. It is NDJSON: a header line with the
// machine's configuration and its jitter seed, then one line per input
// with its time, the input and the stamped output.
//
//	{"groupd_input_log":1,"config":{...},"seed":-4321,"start":1795430400123456789}
//	{"t":1795430400323456789,"in":{"kind":"tick","due":1795430400321000000},"out":{...}}

const logVersion = 1

type logHeader struct {
	Version int       `json:"groupd_input_log"`
	Config  logConfig `json:"config"`
	Seed    int64     `json:"seed"`
	Start   int64     `json:"start"`
}

type logConfig struct {
	ID        uint64           `json:"id"`
	Priority  uint8            `json:"priority"`
	Boot      uint64           `json:"boot"`
	Counter   uint64           `json:"counter"`
	LastGroup string           `json:"last_group"`
	TimingMS  map[string]int64 `json:"timing_ms"`
	Election  string           `json:"election"`
	// Since the lease (protocol version 3): the saved term and the
	// quorum and preemption settings the machine decides by.
	Term       string `json:"term,omitempty"`
	Expect     int    `json:"expect,omitempty"`
	TieBreaker uint64 `json:"tie_breaker,omitempty"`
	NoPreempt  bool   `json:"no_preempt,omitempty"`
	// Since protocol version 4: where the node keeps its state, and the
	// quorum rule its state file kept.
	Home      uint32 `json:"home,omitempty"`
	RuleVoter uint32 `json:"rule_voters,omitempty"`
	RuleTie   uint64 `json:"rule_tie,omitempty"`
}

type logLine struct {
	T   int64     `json:"t"`
	In  *logInput `json:"in,omitempty"` // absent: the machine's start (New)
	Out logOutput `json:"out"`
}

type logInput struct {
	Kind    string      `json:"kind"` // recv, tick, peer-down, peer-left, saved, save-failed
	Msg     string      `json:"msg,omitempty"`
	Peer    uint64      `json:"peer,omitempty"`
	Durable *logDurable `json:"durable,omitempty"`
	Err     string      `json:"err,omitempty"`
	// Due is a tick's deadline in Unix nanoseconds (invitation.Tick.Due);
	// absent in logs written before it existed, which replay as ticks
	// without one.
	Due int64 `json:"due,omitempty"`
}

type logDurable struct {
	Counter    uint64 `json:"counter"`
	LastGroup  string `json:"last_group"`
	Term       string `json:"term,omitempty"`
	RuleVoters uint32 `json:"rule_voters,omitempty"`
	RuleTie    uint64 `json:"rule_tie,omitempty"`
}

type logOutput struct {
	Messages []logMessage `json:"msgs,omitempty"`
	Save     *logDurable  `json:"save,omitempty"`
	Events   []string     `json:"events,omitempty"`
	Created  []string     `json:"created,omitempty"`
	Notices  []string     `json:"notices,omitempty"`
}

type logMessage struct {
	To     uint64 `json:"to"`
	ToBoot uint64 `json:"to_boot,omitempty"`
	Msg    string `json:"msg"` // the wire encoding, hex
}

// LogWriter writes an input log. Observe is an Options.Observer; errors
// are kept (Err) rather than returned, so logging never stops the node.
type LogWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	enc *json.Encoder
	hdr *logHeader // written at the first Observe
	err error
}

// NewLogWriter starts an input log on w for a machine of cfg whose Rand was
// seeded with seed (math/rand.NewSource); the header is written at the
// machine's start (the first Observe).
func NewLogWriter(w io.Writer, cfg invitation.Config, seed int64) *LogWriter {
	bw := bufio.NewWriter(w)
	l := &LogWriter{w: bw, enc: json.NewEncoder(bw)}
	l.hdr = &logHeader{Version: logVersion, Config: encodeConfig(cfg), Seed: seed}
	return l
}

// Observe records one input and its output.
func (l *LogWriter) Observe(now time.Time, in invitation.Input, out invitation.Output) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	if l.hdr != nil {
		l.hdr.Start = now.UnixNano()
		l.err = l.enc.Encode(l.hdr)
		l.hdr = nil
	}
	line := logLine{T: now.UnixNano(), Out: encodeOutput(out)}
	if in != nil {
		line.In = encodeInput(in)
	}
	if l.err == nil {
		l.err = l.enc.Encode(line)
	}
	if l.err == nil {
		l.err = l.w.Flush()
	}
}

// Err returns the first write error, if any.
func (l *LogWriter) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func encodeConfig(c invitation.Config) logConfig {
	lc := logConfig{ID: uint64(c.ID), Priority: c.Priority, Boot: c.Boot, Counter: c.Durable.Counter,
		LastGroup: c.Durable.LastGroup.String(), TimingMS: map[string]int64{}, Election: string(c.Election),
		Expect: c.Quorum.Expect, TieBreaker: uint64(c.Quorum.TieBreaker), NoPreempt: c.NoPreempt,
		Home: c.Home, RuleVoter: c.Durable.Rule.Voters, RuleTie: uint64(c.Durable.Rule.Tie)}
	if !c.Durable.Term.IsZero() {
		lc.Term = c.Durable.Term.String()
	}
	for _, f := range invitation.TimingFields() {
		lc.TimingMS[f.Name] = int64(*f.Field(&c.Timing) / time.Millisecond)
	}
	return lc
}

func decodeConfig(lc logConfig, seed int64) (invitation.Config, error) {
	last, err := wire.ParseGroupNumber(lc.LastGroup)
	if err != nil {
		return invitation.Config{}, err
	}
	term, err := parseOptionalGroup(lc.Term)
	if err != nil {
		return invitation.Config{}, err
	}
	c := invitation.Config{ID: wire.NodeID(lc.ID), Priority: lc.Priority, Boot: lc.Boot,
		Durable: invitation.Durable{Counter: lc.Counter, LastGroup: last, Term: term,
			Rule: wire.Quorum{Voters: lc.RuleVoter, Tie: wire.NodeID(lc.RuleTie)}},
		Election: invitation.Election(lc.Election), Rand: rand.New(rand.NewSource(seed)),
		Quorum: invitation.Quorum{Expect: lc.Expect, TieBreaker: wire.NodeID(lc.TieBreaker)}, NoPreempt: lc.NoPreempt,
		Home: lc.Home}
	for _, f := range invitation.TimingFields() {
		ms, ok := lc.TimingMS[f.Name]
		if !ok {
			return c, fmt.Errorf("timing %s missing", f.Name)
		}
		*f.Field(&c.Timing) = time.Duration(ms) * time.Millisecond
	}
	return c, nil
}

func encodeDurable(d invitation.Durable) *logDurable {
	ld := &logDurable{Counter: d.Counter, LastGroup: d.LastGroup.String(), RuleVoters: d.Rule.Voters, RuleTie: uint64(d.Rule.Tie)}
	if !d.Term.IsZero() {
		ld.Term = d.Term.String()
	}
	return ld
}

// parseOptionalGroup parses a group number that logs written before it
// existed leave empty (zero).
func parseOptionalGroup(s string) (wire.GroupNumber, error) {
	if s == "" {
		return wire.GroupNumber{}, nil
	}
	return wire.ParseGroupNumber(s)
}

func decodeDurable(d *logDurable) (invitation.Durable, error) {
	if d == nil {
		return invitation.Durable{}, errors.New("durable state missing")
	}
	g, err := wire.ParseGroupNumber(d.LastGroup)
	if err != nil {
		return invitation.Durable{}, err
	}
	term, err := parseOptionalGroup(d.Term)
	return invitation.Durable{Counter: d.Counter, LastGroup: g, Term: term,
		Rule: wire.Quorum{Voters: d.RuleVoters, Tie: wire.NodeID(d.RuleTie)}}, err
}

func encodeMessage(m wire.Message) string {
	b, err := wire.Encode(m)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	return hex.EncodeToString(b)
}

func encodeInput(in invitation.Input) *logInput {
	switch in := in.(type) {
	case invitation.Receive:
		return &logInput{Kind: "recv", Msg: encodeMessage(in.Msg)}
	case invitation.Tick:
		li := &logInput{Kind: "tick"}
		if !in.Due.IsZero() {
			li.Due = in.Due.UnixNano()
		}
		return li
	case invitation.PeerDown:
		if in.Left {
			return &logInput{Kind: "peer-left", Peer: uint64(in.ID)}
		}
		return &logInput{Kind: "peer-down", Peer: uint64(in.ID)}
	case invitation.Saved:
		return &logInput{Kind: "saved", Durable: encodeDurable(in.Durable)}
	case invitation.SaveFailed:
		return &logInput{Kind: "save-failed", Durable: encodeDurable(in.Durable), Err: in.Err}
	}
	return &logInput{Kind: fmt.Sprintf("%T", in)}
}

func decodeInput(li *logInput) (invitation.Input, error) {
	switch li.Kind {
	case "recv":
		b, err := hex.DecodeString(li.Msg)
		if err != nil {
			return nil, err
		}
		m, err := wire.Decode(b)
		if err != nil {
			return nil, err
		}
		return invitation.Receive{Msg: m}, nil
	case "tick":
		if li.Due != 0 {
			return invitation.Tick{Due: time.Unix(0, li.Due)}, nil
		}
		return invitation.Tick{}, nil
	case "peer-down", "peer-left":
		return invitation.PeerDown{ID: wire.NodeID(li.Peer), Left: li.Kind == "peer-left"}, nil
	case "saved":
		d, err := decodeDurable(li.Durable)
		return invitation.Saved{Durable: d}, err
	case "save-failed":
		d, err := decodeDurable(li.Durable)
		return invitation.SaveFailed{Durable: d, Err: li.Err}, err
	}
	return nil, fmt.Errorf("unknown input kind %q", li.Kind)
}

func encodeOutput(o invitation.Output) logOutput {
	var lo logOutput
	for _, e := range o.Messages {
		lo.Messages = append(lo.Messages, logMessage{To: uint64(e.To), ToBoot: e.ToBoot, Msg: encodeMessage(e.Msg)})
	}
	if o.Save != nil {
		lo.Save = encodeDurable(*o.Save)
	}
	for _, e := range o.Events {
		lo.Events = append(lo.Events, fmt.Sprintf("%d %s: %s", e.Time.UnixNano(), e.Reason, e.New))
	}
	for _, g := range o.Created {
		lo.Created = append(lo.Created, g.String())
	}
	for _, n := range o.Notices {
		lo.Notices = append(lo.Notices, n.String())
	}
	return lo
}

// replayEnv is the runtime of a replay: saves complete when the log says
// so, and what the machine sends goes nowhere (the observer compares it).
type replayEnv struct{}

func (replayEnv) Send(wire.Envelope)                    {}
func (replayEnv) Save(invitation.Durable) (bool, error) { return false, nil }
func (replayEnv) Report(time.Time, invitation.Output)   {}

// Replay reads an input log and feeds its inputs, at their times, to a
// new machine built from its header, through a Driver (as the daemon and
// the simulator drive theirs), comparing every output with the recorded
// one. Messages are stamped with the packet counters the log recorded
// (the runtime's choice, see Options.NextCounter), so a log with gaps in
// them replays too. It returns how many inputs it replayed, and the first
// difference as an error naming the line of the file.
func Replay(r io.Reader) (int, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	var hdr logHeader
	if err := dec.Decode(&hdr); err != nil {
		return 0, fmt.Errorf("driver: input log header: %w", err)
	}
	if hdr.Version != logVersion {
		return 0, fmt.Errorf("driver: input log version %d, want %d", hdr.Version, logVersion)
	}
	cfg, err := decodeConfig(hdr.Config, hdr.Seed)
	if err != nil {
		return 0, fmt.Errorf("driver: input log header: %w", err)
	}
	var got []logOutput
	// The packet counters are the runtime's, not the machine's: a daemon
	// draws them from a counter it shares with packets of its own (a
	// keyed daemon's Challenge and Response), so the logged ones have
	// gaps. The replay stamps each message with the counter logged for
	// the message in its place, and compares the rest.
	var counters []uint64
	last := uint64(0)
	opts := Options{
		Observer: func(now time.Time, in invitation.Input, out invitation.Output) {
			got = append(got, encodeOutput(out))
		},
		NextCounter: func() uint64 {
			if len(counters) > 0 {
				last, counters = counters[0], counters[1:]
			} else {
				last++ // a message the log lacks: the comparison fails anyway
			}
			return last
		},
	}
	var line logLine
	if err := dec.Decode(&line); err != nil || line.In != nil {
		return 0, fmt.Errorf("driver: input log: the first line must be the machine's start (%v)", err)
	}
	counters = loggedCounters(line.Out)
	d, err := New(cfg, time.Unix(0, line.T), replayEnv{}, opts)
	if err != nil {
		return 0, fmt.Errorf("driver: replay: %w", err)
	}
	// Lines are numbered as in the file: the header is line 1, the
	// machine's start line 2, the first input line 3.
	if err := sameOutput(2, got, line.Out); err != nil {
		return 0, err
	}
	n := 0
	for lineNo := 3; ; lineNo++ {
		line = logLine{}
		if err := dec.Decode(&line); err == io.EOF {
			return n, nil
		} else if err != nil {
			return n, fmt.Errorf("driver: input log line %d: %w", lineNo, err)
		}
		if line.In == nil {
			return n, fmt.Errorf("driver: input log line %d: no input", lineNo)
		}
		in, err := decodeInput(line.In)
		if err != nil {
			return n, fmt.Errorf("driver: input log line %d: %w", lineNo, err)
		}
		got = got[:0]
		counters = loggedCounters(line.Out)
		// Feed the machine directly through the driver's carry, one
		// recorded input at a time: ticks included, as they were
		// logged, rather than the driver's own Tick loop.
		d.node.Step(time.Unix(0, line.T), in)
		d.carry(time.Unix(0, line.T), in, false)
		n++
		if err := sameOutput(lineNo, got, line.Out); err != nil {
			return n, err
		}
	}
}

// loggedCounters returns the packet counters of an output's messages, in
// order; a message that does not decode counts as 0 (the comparison then
// fails on it).
func loggedCounters(o logOutput) []uint64 {
	cs := make([]uint64, len(o.Messages))
	for i, lm := range o.Messages {
		if b, err := hex.DecodeString(lm.Msg); err == nil {
			if m, err := wire.Decode(b); err == nil {
				cs[i] = m.Counter
			}
		}
	}
	return cs
}

func sameOutput(lineNo int, got []logOutput, want logOutput) error {
	if len(got) != 1 {
		return fmt.Errorf("driver: replay diverged at line %d: %d outputs for one input", lineNo, len(got))
	}
	if !reflect.DeepEqual(got[0], want) {
		g, _ := json.Marshal(got[0])
		w, _ := json.Marshal(want)
		return fmt.Errorf("driver: replay diverged at line %d:\n got  %s\n want %s", lineNo, g, w)
	}
	return nil
}
