//go:build linux

package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestAgreeOn(t *testing.T) {
	mem := func(id string, leader int, members ...int) pview {
		return pview{ID: id, Leader: leader, Members: members}
	}
	cs := peerSpecs["corosync"]
	set := []int{1, 2, 3}
	if v, ok := agreeOn(cs, map[int]pview{1: mem("1.9", 1, 1, 2, 3), 2: mem("1.9", 1, 1, 2, 3), 3: mem("1.9", 1, 1, 2, 3)}, set); !ok || v.Leader != 1 {
		t.Errorf("agreement not seen: %v %v", v, ok)
	}
	for name, views := range map[string]map[int]pview{
		"another ring":    {1: mem("1.9", 1, 1, 2, 3), 2: mem("1.9", 1, 1, 2, 3), 3: mem("1.d", 1, 1, 2, 3)},
		"missing member":  {1: mem("1.9", 1, 1, 2), 2: mem("1.9", 1, 1, 2, 3), 3: mem("1.9", 1, 1, 2, 3)},
		"leader not in":   {1: mem("4.9", 4, 1, 2, 3), 2: mem("4.9", 4, 1, 2, 3), 3: mem("4.9", 4, 1, 2, 3)},
		"one has no view": {1: mem("1.9", 1, 1, 2, 3), 2: mem("1.9", 1, 1, 2, 3)},
	} {
		if _, ok := agreeOn(cs, views, set); ok {
			t.Errorf("%s: agreement seen", name)
		}
	}
	// serf: membership only.
	if _, ok := agreeOn(peerSpecs["serf"], map[int]pview{1: mem("", 0, 1, 2), 2: mem("", 0, 1, 2)}, []int{1, 2}); !ok {
		t.Error("serf: agreement not seen")
	}
	// keepalived: one MASTER, the rest BACKUP.
	ka := peerSpecs["keepalived"]
	st := func(s ...string) map[int]pview {
		m := map[int]pview{}
		for i, x := range s {
			m[i+1] = pview{State: x}
		}
		return m
	}
	if v, ok := agreeOn(ka, st("BACKUP", "BACKUP", "MASTER"), set); !ok || v.Leader != 3 {
		t.Errorf("keepalived: %v %v", v, ok)
	}
	if v, ok := agreeOn(ka, st("BACKUP", "MASTER", "STOP"), []int{1, 2}); !ok || v.Leader != 2 {
		t.Errorf("keepalived, survivors: %v %v", v, ok)
	}
	// A lower node MASTER for a moment, before the highest preempts it.
	for _, s := range [][]string{{"BACKUP", "MASTER", "BACKUP"}, {"MASTER", "MASTER", "BACKUP"}, {"BACKUP", "BACKUP", "BACKUP"}, {"FAULT", "BACKUP", "MASTER"}} {
		if _, ok := agreeOn(ka, st(s...), set); ok {
			t.Errorf("keepalived %v: agreement seen", s)
		}
	}
}

func TestTrackerFollowsFiles(t *testing.T) {
	e := &peerEnv{dir: t.TempDir(), n: 3}
	spec := peerSpecs["jgroups"]
	write := func(i int, s string) {
		f, err := os.OpenFile(e.file("jgroups", i, "view.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	tr := newPeerTracker(spec, spec.sources[0], e)
	all := []int{1, 2, 3}
	write(1, "\nGMS: address=n1\n100.000001 view n1|0 n1 n1\n100.100000 view n1|1 n1 n1,n2,n3\n")
	write(2, "100.200000 view n1|1 n1 n1,n2,n3\n")
	write(3, "100.300000 view n1|1 n1 n2,n3") // no newline yet
	if err := tr.poll(); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.agreed(all, time.Time{}); ok {
		t.Fatal("agreement before node 3's line is complete")
	}
	write(3, ",n1\n")
	if err := tr.poll(); err != nil {
		t.Fatal(err)
	}
	v, ok := tr.agreed(all, time.Time{})
	if !ok || v.Leader != 1 || v.ID != "n1|1" {
		t.Fatalf("agreed %v %v: %s", v, ok, tr.describe())
	}
	if d := tr.doneAt(all); !d.Equal(time.Unix(100, 300000000)) {
		t.Errorf("doneAt %v", d)
	}
	if _, ok := tr.agreed(all, time.Unix(100, 250000000)); ok {
		t.Error("fresh: views from before the start count")
	}
	// Node 1 dies; 2 and 3 move on. The first reaction is node 3's.
	tr.setMark(time.Unix(101, 0))
	write(3, "102.500000 view n2|2 n2 n2,n3\n")
	write(2, "102.600000 view n2|2 n2 n2,n3\n")
	if err := tr.poll(); err != nil {
		t.Fatal(err)
	}
	v, ok = tr.agreed([]int{2, 3}, time.Unix(101, 0))
	if !ok || v.Leader != 2 {
		t.Fatalf("survivors %v %v", v, ok)
	}
	if d := tr.doneAt([]int{2, 3}); !d.Equal(time.Unix(102, 600000000)) {
		t.Errorf("doneAt %v", d)
	}
	if f, who := tr.firstAt([]int{2, 3}); !f.Equal(time.Unix(102, 500000000)) || who != 3 {
		t.Errorf("firstAt %v (node %d)", f, who)
	}
	// A rewritten (shorter) file is read again from its start.
	if err := os.WriteFile(e.file("jgroups", 2, "view.log"), []byte("200.0 view n2|9 n2 n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tr.poll(); err != nil {
		t.Fatal(err)
	}
	if v := tr.nodes[2].cur; v.ID != "n2|9" {
		t.Errorf("after a rewrite: %v", v)
	}
}

func TestSummarizeCostsAndMedian(t *testing.T) {
	if m := medianOf([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median %v", m)
	}
	if m := medianOf([]float64{4, 1, 2, 3}); m != 2 { // nearest rank: the lower middle
		t.Errorf("median %v", m)
	}
	med, mx := summarizeCosts(map[int]NodeCost{
		1: {TxPktsS: 1, CPUPct: 0.1, RSSKiB: 100},
		2: {TxPktsS: 3, CPUPct: 0.3, RSSKiB: 300},
		3: {TxPktsS: 2, CPUPct: 0.9, RSSKiB: 200},
	})
	if med.TxPktsS != 2 || med.CPUPct != 0.3 || med.RSSKiB != 200 || mx.TxPktsS != 3 || mx.CPUPct != 0.9 || mx.RSSKiB != 300 {
		t.Errorf("median %+v max %+v", med, mx)
	}
}

func TestPeersMarkdown(t *testing.T) {
	in := `{"kind":"cold","peer":"groupd","n":5,"trial":1,"seconds":2,"load":[0.5,0,0]}
{"kind":"failover","peer":"groupd","n":5,"trial":1,"seconds":0.7,"load":[0.5,0,0]}
{"kind":"failover","peer":"groupd","n":5,"trial":2,"seconds":0.8,"load":[0.6,0,0]}
{"kind":"failover","peer":"groupd","n":5,"trial":3,"seconds":0.75,"load":[0.6,0,0]}
{"kind":"failover","peer":"corosync","n":5,"trial":1,"seconds":7.5,"load":[0.7,0,0]}
{"kind":"failover","peer":"serf","n":5,"trial":1,"seconds":3,"alt":{"event-handler":4},"load":[0.7,0,0]}
{"kind":"idle","peer":"groupd","n":5,"window_s":30,"load":[0.5,0,0],"leader":5,"median":{"tx_pkts_s":20,"cpu_pct":1,"rss_kib":20480},"max":{"tx_pkts_s":30,"cpu_pct":1.2,"rss_kib":21504},"leader_own":{"tx_pkts_s":30,"cpu_pct":1.2,"rss_kib":21504}}
{"kind":"idle","peer":"corosync","n":5,"window_s":30,"load":[0.5,0,0],"leader":1,"median":{"tx_pkts_s":2,"cpu_pct":0.25,"rss_kib":14336},"max":{"tx_pkts_s":4,"cpu_pct":0.3,"rss_kib":14336}}
{"kind":"note","peer":"jgroups","n":5,"what":"unavailable","note":"apt-get install -y libjgroups-java failed"}
`
	d, err := readPeersNDJSON(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	md := peersMarkdown(d)
	for _, want := range []string{
		"## N = 5",
		"| groupd | coordinator | 2.00 (1 trial) | ×1.00 | 0.75 (0.70–0.80, 3) | ×1.00 |",
		"| corosync | ring representative | — | — | 7.50 (1 trial) | ×10.0 |",
		"| serf | none | — | — | 3.00 (1 trial) | ×4.00 |",
		"failover event-handler 4.00 (1 trial) s",
		"| corosync | 30 s | 2.00 / 4.00 | — | ×0.10 | 0.250 / 0.300 | — | ×0.25 | 14.0 / 14.0 | — | ×0.70 |",
		"- **jgroups N=5 unavailable**: apt-get install -y libjgroups-java failed",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
