package agent

import (
	"os"
	"strconv"
	"syscall"

	"github.com/boxsh/boxsh/internal/proc"
)

// freezeDescendants stops (SIGSTOP) every process descended from this one
// and returns them: stopped, none can fork or exit, so that a process that
// left its command's process group (setsid) cannot be orphaned out of
// reach while the groups are killed. It walks the tree again until it
// finds no new process, as one may have forked before it was stopped.
// Where /proc lists no children it finds nothing.
func freezeDescendants() []int {
	seen := map[int]bool{}
	var all []int
	for range 8 {
		found := false
		queue := proc.ChildrenOf(strconv.Itoa(os.Getpid()))
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			if !seen[pid] {
				seen[pid] = true
				found = true
				all = append(all, pid)
				_ = syscall.Kill(pid, syscall.SIGSTOP)
			}
			queue = append(queue, proc.ChildrenOf(strconv.Itoa(pid))...)
		}
		if !found {
			break
		}
	}
	return all
}

// killAll kills the processes pids.
func killAll(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
