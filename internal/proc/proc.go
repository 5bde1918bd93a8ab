// Package proc reads process information from /proc.
//
// It works on Linux; elsewhere it finds nothing.
package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Children lists the calling process's children (those of all its
// threads), from /proc/self/task/*/children, or where the kernel lacks
// those files, from the parent field of every /proc/PID/stat.
func Children() []int {
	if files, _ := filepath.Glob("/proc/self/task/*/children"); len(files) == 0 {
		return childrenByStat(os.Getpid())
	}
	return ChildrenOf("self")
}

// ChildrenOf lists the children of every thread of the process pid ("self"
// or a number), from /proc/PID/task/*/children. A process that vanished
// meanwhile has none. It lists the threads by hand, which is much cheaper
// than filepath.Glob, which stats every match.
func ChildrenOf(pid string) []int {
	dir := "/proc/" + pid + "/task/"
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	tids, _ := f.Readdirnames(-1)
	f.Close()
	var pids []int
	for _, tid := range tids {
		b, err := os.ReadFile(dir + tid + "/children")
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(field); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

func childrenByStat(parent int) []int {
	var pids []int
	for _, e := range All() {
		if e.PPID == parent {
			pids = append(pids, e.PID)
		}
	}
	return pids
}

// Entry is a process as /proc/PID/stat describes it.
type Entry struct {
	PID, PPID int
	// State is the state letter: R, S, D, T (stopped), t (traced), Z...
	State byte
}

// All lists every process of the PID namespace of /proc.
func All() []Entry {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	out := make([]Entry, 0, len(stats))
	for _, f := range stats {
		if e, ok := readStat(f); ok {
			out = append(out, e)
		}
	}
	return out
}

// StatOf describes process pid; false when it is gone.
func StatOf(pid int) (Entry, bool) {
	return readStat("/proc/" + strconv.Itoa(pid) + "/stat")
}

// readStat parses the stat file path.
func readStat(path string) (Entry, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Entry{}, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Entry{}, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 || len(fields[0]) != 1 {
		return Entry{}, false
	}
	pid, err := strconv.Atoi(strings.Fields(s)[0])
	if err != nil {
		return Entry{}, false
	}
	ppid, _ := strconv.Atoi(fields[1])
	return Entry{PID: pid, PPID: ppid, State: fields[0][0]}, true
}
