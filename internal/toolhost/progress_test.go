package toolhost

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
)

// TestServeProgressFrames checks that a bash call that asks for progress
// gets frames of its growing output count, at the rate it asked. Then it
// gets its reply and nothing after. A call that does not ask gets none.
func TestServeProgressFrames(t *testing.T) {
	r, w := serveOnPipe(t)

	args := json.RawMessage(`{"command":"for i in 1 2 3 4 5 6; do echo line$i; sleep 0.1; done"}`)
	require.NoError(t, w.WriteJSON(initproto.Call{ID: 1, Tool: "bash", Args: args, Progress: 120}))
	var counts []uint64
	var reply initproto.Reply
	start := time.Now()
	for {
		payload, err := r.Read()
		require.NoError(t, err)
		if id, n, ok := initproto.DecodeProgress(payload); ok {
			assert.Equal(t, uint64(1), id)
			counts = append(counts, n)
			continue
		}
		reply, err = initproto.DecodeReply(payload)
		require.NoError(t, err)
		if reply.State == "" {
			break
		}
	}
	elapsed := time.Since(start)
	assert.Contains(t, string(reply.Result), "line6")
	require.GreaterOrEqual(t, len(counts), 2, "%v", counts)
	assert.LessOrEqual(t, len(counts), int(elapsed/(120*time.Millisecond)), "at most one every 120 ms")
	for i := 1; i < len(counts); i++ {
		assert.GreaterOrEqual(t, counts[i], counts[i-1])
	}
	assert.Greater(t, counts[len(counts)-1], counts[0], "the count grows: %v", counts)
	assert.LessOrEqual(t, counts[len(counts)-1], uint64(36))

	// Without progress: the reply alone (notices aside).
	require.NoError(t, w.WriteJSON(initproto.Call{ID: 2, Tool: "bash", Args: json.RawMessage(`{"command":"sleep 0.3; echo done"}`)}))
	for {
		payload, err := r.Read()
		require.NoError(t, err)
		_, _, ok := initproto.DecodeProgress(payload)
		require.False(t, ok, "progress frame for a call that did not ask: %s", payload)
		reply, err = initproto.DecodeReply(payload)
		require.NoError(t, err)
		if reply.State == "" {
			break
		}
	}
	assert.Equal(t, uint64(2), reply.ID)
}
