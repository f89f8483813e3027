package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/groupd/groupd/wire"
)

func wireID(i int) wire.NodeID { return wire.NodeID(i) }

// record makes sure every node's event stream is being recorded: by
// goroutines of this process, or by the background recorder
// (Config.Recorder) for a lab whose daemons outlive the command.
func (l *Lab) record() error {
	l.recMu.Lock()
	defer l.recMu.Unlock()
	if l.hist == nil {
		return l.recorderProcess()
	}
	if l.recOn {
		return nil
	}
	l.recOn = true
	for _, nd := range l.nodes[1:] {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.follow(nd)
		}()
	}
	return nil
}

// Record records every node's event stream into the run dir's history
// until ctx is done: the background recorder's loop (`lab record`).
func (l *Lab) Record(ctx context.Context) error {
	l.recMu.Lock()
	if l.recOn {
		l.recMu.Unlock()
		return errors.New("lab: already recording")
	}
	l.recOn = true
	l.recMu.Unlock()
	for _, nd := range l.nodes[1:] {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.follow(nd)
		}()
	}
	select {
	case <-ctx.Done():
	case <-l.ctx.Done():
	}
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hdone = true
	if l.hfile != nil {
		err := l.hfile.Close()
		l.hfile = nil
		return err
	}
	return nil
}

// follow records node nd's events (GET /v1/events, what `groupd watch
// --json` prints) for as long as the lab lives, through kills and
// restarts: it waits for a daemon, follows its stream, and when the
// stream ends while the daemon runs, connects again.
func (l *Lab) follow(nd *node) {
	for {
		pid, done := nd.process()
		if pid != 0 && nd.options().borrowed(nd.id) {
			// Another node's ID: its events are not this node's.
			pid = 0
		}
		if pid == 0 {
			nd.mu.Lock()
			wake := nd.wake
			nd.mu.Unlock()
			if l.hist == nil {
				// Daemons started by other commands: poll the pid file.
				wake = nil
			}
			select {
			case <-l.ctx.Done():
				return
			case <-wake:
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		s, err := nd.client.Watch(l.ctx)
		if err != nil {
			select {
			case <-l.ctx.Done():
				return
			case <-done:
			case <-time.After(20 * time.Millisecond): // the daemon has not opened its API yet
			}
			continue
		}
		for {
			line, err := s.NextRaw()
			if err != nil {
				break
			}
			l.recordLine(nd.id, line)
		}
		s.Close()
		select {
		case <-l.ctx.Done():
			return
		case <-done:
		case <-time.After(100 * time.Millisecond):
			l.recorderNote("node %d: the event stream ended while the daemon runs; reconnecting", nd.id)
		}
	}
}

// recordLine adds one event line of node i to the history.
func (l *Lab) recordLine(i int, line []byte) {
	if l.hist != nil {
		if err := l.hist.AddLine(wireID(i), line); err != nil {
			l.recorderNote("%v", err)
		}
	}
	if err := l.appendHistory(line); err != nil && l.ctx.Err() == nil {
		l.recorderNote("%v", err)
	}
}

// recorderNote appends a line to recorder.log.
func (l *Lab) recorderNote(format string, args ...any) {
	f, err := os.OpenFile(filepath.Join(l.cfg.Dir, recorderLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, permFile)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
}

// StopRecording ends the recording (lab.sh stop): the recorders of this
// process, or the background recorder.
func (l *Lab) StopRecording() error { return l.stopRecording() }

// stopRecording ends the recorders (the goroutines, or the background
// process).
func (l *Lab) stopRecording() error {
	l.cancel()
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		return errors.New("lab: the recorders did not stop within 5 s")
	}
	if l.hist == nil {
		return l.stopRecorderProcess()
	}
	return nil
}
