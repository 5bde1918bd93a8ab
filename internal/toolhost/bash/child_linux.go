package bash

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// child is a shell process of the pool's, waited for through a pidfd in
// the runtime's poller: the goroutine that waits parks without holding a
// thread. A blocking wait system call held one per running shell: the
// scheduler then made more threads (16 in boxsh-init after a burst of
// calls, each keeping its stacks for good) and handed its Ps back and
// forth between them.
type child struct {
	pid   int
	pidfd *os.File // nil where the kernel has no pidfd_open (before 5.3)
}

// childOf returns the child with process id pid.
func childOf(pid int) (*child, error) {
	// Non-blocking, os.NewFile puts it in the poller: made so at once
	// (PIDFD_NONBLOCK, Linux 5.10) rather than by two fcntl calls after.
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.EINVAL) {
		if fd, err = unix.PidfdOpen(pid, 0); err == nil {
			if err = unix.SetNonblock(fd, true); err != nil {
				_ = unix.Close(fd)
				return nil, fmt.Errorf("pidfd %d: %w", pid, err)
			}
		}
	}
	if errors.Is(err, unix.ENOSYS) {
		return &child{pid: pid}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	return &child{pid: pid, pidfd: os.NewFile(uintptr(fd), "pidfd")}, nil
}

// execChild takes over p, just started by exec.Cmd: its exit status goes
// to the child, not to p.
func execChild(p *os.Process) (*child, error) {
	c, err := childOf(p.Pid)
	if err != nil {
		return nil, err
	}
	_ = p.Release()
	return c, nil
}

// wait waits for the child to exit and reaps it.
func (c *child) wait() (syscall.WaitStatus, error) {
	var ws syscall.WaitStatus
	if c.pidfd == nil {
		_, err := wait4(c.pid, &ws, 0)
		return ws, err
	}
	defer func() { _ = c.pidfd.Close() }()
	rc, err := c.pidfd.SyscallConn()
	if err != nil {
		return ws, err
	}
	var werr error
	// The pidfd turns readable when the process exits; until then
	// WNOHANG finds nothing and the goroutine waits in the poller.
	if err := rc.Read(func(uintptr) bool {
		var pid int
		pid, werr = wait4(c.pid, &ws, syscall.WNOHANG)
		return pid != 0 || werr != nil
	}); err != nil {
		return ws, err
	}
	return ws, werr
}

// wait4 is syscall.Wait4 for pid, retried when interrupted.
func wait4(pid int, ws *syscall.WaitStatus, options int) (int, error) {
	for {
		got, err := syscall.Wait4(pid, ws, options, nil)
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				err = fmt.Errorf("wait %d: %w", pid, err)
			}
			return got, err
		}
	}
}
