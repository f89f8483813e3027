package quorum

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/groupd/groupd/wire"
)

// TestData runs the scripts in testdata/: the rule's arithmetic, the roll
// of voters and the lease, with the results as the expected output.
// Regenerate with
//
//	go test ./invitation/quorum -rewrite
//
// and read the diff: every line is a claim about the design (§8).
//
// Times are milliseconds since the start of the script; boots and homes
// are hex.
//
//	holds voters=N [tie=ID] k=N [has-tie]   is k voters a quorum
//	covers a=(N,TIE) b=(N,TIE)              is rule a at least as strict as b
//	join a=(N,TIE) b=(N,TIE)                the strictest of both
//	lease at=MS voters=N [tie=ID] [self-tie] [self=MS] [grants=(UNTIL[/tie],...)]
//	                                        a leader's lease from its grants
//	roll self=ID [max=N] [settle=MS]        a new, empty roll (settle: 100 by default)
//	heard at=MS id=ID boot=HEX [fresh] [age=MS] [home=HEX] [expect=N] [tb=ID] [noq]
//	                                        a packet of the process (noq: one that says
//	                                        nothing of its sender's quorum, age and home)
//	listed at=MS ids=(ID,...) [homes=(HEX,...)]   a member list the node holds
//	left id=ID                              the node left gracefully
//	sweep at=MS timeout=MS [members=(ID,...)]     forget the processes not heard
//	rule expect=N [tb=ID]                   the rule the roll gives
//	counts id=ID boot=HEX                   whether a leader counts its grants
//
// Every command that changes the roll prints it: one line per ID, its
// processes oldest first, then the processes in all and the disputed IDs.
func TestData(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var r *Roll
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "holds":
				ru := Rule{Voters: intArg(t, d, "voters", 0), Tie: wire.NodeID(intArg(t, d, "tie", 0))}
				return fmt.Sprintln(ru.Holds(intArg(t, d, "k", 0), d.HasArg("has-tie")))
			case "covers":
				return fmt.Sprintln(ruleArg(t, d, "a").Covers(ruleArg(t, d, "b")))
			case "join":
				return showRule(ruleArg(t, d, "a").Join(ruleArg(t, d, "b")))
			case "lease":
				return lease(t, d)
			case "roll":
				r = NewRoll(wire.NodeID(intArg(t, d, "self", 0)), intArg(t, d, "max", 8192), dur(intArg(t, d, "settle", 100)))
				return show(r)
			}
			if r == nil {
				d.Fatalf(t, "%s before roll", d.Cmd)
			}
			at := ms(intArg(t, d, "at", 0))
			switch d.Cmd {
			case "heard":
				q := wire.Quorum{Expect: uint32(intArg(t, d, "expect", 0)), TieBreaker: wire.NodeID(intArg(t, d, "tb", 0)),
					Age: uint32(intArg(t, d, "age", 0)), Home: uint32(hexArg(t, d, "home"))}
				q.Voters = q.Expect
				r.Heard(at, wire.NodeID(intArg(t, d, "id", 0)), hexArg(t, d, "boot"), d.HasArg("fresh"), q, !d.HasArg("noq"))
				return show(r)
			case "listed":
				var ms []wire.Member
				for _, id := range listArg(t, d, "ids", 10) {
					ms = append(ms, wire.Member{ID: wire.NodeID(id)})
				}
				var homes []uint32
				for _, h := range listArg(t, d, "homes", 16) {
					homes = append(homes, uint32(h))
				}
				r.Listed(at, ms, homes)
				return show(r)
			case "left":
				r.Left(wire.NodeID(intArg(t, d, "id", 0)))
				return show(r)
			case "sweep":
				members := listArg(t, d, "members", 10)
				r.Sweep(at, dur(intArg(t, d, "timeout", 0)), func(id wire.NodeID) bool { return slices.Contains(members, uint64(id)) })
				return show(r)
			case "rule":
				return showRule(r.Rule(intArg(t, d, "expect", 0), wire.NodeID(intArg(t, d, "tb", 0))))
			case "counts":
				return fmt.Sprintln(r.Counts(wire.NodeID(intArg(t, d, "id", 0)), hexArg(t, d, "boot")))
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

// t0 is the scripts' start: times are milliseconds after it.
var t0 = time.Unix(1000, 0)

func ms(n int) time.Time { return t0.Add(dur(n)) }

func dur(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func since(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Sub(t0).String()
}

func lease(t *testing.T, d *datadriven.TestData) string {
	ru := Rule{Voters: intArg(t, d, "voters", 0), Tie: wire.NodeID(intArg(t, d, "tie", 0))}
	var gs []Grant
	for _, a := range d.CmdArgs {
		if a.Key != "grants" {
			continue
		}
		for _, g := range a.Vals {
			until, tie := strings.CutSuffix(g, "/tie")
			n, err := strconv.Atoi(until)
			if err != nil {
				d.Fatalf(t, "grants: %v", err)
			}
			gs = append(gs, Grant{Until: ms(n), Tie: tie})
		}
	}
	ok, until := Lease(ms(intArg(t, d, "at", 0)), ru, d.HasArg("self-tie"), dur(intArg(t, d, "self", 0)), gs)
	if !ok {
		return "not primary\n"
	}
	return fmt.Sprintf("primary until %s\n", since(until))
}

func show(r *Roll) string {
	var b strings.Builder
	ids := make([]wire.NodeID, 0, len(r.byID))
	for id := range r.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "%d:", id)
		for _, v := range r.byID[id] {
			fmt.Fprintf(&b, " [boot %x", v.boot)
			if v.home != 0 {
				fmt.Fprintf(&b, " home %x", v.home)
			}
			if v.fresh {
				b.WriteString(" fresh")
			}
			if v.prev != 0 {
				fmt.Fprintf(&b, " prev %x", v.prev)
			}
			fmt.Fprintf(&b, " started %s heard %s", since(v.started), since(v.heard))
			if v.heardQ {
				fmt.Fprintf(&b, " expect %d", v.q.Expect)
				if v.q.TieBreaker != 0 {
					fmt.Fprintf(&b, " tb %d", v.q.TieBreaker)
				}
			}
			b.WriteString("]")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "processes %d, disputed %v\n", r.Size(), r.Extra())
	return b.String()
}

func showRule(r Rule) string {
	if r.Tie == 0 {
		return fmt.Sprintf("a majority of %d, no tie-breaker\n", r.Voters)
	}
	return fmt.Sprintf("a majority of %d, or half with %d\n", r.Voters, r.Tie)
}

func intArg(t *testing.T, d *datadriven.TestData, key string, def int) int {
	if !d.HasArg(key) {
		return def
	}
	var v int
	d.ScanArgs(t, key, &v)
	return v
}

func hexArg(t *testing.T, d *datadriven.TestData, key string) uint64 {
	if !d.HasArg(key) {
		return 0
	}
	var s string
	d.ScanArgs(t, key, &s)
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return v
}

// listArg reads key=(a,b,c) in base.
func listArg(t *testing.T, d *datadriven.TestData, key string, base int) []uint64 {
	if !d.HasArg(key) {
		return nil
	}
	var out []uint64
	for _, a := range d.CmdArgs {
		if a.Key != key {
			continue
		}
		for _, v := range a.Vals {
			n, err := strconv.ParseUint(v, base, 64)
			if err != nil {
				d.Fatalf(t, "%s: %v", key, err)
			}
			out = append(out, n)
		}
	}
	return out
}

// ruleArg reads key=(voters,tie).
func ruleArg(t *testing.T, d *datadriven.TestData, key string) Rule {
	v := listArg(t, d, key, 10)
	if len(v) != 2 {
		d.Fatalf(t, "%s=(voters,tie)", key)
	}
	return Rule{Voters: int(v[0]), Tie: wire.NodeID(v[1])}
}
