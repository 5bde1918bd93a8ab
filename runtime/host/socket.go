package host

import (
	"fmt"
	"os"
	"syscall"
)

// SocketPair returns the two ends of a Unix stream socket pair.
//
// Both are close-on-exec; ExtraFiles clears the flag on the child's copy.
func SocketPair() (*os.File, *os.File, error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "frames"), os.NewFile(uintptr(fds[1]), "frames-init"), nil
}
