// Package usage measures what a sandbox uses.
//
// It reads the processor time, memory and processes of a process tree from its
// cgroup (v2) or from /proc, and the disk space of a directory tree.
package usage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Usage is what a set of processes uses.
type Usage struct {
	// User and System are processor time: with /proc, of the processes
	// alive and of the children they have waited for.
	User, System time.Duration
	// Memory is the cgroup's memory.current, or the sum of the resident
	// sets of the processes. A page shared by several processes is counted
	// for each.
	Memory int64
	// Processes counts the processes (not threads).
	Processes int
}

// userHZ is the unit of the times in /proc/PID/stat: USER_HZ, 100 on
// every architecture Linux runs on (the kernel converts to it).
const userHZ = 100

// procStat is what Tree reads of one /proc/PID/stat.
type procStat struct {
	pid, ppid                    int
	utime, stime, cutime, cstime int64 // clock ticks
	rss                          int64 // pages
}

// parseStat parses a /proc/PID/stat line: "pid (comm) state ppid ...",
// where comm may hold spaces and parentheses.
func parseStat(b []byte) (procStat, error) {
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, errors.New("no (comm)")
	}
	var st procStat
	var err error
	if st.pid, err = strconv.Atoi(strings.TrimSpace(s[:open])); err != nil {
		return procStat{}, fmt.Errorf("pid: %w", err)
	}
	// Fields from the state (field 3) on: ppid is field 4, utime to
	// cstime 14 to 17, rss 24.
	f := strings.Fields(s[end+1:])
	if len(f) < 22 {
		return procStat{}, fmt.Errorf("%d fields after comm, want at least 22", len(f))
	}
	nums := []*int64{&st.utime, &st.stime, &st.cutime, &st.cstime}
	for i, p := range nums {
		if *p, err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			return procStat{}, fmt.Errorf("field %d: %w", 14+i, err)
		}
	}
	if st.rss, err = strconv.ParseInt(f[21], 10, 64); err != nil {
		return procStat{}, fmt.Errorf("rss: %w", err)
	}
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return procStat{}, fmt.Errorf("ppid: %w", err)
	}
	return st, nil
}

// Tree sums the usage of process root's descendants in procDir (/proc),
// root itself included with withRoot. Processes that vanish while it
// reads are left out. It fails when root does not exist.
func Tree(procDir string, root int, withRoot bool) (Usage, error) {
	names, err := filepath.Glob(filepath.Join(procDir, "[0-9]*", "stat"))
	if err != nil {
		return Usage{}, err
	}
	all := make(map[int]procStat, len(names))
	children := make(map[int][]int, len(names))
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			continue // gone
		}
		st, err := parseStat(b)
		if err != nil {
			continue
		}
		all[st.pid] = st
		children[st.ppid] = append(children[st.ppid], st.pid)
	}
	if _, ok := all[root]; !ok {
		return Usage{}, fmt.Errorf("process %d: not found in %s", root, procDir)
	}
	var ticks [2]int64
	var u Usage
	page := int64(os.Getpagesize())
	queue := children[root]
	if withRoot {
		queue = []int{root}
	}
	seen := map[int]bool{root: !withRoot}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		st := all[pid]
		ticks[0] += st.utime + st.cutime
		ticks[1] += st.stime + st.cstime
		u.Memory += st.rss * page
		u.Processes++
		queue = append(queue, children[pid]...)
	}
	u.User = time.Duration(ticks[0]) * time.Second / userHZ
	u.System = time.Duration(ticks[1]) * time.Second / userHZ
	return u, nil
}

// Cgroup reads the usage of the cgroup v2 directory dir: cpu.stat's
// user_usec and system_usec, memory.current and the lines of
// cgroup.procs.
func Cgroup(dir string) (Usage, error) {
	var u Usage
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return Usage{}, err
	}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		key, val, _ := strings.Cut(line, " ")
		var d *time.Duration
		switch key {
		case "user_usec":
			d = &u.User
		case "system_usec":
			d = &u.System
		default:
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return Usage{}, fmt.Errorf("%s: %s: %w", filepath.Join(dir, "cpu.stat"), key, err)
		}
		*d = time.Duration(n) * time.Microsecond
		found++
	}
	if found != 2 {
		return Usage{}, fmt.Errorf("%s: no user_usec and system_usec", filepath.Join(dir, "cpu.stat"))
	}
	if b, err = os.ReadFile(filepath.Join(dir, "memory.current")); err != nil {
		return Usage{}, err
	}
	if u.Memory, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil {
		return Usage{}, fmt.Errorf("%s: %w", filepath.Join(dir, "memory.current"), err)
	}
	if b, err = os.ReadFile(filepath.Join(dir, "cgroup.procs")); err != nil {
		return Usage{}, err
	}
	u.Processes = len(strings.Fields(string(b)))
	return u, nil
}
