package rpc

import (
	"context"
	"encoding/json"
	"sync"
)

// subscriptions/listen (2026-07-28, basic/patterns/subscriptions) carries
// the Tasks extension's notifications/tasks: a client lists task ids in
// params.notifications.taskIds; the server acknowledges the ones it knows
// (notifications/subscriptions/acknowledged), sends each task's full state
// in notifications/tasks when it finishes (at once if it already has), all
// tagged with _meta.io.modelcontextprotocol/subscriptionId, and ends the
// stream with its result once every task has been told, or when the server
// stops. boxsh's tools never change, so no list_changed type is honoured.
// The client ends a stream early with notifications/cancelled (stdio) or
// by closing it (HTTP); nothing more is sent for it then.

const metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

func (ss *peer) listen(ctx context.Context, id json.RawMessage, params json.RawMessage, meta modernMeta) {
	var p struct {
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		ss.writeError(id, CodeInvalidParams, "subscriptions/listen params: "+err.Error())
		return
	}
	if len(p.Notifications.TaskIDs) > 0 && !meta.tasks {
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{
			"extensions": map[string]any{extTasks: map[string]any{}}}})
		ss.writeErr(id, &Error{Code: CodeMissingRequiredClientCapability,
			Message: "task notifications need the " + extTasks + " extension in the client capabilities", Data: data})
		return
	}
	var tasks []*task
	accepted := []string{}
	for _, tid := range p.Notifications.TaskIDs {
		if t := ss.tasks.lookup(tid); t != nil {
			tasks = append(tasks, t)
			accepted = append(accepted, tid)
		}
	}
	subMeta, _ := json.Marshal(map[string]json.RawMessage{metaSubscriptionID: id})
	ack, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
		"params": map[string]any{"_meta": json.RawMessage(subMeta), "notifications": map[string]any{"taskIds": accepted}}})

	lctx, cancel := context.WithCancel(ctx)
	key := string(id)
	tracked := ss.track(key, cancel)

	var mu sync.Mutex
	closed := false
	left := len(tasks)
	ws := make([]*watcher, len(tasks))
	// end closes the stream: with its result when the server ends it,
	// silently when the client did.
	end := func(answer bool) {
		mu.Lock()
		if closed {
			mu.Unlock()
			return
		}
		closed = true
		mu.Unlock()
		for i, t := range tasks {
			ss.tasks.unwatch(t, ws[i])
		}
		if tracked {
			ss.untrack(key)
		}
		cancel()
		if answer {
			ss.writeResult(id, wrapWith("complete", ss.modern.metaWith(subMeta), []byte("{}")))
		}
	}
	_ = ss.out.notify(ack)
	if len(tasks) == 0 {
		end(true)
		return
	}
	for i := range tasks {
		ws[i] = &watcher{fn: func(t *task) {
			mu.Lock()
			if closed {
				mu.Unlock()
				return
			}
			n := ss.taskNotification(t, subMeta)
			_ = ss.out.notify(n)
			left--
			last := left == 0
			mu.Unlock()
			if last {
				end(true)
			}
		}}
	}
	for i, t := range tasks {
		ss.tasks.watch(t, ws[i])
	}
	// Cancelled by the client, or its exchange or session ended: nothing
	// more is sent for the stream.
	context.AfterFunc(lctx, func() { end(false) })
}

// taskNotification is notifications/tasks for t on a subscription.
func (ss *peer) taskNotification(t *task, subMeta []byte) []byte {
	body := ss.tasks.encode(t) // {"taskId":…}
	b := []byte(`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"_meta":`)
	b = append(b, subMeta...)
	b = append(b, ',')
	b = append(b, body[1:]...)
	return append(b, '}')
}
