package background

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

func newManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	m := NewManager(opts)
	t.Cleanup(func() { m.Close(5 * time.Second) })
	return m
}

// untilExited reads p's output from 0 until it has exited.
func untilExited(t *testing.T, m *Manager, id string) tool.ProcessOutputResult {
	t.Helper()
	var all tool.ProcessOutputResult
	var off int64
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r, err := m.Output(context.Background(), id, off, time.Second)
		require.NoError(t, err)
		all.Stdout += r.Stdout
		all.Stderr += r.Stderr
		all.Dropped += r.Dropped
		all.ProcessState, all.NextOffset = r.ProcessState, r.NextOffset
		off = r.NextOffset
		if r.State == tool.ProcessExited {
			return all
		}
	}
	t.Fatal("the process did not exit")
	return all
}

// waitExited waits until the process id has exited.
func waitExited(t *testing.T, m *Manager, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, p := range m.List() {
			if p.ID == id {
				return p.State == tool.ProcessExited
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "process %s exits", id)
}

func TestOutputStreamsAndExit(t *testing.T) {
	m := newManager(t, Options{})
	started, err := m.Start(tool.BashArgs{Command: "echo out; echo err >&2; sleep 0.1; echo more; exit 3"})
	require.NoError(t, err)
	require.NotEmpty(t, started.ID)
	require.Positive(t, started.PID)
	r := untilExited(t, m, started.ID)
	assert.Equal(t, "out\nmore\n", r.Stdout)
	assert.Equal(t, "err\n", r.Stderr)
	require.NotNil(t, r.ExitCode)
	assert.Equal(t, 3, *r.ExitCode)
	assert.Equal(t, int64(len("out\nerr\nmore\n")), r.NextOffset)
	// Exited and read to the end: forgotten.
	_, err = m.Output(context.Background(), started.ID, 0, 0)
	assert.ErrorIs(t, err, ErrUnknown)
	assert.Empty(t, m.List())
}

func TestOutputWaitsForNewOutput(t *testing.T) {
	m := newManager(t, Options{})
	started, err := m.Start(tool.BashArgs{Command: "sleep 0.3; echo late; sleep 100"})
	require.NoError(t, err)
	r, err := m.Output(context.Background(), started.ID, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, tool.ProcessRunning, r.State)
	assert.Empty(t, r.Stdout)
	begin := time.Now()
	r, err = m.Output(context.Background(), started.ID, 0, 10*time.Second)
	require.NoError(t, err)
	assert.Less(t, time.Since(begin), 5*time.Second, "answered once output came")
	assert.Equal(t, "late\n", r.Stdout)
	assert.Equal(t, tool.ProcessRunning, r.State)
	assert.Nil(t, r.ExitCode)
	// Nothing new: wait_ms passes, and the answer is empty.
	begin = time.Now()
	r, err = m.Output(context.Background(), started.ID, r.NextOffset, 200*time.Millisecond)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(begin), 200*time.Millisecond)
	assert.Empty(t, r.Stdout)
	assert.Equal(t, int64(5), r.NextOffset)
}

func TestBufferDropsOldestOutput(t *testing.T) {
	m := newManager(t, Options{Buffer: 100})
	started, err := m.Start(tool.BashArgs{Command: "i=0; while [ $i -lt 50 ]; do echo 0123456789; i=$((i+1)); done"})
	require.NoError(t, err)
	waitExited(t, m, started.ID)
	r, err := m.Output(context.Background(), started.ID, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(550), r.NextOffset)
	assert.Equal(t, int64(450), r.Dropped, "all but the last 100 bytes dropped")
	assert.Len(t, r.Stdout, 100)
	assert.True(t, strings.HasSuffix(r.Stdout, "0123456789\n"))
}

func TestRingSince(t *testing.T) {
	r := newRing(10)
	r.write(streamStdout, []byte("abcdef"))
	r.write(streamStderr, []byte("ghij"))
	r.write(streamStdout, []byte("kl"))
	out, errs, next, dropped := r.since(0)
	assert.Equal(t, "cdefkl", out)
	assert.Equal(t, "ghij", errs)
	assert.Equal(t, int64(12), next)
	assert.Equal(t, int64(2), dropped)
	out, errs, next, dropped = r.since(7)
	assert.Equal(t, "kl", out)
	assert.Equal(t, "hij", errs)
	assert.Equal(t, int64(12), next)
	assert.Zero(t, dropped)
	out, errs, next, _ = r.since(20)
	assert.Empty(t, out+errs)
	assert.Equal(t, int64(20), next)
}

func TestKillSignalsTheGroup(t *testing.T) {
	m := newManager(t, Options{})
	started, err := m.Start(tool.BashArgs{Command: "sleep 100 & echo $!; wait"})
	require.NoError(t, err)
	r, err := m.Output(context.Background(), started.ID, 0, 5*time.Second)
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
	require.NoError(t, err, "the child's pid: %q", r.Stdout)
	info, err := m.Kill(context.Background(), started.ID, "")
	require.NoError(t, err)
	assert.Equal(t, tool.ProcessExited, info.State)
	require.NotNil(t, info.ExitCode)
	assert.Equal(t, 128+int(syscall.SIGTERM), *info.ExitCode)
	assert.Equal(t, "TERM", info.Signal)
	// The shell's child, in its group, got the signal too.
	require.Eventually(t, func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		return err != nil || strings.Contains(string(b), ") Z ")
	}, 5*time.Second, 10*time.Millisecond, "the group's sleep is gone")
	_, err = m.Kill(context.Background(), started.ID, "NOSUCH")
	assert.ErrorContains(t, err, `unknown signal "NOSUCH"`)
	_, err = m.Kill(context.Background(), "nope", "KILL")
	assert.ErrorIs(t, err, ErrUnknown)
}

func TestLimitAndEviction(t *testing.T) {
	m := newManager(t, Options{Max: 2})
	a, err := m.Start(tool.BashArgs{Command: "sleep 100"})
	require.NoError(t, err)
	b, err := m.Start(tool.BashArgs{Command: "exit 0"})
	require.NoError(t, err)
	waitExited(t, m, b.ID)
	// b has exited, unread: evicted for the new one.
	_, err = m.Start(tool.BashArgs{Args: []string{"sleep", "100"}})
	require.NoError(t, err)
	_, err = m.Output(context.Background(), b.ID, 0, 0)
	assert.ErrorIs(t, err, ErrUnknown)
	_, err = m.Start(tool.BashArgs{Command: "sleep 100"})
	assert.ErrorIs(t, err, ErrTooMany, "two running: no third")
	list := m.List()
	require.Len(t, list, 2)
	assert.Equal(t, a.ID, list[0].ID, "oldest first")
	assert.Equal(t, "sleep 100", list[1].Command, "args joined")
	assert.Equal(t, tool.ProcessRunning, list[0].State)
}

func TestStartErrorsAndEnv(t *testing.T) {
	m := newManager(t, Options{Env: []string{"PATH=" + os.Getenv("PATH"), "A=base"}})
	_, err := m.Start(tool.BashArgs{Command: "true", Cwd: "/nonexistent"})
	assert.ErrorContains(t, err, "cwd")
	_, err = m.Start(tool.BashArgs{Args: []string{"-x"}})
	assert.ErrorContains(t, err, "begins with -")
	dir := t.TempDir()
	started, err := m.Start(tool.BashArgs{Command: `echo "$A $B $(pwd)"; cat`, Env: map[string]string{"B": "extra"}, Cwd: dir, Stdin: "input"})
	require.NoError(t, err)
	r := untilExited(t, m, started.ID)
	assert.Equal(t, "base extra "+dir+"\ninput", r.Stdout)
}

func TestTimeoutKills(t *testing.T) {
	m := newManager(t, Options{})
	started, err := m.Start(tool.BashArgs{Command: "sleep 100", Timeout: 0.2})
	require.NoError(t, err)
	r := untilExited(t, m, started.ID)
	assert.Equal(t, "KILL", r.Signal)
}

func TestCloseKills(t *testing.T) {
	m := NewManager(Options{})
	started, err := m.Start(tool.BashArgs{Command: "sleep 100"})
	require.NoError(t, err)
	m.Close(5 * time.Second)
	assert.ErrorIs(t, syscall.Kill(started.PID, 0), syscall.ESRCH)
	_, err = m.Start(tool.BashArgs{Command: "true"})
	assert.ErrorIs(t, err, ErrClosed)
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]syscall.Signal{"": syscall.SIGTERM, "KILL": syscall.SIGKILL, "sigint": syscall.SIGINT, "SIGHUP": syscall.SIGHUP, "9": syscall.SIGKILL} {
		got, err := ParseSignal(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"0", "65", "BOGUS"} {
		_, err := ParseSignal(in)
		assert.Error(t, err, in)
	}
}

// A timeout too large for a Duration means none, not one that fires at
// once.
func TestHugeTimeoutIsNone(t *testing.T) {
	m := newManager(t, Options{})
	started, err := m.Start(tool.BashArgs{Command: "sleep 100", Timeout: 1e12})
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	r, err := m.Output(context.Background(), started.ID, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, tool.ProcessRunning, r.State)
}
