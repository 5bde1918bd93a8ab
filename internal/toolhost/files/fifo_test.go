//go:build unix

package files

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// A write to a FIFO reaches its reader, written in place.
func TestWriteFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	r := Write(context.Background(), tool.WriteArgs{Path: fifo, Content: "through the fifo"})
	require.False(t, r.IsError, "%+v", r)
	assert.Equal(t, "through the fifo", <-got)
	fi, err := os.Lstat(fifo)
	require.NoError(t, err)
	assert.Equal(t, os.ModeNamedPipe, fi.Mode().Type(), "still a FIFO")
}

// A write to a FIFO that nobody opens, or that its reader stops reading,
// ends when the call is cancelled, rather than holding its slot for good.
func TestWriteFIFOCancelled(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := Write(ctx, tool.WriteArgs{Path: fifo, Content: "nobody reads"})
	assert.True(t, r.IsError, "%+v", r)
	assert.Less(t, time.Since(start), 5*time.Second, "no reader: the write ends with its call")

	// A reader that reads nothing: the write fills the pipe and waits.
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, err)
	defer reader.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	r = Write(ctx, tool.WriteArgs{Path: fifo, Content: string(make([]byte, 1<<20))})
	assert.True(t, r.IsError, "%+v", r)
	assert.Less(t, time.Since(start), 5*time.Second, "a stalled reader: the write ends with its call")
}
