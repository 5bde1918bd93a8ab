package bash

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fdFlags returns the status flags (F_GETFL) and descriptor flags
// (F_GETFD) of f, without Fd, which makes a polled file blocking.
func fdFlags(t *testing.T, f *os.File) (status, fdFlags int) {
	t.Helper()
	rc, err := f.SyscallConn()
	require.NoError(t, err)
	require.NoError(t, rc.Control(func(fd uintptr) {
		status, err = unix.FcntlInt(fd, unix.F_GETFL, 0)
		require.NoError(t, err)
		fdFlags, err = unix.FcntlInt(fd, unix.F_GETFD, 0)
		require.NoError(t, err)
	}))
	return status, fdFlags
}

// The shell's ends of its pipes are blocking, as a shell expects; the
// pool's read end is non-blocking (read through the poller) when asked;
// every end is closed on exec.
func TestNewPipeModes(t *testing.T) {
	for _, pollRead := range []bool{false, true} {
		r, w, err := newPipe(pollRead)
		require.NoError(t, err)
		rst, rfd := fdFlags(t, r)
		wst, wfd := fdFlags(t, w)
		assert.Equal(t, pollRead, rst&unix.O_NONBLOCK != 0, "read end non-blocking when polled (%v)", pollRead)
		assert.Zero(t, wst&unix.O_NONBLOCK, "write end blocking (%v)", pollRead)
		assert.NotZero(t, rfd&unix.FD_CLOEXEC)
		assert.NotZero(t, wfd&unix.FD_CLOEXEC)
		_ = r.Close()
		_ = w.Close()
	}
}

// A pidfd is non-blocking, so that waiting for the child parks in the
// poller instead of holding a thread.
func TestChildPidfdNonBlocking(t *testing.T) {
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	require.NoError(t, err)
	c, err := execChild(p)
	require.NoError(t, err)
	if c.pidfd != nil {
		st, _ := fdFlags(t, c.pidfd)
		assert.NotZero(t, st&unix.O_NONBLOCK)
	}
	ws, err := c.wait()
	require.NoError(t, err)
	assert.True(t, ws.Exited())
	assert.Zero(t, ws.ExitStatus())
}
