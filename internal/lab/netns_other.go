//go:build !linux

package lab

import (
	"errors"
	"runtime"
	"syscall"
)

// The lab needs Linux (network namespaces, iptables, tc); elsewhere it
// builds, and fails at its first namespace.

func withParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func inNetns(string, func() error) error {
	return errors.New("lab: network namespaces need Linux, not " + runtime.GOOS)
}
