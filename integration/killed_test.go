package integration

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dirListing lists every path below dir with its type, mode and size.
func dirListing(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("find", ".", "-mindepth", "1", "-printf", `%P %y %m %s\n`)
	cmd.Dir = dir
	// A placeholder the sandbox holds may be unreadable (mode 0): find
	// lists it, fails to go into it, and exits 1.
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		require.NoError(t, err)
	}
	lines := strings.Fields(strings.ReplaceAll(string(out), " ", "\x00"))
	sort.Strings(lines)
	return strings.ReplaceAll(strings.Join(lines, "\n"), "\x00", " ")
}

// TestKilledFrontLeavesNothing kills the front, or its whole process tree,
// with kill -9 in the middle of a large write. The directory must be left
// as it was, but for the file written if the write completed. No
// placeholder of a protected path (.claude, .gitmodules, ...) and no
// temporary file may be left on the host.
func TestKilledFrontLeavesNothing(t *testing.T) {
	t.Parallel()
	const size = 20 << 20
	content := strings.Repeat("0123456789abcde\n", size/16)
	for _, mode := range []string{"sandbox", "plain"} {
		for _, what := range []string{"front", "tree"} {
			t.Run(mode+"/"+what, func(t *testing.T) {
				if mode == "sandbox" {
					requireRootless(t)
				}
				for trial := range 4 {
					dir := t.TempDir()
					require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o750))
					require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o640))
					require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "big.txt"), []byte("old\n"), 0o600))
					before := dirListing(t, dir)
					var args []string
					if mode == "sandbox" {
						args = []string{"--sandbox", "--bind", "wr:" + dir}
					}
					s := startServer(t, testContext(t), serverOptions{dir: dir, args: args})
					out := s.bash("true")
					require.Equal(t, 0, out.ExitCode, out.Stderr)
					if mode == "sandbox" {
						require.NotEqual(t, before, dirListing(t, dir), "placeholders are on the host while the sandbox runs")
					}
					target := filepath.Join(dir, "sub", "big.txt")
					s.callTool(s.newID(), "write", map[string]any{"path": target, "content": content})
					time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
					pids := []int{s.pid()}
					if what == "tree" {
						pids = append(pids, descendants(s.pid())...)
					}
					for _, pid := range pids {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
					<-s.exited
					var after string
					deadline := time.Now().Add(3 * time.Second)
					for {
						after = dirListing(t, dir)
						// The write completed or not: big.txt is the old or the new.
						after = strings.Replace(after, fmt.Sprintf("sub/big.txt f 600 %d", size), "sub/big.txt f 600 4", 1)
						if after == before || time.Now().After(deadline) {
							break
						}
						time.Sleep(20 * time.Millisecond)
					}
					require.Equal(t, before, after, "trial %d: the directory after kill -9 of the %s", trial, what)
				}
			})
		}
	}
}

// procField is the value of field name in /proc/PID/status ("" if none).
func procField(pid int, name string) string {
	s, _ := readProcFile(pid, "status")
	for _, line := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// findReaper is the process of argv "boxsh-reaper" whose descriptor 3 is
// a pipe the front of pid holds (0 if none).
func findReaper(t *testing.T, pid int) int {
	t.Helper()
	pipes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "pipe:") {
			pipes[l] = true
		}
	}
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if argv, _ := readProcFile(p, "cmdline"); argv != "boxsh-reaper\x00" {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", p)); err == nil && pipes[l] {
			return p
		}
	}
	return 0
}

// TestReaperDetachedAndIdle checks the reaper of a sandbox's front (see
// host.StartReaper):
//   - it is out of the front's process tree and session;
//   - it is one thread of C waiting on the front's pipe, with no Go
//     runtime;
//   - it ends without a trace when the front ends normally.
func TestReaperDetachedAndIdle(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	dir := t.TempDir()
	s := startServer(t, testContext(t), serverOptions{dir: dir, args: []string{"--sandbox", "--bind", "wr:" + dir}})
	out := s.bash("true")
	require.Equal(t, 0, out.ExitCode, out.Stderr)
	reaper := findReaper(t, s.pid())
	require.NotZero(t, reaper, "no reaper holds the front's pipe")
	assert.NotContains(t, descendants(s.pid()), reaper, "the reaper is in the front's process tree")
	assert.NotEqual(t, strconv.Itoa(s.pid()), procField(reaper, "PPid"))
	sid := func(pid int) string {
		stat, err := readProcFile(pid, "stat")
		require.NoError(t, err)
		f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+2:])
		return f[3] // state ppid pgrp session
	}
	assert.NotEqual(t, sid(s.pid()), sid(reaper), "the reaper is in the front's session")
	assert.Equal(t, "1", procField(reaper, "Threads"), "the waiting reaper runs the Go runtime")
	s.requireExitZero()
	deadline := time.Now().Add(5 * time.Second)
	for procComm(reaper) != "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.Empty(t, procComm(reaper), "the reaper outlives a front that ended normally")
}
