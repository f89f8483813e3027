package group

import (
	"context"
	"sync"
	"time"
)

// Other nodes' names come from their memberlist meta, which can arrive
// after the group settles: with multicast, a node joins memberlist to its
// coordinator when it hears the coordinator's beacon, and a coordinator
// beacons only once it coordinates, after it invited the node. So a view
// published at the invitation, or at the Ready, may not know its
// coordinator's name yet. When the name arrives, the loop patches the
// current view (nameKnown), so that Status, the API and WatchLeader show
// it; OnNewLeader, which runs off the loop, waits for it a little
// (nameOf), and so can an embedder's own goroutine (NameOf: groupd's
// --on-change hook).

// nameBoard tells waiters that a name was learned.
type nameBoard struct {
	mu sync.Mutex
	ch chan struct{} // closed and replaced when a name is learned
}

// changed returns a channel closed at the next learned.
func (b *nameBoard) changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// learned wakes every waiter.
func (b *nameBoard) learned() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}

// nameWait bounds how long OnNewLeader and NameOf wait for a coordinator's
// name: its next heartbeat, within AliveInterval, prompts the memberlist
// join that brings its meta, unless a join was tried within BeaconInterval.
func (a *Agent) nameWait() time.Duration {
	return a.cfg.Timing.BeaconInterval + a.cfg.Timing.AliveInterval
}

// NameOf returns node id's name: this node's own, or what id's memberlist
// meta says, waiting for it to arrive up to BeaconInterval +
// AliveInterval (the coordinator's next heartbeat prompts the memberlist
// join that brings its meta), or until ctx is done (then it returns what
// is known by then). It returns "" for id 0, and when the name did not
// come. Other nodes' names can arrive after the group settles, so a view
// may name its coordinator "": an OnEvent handler that needs the name
// asks NameOf from a goroutine of its own (it waits; OnEvent must not).
func (a *Agent) NameOf(ctx context.Context, id NodeID) string {
	return a.nameOf(id, "", ctx.Done())
}

// nameOf returns node id's name: known if it is not empty, this node's own
// name, or what id's memberlist meta says, waiting up to nameWait for it
// to arrive (or until stop is closed). It returns "" for id 0, and when the
// name did not come.
func (a *Agent) nameOf(id NodeID, known string, stop <-chan struct{}) string {
	switch {
	case known != "" || id == 0:
		return known
	case id == a.id:
		return a.name
	}
	timeout := time.NewTimer(a.nameWait())
	defer timeout.Stop()
	for {
		learned := a.names.changed()
		if n := a.peers.name(id); n != "" {
			return n
		}
		select {
		case <-learned:
		case <-timeout.C:
			return ""
		case <-stop:
			return a.peers.name(id)
		}
	}
}

// nameLearned is called (on memberlist's goroutine) when node id's meta
// brought a name the address book did not have: it wakes the waiters of
// nameOf and, when id coordinates this node's group under no name, asks
// the loop to patch the view.
func (a *Agent) nameLearned(id NodeID) {
	a.names.learned()
	p := &a.pub
	p.mu.Lock()
	patch := p.st.Coordinator == id && p.st.CoordinatorName == ""
	p.mu.Unlock()
	if !patch {
		return
	}
	select {
	case a.gossipCh <- gossipEvent{id: id, named: true}:
	default:
		// The loop is busy; the next change of the view picks the name
		// up (view asks the address book).
	}
}

// nameKnown gives the current view its coordinator's name once the
// address book has it, and tells WatchLeader's readers. It runs on the
// loop, as every change of the view does.
func (p *publisher) nameKnown(id NodeID) {
	name := p.a.peers.name(id)
	p.mu.Lock()
	if p.st.Coordinator != id || name == "" || p.st.CoordinatorName == name {
		p.mu.Unlock()
		return
	}
	p.st.CoordinatorName = name
	p.mu.Unlock()
	p.notifyWatchers()
}
