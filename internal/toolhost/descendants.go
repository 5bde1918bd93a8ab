package toolhost

import (
	"os"
	"strconv"
	"syscall"

	"github.com/boxsh/boxsh/internal/proc"
)

// freezeDescendants stops (SIGSTOP) every process descended from this one
// and returns them. A stopped process can neither exit nor fork. So a
// process that left its command's process group (setsid) cannot be
// orphaned out of reach while the groups are killed.
//
// Each process is stopped before its children are listed. Once kill
// returns, the stop is pending for the whole process. A fork that has not
// completed yet fails and restarts after it, so the list is complete.
// Where /proc lists no children, freezeDescendants finds nothing.
func freezeDescendants() []int {
	var all []int
	seen := map[int]bool{}
	queue := proc.ChildrenOf(strconv.Itoa(os.Getpid()))
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		if syscall.Kill(pid, syscall.SIGSTOP) != nil {
			continue // gone
		}
		all = append(all, pid)
		queue = append(queue, proc.ChildrenOf(strconv.Itoa(pid))...)
	}
	return all
}

// killAll kills the processes pids.
func killAll(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
