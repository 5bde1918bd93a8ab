package bash

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// newPipe makes a pipe whose ends are closed on exec. Its read end is
// non-blocking, read through the runtime's poller (with deadlines), when
// pollRead is set; the other ends stay blocking, as the shell expects its
// own and as the pool writes a command or stdin once. (os.Pipe would make
// both ends non-blocking and register them with the poller, to make them
// blocking again when they are handed to the shell: a dozen system calls
// more per shell.)
func newPipe(pollRead bool) (r, w *os.File, err error) {
	var fds [2]int
	flags := syscall.O_CLOEXEC
	if pollRead {
		flags |= syscall.O_NONBLOCK
	}
	if err := syscall.Pipe2(fds[:], flags); err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	if pollRead {
		// Both ends were made non-blocking: the write end is made blocking
		// again by one fcntl (a write end has no other status flag), where
		// making the read end non-blocking took two (get, then set).
		if _, err := unix.FcntlInt(uintptr(fds[1]), unix.F_SETFL, 0); err != nil {
			_ = syscall.Close(fds[0])
			_ = syscall.Close(fds[1])
			return nil, nil, fmt.Errorf("pipe: %w", err)
		}
	}
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}
