package rpc

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// clientRecorder answers every call, recording ClientOf its context.
type clientRecorder struct{ got chan string }

func (b clientRecorder) Start(ctx context.Context, _ string, _ json.RawMessage, done func(json.RawMessage, error)) error {
	b.got <- ClientOf(ctx)
	go done(json.RawMessage(`{"content":[]}`), nil)
	return nil
}

func TestClientOf(t *testing.T) {
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	rec := clientRecorder{make(chan string, 1)}
	s := &Server{Tools: tools, Backend: rec, Name: "boxsh", Version: "test"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	require.NoError(t, s.Serve(ctx, strings.NewReader(call("1", "true")+"\n"), &out))
	assert.Equal(t, "stdio", <-rec.got)
	assert.Empty(t, ClientOf(context.Background()))

	id := "0123456789abcdef0123456789abcdef"
	c := sessionClient(id)
	assert.Regexp(t, `^http session [0-9a-f]{12}$`, c)
	assert.NotContains(t, c, id[:12], "a digest, not the id")
	assert.Equal(t, c, sessionClient(id))
	assert.NotEqual(t, c, sessionClient(id[1:]))
}
