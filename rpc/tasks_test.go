package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/jsontest"
	"github.com/boxsh/boxsh/internal/tool"
)

// liveServer is a server on pipes, driven one message at a time.
type liveServer struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	next int
}

func startLive(t *testing.T) *liveServer {
	t.Helper()
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	s := &Server{Tools: tools, Backend: &fakeBackend{}, Name: "boxsh", Version: "test"}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		<-done
	})
	return &liveServer{t: t, in: inW, out: bufio.NewReader(jsontest.NewReader(outR))}
}

// rt sends one request and returns its answer (the next message).
func (l *liveServer) rt(method, params string) response {
	l.t.Helper()
	l.next++
	_, err := fmt.Fprintf(l.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", l.next, method, params)
	require.NoError(l.t, err)
	line, err := l.out.ReadBytes('\n')
	require.NoError(l.t, err)
	var r response
	require.NoError(l.t, json.Unmarshal(line, &r), "%s", line)
	require.Equal(l.t, fmt.Sprint(l.next), string(r.ID), "%s", line)
	return r
}

// taskParams are modern params of a client that takes task handles.
func taskParams(extra string) string {
	return `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},` + extra + `}`
}

type taskView struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	CreatedAt      string          `json:"createdAt"`
	Result         json.RawMessage `json:"result"`
	Error          *Error          `json:"error"`
}

func decodeTask(t *testing.T, r response) taskView {
	t.Helper()
	require.Nil(t, r.Error, "%+v", r.Error)
	var v taskView
	require.NoError(t, json.Unmarshal(r.Result, &v), "%s", r.Result)
	return v
}

func setTaskTiming(t *testing.T, after, keep time.Duration) {
	oldAfter, oldKeep := taskAfter, taskKeep
	taskAfter, taskKeep = after, keep
	t.Cleanup(func() { taskAfter, taskKeep = oldAfter, oldKeep })
}

// poll calls tasks/get until the task leaves working.
func (l *liveServer) poll(id string) taskView {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v := decodeTask(l.t, l.rt("tasks/get", taskParams(`"taskId":"`+id+`"`)))
		if v.Status != taskWorking || time.Now().After(deadline) {
			return v
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTaskCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		setTaskTiming(t, 50*time.Millisecond, time.Minute)
		l := startLive(t)
		v := decodeTask(t, l.rt("tools/call", taskParams(`"name":"bash","arguments":{"command":"sleep:400"}`)))
		require.Equal(t, "task", v.ResultType)
		require.Len(t, v.TaskID, 32)
		assert.Equal(t, taskWorking, v.Status)
		assert.Nil(t, v.TTLMs, "no expiry while it runs")
		assert.Positive(t, v.PollIntervalMs)

		// Other calls go on meanwhile.
		r := l.rt("tools/call", taskParams(`"name":"bash","arguments":{"command":"quick"}`))
		assert.Contains(t, string(r.Result), `"resultType":"complete"`, "a quick call is answered directly")

		done := l.poll(v.TaskID)
		assert.Equal(t, "complete", done.ResultType)
		require.Equal(t, taskCompleted, done.Status)
		require.NotNil(t, done.TTLMs)
		var res struct {
			ResultType        string
			StructuredContent struct{ Stdout string }
		}
		require.NoError(t, json.Unmarshal(done.Result, &res))
		assert.Equal(t, "sleep:400", res.StructuredContent.Stdout)
		assert.Equal(t, "complete", res.ResultType)

		// tasks/update has nothing to take, but acknowledges.
		r = l.rt("tasks/update", taskParams(`"taskId":"`+v.TaskID+`","inputResponses":{}`))
		require.Nil(t, r.Error)
	})
}

func TestTaskCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		setTaskTiming(t, 50*time.Millisecond, time.Minute)
		l := startLive(t)
		v := decodeTask(t, l.rt("tools/call", taskParams(`"name":"bash","arguments":{"command":"block"}`)))
		require.Equal(t, "task", v.ResultType)
		r := l.rt("tasks/cancel", taskParams(`"taskId":"`+v.TaskID+`"`))
		require.Nil(t, r.Error)
		assert.Equal(t, taskCancelled, l.poll(v.TaskID).Status)
	})
}

func TestTaskOptIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		setTaskTiming(t, 20*time.Millisecond, time.Minute)
		l := startLive(t)
		// Without the extension, a long call is answered with its result.
		r := l.rt("tools/call", modernParams("2026-07-28", `"name":"bash","arguments":{"command":"sleep:150"}`))
		require.Nil(t, r.Error)
		assert.Contains(t, string(r.Result), `"resultType":"complete"`)
		assert.Contains(t, string(r.Result), `sleep:150`)
		// Legacy clients never see tasks.
		r = l.rt("tasks/get", `{"taskId":"x"}`)
		require.NotNil(t, r.Error)
		assert.Equal(t, CodeMethodNotFound, r.Error.Code)
		// An unknown task id.
		r = l.rt("tasks/get", taskParams(`"taskId":"0123"`))
		require.NotNil(t, r.Error)
		assert.Equal(t, CodeInvalidParams, r.Error.Code)
		// Only bash becomes a task.
		r = l.rt("tools/call", taskParams(`"name":"list_terminals","arguments":{}`))
		assert.NotContains(t, string(r.Result), `"resultType":"task"`)
	})
}

func TestTaskExpiresAndBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		setTaskTiming(t, 10*time.Millisecond, 200*time.Millisecond)
		l := startLive(t)
		v := decodeTask(t, l.rt("tools/call", taskParams(`"name":"bash","arguments":{"command":"sleep:50"}`)))
		require.Equal(t, "task", v.ResultType)
		require.Equal(t, taskCompleted, l.poll(v.TaskID).Status)
		time.Sleep(taskKeep + time.Millisecond) // the bubble's clock, past the task's keep
		r := l.rt("tasks/get", taskParams(`"taskId":"`+v.TaskID+`"`))
		require.NotNil(t, r.Error, "an expired task is gone")

		ts := newTaskStore()
		old := maxTasks
		maxTasks = 3
		defer func() { maxTasks = old }()
		var ids []string
		for range 5 {
			tk := ts.create(func() {})
			ts.finish(tk, json.RawMessage(`{}`), nil)
			ids = append(ids, tk.id)
		}
		assert.Nil(t, ts.lookup(ids[0]))
		assert.Nil(t, ts.lookup(ids[1]))
		assert.NotNil(t, ts.lookup(ids[4]))
		assert.Len(t, ts.done, 3)
	})
}

func TestDiscoverAdvertisesTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := startLive(t)
		r := l.rt("server/discover", modernParams("2026-07-28", ""))
		assert.Contains(t, string(r.Result), `"io.modelcontextprotocol/tasks":{}`)
	})
}

// TestTasksEndWithStdin checks that the end of a stdio session's input
// cancels its tasks. Serve returns without waiting for them.
func TestTasksEndWithStdin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		setTaskTiming(t, 20*time.Millisecond, time.Minute)
		tools, err := tool.NewRegistry()
		require.NoError(t, err)
		s := &Server{Tools: tools, Backend: &fakeBackend{}, Name: "boxsh", Version: "test"}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- s.Serve(context.Background(), inR, outW); outW.Close() }()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		_, err = fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+taskParams(`"name":"bash","arguments":{"command":"block"}`)+`}`)
		require.NoError(t, err)
		// The bubble's clock past taskAfter, and the server idle since: the
		// call is a task.
		time.Sleep(2 * taskAfter)
		synctest.Wait()
		inW.Close()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Serve waited for a task after the end of input")
		}
	})
}

// TestTaskNotifications checks subscriptions/listen with taskIds. The
// listen is acknowledged, then gets notifications/tasks when each task
// finishes, then the stream's result.
func TestTaskNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		setTaskTiming(t, 30*time.Millisecond, time.Minute)
		l := startLive(t)
		a := decodeTask(t, l.rt("tools/call", taskParams(`"name":"bash","arguments":{"command":"sleep:300"}`)))
		b := decodeTask(t, l.rt("tools/call", taskParams(`"name":"bash","arguments":{"command":"sleep:100"}`)))
		require.Equal(t, "task", a.ResultType)
		require.Equal(t, "task", b.ResultType)

		_, err := fmt.Fprintf(l.in, `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":%s}`+"\n",
			taskParams(`"notifications":{"taskIds":["`+a.TaskID+`","`+b.TaskID+`","nope"],"toolsListChanged":true}`))
		require.NoError(t, err)
		type msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta          map[string]json.RawMessage `json:"_meta"`
				Notifications map[string]json.RawMessage `json:"notifications"`
				TaskID        string                     `json:"taskId"`
				Status        string                     `json:"status"`
				Result        json.RawMessage            `json:"result"`
			} `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		var got []msg
		for {
			line, err := l.out.ReadBytes('\n')
			require.NoError(t, err)
			var m msg
			require.NoError(t, json.Unmarshal(line, &m), "%s", line)
			got = append(got, m)
			if len(m.ID) > 0 {
				break
			}
		}
		require.Len(t, got, 4, "ack, two task notifications, result")
		assert.Equal(t, "notifications/subscriptions/acknowledged", got[0].Method)
		assert.JSONEq(t, `["`+a.TaskID+`","`+b.TaskID+`"]`, string(got[0].Params.Notifications["taskIds"]))
		assert.NotContains(t, got[0].Params.Notifications, "toolsListChanged")
		assert.Equal(t, `"L1"`, string(got[0].Params.Meta[metaSubscriptionID]))
		for i, want := range []string{b.TaskID, a.TaskID} { // b finishes first
			m := got[1+i]
			assert.Equal(t, "notifications/tasks", m.Method)
			assert.Equal(t, want, m.Params.TaskID)
			assert.Equal(t, taskCompleted, m.Params.Status)
			assert.Contains(t, string(m.Params.Result), "sleep:")
			assert.Equal(t, `"L1"`, string(m.Params.Meta[metaSubscriptionID]))
		}
		assert.Equal(t, `"L1"`, string(got[3].ID))
		// One _meta with both the server's identity and the subscription (the
		// reader has refused a second _meta already).
		var final struct {
			ResultType string                     `json:"resultType"`
			Meta       map[string]json.RawMessage `json:"_meta"`
		}
		require.NoError(t, json.Unmarshal(got[3].Result, &final))
		assert.Equal(t, "complete", final.ResultType)
		assert.Equal(t, `"L1"`, string(final.Meta[metaSubscriptionID]))
		assert.JSONEq(t, `{"name":"boxsh","version":"test"}`, string(final.Meta[metaServerInfo]))

		// Without the extension, task notifications are refused.
		r := l.rt("subscriptions/listen", modernParams("2026-07-28", `"notifications":{"taskIds":["`+a.TaskID+`"]}`))
		require.NotNil(t, r.Error)
		assert.Equal(t, CodeMissingRequiredClientCapability, r.Error.Code)
	})
}

// TestTaskListenCancelled checks that a listen the client cancels gets
// nothing more.
func TestTaskListenCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		setTaskTiming(t, 30*time.Millisecond, time.Minute)
		l := startLive(t)
		a := decodeTask(t, l.rt("tools/call", taskParams(`"name":"bash","arguments":{"command":"sleep:300"}`)))
		_, err := fmt.Fprintf(l.in, `{"jsonrpc":"2.0","id":"L2","method":"subscriptions/listen","params":%s}`+"\n",
			taskParams(`"notifications":{"taskIds":["`+a.TaskID+`"]}`))
		require.NoError(t, err)
		line, err := l.out.ReadBytes('\n')
		require.NoError(t, err)
		assert.Contains(t, string(line), "notifications/subscriptions/acknowledged")
		_, err = fmt.Fprintln(l.in, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L2"}}`)
		require.NoError(t, err)
		// The bubble's clock past the task's end, and the server idle
		// since: it has finished, with no one listening.
		time.Sleep(400 * time.Millisecond)
		synctest.Wait()
		r := l.rt("tasks/get", taskParams(`"taskId":"`+a.TaskID+`"`))
		assert.Equal(t, taskCompleted, decodeTask(t, r).Status, "the next message answers tasks/get: nothing came for L2")
	})
}
