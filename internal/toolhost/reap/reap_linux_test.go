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
	return runningReaperWith(t, nil)
}

// runningReaperWith is runningReaper with the intervals between reaps
// ended by the test, a send on intervals each (nil: reapInterval).
func runningReaperWith(t *testing.T, intervals chan struct{}) *Reaper {
	require.NoError(t, unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	r := New()
	r.intervals = intervals
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

// TestReapOrphansKeepOwnStatus checks that children's own Wait gets their exit
// status while the reaper reaps orphans.
//
// The test process inherits orphans, as a child subreaper, as PID 1 does. It
// starts children that leave orphans behind and exit at once.
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

// A burst of orphans exiting during the interval after a reap is reaped in one
// reap at the interval's end, not one per signal.
//
// The orphans exit one after the other, each with its SIGCHLD, as the shells
// of a burst of calls do. Every orphan is reaped.
func TestReapCoalescesSignals(t *testing.T) {
	intervals := make(chan struct{})
	r := runningReaperWith(t, intervals)
	waitFor(t, func() bool { return r.reaps.Load() == 1 }, "Run's first reap")

	// 60 orphans, each waiting for a line on fd 3 to exit. Their parent is
	// started through the reaper, as every child of ours must be: else
	// the reaper may take its exit status from its own Wait.
	release, hold, err := os.Pipe()
	require.NoError(t, err)
	defer hold.Close()
	cmd := exec.Command("/bin/sh", "-c", `i=0; while [ $i -lt 60 ]; do (read _ <&3; exec true) >/dev/null 2>&1 & echo $!; i=$((i+1)); done`)
	var out strings.Builder
	cmd.Stdout, cmd.ExtraFiles = &out, []*os.File{release}
	require.NoError(t, r.Start(startCmd(cmd)))
	require.NoError(t, cmd.Wait())
	r.Forget(cmd.Process.Pid)
	release.Close()
	var orphans []int
	for _, f := range strings.Fields(out.String()) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		orphans = append(orphans, pid)
	}
	require.Len(t, orphans, 60)

	// One after the other, each exit a SIGCHLD, all within the interval.
	for i := range orphans {
		_, err := hold.Write([]byte("\n"))
		require.NoError(t, err)
		waitFor(t, func() bool { return count(orphans, isZombie) == i+1 }, "orphan %d exited", i+1)
	}
	assert.Equal(t, int64(1), r.reaps.Load(), "no reap within the interval")
	intervals <- struct{}{}
	waitFor(t, func() bool { return count(orphans, exists) == 0 }, "every orphan is reaped")
	assert.Equal(t, int64(2), r.reaps.Load(), "one reap for 60 signals")
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, cond func() bool, what string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s, not yet: "+what, args...)
		}
		time.Sleep(time.Millisecond)
	}
}

// count is how many of pids have the property is.
func count(pids []int, is func(pid int) bool) int {
	n := 0
	for _, pid := range pids {
		if is(pid) {
			n++
		}
	}
	return n
}

// exists tells whether process pid exists, a zombie or not.
func exists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// isZombie tells whether process pid has exited and is not reaped yet.
func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses.
	i := strings.LastIndex(string(b), ") ")
	return i >= 0 && strings.HasPrefix(string(b)[i+2:], "Z")
}
