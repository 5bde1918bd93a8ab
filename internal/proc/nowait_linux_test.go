package proc

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestNoWaitOutputPipe writes more than a pipe holds: what does not fit at
// once is written by a blocking write, which ends once the reader drains
// the pipe, and the reader gets every byte in order.
func TestNoWaitOutputPipe(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	out := NoWaitOutput(w)
	_, raw := out.(*noWaitWriter)
	require.True(t, raw, "a pipe's writer writes without waiting")
	want := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB, past the pipe's size
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	n, err := out.Write([]byte("small\n"))
	require.NoError(t, err)
	assert.Equal(t, 6, n)
	n, err = out.Write(want)
	require.NoError(t, err)
	assert.Equal(t, len(want), n)
	require.NoError(t, w.Close())
	assert.Equal(t, append([]byte("small\n"), want...), <-got)
}

// TestNoWaitOutputFile writes to a regular file, which refuses RWF_NOWAIT
// or takes it: either way the file holds what was written.
func TestNoWaitOutputFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(path)
	require.NoError(t, err)
	out := NoWaitOutput(f)
	for range 3 {
		_, err := out.Write([]byte("line\n"))
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "line\nline\nline\n", string(b))
}

// TestNoWaitOutputBrokenPipe reports a reader gone as the os package does.
func TestNoWaitOutputBrokenPipe(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, r.Close())
	_, err = NoWaitOutput(w).Write([]byte("x"))
	assert.ErrorIs(t, err, unix.EPIPE)
}

// TestNoWaitConn exchanges frames larger than the socket's buffer both
// ways, in pieces through WriteBuffers, and sees the end of the stream.
func TestNoWaitConn(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "sock")
		defer f.Close()
		c, err := net.FileConn(f)
		require.NoError(t, err)
		return c
	}
	a, b := NoWaitConn(conn(fds[0])), NoWaitConn(conn(fds[1]))
	defer b.Close()
	bw, ok := a.(interface {
		WriteBuffers(*net.Buffers) (int64, error)
	})
	require.True(t, ok)
	head := []byte("head")
	body := bytes.Repeat([]byte("x"), 4<<20)
	got := make(chan []byte, 1)
	go func() {
		all, _ := io.ReadAll(b)
		got <- all
	}()
	bufs := net.Buffers{head, nil, body}
	n, err := bw.WriteBuffers(&bufs)
	require.NoError(t, err)
	assert.Equal(t, int64(len(head)+len(body)), n)
	assert.Empty(t, bufs)
	k, err := a.Write([]byte("tail"))
	require.NoError(t, err)
	assert.Equal(t, 4, k)
	require.NoError(t, a.Close())
	all := <-got
	assert.Equal(t, len(head)+len(body)+4, len(all))
	assert.True(t, bytes.HasPrefix(all, head) && bytes.HasSuffix(all, []byte("xtail")))
	// The other way: a read after the writer closed ends with io.EOF.
	_, err = b.Read(make([]byte, 8))
	assert.ErrorIs(t, err, io.EOF)
}
