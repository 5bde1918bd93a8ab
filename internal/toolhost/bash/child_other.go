//go:build !linux

package bash

import (
	"os"
	"syscall"
)

// child is a shell process of the pool's.
type child struct {
	pid  int
	proc *os.Process
}

// execChild takes over p, just started by exec.Cmd.
func execChild(p *os.Process) (*child, error) { return &child{pid: p.Pid, proc: p}, nil }

// wait waits for the child to exit and reaps it.
func (c *child) wait() (syscall.WaitStatus, error) {
	state, err := c.proc.Wait()
	var ws syscall.WaitStatus
	if state != nil {
		ws, _ = state.Sys().(syscall.WaitStatus)
	}
	return ws, err
}
