//go:build !linux

package cgroup

import (
	"context"
	"errors"
	"os"
	"runtime"
	"syscall"
)

// ErrUnsupported is every call's error off Linux: there are no cgroups.
var ErrUnsupported = errors.New("cgroup: no cgroups on " + runtime.GOOS + " (Linux only)")

// Self fails off Linux.
func Self() (string, error) { return "", ErrUnsupported }

// Open fails off Linux.
func Open(string) (*Group, error) { return nil, ErrUnsupported }

// Create fails off Linux.
func Create(string) (*Group, error) { return nil, ErrUnsupported }

// Every method of Group fails off Linux (no Group is ever made there).

func (g *Group) Check() error                    { return ErrUnsupported }
func (g *Group) Dir() (*os.File, error)          { return nil, ErrUnsupported }
func (g *Group) Add(int) error                   { return ErrUnsupported }
func (g *Group) Procs() ([]int, error)           { return nil, ErrUnsupported }
func (g *Group) Populated() (bool, error)        { return false, ErrUnsupported }
func (g *Group) Signal(syscall.Signal) error     { return ErrUnsupported }
func (g *Group) Kill() error                     { return ErrUnsupported }
func (g *Group) WaitEmpty(context.Context) error { return ErrUnsupported }
func (g *Group) Remove() error                   { return ErrUnsupported }
