package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// recorderProcess makes sure the background recorder runs for this lab's
// N nodes (RUN/recorder.pid holds "PID N").
func (l *Lab) recorderProcess() error {
	if len(l.cfg.Recorder) == 0 {
		return errors.New("lab: no recorder command (Config.Recorder)")
	}
	pidPath := filepath.Join(l.cfg.Dir, recorderPid)
	if pid, n := l.recorderRunning(); pid != 0 {
		if n == l.cfg.Nodes {
			return nil
		}
		// The lab grew or shrank: a new recorder for the new N.
		_ = l.stopRecorderProcess()
	}
	logf, err := os.OpenFile(filepath.Join(l.cfg.Dir, recorderLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, permFile)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(l.cfg.Recorder[0], append(l.cfg.Recorder[1:], l.cfg.Dir)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("lab: starting the recorder: %w", err)
	}
	go cmd.Wait() // reap it if this process lives on
	return os.WriteFile(pidPath, fmt.Appendf(nil, "%d %d\n", cmd.Process.Pid, l.cfg.Nodes), permFile)
}

// recorderRunning returns the background recorder's pid and node count
// (0 when none runs).
func (l *Lab) recorderRunning() (pid, n int) {
	b, err := os.ReadFile(filepath.Join(l.cfg.Dir, recorderPid))
	if err != nil {
		return 0, 0
	}
	if _, err := fmt.Sscan(string(b), &pid, &n); err != nil {
		return 0, 0
	}
	if !procAlive(pid, l.cfg.Dir) {
		return 0, 0
	}
	return pid, n
}

func (l *Lab) stopRecorderProcess() error {
	pid, _ := l.recorderRunning()
	if pid == 0 {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for t := 0; t < 40 && procAlive(pid, ""); t++ {
		time.Sleep(50 * time.Millisecond)
	}
	if procAlive(pid, "") {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return os.Remove(filepath.Join(l.cfg.Dir, recorderPid))
}
