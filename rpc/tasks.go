package rpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/boxsh/boxsh/internal/tool"
)

// The Tasks extension (io.modelcontextprotocol/tasks, SEP-2663) for bash:
// a modern client that declares the extension in its request's
// capabilities may get, instead of the CallToolResult, a task handle when
// the command runs longer than taskAfter. It polls tasks/get until the task
// is completed (with the result the call would have given), failed or
// cancelled; tasks/cancel kills the command's process group. Task ids are
// unguessable handles, valid on any connection or transport of the server:
// no per-connection state. Finished tasks are kept for taskKeep, and at
// most maxTasks of them and taskBytes of their results.

const extTasks = "io.modelcontextprotocol/tasks"

// Tuning of tasks (variables for the tests).
var (
	// taskAfter is how long a bash call runs before it becomes a task.
	taskAfter = time.Second
	// taskKeep is how long a finished task is kept.
	taskKeep = 10 * time.Minute
	// taskPoll is the suggested polling interval.
	taskPoll = time.Second
	// maxTasks bounds the finished tasks kept, and taskBytes their
	// results; the oldest go first.
	maxTasks  = 256
	taskBytes = 256 << 20
)

// The statuses of a task.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// task is one task's state; guarded by taskStore.mu.
type task struct {
	id              string
	status          string
	created, update time.Time
	finished        time.Time
	result          json.RawMessage // completed: the modern CallToolResult
	err             *Error          // failed
	cancel          context.CancelFunc
	cancelRequested bool
}

// taskStore holds the tasks of a server.
type taskStore struct {
	mu    sync.Mutex
	tasks map[string]*task
	done  []*task // finished, oldest first
	bytes int
	// watchers are called once when the task finishes.
	watchers map[*task]map[*watcher]struct{}
}

// watcher is a subscriptions/listen stream's interest in a task.
type watcher struct{ fn func(*task) }

func newTaskStore() *taskStore {
	return &taskStore{tasks: make(map[string]*task), watchers: make(map[*task]map[*watcher]struct{})}
}

// watch calls w.fn once t has finished (at once when it has); unwatch
// undoes it.
func (ts *taskStore) watch(t *task, w *watcher) {
	ts.mu.Lock()
	if t.finished.IsZero() {
		if ts.watchers[t] == nil {
			ts.watchers[t] = make(map[*watcher]struct{})
		}
		ts.watchers[t][w] = struct{}{}
		ts.mu.Unlock()
		return
	}
	ts.mu.Unlock()
	w.fn(t)
}

func (ts *taskStore) unwatch(t *task, w *watcher) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(ts.watchers[t], w)
	if len(ts.watchers[t]) == 0 {
		delete(ts.watchers, t)
	}
}

// create registers a working task whose call cancel stops.
func (ts *taskStore) create(cancel context.CancelFunc) *task {
	var b [16]byte
	_, _ = rand.Read(b[:])
	now := time.Now()
	t := &task{id: hex.EncodeToString(b[:]), status: taskWorking, created: now, update: now, cancel: cancel}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.tasks[t.id] = t
	return t
}

// finish records the outcome of t's call and tells its watchers.
func (ts *taskStore) finish(t *task, result json.RawMessage, err *Error) {
	ts.mu.Lock()
	ws := ts.watchers[t]
	delete(ts.watchers, t)
	ts.record(t, result, err)
	ts.mu.Unlock()
	for w := range ws {
		w.fn(t)
	}
}

func (ts *taskStore) record(t *task, result json.RawMessage, err *Error) {
	now := time.Now()
	t.finished, t.update = now, now
	switch {
	case t.cancelRequested:
		t.status = taskCancelled
	case err != nil:
		t.status, t.err = taskFailed, err
	default:
		t.status, t.result = taskCompleted, result
		ts.bytes += len(result)
	}
	t.cancel = nil
	ts.done = append(ts.done, t)
	ts.prune(now)
}

// prune drops expired finished tasks, then the oldest beyond the bounds.
func (ts *taskStore) prune(now time.Time) {
	for len(ts.done) > 0 {
		t := ts.done[0]
		if now.Sub(t.finished) < taskKeep && len(ts.done) <= maxTasks && ts.bytes <= taskBytes {
			break
		}
		ts.done = ts.done[1:]
		ts.bytes -= len(t.result)
		delete(ts.tasks, t.id)
	}
}

// lookup returns the task id, or nil.
func (ts *taskStore) lookup(id string) *task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.prune(time.Now())
	return ts.tasks[id]
}

// encode renders t as a Task object, with its result or error when
// finished.
func (ts *taskStore) encode(t *task) []byte {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	b := []byte(`{"taskId":"` + t.id + `","status":"` + t.status + `"`)
	b = append(b, `,"createdAt":`...)
	b = strconv.AppendQuote(b, t.created.UTC().Format(time.RFC3339Nano))
	b = append(b, `,"lastUpdatedAt":`...)
	b = strconv.AppendQuote(b, t.update.UTC().Format(time.RFC3339Nano))
	if t.finished.IsZero() {
		b = append(b, `,"ttlMs":null`...) // kept while it runs
	} else {
		b = append(b, `,"ttlMs":`...)
		b = strconv.AppendInt(b, t.finished.Add(taskKeep).Sub(t.created).Milliseconds(), 10)
	}
	b = append(b, `,"pollIntervalMs":`...)
	b = strconv.AppendInt(b, taskPoll.Milliseconds(), 10)
	switch t.status {
	case taskCompleted:
		b = append(b, `,"result":`...)
		b = append(b, t.result...)
	case taskFailed:
		e, _ := json.Marshal(t.err)
		b = append(b, `,"error":`...)
		b = append(b, e...)
	case taskCancelled:
		b = append(b, `,"statusMessage":"cancelled by tasks/cancel"`...)
	}
	return append(b, '}')
}

// ownTasks are the running tasks of a stdio session. They are cancelled
// when its input ends: no one could poll them afterwards, and a stdio
// server should exit promptly at the end of its input.
type ownTasks struct {
	mu     sync.Mutex
	cancel map[*task]context.CancelFunc
}

func (o *ownTasks) add(t *task, cancel context.CancelFunc) {
	if o != nil {
		o.mu.Lock()
		o.cancel[t] = cancel
		o.mu.Unlock()
	}
}

func (o *ownTasks) remove(t *task) {
	if o != nil {
		o.mu.Lock()
		delete(o.cancel, t)
		o.mu.Unlock()
	}
}

// cancelTasks cancels the running tasks the session made.
func (ss *peer) cancelTasks() {
	if ss.own == nil {
		return
	}
	ss.own.mu.Lock()
	defer ss.own.mu.Unlock()
	for t, cancel := range ss.own.cancel {
		ss.log.Debug("input ended: cancelling task", "task", t.id)
		cancel()
	}
}

// toolsCallTask runs a tools/call of a client that takes task handles:
// bash calls that outlast taskAfter are answered with a task; others as
// toolsCall answers them.
func (ss *peer) toolsCallTask(ctx context.Context, id json.RawMessage, params json.RawMessage) {
	c, ok := ss.callArgs(id, params)
	if !ok {
		return
	}
	name, args := c.name, c.args
	if !ss.Tools.IsCommand(name) {
		ss.startCall(ctx, id, name, args, true, c.progress)
		return
	}
	select {
	case ss.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	life := ss.life
	if life == nil {
		life = ctx
	}
	// The call may outlive its request (an HTTP exchange ends once the
	// task handle is sent): it runs in the session's life, and the
	// request's end cancels it only while no task stands for it.
	callCtx, cancel := context.WithCancel(life)
	var mu sync.Mutex
	var tk *task
	answered := false
	stopReq := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if tk == nil {
			cancel()
		}
	})
	key := string(id)
	tracked := ss.track(key, cancel)
	ss.wg.Add(1)
	// Progress goes to the request until it becomes a task (the extension
	// has no progress on tasks).
	backendCtx, stopProgress := ss.startProgress(callCtx, c.progress, true)
	timer := time.AfterFunc(taskAfter, func() {
		mu.Lock()
		defer mu.Unlock()
		if answered {
			return
		}
		answered = true
		stopProgress()
		tk = ss.tasks.create(cancel)
		ss.own.add(tk, cancel)
		ss.log.Debug("bash call became a task", "id", key, "task", tk.id)
		ss.writeResult(id, ss.modern.wrapAs("task", ss.tasks.encode(tk)))
	})
	finish := func(result json.RawMessage, err error) {
		defer ss.wg.Done()
		defer func() { <-ss.slots }()
		defer cancel()
		stopProgress()
		stopReq()
		timer.Stop()
		if tracked {
			ss.untrack(key)
		}
		var rpcErr *Error
		if err != nil && !errors.As(err, &rpcErr) {
			ss.log.Error("tool call failed", "tool", name, "error", err)
			result, _ = json.Marshal(tool.Errorf("%s: %v", name, err))
		}
		if result != nil {
			result = ss.modern.wrap(result)
		}
		mu.Lock()
		t, already := tk, answered
		answered = true
		mu.Unlock()
		switch {
		case t != nil:
			ss.own.remove(t)
			ss.tasks.finish(t, result, rpcErr)
		case already:
		case callCtx.Err() != nil && ctx.Err() == nil:
			// cancelled by the client: no answer is sent
		case rpcErr != nil:
			ss.writeErr(id, rpcErr)
		default:
			ss.writeResult(id, result)
		}
	}
	if err := ss.Backend.Start(withClient(backendCtx, ss.client), name, args, finish); err != nil {
		finish(nil, err)
	}
}

// taskMethod answers tasks/get, tasks/update and tasks/cancel.
func (ss *peer) taskMethod(id json.RawMessage, method string, params json.RawMessage) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.TaskID == "" {
		ss.writeError(id, CodeInvalidParams, method+" needs params.taskId (a string)")
		return
	}
	t := ss.tasks.lookup(p.TaskID)
	if t == nil {
		ss.writeError(id, CodeInvalidParams, "unknown or expired task: "+p.TaskID)
		return
	}
	switch method {
	case "tasks/get":
		ss.writeResult(id, ss.modern.wrapAs("complete", ss.tasks.encode(t)))
	case "tasks/update":
		// bash never asks for input: nothing is outstanding.
		ss.writeResult(id, ss.modern.wrapAs("complete", []byte("{}")))
	case "tasks/cancel":
		ss.tasks.mu.Lock()
		cancel := t.cancel
		if cancel != nil {
			t.cancelRequested = true
		}
		ss.tasks.mu.Unlock()
		if cancel != nil {
			ss.log.Debug("cancelling task", "task", t.id)
			cancel() // the backend kills the command's process group
		}
		ss.writeResult(id, ss.modern.wrapAs("complete", []byte("{}")))
	}
}
