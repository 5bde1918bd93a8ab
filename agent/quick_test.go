package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/frame"
)

// A read of a small file is answered on the reading goroutine (see
// quick), with the result any read gets; a read that blocks (a FIFO with
// no writer) is not run there: the calls after it are still read and
// answered.
func TestServeQuickRead(t *testing.T) {
	r, w := serveOnPipe(t)

	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	require.NoError(t, os.WriteFile(small, []byte("hello\n"), 0o644))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	readCall := func(id uint64, path string) {
		args, _ := json.Marshal(map[string]string{"path": path})
		require.NoError(t, w.WriteJSON(frame.Call{ID: id, Tool: "read", Args: args}))
	}
	next := func() frame.Reply { return nextReply(t, r) }

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
