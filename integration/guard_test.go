//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The protection guard (issue 23, item 6): a host change that undoes the
// protection of a protected entry stops the sandbox as soon as the kernel
// reports it, and a sandbox that nobody uses costs its front no wake-ups.

// guardTrial starts `boxsh --sandbox --bind wr:PROJ -c 'sleep …'` with
// .gitmodules protected in PROJ. It renames another file over it on the
// host, as an editor saving does. It returns how long the sandbox's sleep
// lived after the rename.
func guardTrial(t *testing.T) time.Duration {
	t.Helper()
	proj := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(proj, ".gitmodules"), []byte("# none\n"), 0o644))
	marker := sleepMarker(271)
	killMarkedAtCleanup(t, marker)
	cmd := exec.CommandContext(testContext(t), boxshPath(), "--sandbox", "--bind", "wr:"+proj, "-c", "sleep "+marker)
	cmd.Dir = proj
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitForArgv(t, "sleep", marker)
	pids := argvPIDs("sleep", marker)
	require.Len(t, pids, 1)
	pidfd, err := unix.PidfdOpen(pids[0], 0)
	require.NoError(t, err)
	defer unix.Close(pidfd)

	require.NoError(t, os.WriteFile(filepath.Join(proj, ".gitmodules.new"), []byte("[submodule]\n"), 0o644))
	start := time.Now()
	require.NoError(t, os.Rename(filepath.Join(proj, ".gitmodules.new"), filepath.Join(proj, ".gitmodules")))
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 5000)
		if err == unix.EINTR {
			continue
		}
		require.NoError(t, err)
		require.Equal(t, 1, n, "the sandbox still runs 5 s after its protected .gitmodules was replaced")
		return time.Since(start)
	}
}

// TestProtectGuardStopsSandbox replaces a protected entry on the host under
// several sandboxes and requires each to stop. It logs how long the
// sandboxed process lived after the change. That is the guard's reaction,
// which runtime/host's TestProtectionWatchReactsAtOnce bounds, plus the
// kernel's killing of the sandbox. The killing alone is too uneven on a
// loaded machine to bound here.
func TestProtectGuardStopsSandbox(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	const trials = 5
	var lat []time.Duration
	for range trials {
		lat = append(lat, guardTrial(t))
	}
	slices.Sort(lat)
	t.Logf("sandbox stopped after the host change: min %v, median %v, max %v (%v)", lat[0], lat[trials/2], lat[trials-1], lat)
}

// taskSwitches is the sum of the context switches of every thread of pid.
func taskSwitches(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	require.NoError(t, err)
	sum := 0
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				sum += n
			} else if v, ok := strings.CutPrefix(line, "nonvoluntary_ctxt_switches:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				sum += n
			}
		}
	}
	return sum
}

// TestProtectGuardIdle checks that an idle sandboxed server's front does
// not wake up periodically for the guard. A guard polling every 50 ms would
// make at least 20 context switches a second. The bound leaves room for the
// runtime's own rare timers.
func TestProtectGuardIdle(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	proj := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(proj, ".gitmodules"), []byte("# none\n"), 0o644))
	s := startServer(t, ctx, serverOptions{args: []string{"--sandbox", "--bind", "wr:" + proj}, dir: proj})
	require.Equal(t, "up\n", s.bash("echo up").Stdout)
	// Seconds measured one after the other until one is idle: the first
	// may hold the call's after-effects, and a guard that polls keeps
	// every second busy.
	var counts []int
	for len(counts) < 6 && (len(counts) == 0 || slices.Min(counts) >= 10) {
		before := taskSwitches(t, s.pid())
		time.Sleep(time.Second) // the window measured
		counts = append(counts, taskSwitches(t, s.pid())-before)
	}
	t.Logf("context switches of the idle front, per second: %v", counts)
	assert.Less(t, slices.Min(counts), 10, "the idle front woke up %v times a second", counts)
	s.requireServing()
}
