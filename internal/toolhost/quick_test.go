package toolhost

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/files"
)

// TestServeQuickRead checks that a read of a small file is answered on the
// reading goroutine (see quick), with the result any read gets. A read
// that blocks (a FIFO with no writer) is not run there: the calls after it
// are still read and answered.
func TestServeQuickRead(t *testing.T) {
	r, w := serveOnPipe(t)

	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	require.NoError(t, os.WriteFile(small, []byte("hello\n"), 0o644))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	readCall := func(id uint64, path string) {
		args, _ := json.Marshal(map[string]string{"path": path})
		require.NoError(t, w.WriteJSON(initproto.Call{ID: id, Tool: "read", Args: args}))
	}
	next := func() initproto.Reply { return nextReply(t, r) }

	readCall(1, fifo)
	for id := uint64(2); id <= 4; id++ {
		readCall(id, small)
		reply := next()
		assert.Equal(t, id, reply.ID, "the calls after a blocked read are answered")
		var res struct {
			StructuredContent struct{ Content string } `json:"structuredContent"`
		}
		require.NoError(t, json.Unmarshal(reply.Result, &res), "%s", reply.Result)
		assert.Equal(t, "hello\n", res.StructuredContent.Content)
	}
	// A writer lets the FIFO's read end.
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("from the fifo\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	reply := next()
	assert.Equal(t, uint64(1), reply.ID)
	assert.Contains(t, string(reply.Result), "from the fifo")
}

// TestServeQuickReadHandsOn checks that a quick read that hangs (a file on
// a stuck network mount) holds up the reading of frames for quickHandOn at
// most. The calls after it are read and answered while it hangs. It is
// answered once it returns.
func TestServeQuickReadHandsOn(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	require.NoError(t, os.WriteFile(small, []byte("hello\n"), 0o644))
	stuck := filepath.Join(dir, "stuck")
	require.NoError(t, os.WriteFile(stuck, []byte("at last\n"), 0o644))
	release := make(chan struct{})
	r, w := serveHostOnPipe(t, func(a *Host) {
		a.readQuick = func(ctx context.Context, args tool.ReadArgs) (tool.Result, bool) {
			if args.Path == stuck {
				<-release
			}
			return files.ReadQuick(ctx, args)
		}
	})
	released := sync.OnceFunc(func() { close(release) })
	t.Cleanup(released) // before the host's: it waits for the stuck read
	// The calls are written on another goroutine: the pipe takes a frame
	// only when the host reads it.
	calls := make(chan initproto.Call, 8)
	go func() {
		for c := range calls {
			if w.WriteJSON(c) != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { close(calls) })
	readCall := func(id uint64, path string) {
		args, _ := json.Marshal(map[string]string{"path": path})
		calls <- initproto.Call{ID: id, Tool: "read", Args: args}
	}
	nextFrame := frames(t, r)
	next := func() initproto.Reply {
		for {
			if reply := nextFrame(); reply.State == "" {
				return reply
			}
		}
	}

	readCall(1, stuck)
	for id := uint64(2); id <= 4; id++ {
		readCall(id, small)
		reply := next()
		assert.Equal(t, id, reply.ID, "the calls after a stuck read are answered")
		assert.Contains(t, string(reply.Result), "hello")
	}
	released()
	reply := next()
	assert.Equal(t, uint64(1), reply.ID)
	assert.Contains(t, string(reply.Result), "at last")
	// The reading goes on after the hand-over.
	readCall(5, small)
	assert.Equal(t, uint64(5), next().ID)
}
