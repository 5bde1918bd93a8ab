package runtime

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// killOrphans kills and reaps the processes that were reparented to the
// front (its child subreaper) after their boxsh-init died: commands and
// their background processes. Call it when no boxsh-init is running.
func killOrphans(log hclog.Logger) {
	for round := 0; round < 10; round++ {
		kids := children()
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // its process group, if it leads one
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range kids {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
		log.Debug("killed orphaned processes", "count", len(kids))
	}
}

// children lists the front's child processes, from
// /proc/self/task/*/children, or where the kernel lacks those files, from
// the parent field of every /proc/PID/stat.
func children() []int {
	files, _ := filepath.Glob("/proc/self/task/*/children")
	if len(files) == 0 {
		return childrenByStat(os.Getpid())
	}
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(field); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func childrenByStat(parent int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == parent {
			if pid, err := strconv.Atoi(strings.Fields(s)[0]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
