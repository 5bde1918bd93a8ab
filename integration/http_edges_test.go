package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/jsontest"
)

// postBody sends body to /mcp as is, with the token and hdr, and decodes
// the JSON answer (an SSE answer's one message too).
func (h *httpBoxsh) postBody(t *testing.T, body []byte, hdr map[string]string) (int, message) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+h.token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := jsontest.NewClient().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var m message
	if len(b) > 0 && b[0] == '{' {
		require.NoError(t, jsontest.Unmarshal(b, &m), "%s", b)
		m.Raw = b
	}
	return res.StatusCode, m
}

// modernHeaders are the standard headers of a 2026-07-28 POST of method.
func modernHeaders(method string) map[string]string {
	return map[string]string{"MCP-Protocol-Version": modernVersion, "Mcp-Method": method}
}

// TestHTTPFuzzEdgeCases checks the fuzz run's edge cases over HTTP, in both
// eras:
//   - a huge timeout runs the command;
//   - a notification method with an id is answered, with that id;
//   - a non-string method is refused with the request's id.
func TestHTTPFuzzEdgeCases(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	h := startHTTP(t, ctx)
	for _, modern := range []bool{false, true} {
		params := func(p map[string]any) map[string]any {
			if modern {
				return modernParams(p)
			}
			return p
		}
		hdr := func(method string) map[string]string {
			if modern {
				return modernHeaders(method)
			}
			return nil
		}
		for _, timeout := range []float64{1e10, 1e300} {
			start := time.Now()
			call := hdr("tools/call")
			if call != nil {
				call["Mcp-Name"] = "bash"
			}
			status, m := h.postBody(t, requestJSON(7, "tools/call", params(callParams("bash", map[string]any{"command": "echo ran", "timeout": timeout}))), call)
			require.Equal(t, 200, status, "modern %v: %s", modern, m.Raw)
			out := m.bash(t)
			assert.Equal(t, 0, out.ExitCode, "timeout %g: %+v", timeout, out)
			assert.Equal(t, "ran\n", out.Stdout)
			assert.Less(t, time.Since(start), 30*time.Second)
		}

		status, m := h.postBody(t, requestJSON("n-1", "notifications/initialized", params(nil)), hdr("notifications/initialized"))
		assert.NotEqual(t, http.StatusAccepted, status, "modern %v: a message with an id is answered", modern)
		require.NotNil(t, m.Error, "modern %v: %s", modern, m.Raw)
		assert.Equal(t, -32600, m.Error.Code)
		assert.Equal(t, `"n-1"`, string(m.ID))
	}
	status, m := h.postBody(t, []byte(`{"jsonrpc":"2.0","id":"m-123","method":123}`), nil)
	assert.Equal(t, 400, status)
	require.NotNil(t, m.Error, "%s", m.Raw)
	assert.Equal(t, -32600, m.Error.Code)
	assert.Equal(t, `"m-123"`, string(m.ID), "refused with the request's id, not null")

	// And the server goes on.
	status, m = h.rawPost(t, "tools/call", modernParams(callParams("bash", map[string]any{"command": "echo still"})), nil)
	require.Equal(t, 200, status, "%s", m.Raw)
	assert.Equal(t, "still\n", m.bash(t).Stdout)
}

// TestHTTPTaskCancel checks that a task made over HTTP is cancelled by a
// later exchange, which kills its command. Polling then says cancelled.
func TestHTTPTaskCancel(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	h := startHTTP(t, ctx)
	marker := sleepMarker(121)
	killMarkedAtCleanup(t, marker)
	status, m := h.rawPost(t, "tools/call", taskParams(callParams("bash", map[string]any{"command": "sleep " + marker})), nil)
	require.Equal(t, 200, status, "%s", m.Raw)
	ts := decodeTaskMsg(t, m)
	require.Equal(t, "task", ts.ResultType, "%s", m.Raw)
	waitForProcess(t, marker)

	byID := map[string]string{"Mcp-Name": ts.TaskID}
	status, m = h.rawPost(t, "tasks/cancel", taskParams(map[string]any{"taskId": ts.TaskID}), byID)
	require.Equal(t, 200, status, "%s", m.Raw)
	require.Nil(t, m.Error, "%s", m.Raw)
	done := pollTask(t, func() message {
		st, m := h.rawPost(t, "tasks/get", taskParams(map[string]any{"taskId": ts.TaskID}), byID)
		require.Equal(t, 200, st, "%s", m.Raw)
		return m
	})
	assert.Equal(t, "cancelled", done.Status)
	requireNoProcess(t, 5*time.Second, marker)

	status, m = h.rawPost(t, "tasks/get", taskParams(map[string]any{"taskId": "no-such-task"}), map[string]string{"Mcp-Name": "no-such-task"})
	assert.Equal(t, 400, status, "%s", m.Raw)
	require.NotNil(t, m.Error)
}

// TestHTTPSigtermCancelsLongCall sends SIGTERM with a call that outlasts
// the shutdown grace. The call is cancelled, its command killed, and still
// answered. boxsh exits cleanly.
func TestHTTPSigtermCancelsLongCall(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	h := startHTTP(t, ctx)
	marker := sleepMarker(122)
	killMarkedAtCleanup(t, marker)
	type answer struct {
		status int
		m      message
	}
	got := make(chan answer, 1)
	go func() {
		st, m := h.rawPost(t, "tools/call", modernParams(callParams("bash", map[string]any{"command": "sleep " + marker})), nil)
		got <- answer{st, m}
	}()
	waitForProcess(t, marker)
	sent := time.Now()
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case a := <-got:
		require.Equal(t, 200, a.status, "%s", a.m.Raw)
		var r toolResult
		require.NoError(t, json.Unmarshal(a.m.Result, &r), "%s", a.m.Raw)
		assert.True(t, r.IsError, "a cancelled call is a failed tool call: %s", a.m.Raw)
		assert.Greater(t, time.Since(sent), 4*time.Second, "the call had the shutdown grace (5 s) to finish")
	case <-time.After(replyTimeout):
		t.Fatal("the call in flight at SIGTERM was not answered")
	}
	select {
	case <-h.exited:
		assert.Equal(t, 0, h.cmd.ProcessState.ExitCode(), "clean shutdown")
	case <-time.After(exitTimeout):
		t.Fatal("boxsh did not exit after SIGTERM")
	}
	requireNoProcess(t, 5*time.Second, marker)
}
