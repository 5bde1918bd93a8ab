package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// elicitSession serves a stdio session with an Elicitor, initialized
// with caps as the client's capabilities. It returns the Elicitor, the
// client's end of the input and a reader of the output.
func elicitSession(t *testing.T, caps string) (*Elicitor, io.Writer, *bufio.Reader) {
	t.Helper()
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	e := &Elicitor{}
	s := &Server{Tools: tools, Backend: &fakeBackend{}, Name: "boxsh", Version: "test", Elicitor: e}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), inR, outW); outW.Close() }()
	t.Cleanup(func() {
		inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return")
		}
	})
	out := bufio.NewReader(outR)
	fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":%s}}`+"\n", caps)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, `"protocolVersion"`)
	return e, inW, out
}

func TestElicitAsksTheStdioClient(t *testing.T) {
	e, in, out := elicitSession(t, `{"elicitation":{}}`)
	type res struct {
		r   ElicitResult
		err error
	}
	got := make(chan res, 1)
	go func() {
		r, err := e.Elicit(context.Background(), "Allow?", map[string]any{"type": "object"})
		got <- res{r, err}
	}()
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
	}
	require.NoError(t, json.Unmarshal([]byte(line), &req))
	assert.Equal(t, "elicitation/create", req.Method)
	assert.Equal(t, "Allow?", req.Params.Message)

	// A response to no question keeps v3's answer.
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":"other","result":{}}`)
	line, err = out.ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, "missing or non-string field: method")

	fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"decision":"deny"}}}`+"\n", req.ID)
	select {
	case r := <-got:
		require.NoError(t, r.err)
		assert.Equal(t, ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny"}}, r.r)
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
	}
}

func TestElicitWithoutCapabilityFailsAtOnce(t *testing.T) {
	e, _, _ := elicitSession(t, `{}`)
	_, err := e.Elicit(context.Background(), "Allow?", nil)
	assert.ErrorIs(t, err, ErrNoElicitation)
}

func TestElicitTimeoutCancelsTheRequest(t *testing.T) {
	e, _, out := elicitSession(t, `{"elicitation":{}}`)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := e.Elicit(ctx, "Allow?", nil)
		errc <- err
	}()
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "elicitation/create")
	cancel()
	line, err = out.ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, "notifications/cancelled")
	assert.ErrorIs(t, <-errc, context.Canceled)
}
