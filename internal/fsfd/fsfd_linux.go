// Package fsfd changes files through descriptors that name them, O_PATH ones
// included.
//
// So a change never follows a name that another process may have replaced
// meanwhile.
package fsfd

import (
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// Chmod sets the mode of the file of descriptor fd.
func Chmod(fd int, mode uint32) error {
	err := unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// Before fchmodat2 (Linux 6.6): the descriptor's own file, as
		// procfs names it.
		err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
	}
	return err
}
