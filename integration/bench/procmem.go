package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/boxsh/boxsh/internal/proc"
)

// treeMemory is the memory of a process tree.
type treeMemory struct {
	// Procs is how many processes the tree has.
	Procs int
	// RSSKiB sums VmRSS; shared pages count once per process.
	RSSKiB int64
	// PSSKiB sums Pss from smaps_rollup (shared pages split between their
	// users); -1 when the kernel does not provide it (or does not show it
	// for one of the processes, a non-dumpable one say).
	PSSKiB int64
	// ByProc is each process's share, root first.
	ByProc []procMemory
}

// procMemory is the memory of one process of a tree.
type procMemory struct {
	PID    int
	Comm   string
	RSSKiB int64
	// AnonKiB is RssAnon: the process's own pages, the rest being
	// mapped files (its program and libraries, shared with others).
	AnonKiB int64
	// ShmemKiB is RssShmem: shared memory and memfd pages the process
	// maps, which only the last user's exit frees.
	ShmemKiB int64
}

// anonKiB sums RssAnon over the tree: the memory the processes have of
// their own. It leaves out the pages of mapped files, programs and
// libraries, which are shared with other processes and kept in the page
// cache anyway.
func (m treeMemory) anonKiB() int64 {
	var sum int64
	for _, p := range m.ByProc {
		sum += p.AnonKiB
	}
	return sum
}

// shmemKiB sums RssShmem over the tree: pages of memfds and shared memory,
// which no memory pressure reclaims (a sealed copy of a program counts
// here).
func (m treeMemory) shmemKiB() int64 {
	var sum int64
	for _, p := range m.ByProc {
		sum += p.ShmemKiB
	}
	return sum
}

// breakdown describes m by process, "comm RSS (anon)" in MiB, equal
// neighbours grouped: "boxsh 11.3 (1.9), sh 0.6 (0.1) ×4".
func (m treeMemory) breakdown() string {
	var parts []string
	for i := 0; i < len(m.ByProc); {
		p := m.ByProc[i]
		j := i + 1
		for j < len(m.ByProc) && m.ByProc[j].Comm == p.Comm && m.ByProc[j].RSSKiB/100 == p.RSSKiB/100 {
			j++
		}
		part := fmt.Sprintf("%s %.1f (%.1f)", p.Comm, float64(p.RSSKiB)/1024, float64(p.AnonKiB)/1024)
		if j-i > 1 {
			part += fmt.Sprintf(" ×%d", j-i)
		}
		parts = append(parts, part)
		i = j
	}
	return strings.Join(parts, ", ")
}

// measureTree sums the memory of root and all its descendants.
func measureTree(root int) (treeMemory, error) {
	pids, err := processTree(root)
	if err != nil {
		return treeMemory{}, err
	}
	m := treeMemory{Procs: len(pids)}
	for _, pid := range pids {
		rss, err := statusField(pid, "VmRSS:")
		if errors.Is(err, fs.ErrNotExist) {
			m.Procs-- // exited since it was listed
			continue
		}
		if err != nil {
			return treeMemory{}, err
		}
		m.RSSKiB += rss
		anon, _ := statusField(pid, "RssAnon:")
		shmem, _ := statusField(pid, "RssShmem:")
		m.ByProc = append(m.ByProc, procMemory{PID: pid, Comm: commOf(pid), RSSKiB: rss, AnonKiB: anon, ShmemKiB: shmem})
		if m.PSSKiB < 0 {
			continue
		}
		if pss, err := rollupField(pid, "Pss:"); err != nil {
			m.PSSKiB = -1
		} else {
			m.PSSKiB += pss
		}
	}
	return m, nil
}

// commOf is the command name of process pid ("?" once it is gone).
func commOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// processTree lists root and its descendants, root first. It walks
// /proc/PID/task/*/children; kernels without that file are handled by
// scanning every process's parent id instead.
func processTree(root int) ([]int, error) {
	childrenOf := taskChildren
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d/children", root, root)); errors.Is(err, fs.ErrNotExist) {
		parents, err := parentMap()
		if err != nil {
			return nil, err
		}
		childrenOf = func(pid int) []int { return parents[pid] }
	}
	tree := []int{root}
	seen := map[int]bool{root: true}
	for i := 0; i < len(tree); i++ {
		for _, c := range childrenOf(tree[i]) {
			if !seen[c] {
				seen[c] = true
				tree = append(tree, c)
			}
		}
	}
	return tree, nil
}

// taskChildren reads the children of every thread of pid.
func taskChildren(pid int) []int { return proc.ChildrenOf(strconv.Itoa(pid)) }

// procStat is the part of /proc/PID/stat the bench uses.
type procStat struct {
	PID   int
	Comm  string
	State byte // R, S, D, Z, …
	PPID  int
	PGRP  int
}

// allProcs reads the stat of every process; ones that vanish meanwhile are
// skipped.
func allProcs() ([]procStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var procs []procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone meanwhile
		}
		if st, ok := parseStat(b); ok {
			st.PID = pid
			procs = append(procs, st)
		}
	}
	return procs, nil
}

// parentMap maps each parent pid to its children.
func parentMap() (map[int][]int, error) {
	procs, err := allProcs()
	if err != nil {
		return nil, err
	}
	kids := map[int][]int{}
	for _, p := range procs {
		kids[p.PPID] = append(kids[p.PPID], p.PID)
	}
	return kids, nil
}

// liveProcs returns the processes that are in pids or in process group
// pgrp and are not zombies. Zombies have exited; only their parent (or
// init) has yet to reap them.
func liveProcs(pids []int, pgrp int) ([]procStat, error) {
	procs, err := allProcs()
	if err != nil {
		return nil, err
	}
	wanted := map[int]bool{}
	for _, pid := range pids {
		wanted[pid] = true
	}
	var live []procStat
	for _, p := range procs {
		if (wanted[p.PID] || p.PGRP == pgrp) && p.State != 'Z' {
			live = append(live, p)
		}
	}
	return live, nil
}

// parseStat extracts state, parent and process group from the contents of
// /proc/PID/stat, whose second field (the command name in parentheses) may
// hold spaces and parentheses.
func parseStat(stat []byte) (procStat, bool) {
	i := bytes.LastIndexByte(stat, ')')
	j := bytes.IndexByte(stat, '(')
	if i < 0 || j < 0 || j > i {
		return procStat{}, false
	}
	f := strings.Fields(string(stat[i+1:])) // state, ppid, pgrp, …
	if len(f) < 3 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{Comm: string(stat[j+1 : i]), State: f[0][0], PPID: ppid, PGRP: pgrp}, true
}

// statusField reads a "kB" field such as VmRSS: from /proc/PID/status.
func statusField(pid int, name string) (int64, error) {
	return kibField(fmt.Sprintf("/proc/%d/status", pid), name)
}

// rollupField reads a "kB" field such as Pss: from /proc/PID/smaps_rollup.
func rollupField(pid int, name string) (int64, error) {
	return kibField(fmt.Sprintf("/proc/%d/smaps_rollup", pid), name)
}

// kibField returns the value of the first line of file starting with name,
// formatted "name   123 kB". A missing line counts as 0 (kernel threads and
// zombies have no VmRSS).
func kibField(file, name string) (int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		fields := strings.Fields(line[len(name):])
		if len(fields) == 0 {
			return 0, fmt.Errorf("%s: empty %s", file, name)
		}
		return strconv.ParseInt(fields[0], 10, 64)
	}
	return 0, sc.Err()
}
