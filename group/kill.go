package group

// Kill stops a running agent the way kill -9 stops the daemon, for tests
// of failover in one process: at once, with no memberlist Leave and no
// goodbye, so that the other nodes learn of it only from their failure
// detectors (a coordinator's members within AliveInterval + AliveTimeout,
// memberlist later; see DefaultLANConfig), as they would of a crash.
// Cancelling Run's context instead leaves the group gracefully, and the
// others take over at once.
//
// OnEvent and the subscribers get no leader-stop, and BeforeLeave is not
// called (groupd's --on-change hook thus runs none). Inside the process
// the agent ends as Run always ends it:
// LeaderCallbacks.OnStoppedLeading is called for a leadership still
// current, and the channels of Subscribe and WatchLeader are closed. Run
// returns nil.
//
// Kill waits for Run to return. Before Run, it makes Run stop as soon as
// it starts (an agent that will not be run still needs Close). A second
// Kill does nothing.
func (a *Agent) Kill() {
	a.killOnce.Do(func() { close(a.crashCh) })
	if a.started.Load() {
		<-a.done
	}
}

// Err returns what Run returned once it has returned (Done is closed), and
// nil before: nil after its context was done or Kill, ErrDuplicateID when
// another live process uses this node's ID, or why memberlist could not
// start. A reader whose Subscribe or WatchLeader channel was closed can
// wait for Done and ask Err why the agent stopped.
func (a *Agent) Err() error {
	select {
	case <-a.done:
		return a.runErr
	default:
		return nil
	}
}
