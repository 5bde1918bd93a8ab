package reap

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/proc"
)

// runningReaper makes the test process inherit orphans (a child
// subreaper, as PID 1 is) and runs a Reaper until the test ends.
func runningReaper(t *testing.T) *Reaper {
	return runningReaperEvery(t, reapInterval)
}

// runningReaperEvery is runningReaper with reaps at most once per
// interval.
func runningReaperEvery(t *testing.T, interval time.Duration) *Reaper {
	require.NoError(t, unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	r := New()
	r.interval = interval
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go r.Run(ctx)
	return r
}

// startCmd is the start function of cmd for Reaper.Start.
func startCmd(cmd *exec.Cmd) func() (int, error) {
	return func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}
}

// TestReapOrphansKeepOwnStatus makes the test process inherit orphans (a
// child subreaper, as PID 1 is), starts children that leave orphans behind
// and exit at once, and checks that their own Wait still gets their exit
// status while the reaper reaps the orphans.
func TestReapOrphansKeepOwnStatus(t *testing.T) {
	r := runningReaper(t)

	const n = 20
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		// The orphan outlives its parent by a moment, then exits.
		cmd := exec.Command("/bin/sh", "-c", "sleep 0.05 & exit "+strconv.Itoa(i%7+1))
		require.NoError(t, r.Start(startCmd(cmd)))
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		err := cmd.Wait()
		r.Forget(cmd.Process.Pid)
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "child %d: its own Wait must get its status", i)
		assert.Equal(t, i%7+1, ee.ExitCode())
	}
	// Every orphan ends up reaped: no child of ours is left, zombie or not.
	assert.Eventually(t, func() bool { return len(proc.Children()) == 0 }, 5*time.Second, 20*time.Millisecond,
		"children left: %v", proc.Children())
}

// TestNilReaperStarts checks that a nil Reaper (not PID 1) only starts.
func TestNilReaperStarts(t *testing.T) {
	var r *Reaper
	cmd := exec.Command("/bin/true")
	require.NoError(t, r.Start(func() (int, error) { return 0, cmd.Start() }))
	require.NoError(t, cmd.Wait())
	r.Forget(cmd.Process.Pid)
	assert.Zero(t, r.Reap())
}

// TestSiginfoPid checks the si_pid offset against a real exited child.
func TestSiginfoPid(t *testing.T) {
	cmd := exec.Command("/bin/true")
	require.NoError(t, cmd.Start())
	var info unix.Siginfo
	require.NoError(t, unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil))
	assert.Equal(t, cmd.Process.Pid, siginfoPid(&info))
	require.NoError(t, cmd.Wait())
}

// TestReapPastOwnZombie checks that an exited child of our own that is not
// waited for yet (a warm shell killed while idle) does not keep the
// orphans behind it from being reaped, and keeps its own status.
func TestReapPastOwnZombie(t *testing.T) {
	r := runningReaper(t)

	cmd := exec.Command("/bin/sh", "-c", "sleep 0.1 & echo $!; exit 5")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, r.Start(startCmd(cmd)))
	var orphan int
	_, err = fmt.Fscan(out, &orphan)
	require.NoError(t, err)
	// Our child is not waited for yet; the orphan exits behind it and is
	// reaped all the same (its /proc entry goes).
	assert.Eventually(t, func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", orphan))
		return os.IsNotExist(err)
	}, 5*time.Second, 20*time.Millisecond, "the orphan %d behind our zombie is reaped", orphan)
	_, err = os.Stat(fmt.Sprintf("/proc/%d", cmd.Process.Pid))
	require.NoError(t, err, "our own child is left for its Wait")
	var ee *exec.ExitError
	require.ErrorAs(t, cmd.Wait(), &ee)
	assert.Equal(t, 5, ee.ExitCode())
	r.Forget(cmd.Process.Pid)
}

// A burst of orphans exiting one after the other (as the shells of a burst
// of calls do, each with its SIGCHLD) is reaped in a few reaps, one per
// reapInterval at most, not one per signal; every orphan is reaped.
func TestReapCoalescesSignals(t *testing.T) {
	r := runningReaperEvery(t, 100*time.Millisecond)

	// 60 orphans, exiting 5 ms apart.
	cmd := exec.Command("/bin/sh", "-c", `i=0; while [ $i -lt 60 ]; do (sleep 0.$((200 + i * 5)); exec true) >/dev/null 2>&1 & echo $!; i=$((i+1)); done`)
	out, err := cmd.Output()
	require.NoError(t, err)
	var orphans []int
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		orphans = append(orphans, pid)
	}
	require.Len(t, orphans, 60)
	before := r.reaps.Load()
	assert.Eventually(t, func() bool {
		for _, pid := range orphans {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "every orphan is reaped")
	assert.LessOrEqual(t, r.reaps.Load()-before, int64(15), "reaps for 60 signals")
}
