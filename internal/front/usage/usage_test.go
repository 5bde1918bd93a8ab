package usage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statLine is a /proc/PID/stat line with the given figures.
func statLine(pid, ppid int, comm string, utime, stime, cutime, cstime, rss int64) string {
	// state ppid pgrp session tty tpgid flags minflt cminflt majflt
	// cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime vsize rss ...
	return fmt.Sprintf("%d (%s) S %d 1 1 0 -1 4194560 10 0 0 0 %d %d %d %d 20 0 1 0 100 1000000 %d 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
		pid, comm, ppid, utime, stime, cutime, cstime, rss)
}

func TestParseStat(t *testing.T) {
	st, err := parseStat([]byte(statLine(42, 7, "a) (b c", 1, 2, 3, 4, 5)))
	require.NoError(t, err)
	assert.Equal(t, procStat{pid: 42, ppid: 7, utime: 1, stime: 2, cutime: 3, cstime: 4, rss: 5}, st, "a comm with spaces and parentheses")
	for name, line := range map[string]string{
		"no comm":     "42 S 7 1",
		"short":       "42 (x) S 7 1 1",
		"bad pid":     strings.Replace(statLine(42, 7, "x", 1, 2, 3, 4, 5), "42", "x42", 1),
		"bad utime":   strings.Replace(statLine(42, 7, "x", 123456, 2, 3, 4, 5), "123456", "1x", 1),
		"empty input": "",
	} {
		_, err := parseStat([]byte(line))
		assert.Error(t, err, name)
	}
}

// fakeProc writes a /proc of stat files.
func fakeProc(t *testing.T, lines ...string) string {
	dir := t.TempDir()
	for _, l := range lines {
		pid := strings.Fields(l)[0]
		require.NoError(t, os.Mkdir(filepath.Join(dir, pid), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, pid, "stat"), []byte(l), 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "self"), 0o755)) // not a number: skipped
	return dir
}

func TestTree(t *testing.T) {
	page := int64(os.Getpagesize())
	dir := fakeProc(t,
		statLine(1, 0, "init", 1000, 1000, 0, 0, 1),
		statLine(10, 1, "front", 100, 50, 0, 0, 100),
		statLine(20, 10, "boxsh-init", 10, 20, 30, 40, 10),
		statLine(21, 20, "bash", 1, 2, 0, 0, 20),
		statLine(22, 21, "sleep", 0, 0, 0, 0, 30),
		statLine(30, 10, "orphan", 5, 5, 0, 0, 40),
		statLine(40, 1, "other", 999, 999, 0, 0, 999),
	)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "5"), 0o755)) // a process that vanished
	require.NoError(t, os.Mkdir(filepath.Join(dir, "6"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "6", "stat"), []byte("6 (torn"), 0o644))
	u, err := Tree(dir, 20, true)
	require.NoError(t, err)
	assert.Equal(t, Usage{User: 410 * time.Millisecond, System: 620 * time.Millisecond, Memory: 60 * page, Processes: 3}, u, "20, 21, 22; their cutime and cstime counted")

	u, err = Tree(dir, 10, false)
	require.NoError(t, err)
	assert.Equal(t, Usage{User: 460 * time.Millisecond, System: 670 * time.Millisecond, Memory: 100 * page, Processes: 4}, u, "the descendants of 10, not 10 itself, not 40")

	_, err = Tree(dir, 99, true)
	assert.ErrorContains(t, err, "process 99: not found")
}

// TestTreeLive sums a real child.
func TestTreeLive(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc (Linux)")
	}
	u, err := Tree("/proc", os.Getpid(), true)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, u.Processes, 1)
	assert.Positive(t, u.Memory, "this test's resident set")
}

func TestCgroup(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644))
	}
	write("cpu.stat", "usage_usec 3500000\nuser_usec 2500000\nsystem_usec 1000000\nnr_periods 0\n")
	write("memory.current", "1048576\n")
	write("cgroup.procs", "1\n17\n18\n")
	u, err := Cgroup(dir)
	require.NoError(t, err)
	assert.Equal(t, Usage{User: 2500 * time.Millisecond, System: time.Second, Memory: 1 << 20, Processes: 3}, u)

	write("cgroup.procs", "")
	u, err = Cgroup(dir)
	require.NoError(t, err)
	assert.Zero(t, u.Processes, "an empty cgroup")

	write("memory.current", "max\n")
	_, err = Cgroup(dir)
	assert.ErrorContains(t, err, "memory.current")

	write("memory.current", "1\n")
	write("cpu.stat", "usage_usec 1\n")
	_, err = Cgroup(dir)
	assert.ErrorContains(t, err, "no user_usec and system_usec", "a cgroup v1 cpuacct or a bad file")

	require.NoError(t, os.Remove(filepath.Join(dir, "cpu.stat")))
	_, err = Cgroup(dir)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
