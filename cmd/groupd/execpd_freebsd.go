package main

import "syscall"

// hasPdeathsig: FreeBSD has a parent-death signal (procctl
// PROC_PDEATHSIG_CTL), which Go's SysProcAttr sets.
const hasPdeathsig = true

func setPdeathsig(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
