package bash

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// A call given an output counter counts both streams as they are read,
// the part over the cap included; while the command runs, the count
// grows.
func TestOutputCounter(t *testing.T) {
	p := newPool(t, Options{Workers: 1, MaxStream: 100, ForkServer: execMode})
	var n atomic.Uint64
	ctx, cancel := context.WithTimeout(WithOutputCounter(context.Background(), &n), 20*time.Second)
	defer cancel()
	done := make(chan tool.BashOutput, 1)
	go func() {
		out, err := p.Run(ctx, nil, tool.BashArgs{Command: "printf 0123456789; sleep 0.6; head -c 200 /dev/zero; printf abc >&2"})
		assert.NoError(t, err)
		done <- out
	}()
	require.Eventually(t, func() bool { return n.Load() == 10 }, 5*time.Second, 5*time.Millisecond, "the first output is counted while the command runs")
	out := <-done
	assert.True(t, out.StdoutTruncated)
	assert.Equal(t, "abc", out.Stderr)
	assert.Equal(t, uint64(213), n.Load())

	// Without a counter nothing is counted (and nothing breaks).
	out = run(t, p, tool.BashArgs{Command: "echo x"})
	assert.Equal(t, "x\n", out.Stdout)
	assert.Equal(t, uint64(213), n.Load())
}
