package host

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/proc"
)

// Freeze stops process init and all its descendants with SIGSTOP, and returns
// what continues them.
//
// For a sandbox, init is its first process. A rootless sandbox has no cgroup
// to freeze (see SandboxCgroup and FreezeCgroup), so the processes are stopped
// one by one. Each walk of the tree stops parents before their children: a
// stopped parent neither forks nor waits, so no shell with job control sees a
// child stop and takes its terminal back.
//
// A process not yet stopped may continue one already stopped (kill -CONT). So
// the tree is walked again and again, stopping any process that is not
// stopped, until a walk:
//
//   - finds every thread of every process stopped,
//   - sends no signal, and
//   - finds the same processes as the walk before, none of which has run since
//     (their threads' run times, /proc/PID/task/TID/schedstat, are the same).
//
// Processes stopped before Freeze (by a command's own kill -STOP) and not
// continued meanwhile are left stopped at thaw. Thaw continues the others in
// the reverse order, children first.
//
// Once Freeze has returned, nothing holds the processes stopped but the
// absence of a SIGCONT. One from outside the tree continues a process for the
// rest of the pause. Only a cgroup's freezer holds against that
// (FreezeCgroup).
//
// Freeze fails, continuing what it stopped, when the tree has not stood still
// within timeout: a process in an uninterruptible sleep, or processes that
// keep continuing one another.
func Freeze(init int, timeout time.Duration) (thaw func(), err error) {
	deadline := time.Now().Add(timeout)
	var order []int
	stopped := map[int]bool{}
	thaw = func() {
		for i := len(order) - 1; i >= 0; i-- {
			_ = unix.Kill(order[i], unix.SIGCONT)
		}
	}
	var last map[int]uint64
	for wait := 50 * time.Microsecond; ; wait = min(2*wait, 5*time.Millisecond) {
		walk, running, err := stopTree(init, func(pid int) {
			if !stopped[pid] {
				stopped[pid] = true
				order = append(order, pid)
			}
		})
		if err != nil {
			thaw()
			return nil, err
		}
		if running == nil && sameRun(last, walk) {
			return thaw, nil
		}
		if time.Now().After(deadline) {
			thaw()
			if running != nil {
				return nil, fmt.Errorf("freeze: process %d did not stop (state %c) within %v", running.pid, running.state, timeout)
			}
			return nil, fmt.Errorf("freeze: the processes of the sandbox kept running (continuing one another) for %v", timeout)
		}
		last = walk
		if running != nil {
			time.Sleep(wait) // for the signals just sent to be taken
		}
	}
}

// running is a process a walk found running.
type running struct {
	pid   int
	state byte
}

// stopTree walks the tree of process init, parents before children, and
// sends SIGSTOP to each process not stopped (calling stop with its pid).
// It returns the run time of each process of the tree, and the first
// process it found running (nil: none).
func stopTree(init int, stop func(pid int)) (run map[int]uint64, first *running, err error) {
	children := map[int][]int{}
	for _, e := range proc.All() {
		children[e.PPID] = append(children[e.PPID], e.PID)
	}
	run = map[int]uint64{}
	queue := []int{init}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		t, ok := taskStates(pid)
		if !ok {
			continue
		}
		if !t.stopped {
			if err := unix.Kill(pid, unix.SIGSTOP); err != nil && !errors.Is(err, unix.ESRCH) {
				return nil, nil, fmt.Errorf("freeze: stop process %d: %w", pid, err)
			}
			stop(pid)
			if first == nil {
				first = &running{pid, t.state}
			}
		}
		run[pid] = t.run
		queue = append(queue, children[pid]...)
	}
	return run, first, nil
}

// sameRun tells whether two walks found the same processes, with the
// same run times.
func sameRun(a, b map[int]uint64) bool {
	if a == nil || len(a) != len(b) {
		return false
	}
	for pid, r := range a {
		if s, ok := b[pid]; !ok || s != r {
			return false
		}
	}
	return true
}

// tasks is what the threads of a process tell of it.
type tasks struct {
	// stopped: every thread is stopped (or traced, or dead); state is
	// the state of one that is not.
	stopped bool
	state   byte
	// run is the sum of the threads' run times (ns), and of their
	// counts of times on a CPU.
	run uint64
}

// taskStates reads the threads of process pid (false: it is gone).
func taskStates(pid int) (tasks, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return tasks{}, false
	}
	t := tasks{stopped: true}
	alive := false
	for _, e := range ents {
		st, ok := taskState(filepath.Join(dir, e.Name()))
		if !ok {
			continue
		}
		alive = true
		if !strings.ContainsRune("TtZX", rune(st)) && t.stopped {
			t.stopped, t.state = false, st
		}
		t.run += schedRun(filepath.Join(dir, e.Name(), "schedstat"))
	}
	return t, alive
}

// taskState is the state letter of the thread whose /proc directory is
// dir.
func taskState(dir string) (byte, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0, false
	}
	// tid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, false
	}
	return b[i+2], true
}

// schedRun is the run time and the count of times on a CPU of a thread's
// schedstat file (0 where the kernel keeps none).
func schedRun(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var sum uint64
	f := strings.Fields(string(b))
	for _, i := range []int{0, 2} {
		if i < len(f) {
			n, _ := strconv.ParseUint(f[i], 10, 64)
			sum += n
		}
	}
	return sum
}

// FreezeCgroup freezes the processes of the cgroup v2 directory dir with its
// freezer, and returns what thaws them.
//
// dir is a sandbox's own cgroup (see Container.CgroupDir). A frozen process
// cannot be continued by a signal: the cgroup stays frozen until thaw.
func FreezeCgroup(dir string, timeout time.Duration) (thaw func(), err error) {
	file := filepath.Join(dir, "cgroup.freeze")
	thaw = func() { _ = os.WriteFile(file, []byte("0"), 0) }
	if err := os.WriteFile(file, []byte("1"), 0); err != nil {
		return nil, fmt.Errorf("freeze: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for wait := 50 * time.Microsecond; ; wait = min(2*wait, 5*time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil {
			thaw()
			return nil, fmt.Errorf("freeze: %w", err)
		}
		if bytes.Contains(b, []byte("\nfrozen 1")) || bytes.HasPrefix(b, []byte("frozen 1")) {
			return thaw, nil
		}
		if time.Now().After(deadline) {
			thaw()
			return nil, fmt.Errorf("freeze: the cgroup %s did not freeze within %v", dir, timeout)
		}
		time.Sleep(wait)
	}
}
