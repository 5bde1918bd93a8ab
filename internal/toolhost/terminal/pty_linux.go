package terminal

import (
	"os"
	"syscall"
)

// pollable returns the pseudo-terminal master f as a File that the runtime
// poller serves, so that write deadlines work and Close interrupts a blocked
// Read. (creack/pty leaves f in blocking mode.) On failure it returns f.
func pollable(f *os.File) *os.File {
	fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return f
	}
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		_ = syscall.Close(int(fd))
		return f
	}
	_ = f.Close()
	return os.NewFile(fd, f.Name())
}
