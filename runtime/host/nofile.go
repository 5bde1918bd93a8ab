package host

import (
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/runtime/plan"
)

// currentNoFile is the process's limit of open files now, or nil.
func currentNoFile() *plan.Rlimit {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &r) != nil {
		return nil
	}
	return &plan.Rlimit{Soft: uint64(r.Cur), Hard: uint64(r.Max)}
}
