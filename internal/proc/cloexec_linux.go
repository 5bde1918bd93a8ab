package proc

import "golang.org/x/sys/unix"

func closeRangeOnExec(first uint) error {
	return unix.CloseRange(first, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
}
