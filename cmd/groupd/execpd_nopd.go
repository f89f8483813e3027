//go:build !linux && !freebsd

package main

import "syscall"

// hasPdeathsig: no parent-death signal on this platform (macOS, the other
// BSDs).
const hasPdeathsig = false

func setPdeathsig(*syscall.SysProcAttr) {}
