package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/jsontest"
)

// taskParams are params of a 2026-07-28 client that takes task handles.
func taskParams(params map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion": modernVersion,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{
			"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}},
		},
	}
	return params
}

type taskState struct {
	ResultType string          `json:"resultType"`
	TaskID     string          `json:"taskId"`
	Status     string          `json:"status"`
	Result     json.RawMessage `json:"result"`
}

func decodeTaskMsg(t *testing.T, m message) taskState {
	t.Helper()
	require.Nil(t, m.Error, "%s", m.Raw)
	var ts taskState
	require.NoError(t, json.Unmarshal(m.Result, &ts), "%s", m.Raw)
	return ts
}

// pollTask calls tasks/get until the task is no longer working.
func pollTask(t *testing.T, get func() message) taskState {
	t.Helper()
	deadline := time.Now().Add(replyTimeout)
	for {
		ts := decodeTaskMsg(t, get())
		if ts.Status != "working" {
			return ts
		}
		require.True(t, time.Now().Before(deadline), "task still working")
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTasksStdio checks that long bash calls of a client that opts in
// become tasks. The client polls them to the result, or cancels them, which
// kills the command.
func TestTasksStdio(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := startServer(t, ctx, serverOptions{})

	m := s.roundTrip("tools/call", taskParams(callParams("bash", map[string]any{"command": "echo quick"})))
	assert.Equal(t, "quick\n", m.bash(t).Stdout, "a quick call is answered directly")

	m = s.roundTrip("tools/call", taskParams(callParams("bash", map[string]any{"command": "sleep 1.5; echo finished"})))
	ts := decodeTaskMsg(t, m)
	require.Equal(t, "task", ts.ResultType, "%s", m.Raw)
	s.requireServing() // the server goes on meanwhile
	done := pollTask(t, func() message {
		return s.roundTrip("tasks/get", taskParams(map[string]any{"taskId": ts.TaskID}))
	})
	require.Equal(t, "completed", done.Status)
	var res toolResult
	require.NoError(t, json.Unmarshal(done.Result, &res))
	var out bashOutput
	require.NoError(t, json.Unmarshal(res.StructuredContent, &out))
	assert.Equal(t, "finished\n", out.Stdout)

	// A listen on the finished task: acknowledged, told at once, ended by
	// a result with one _meta (readMessage refuses a duplicate member).
	s.request("L1", "subscriptions/listen", taskParams(map[string]any{"notifications": map[string]any{"taskIds": []string{ts.TaskID}}}))
	for _, want := range []string{"notifications/subscriptions/acknowledged", "notifications/tasks"} {
		m = s.next()
		assert.Equal(t, want, m.Method, "%s", m.Raw)
	}
	m = s.expect(`"L1"`)
	var final struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &final), "%s", m.Raw)
	assert.Equal(t, `"L1"`, string(final.Meta["io.modelcontextprotocol/subscriptionId"]), "%s", m.Raw)
	assert.Contains(t, final.Meta, "io.modelcontextprotocol/serverInfo", "%s", m.Raw)

	marker := sleepMarker(120)
	killMarkedAtCleanup(t, marker)
	m = s.roundTrip("tools/call", taskParams(callParams("bash", map[string]any{"command": "sleep " + marker})))
	ts = decodeTaskMsg(t, m)
	require.Equal(t, "task", ts.ResultType, "%s", m.Raw)
	waitForProcess(t, marker)
	m = s.roundTrip("tasks/cancel", taskParams(map[string]any{"taskId": ts.TaskID}))
	require.Nil(t, m.Error, "%s", m.Raw)
	assert.Equal(t, "cancelled", pollTask(t, func() message {
		return s.roundTrip("tasks/get", taskParams(map[string]any{"taskId": ts.TaskID}))
	}).Status)
	requireNoProcess(t, 5*time.Second, marker)
}

// TestTasksHTTP checks that a task made over HTTP is polled by later
// exchanges.
func TestTasksHTTP(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	h := startHTTP(t, ctx)
	status, m := h.rawPost(t, "tools/call", taskParams(callParams("bash", map[string]any{"command": "sleep 1.3; echo over-http"})), nil)
	require.Equal(t, 200, status, "%s", m.Raw)
	ts := decodeTaskMsg(t, m)
	require.Equal(t, "task", ts.ResultType)
	done := pollTask(t, func() message {
		st, m := h.rawPost(t, "tasks/get", taskParams(map[string]any{"taskId": ts.TaskID}), map[string]string{"Mcp-Name": ts.TaskID})
		require.Equal(t, 200, st, "%s", m.Raw)
		return m
	})
	require.Equal(t, "completed", done.Status)
	assert.Contains(t, string(done.Result), "over-http")
}

// TestProgressStdio checks that a call whose request carries a
// progressToken gets notifications/progress while it runs, then its answer.
func TestProgressStdio(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := startServer(t, ctx, serverOptions{})
	params := modernParams(callParams("bash", map[string]any{"command": "sleep 2.5; echo progressed"}))
	params["_meta"].(map[string]any)["progressToken"] = "tok-1"
	s.request("p1", "tools/call", params)
	var progress []float64
	for {
		m := s.next()
		if len(m.ID) > 0 {
			require.Equal(t, `"p1"`, string(m.ID))
			assert.Equal(t, "progressed\n", m.bash(t).Stdout)
			break
		}
		var n struct {
			Method string `json:"method"`
			Params struct {
				ProgressToken string  `json:"progressToken"`
				Progress      float64 `json:"progress"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal(m.Raw, &n))
		require.Equal(t, "notifications/progress", n.Method, "%s", m.Raw)
		assert.Equal(t, "tok-1", n.Params.ProgressToken)
		progress = append(progress, n.Params.Progress)
	}
	require.GreaterOrEqual(t, len(progress), 2, "one a second, at most")
	assert.LessOrEqual(t, len(progress), 3)
	for i := 1; i < len(progress); i++ {
		assert.Greater(t, progress[i], progress[i-1])
	}
	s.requireServing()
}

// TestTaskNotificationsHTTP checks that subscriptions/listen over HTTP
// streams the task's notification (SSE), then ends.
func TestTaskNotificationsHTTP(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	h := startHTTP(t, ctx)
	status, m := h.rawPost(t, "tools/call", taskParams(callParams("bash", map[string]any{"command": "sleep 1.3; echo notified"})), nil)
	require.Equal(t, 200, status, "%s", m.Raw)
	ts := decodeTaskMsg(t, m)
	require.Equal(t, "task", ts.ResultType)

	body := requestJSON("L1", "subscriptions/listen", taskParams(map[string]any{"notifications": map[string]any{"taskIds": []string{ts.TaskID}}}))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer " + h.token, "MCP-Protocol-Version": modernVersion, "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	res, err := jsontest.NewClient().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	var methods []string
	var final string
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, jsontest.Unmarshal([]byte(data), &ev), data)
		if ev.Method != "" {
			methods = append(methods, ev.Method)
			if ev.Method == "notifications/tasks" {
				assert.Contains(t, data, `"status":"completed"`)
				assert.Contains(t, data, "notified")
			}
		} else {
			final = data
		}
	}
	require.NoError(t, sc.Err(), "the stream, read through a reader that refuses duplicate members")
	assert.Equal(t, []string{"notifications/subscriptions/acknowledged", "notifications/tasks"}, methods)
	// The result has one _meta, with the server's identity and the
	// subscription.
	var answer struct {
		Result struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"result"`
	}
	require.NoError(t, jsontest.Unmarshal([]byte(final), &answer), final)
	assert.Equal(t, `"L1"`, string(answer.Result.Meta["io.modelcontextprotocol/subscriptionId"]), final)
	assert.Contains(t, answer.Result.Meta, "io.modelcontextprotocol/serverInfo", final)
}
