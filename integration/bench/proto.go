package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// protocolVersion is the MCP version the bench announces.
const protocolVersion = "2025-03-26"

// request is a JSON-RPC 2.0 request; without ID it is a notification.
type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      *int   `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Error formats the error object.
func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// encode renders one message as a newline-terminated JSON line.
func encode(r request) []byte {
	r.JSONRPC = "2.0"
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // only fixed, marshalable values are encoded
	}
	return append(b, '\n')
}

// initRequests is the initialize request with the given id followed by the
// notifications/initialized notification.
func initRequests(id int) []byte {
	init := encode(request{ID: &id, Method: "initialize", Params: map[string]any{
		"protocolVersion": protocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "boxsh-bench", "version": "1"},
	}})
	return append(init, encode(request{Method: "notifications/initialized"})...)
}

// toolCall is a full tools/call request line.
func toolCall(id int, tool string, args any) []byte {
	return encode(request{ID: &id, Method: "tools/call", Params: map[string]any{
		"name": tool, "arguments": args,
	}})
}

// bashArgs are the arguments of the bash tool.
func bashArgs(command string) map[string]any { return map[string]any{"command": command} }

// readArgs are the arguments of the read tool.
func readArgs(path string) map[string]any { return map[string]any{"path": path} }

// answerID extracts a numeric id from an answer line; ok is false when the
// message has no numeric id (a notification, or an id of another type).
func answerID(line []byte) (id int, ok bool) {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
		return 0, false
	}
	if json.Unmarshal(m.ID, &id) != nil {
		return 0, false
	}
	return id, true
}

// isNotification reports whether line is a message carrying a method and no
// id, which needs no answer and is skipped.
func isNotification(line []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal(line, &m) == nil && m.Method != "" && (len(m.ID) == 0 || bytes.Equal(m.ID, []byte("null")))
}

// toolAnswer is the part of a tools/call answer the bench checks.
type toolAnswer struct {
	Result *struct {
		IsError    bool            `json:"isError"`
		Structured json.RawMessage `json:"structuredContent"`
	} `json:"result"`
	Error *rpcError `json:"error"`
}

// structured decodes a tools/call answer's structuredContent into v. A
// JSON-RPC error, isError or missing structured content is an error.
func structured(line []byte, v any) error {
	var a toolAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		return fmt.Errorf("undecodable answer: %v", err)
	}
	if a.Error != nil {
		return a.Error
	}
	if a.Result == nil {
		return fmt.Errorf("answer without result: %s", clip(string(line), 200))
	}
	if a.Result.IsError {
		return fmt.Errorf("tool error: %s", clip(string(line), 200))
	}
	if len(a.Result.Structured) == 0 {
		return fmt.Errorf("answer without structuredContent: %s", clip(string(line), 200))
	}
	return json.Unmarshal(a.Result.Structured, v)
}

// bashResult is the bash tool's structured result.
type bashResult struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

// checkBash verifies a bash answer: exit code 0 and exactly the wanted stdout.
func checkBash(line []byte, want string) error {
	var r bashResult
	if err := structured(line, &r); err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return fmt.Errorf("exit code %d, stderr %q", r.ExitCode, clip(r.Stderr, 200))
	}
	if r.Stdout != want {
		return fmt.Errorf("stdout %q, want %q", clip(r.Stdout, 100), clip(want, 100))
	}
	return nil
}

// checkFill verifies a bash answer whose stdout must be n bytes of fill.
func checkFill(line []byte, n int, fill byte) error {
	var r bashResult
	if err := structured(line, &r); err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return fmt.Errorf("exit code %d, stderr %q", r.ExitCode, clip(r.Stderr, 200))
	}
	if len(r.Stdout) != n {
		return fmt.Errorf("stdout is %d bytes, want %d", len(r.Stdout), n)
	}
	if i := strings.IndexFunc(r.Stdout, func(c rune) bool { return c != rune(fill) }); i >= 0 {
		return fmt.Errorf("stdout byte %d is not %q", i, fill)
	}
	return nil
}

// checkRead verifies a read answer returns want as text.
func checkRead(line []byte, want string) error {
	var r struct {
		Content  string `json:"content"`
		Encoding string `json:"encoding"`
	}
	if err := structured(line, &r); err != nil {
		return err
	}
	if r.Encoding != "text" {
		return fmt.Errorf("encoding %q, want text", r.Encoding)
	}
	if r.Content != want {
		return fmt.Errorf("content %q, want %q", clip(r.Content, 100), clip(want, 100))
	}
	return nil
}
