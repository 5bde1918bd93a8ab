package terminal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dead reports whether process pid is gone or a zombie: a killed grandchild
// of the test is reaped by init, not by the Manager, and may linger as a
// zombie for a while.
func dead(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesized command name.
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

var childPID = regexp.MustCompile(`CHILD=(\d+)`)

// TestBackgroundChild runs a command that leaves a background process
// holding the terminal: the session still reports the exit of its command,
// and Kill ends the background process too.
func TestBackgroundChild(t *testing.T) {
	m := newManager(t, Options{})
	// The child ignores SIGHUP, which the kernel sends it when the session
	// leader exits.
	snap := runToExit(t, m, `trap '' HUP; sleep 1000 & echo "CHILD=$!"`, 0, 0)
	require.NotNil(t, snap.ExitCode)
	assert.Equal(t, 0, *snap.ExitCode)
	match := childPID.FindStringSubmatch(snap.Output)
	require.NotNil(t, match, "no child pid in %q", snap.Output)
	pid, err := strconv.Atoi(match[1])
	require.NoError(t, err)
	require.False(t, dead(pid), "the background child should still run")

	// Kill's SIGHUP does not end it either; a done context skips the grace
	// period before SIGKILL.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = m.Kill(ctx, snap.ID)
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return dead(pid) }, 10*time.Second, 10*time.Millisecond)
}

// TestCloseKillsGroup checks that Close kills the whole process group of a
// session, not only its first process.
func TestCloseKillsGroup(t *testing.T) {
	m := NewManager(Options{})
	run, err := m.Run(testContext(t), `sleep 1000 & echo "CHILD=$!"; wait`, 0, 0)
	require.NoError(t, err)
	snap := pollUntil(t, m, run.ID, contains("CHILD="))
	pid, err := strconv.Atoi(childPID.FindStringSubmatch(snap.Output)[1])
	require.NoError(t, err)
	leader := m.pid(run.ID)

	m.Close()
	assert.ErrorIs(t, syscall.Kill(leader, 0), syscall.ESRCH)
	assert.Eventually(t, func() bool { return dead(pid) }, 10*time.Second, 10*time.Millisecond)
}
