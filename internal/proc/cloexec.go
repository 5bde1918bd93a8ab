package proc

import (
	"os"
	"strconv"
	"syscall"
)

// CloseInheritedOnExec marks every descriptor from 3 up close-on-exec. The
// descriptors stay open here.
//
// So the programs this process starts get only the descriptors handed to them
// (stdio and exec.Cmd.ExtraFiles), not whatever this process was started with.
// A descriptor that a parent leaked to boxsh must not reach the commands it
// runs.
func CloseInheritedOnExec() {
	if closeRangeOnExec(3) == nil {
		return
	}
	// Without close_range(CLOSE_RANGE_CLOEXEC) (Linux before 5.11, other
	// systems): each open descriptor in turn.
	dir := "/proc/self/fd"
	if _, err := os.Stat(dir); err != nil {
		dir = "/dev/fd"
	}
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	own := int(d.Fd())
	for _, name := range names {
		if fd, err := strconv.Atoi(name); err == nil && fd > 2 && fd != own {
			syscall.CloseOnExec(fd)
		}
	}
	_ = d.Close()
}
