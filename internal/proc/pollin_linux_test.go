package proc

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// blockedIn returns the state of the goroutine whose stack shows fn
// ("IO wait", "syscall", …), or "" if none does.
func blockedIn(fn string) string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, fn) {
			continue
		}
		head, _, _ := strings.Cut(g, "\n")
		if i, j := strings.IndexByte(head, '['), strings.IndexByte(head, ']'); i >= 0 && j > i {
			state, _, _ := strings.Cut(head[i+1:j], ",")
			return state
		}
	}
	return ""
}

func readPipe(r io.Reader, got chan<- string) {
	b := make([]byte, 64)
	n, err := r.Read(b)
	if err != nil {
		got <- "error: " + err.Error()
		return
	}
	got <- string(b[:n])
}

// A reader waiting for stdin waits in the poller ("IO wait"), not in a
// read system call that holds a P; it reads what comes, then the end; the
// descriptor stays blocking.
func TestPollableInputPipe(t *testing.T) {
	rf, wf, err := os.Pipe()
	require.NoError(t, err)
	defer func() { _ = rf.Close(); _ = wf.Close() }()
	// As a stdin is: blocking.
	require.NoError(t, syscall.SetNonblock(int(rf.Fd()), false))
	in, ok := PollableInput(rf)
	require.True(t, ok)

	got := make(chan string, 1)
	go readPipe(in, got)
	var state string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if state = blockedIn("proc.readPipe"); state == "IO wait" {
			break
		}
	}
	assert.Equal(t, "IO wait", state, "the reader must wait in the poller")

	_, err = wf.Write([]byte("abc"))
	require.NoError(t, err)
	select {
	case s := <-got:
		assert.Equal(t, "abc", s)
	case <-time.After(5 * time.Second):
		t.Fatal("no input read")
	}
	flags, err := unix.FcntlInt(rf.Fd(), unix.F_GETFL, 0)
	require.NoError(t, err)
	assert.Zero(t, flags&unix.O_NONBLOCK, "the descriptor's flags must not change")

	require.NoError(t, wf.Close())
	n, err := in.Read(make([]byte, 8))
	assert.Zero(t, n)
	assert.ErrorIs(t, err, io.EOF)
}

// A socket (what some clients give as stdin) is read the same way.
func TestPollableInputSocket(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	a, b := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
	defer func() { _ = a.Close(); _ = b.Close() }()
	in, ok := PollableInput(a)
	require.True(t, ok)
	_, err = b.Write([]byte("{}\n"))
	require.NoError(t, err)
	got := make(chan string, 1)
	go readPipe(in, got)
	select {
	case s := <-got:
		assert.Equal(t, "{}\n", s)
	case <-time.After(5 * time.Second):
		t.Fatal("no input read")
	}
}

// A regular file cannot be polled (and never blocks): it is read as it is.
func TestPollableInputRegularFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "requests")
	require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	in, ok := PollableInput(f)
	assert.False(t, ok)
	assert.Same(t, f, in)
}
