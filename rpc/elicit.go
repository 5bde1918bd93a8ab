package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// ErrNoElicitation is the error of Elicitor.Elicit when no client can be
// asked: no stdio session is being served, or its client did not declare
// the elicitation capability in initialize.
var ErrNoElicitation = errors.New("the MCP client cannot be asked (no elicitation capability)")

// An Elicitor asks the client of a stdio session questions, through the
// MCP method elicitation/create.
//
// Set as Server.Elicitor, it is bound by Serve to the stdio session once
// its client declared the elicitation capability in initialize. Only
// that client can answer: the JSON-RPC responses that Serve reads from
// its input are routed to the question they answer. An HTTP session is
// never bound. It is safe for concurrent use.
type Elicitor struct {
	mu      sync.Mutex
	peer    *peer
	next    int64
	pending map[string]chan elicitReply // by the raw id of the request sent
}

// elicitReply is a client's response to an elicitation/create.
type elicitReply struct {
	result json.RawMessage
	err    *Error
}

// ElicitResult is the result of an elicitation/create.
type ElicitResult struct {
	// Action is "accept", "decline" or "cancel".
	Action string `json:"action"`
	// Content is the answer when Action is "accept".
	Content map[string]any `json:"content,omitempty"`
}

// Elicit asks the client message, with requestedSchema the form of the
// answer, and waits for the answer until ctx ends. It returns
// ErrNoElicitation at once when no client can be asked. When ctx ends
// first, the client is told that the request is cancelled.
func (e *Elicitor) Elicit(ctx context.Context, message string, requestedSchema any) (ElicitResult, error) {
	e.mu.Lock()
	ss := e.peer
	if ss == nil {
		e.mu.Unlock()
		return ElicitResult{}, ErrNoElicitation
	}
	e.next++
	var id json.RawMessage
	id, _ = json.Marshal(fmt.Sprintf("boxsh-elicit-%d", e.next))
	ch := make(chan elicitReply, 1)
	if e.pending == nil {
		e.pending = map[string]chan elicitReply{}
	}
	e.pending[string(id)] = ch
	e.mu.Unlock()
	forget := func() {
		e.mu.Lock()
		delete(e.pending, string(id))
		e.mu.Unlock()
	}
	req, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
		"params": map[string]any{"message": message, "requestedSchema": requestedSchema},
	})
	if err != nil {
		forget()
		return ElicitResult{}, fmt.Errorf("elicitation: %w", err)
	}
	if err := ss.out.write(req); err != nil {
		forget()
		return ElicitResult{}, fmt.Errorf("elicitation: %w", err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return ElicitResult{}, fmt.Errorf("elicitation: the client answered an error: %s", r.err.Message)
		}
		var res ElicitResult
		if err := json.Unmarshal(r.result, &res); err != nil {
			return ElicitResult{}, fmt.Errorf("elicitation: bad result: %w", err)
		}
		return res, nil
	case <-ctx.Done():
		forget()
		n, _ := json.Marshal(map[string]any{
			"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": id, "reason": "no answer in time"},
		})
		_ = ss.out.notify(n)
		return ElicitResult{}, fmt.Errorf("elicitation: %w", context.Cause(ctx))
	}
}

// bind makes ss the session whose client is asked.
func (e *Elicitor) bind(ss *peer) {
	e.mu.Lock()
	e.peer = ss
	e.mu.Unlock()
}

// unbind forgets ss, and fails the questions waiting for its client.
func (e *Elicitor) unbind(ss *peer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.peer != ss {
		return
	}
	e.peer = nil
	for id, ch := range e.pending {
		ch <- elicitReply{err: &Error{Code: CodeInternalError, Message: "the session ended"}}
		delete(e.pending, id)
	}
}

// answer hands msg, a response of ss's client with id, to the question it
// answers, and tells whether there was one.
func (e *Elicitor) answer(ss *peer, id json.RawMessage, msg []byte) bool {
	e.mu.Lock()
	ch, ok := e.pending[string(id)]
	if ok && e.peer == ss {
		delete(e.pending, string(id))
	}
	ok = ok && e.peer == ss
	e.mu.Unlock()
	if !ok {
		return false
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	if err := json.Unmarshal(msg, &r); err != nil || (r.Result == nil && r.Error == nil) {
		r.Error = &Error{Code: CodeInvalidRequest, Message: "a response without result or error"}
	}
	ch <- elicitReply{result: r.Result, err: r.Error}
	return true
}

// declaresElicitation tells whether the capabilities of an initialize
// request declare elicitation.
func declaresElicitation(params json.RawMessage) bool {
	var p struct {
		Capabilities struct {
			Elicitation json.RawMessage `json:"elicitation"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	c := p.Capabilities.Elicitation
	return len(c) > 0 && c[0] == '{'
}
