package host

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/proc"
)

// Freeze stops process init and all its descendants (a sandbox: its
// first process and what it started) with SIGSTOP, and returns what
// continues them. A rootless sandbox has no cgroup to freeze (see
// SandboxCgroup), so the processes are stopped one by one, parents
// before their children: a stopped parent neither forks nor waits, so
// no child appears unseen and no shell with job control sees a child
// stop (and takes its terminal back). The tree is walked again until a
// walk finds no process it had not stopped. Processes already stopped
// (by a command's own kill -STOP) are left stopped at thaw. Thaw
// continues them in the reverse order, children first.
//
// It fails, continuing what it stopped, when a process has not stopped
// within timeout (one in an uninterruptible sleep, say).
func Freeze(init int, timeout time.Duration) (thaw func(), err error) {
	deadline := time.Now().Add(timeout)
	var stopped []int
	thaw = func() {
		for i := len(stopped) - 1; i >= 0; i-- {
			_ = unix.Kill(stopped[i], unix.SIGCONT)
		}
	}
	seen := map[int]bool{}
	for {
		found := false
		children := map[int][]int{}
		for _, e := range proc.All() {
			children[e.PPID] = append(children[e.PPID], e.PID)
		}
		queue := []int{init}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			if !seen[pid] {
				seen[pid] = true
				found = true
				stop, err := stopOne(pid, deadline)
				if stop {
					stopped = append(stopped, pid)
				}
				if err != nil {
					thaw()
					return nil, err
				}
			}
			queue = append(queue, children[pid]...)
		}
		if !found {
			return thaw, nil
		}
	}
}

// stopOne stops process pid and waits until it has stopped (or is gone).
// stop tells whether it was sent SIGSTOP (it was not stopped already).
func stopOne(pid int, deadline time.Time) (stop bool, err error) {
	e, ok := proc.StatOf(pid)
	if !ok || e.State == 'T' || e.State == 't' || e.State == 'Z' || e.State == 'X' {
		return false, nil
	}
	if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("freeze: stop process %d: %w", pid, err)
	}
	for wait := 50 * time.Microsecond; ; wait = min(2*wait, 5*time.Millisecond) {
		e, ok := proc.StatOf(pid)
		if !ok || e.State == 'T' || e.State == 't' || e.State == 'Z' || e.State == 'X' {
			return true, nil
		}
		if time.Now().After(deadline) {
			return true, fmt.Errorf("freeze: process %d did not stop (state %c)", pid, e.State)
		}
		time.Sleep(wait)
	}
}
