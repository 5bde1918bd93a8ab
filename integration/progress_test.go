package integration

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/jsontest"
)

// outputBytesKey is the _meta key of boxsh's progress notifications that
// holds the bytes of output so far.
const outputBytesKey = "com.github.boxsh/outputBytes"

// progressLog collects the progress notifications a client gets.
type progressLog struct {
	mu   sync.Mutex
	seen []*mcp.ProgressNotificationParams
}

func (l *progressLog) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, req.Params)
}

// take returns the notifications so far and forgets them.
func (l *progressLog) take() []*mcp.ProgressNotificationParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := l.seen
	l.seen = nil
	return seen
}

// sdkProgressClient is the official Go SDK client, collecting progress.
func sdkProgressClient(log *progressLog) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "boxsh-progress-test", Version: "1.0.0"},
		&mcp.ClientOptions{ProgressNotificationHandler: log.handle})
}

// progressCommand prints 101 bytes every 0.25 s for 3.5 s.
const progressCommand = `for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do printf '%0100d\n' $i; sleep 0.25; done`

// checkProgressBytes runs progressCommand on s with a progress token and
// checks the notifications. They come about one a second, growing in time.
// Each says the bytes of output so far, which grow. The exception is a
// first one that may come before boxsh-init's first report, on a loaded
// machine. Then it runs the same without a token, which gets none.
func checkProgressBytes(t *testing.T, ctx context.Context, s *mcp.ClientSession, log *progressLog) {
	t.Helper()
	params := &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": progressCommand}}
	params.SetProgressToken("bytes-1")
	res, err := s.CallTool(ctx, params)
	require.NoError(t, err)
	var out bashOutput
	sdkStructured(t, res, &out)
	require.Len(t, out.Stdout, 1414)
	seen := log.take()
	require.GreaterOrEqual(t, len(seen), 2, "%+v", seen)
	assert.LessOrEqual(t, len(seen), 4, "about one a second")
	var lastProgress float64
	var counts []float64
	for i, n := range seen {
		assert.Equal(t, "bytes-1", n.ProgressToken)
		assert.Greater(t, n.Progress, lastProgress, "progress grows")
		lastProgress = n.Progress
		b, ok := n.Meta[outputBytesKey].(float64)
		if !ok {
			assert.Zero(t, i, "only the first may come before a report: %+v", n)
			continue
		}
		assert.LessOrEqual(t, b, 1414.0)
		assert.Zero(t, int(b)%101, "whole lines: %v", b)
		assert.True(t, strings.HasSuffix(n.Message, " bytes of output"), n.Message)
		counts = append(counts, b)
	}
	require.GreaterOrEqual(t, len(counts), 2, "%+v", seen)
	for i := 1; i < len(counts); i++ {
		assert.GreaterOrEqual(t, counts[i], counts[i-1], "bytes of output never shrink: %v", counts)
	}
	assert.Greater(t, counts[len(counts)-1], counts[0], "bytes of output grow: %v", counts)

	// No token: no notification, and boxsh-init is asked for no progress.
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo a; sleep 1.3; echo b"}})
	require.NoError(t, err)
	sdkStructured(t, res, &out)
	assert.Equal(t, "a\nb\n", out.Stdout)
	assert.Empty(t, log.take())
}

// TestProgressBytesStdio checks that a bash call with a progress token gets
// notifications/progress that say the bytes of output so far, on stdio.
func TestProgressBytesStdio(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	log := &progressLog{}
	cmd := exec.CommandContext(ctx, boxshPath(), "--rpc")
	cmd.Dir = t.TempDir()
	cmd.WaitDelay = 5 * time.Second
	s, err := sdkProgressClient(log).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitTimeout}, nil)
	require.NoError(t, err)
	defer s.Close()
	checkProgressBytes(t, ctx, s, log)
}

// TestProgressBytesHTTP checks the same over streamable HTTP, in both eras.
// The notifications come on the call's SSE stream.
func TestProgressBytesHTTP(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	h := startHTTP(t, ctx)
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("pin="+version, func(t *testing.T) {
			log := &progressLog{}
			tr := &mcp.StreamableClientTransport{
				Endpoint:   h.url,
				HTTPClient: &http.Client{Transport: bearer{h.token, jsontest.Transport{}}},
				MaxRetries: -1,
			}
			var opts *mcp.ClientSessionOptions
			if version != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
			}
			s, err := sdkProgressClient(log).Connect(ctx, tr, opts)
			require.NoError(t, err)
			defer s.Close()
			checkProgressBytes(t, ctx, s, log)
		})
	}
}
