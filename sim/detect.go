package sim

import (
	"cmp"
	"slices"

	"github.com/groupd/groupd/invitation"
)

// This file holds the failure detector's news after a network change:
// what each node will be told, queued one item at a time.

// downNews is what the failure detector will tell one node after a network
// change: each peer it can no longer reach both ways, at its own detection
// time. Only the next item sits in the event queue; a partition of N nodes
// would otherwise queue N² events at once (12.5 million, 1.4 GB, at
// N = 5,000).
type downNews struct {
	epoch uint64
	items []newsItem // by time, then by peer slot
	next  int
}

type newsItem struct {
	at    int64
	about int32
}

// planNews draws every live node's news about the current network.
func (s *Sim) planNews() {
	if len(s.news) < len(s.nodes) {
		s.news = append(s.news, make([]downNews, len(s.nodes)-len(s.news))...)
	}
	for i, a := range s.nodes {
		d := &s.news[i]
		d.epoch, d.items, d.next = s.epoch, d.items[:0], 0
		if !a.alive {
			continue
		}
		for j, b := range s.nodes {
			if i == j || !b.alive || b.id == a.id {
				continue
			}
			if (!s.reachable(int32(i), int32(j)) || !s.reachable(int32(j), int32(i))) && !s.otherProcess(int32(i), int32(j)) {
				d.items = append(d.items, newsItem{at: s.now + s.jitter(s.detect.Jitter), about: int32(j)})
			}
		}
		slices.SortStableFunc(d.items, func(x, y newsItem) int { return cmp.Compare(x.at, y.at) })
		if len(d.items) > 0 {
			s.push(event{at: d.items[0].at, kind: evNetworkNews, node: int32(i), inc: a.inc, epoch: s.epoch})
		}
	}
}

// otherProcess reports whether node slot to reaches, both ways, another
// live process with the ID of slot about: a second process started with
// the ID, or the first after the second went. The daemon then takes
// memberlist's news about the one that went as news of a previous
// instance (the ID announces another address: group's peerBook.staleDown),
// not as the ID's failure.
func (s *Sim) otherProcess(to, about int32) bool {
	id := s.nodes[about].id
	for _, k := range s.byID[id] {
		if k != about && s.nodes[k].alive && s.reachable(to, k) && s.reachable(k, to) {
			return true
		}
	}
	return false
}

// tellNews delivers a node's news that is due, and queues the rest.
func (s *Sim) tellNews(e *event) {
	n, d := s.nodes[e.node], &s.news[e.node]
	if !n.alive || e.inc != n.inc || e.epoch != s.epoch || d.epoch != e.epoch {
		return // restarted, or the network changed since: stale news
	}
	for d.next < len(d.items) && d.items[d.next].at <= s.now {
		about := s.nodes[d.items[d.next].about].id
		d.next++
		s.counts.PeerDowns++
		s.input(n, invitation.PeerDown{ID: about})
		if s.err != nil || !n.alive {
			return // a violation stops the run after this input
		}
	}
	if d.next < len(d.items) {
		s.push(event{at: d.items[d.next].at, kind: evNetworkNews, node: e.node, inc: n.inc, epoch: e.epoch})
	} else {
		d.items, d.next = nil, 0 // release the memory of a large partition
	}
}
