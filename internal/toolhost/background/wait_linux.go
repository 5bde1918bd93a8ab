package background

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitProcess waits for p to exit and reaps it, through a pidfd in the
// runtime's poller: the waiting goroutine holds no thread (see the bash
// pool's child).
func waitProcess(p *os.Process) (syscall.WaitStatus, error) {
	var ws syscall.WaitStatus
	fd, err := unix.PidfdOpen(p.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		// No pidfd (before Linux 5.10's PIDFD_NONBLOCK): a blocking wait.
		st, err := p.Wait()
		if err != nil {
			return ws, err
		}
		return st.Sys().(syscall.WaitStatus), nil
	}
	pid := p.Pid
	_ = p.Release()
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return ws, err
	}
	var werr error
	if err := rc.Read(func(uintptr) bool {
		for {
			got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				werr = fmt.Errorf("wait %d: %w", pid, err)
			}
			return got != 0 || err != nil
		}
	}); err != nil {
		return ws, err
	}
	return ws, werr
}

// procAttr puts a command in its own process group and kills it if
// boxsh-init dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
