package drain

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipe returns a pipe whose read end is read through the poller, with
// written in it; its write end stays open, as if a process the writer
// left behind held it.
func pipe(t *testing.T, written []byte) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	_, err = w.Write(written)
	require.NoError(t, err)
	return r, w
}

// Output already in the pipe is read when the reader first reads after
// the deadline has passed (a loaded machine did not run it in time).
func TestReadAfterDeadline(t *testing.T) {
	r, _ := pipe(t, []byte("x\n"))
	require.NoError(t, r.SetReadDeadline(time.Now().Add(-time.Second)))
	got, err := io.ReadAll(Reader(r))
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(got))
}

// Output that comes before the deadline is read as it comes, and what
// follows once the deadline passes while the reader waits.
func TestReadUntilDeadline(t *testing.T) {
	r, w := pipe(t, []byte("a"))
	require.NoError(t, r.SetReadDeadline(time.Now().Add(time.Hour)))
	d := Reader(r)
	b := make([]byte, 10)
	n, err := d.Read(b)
	require.NoError(t, err)
	assert.Equal(t, "a", string(b[:n]))
	read := make(chan []byte)
	go func() {
		got, err := io.ReadAll(d)
		assert.NoError(t, err)
		read <- got
	}()
	_, err = w.Write([]byte("b"))
	require.NoError(t, err)
	// The write may or may not be read before the deadline: either way
	// it is read.
	require.NoError(t, r.SetReadDeadline(time.Now()))
	assert.Equal(t, "b", string(<-read))
}

// A pipe whose writers are gone ends in EOF, deadline or not.
func TestReadToEOF(t *testing.T) {
	for _, deadline := range []time.Time{{}, time.Now().Add(-time.Second)} {
		r, w := pipe(t, []byte("x"))
		require.NoError(t, w.Close())
		require.NoError(t, r.SetReadDeadline(deadline))
		got, err := io.ReadAll(Reader(r))
		require.NoError(t, err)
		assert.Equal(t, "x", string(got))
	}
}

// Past the deadline, a writer that keeps writing holds the reader up for
// no more than the pipe's capacity.
func TestHeldReadIsBounded(t *testing.T) {
	chunk := bytes.Repeat([]byte("y"), 4096)
	r, w := pipe(t, chunk)
	stop := make(chan struct{})
	writing := make(chan struct{})
	go func() {
		defer close(writing)
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}()
	require.NoError(t, r.SetReadDeadline(time.Now().Add(-time.Second)))
	got, err := io.ReadAll(Reader(r))
	close(stop)
	require.NoError(t, err)
	_ = r.Close() // a writer blocked on the full pipe gets EPIPE
	<-writing
	rc, err := w.SyscallConn()
	require.NoError(t, err)
	var size int
	require.NoError(t, rc.Control(func(fd uintptr) { size = pipeSize(fd) }))
	assert.GreaterOrEqual(t, len(got), len(chunk), "what the pipe held is read")
	assert.LessOrEqual(t, len(got), size, "read past the pipe's capacity")
}

// A read error other than the deadline's is returned as it is.
func TestReadError(t *testing.T) {
	r, _ := pipe(t, nil)
	require.NoError(t, r.Close())
	_, err := Reader(r).Read(make([]byte, 1))
	assert.ErrorIs(t, err, os.ErrClosed)
}
