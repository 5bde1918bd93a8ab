package toolhost

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
)

// TestQueuedCallsHoldNoGoroutine checks that bash calls that wait for a
// worker hold no goroutine each. A burst of them leaves boxsh-init's
// goroutines as they were; a goroutine each would keep its stack for good
// after the burst. The calls still start in arrival order. One cancelled
// while it waits is answered at once and never runs, and the others run
// after it.
func TestQueuedCallsHoldNoGoroutine(t *testing.T) {
	r, w := serveOnPipe(t) // one worker
	next := frames(t, r)
	bash := func(id uint64, command string) {
		t.Helper()
		args, err := json.Marshal(map[string]string{"command": command})
		require.NoError(t, err)
		require.NoError(t, w.WriteJSON(initproto.Call{ID: id, Tool: "bash", Args: args}))
	}

	dir := t.TempDir()
	gate, log, running := filepath.Join(dir, "gate"), filepath.Join(dir, "log"), filepath.Join(dir, "running")
	// The first call holds the one worker until the gate opens.
	bash(1, fmt.Sprintf(": > %s; while [ ! -e %s ]; do sleep 0.01; done", running, gate))
	require.Eventually(t, func() bool {
		_, err := os.Stat(running)
		return err == nil
	}, 10*time.Second, time.Millisecond, "the first call runs")
	before := runtime.NumGoroutine()

	const n = 100
	for id := uint64(2); id < 2+n; id++ {
		bash(id, fmt.Sprintf("echo %d >> %s", id, log))
	}
	for queued := 0; queued < n; {
		reply := next()
		require.Equal(t, initproto.StateQueued, reply.State, "frame for call %d", reply.ID)
		queued++
	}
	grown := runtime.NumGoroutine() - before
	assert.Less(t, grown, 10, "goroutines added by %d queued calls", n)

	// A queued call cancelled is answered at once, while the first runs.
	const cancelled = 50
	require.NoError(t, w.WriteJSON(initproto.Call{ID: cancelled, Cancel: true}))
	reply := next()
	require.Equal(t, uint64(cancelled), reply.ID)
	require.Empty(t, reply.State)
	require.NotNil(t, reply.Error, "the cancelled call's reply")
	assert.Contains(t, reply.Error.Message, "canceled")

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	var started []uint64
	answered := map[uint64]bool{}
	for len(answered) < n { // the first call and the n-1 not cancelled
		reply := next()
		switch reply.State {
		case initproto.StateStarted:
			started = append(started, reply.ID)
		case "":
			require.Nil(t, reply.Error, "call %d", reply.ID)
			require.False(t, answered[reply.ID], "call %d answered twice", reply.ID)
			answered[reply.ID] = true
		}
	}
	assert.False(t, answered[cancelled])
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	var ran []uint64
	for _, f := range strings.Fields(string(b)) {
		id, err := strconv.ParseUint(f, 10, 64)
		require.NoError(t, err)
		ran = append(ran, id)
	}
	var want []uint64
	for id := uint64(2); id < 2+n; id++ {
		if id != cancelled {
			want = append(want, id)
		}
	}
	assert.Equal(t, want, started, "started notices in arrival order")
	assert.Equal(t, want, ran, "commands ran in arrival order")
}
