package drain

import "golang.org/x/sys/unix"

// pipeSize is the capacity of pipe fd: the most it can hold.
func pipeSize(fd uintptr) int {
	n, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
	if err != nil || n <= 0 {
		return maxPipe
	}
	return n
}

// maxPipe is the largest capacity an unprivileged process can give a pipe
// (the default fs.pipe-max-size).
const maxPipe = 1 << 20
