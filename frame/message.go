package frame

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Call asks boxsh-init to run a tool. ID is chosen by the front and echoed in
// the Reply.
type Call struct {
	ID   uint64          `json:"id"`
	Tool string          `json:"tool,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
	// Cancel, when set, asks boxsh-init to stop the running call ID (kill
	// its process group). No Reply is owed for a cancelled call, but one
	// may still arrive.
	Cancel bool `json:"cancel,omitempty"`
	// Progress, when set, asks for progress frames (see EncodeProgress),
	// at most one every Progress milliseconds.
	Progress int64 `json:"progress,omitempty"`
}

// The JSON-RPC 2.0 error codes. boxsh-init answers a call with CodeInvalidParams
// (arguments a tool cannot take, an unknown tool) or CodeInternalError; the
// front uses the others for the messages of its own clients.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a protocol-level failure of a call, reported to the client as a
// JSON-RPC error (Code is one of the Code constants).
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// Data is the optional data member of a JSON-RPC error.
	Data json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Reply answers a Call: either Result (an MCP CallToolResult, kept raw so
// the front never re-encodes large outputs) or Error.
type Reply struct {
	ID     uint64          `json:"id"`
	Error  *Error          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	// State makes the frame a notice, not the reply: the call waits for
	// a worker (StateQueued), or has got one and runs (StateStarted). Only
	// calls that wait get notices; the front resends a queued call that
	// had not started when its boxsh-init died.
	State string `json:"state,omitempty"`
}

// The states of a call that notices report (Reply.State).
const (
	StateQueued  = "queued"
	StateStarted = "started"
)

// stateInfix follows the id in an encoded notice.
var stateInfix = []byte(`,"state":"`)

// EncodeState encodes a notice of call id's state.
func EncodeState(id uint64, state string) []byte {
	b := append(strconv.AppendUint(append(make([]byte, 0, 40), replyPrefix...), id, 10), stateInfix...)
	return append(append(b, state...), `"}`...)
}

// replyPrefix and replyInfix delimit the fast form of an encoded Reply:
// {"id":N,"result":RAW}.
var (
	replyPrefix = []byte(`{"id":`)
	replyInfix  = []byte(`,"result":`)
)

// EncodeReply encodes a successful reply around an already encoded result,
// without copying the result through a JSON encoder.
func EncodeReply(id uint64, result []byte) []byte {
	b := make([]byte, 0, len(result)+40)
	b = append(b, replyPrefix...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, replyInfix...)
	b = append(b, result...)
	return append(b, '}')
}

// DecodeReply decodes a Reply. Payloads in the form EncodeReply writes are
// split without scanning the (possibly many megabytes of) result; anything
// else goes through encoding/json.
func DecodeReply(payload []byte) (Reply, error) {
	if rest, ok := bytes.CutPrefix(payload, replyPrefix); ok {
		// A notice, as EncodeState writes it.
		if i := bytes.Index(rest, stateInfix); i > 0 && i <= 20 {
			if id, err := strconv.ParseUint(string(rest[:i]), 10, 64); err == nil {
				switch string(rest[i+len(stateInfix):]) {
				case StateQueued + `"}`:
					return Reply{ID: id, State: StateQueued}, nil
				case StateStarted + `"}`:
					return Reply{ID: id, State: StateStarted}, nil
				}
			}
		}
		if i := bytes.Index(rest, replyInfix); i > 0 && i <= 20 && bytes.HasSuffix(rest, []byte("}")) {
			if id, err := strconv.ParseUint(string(rest[:i]), 10, 64); err == nil {
				raw := rest[i+len(replyInfix) : len(rest)-1]
				if len(raw) > 0 {
					return Reply{ID: id, Result: raw}, nil
				}
			}
		}
	}
	var r Reply
	if err := json.Unmarshal(payload, &r); err != nil {
		return Reply{}, fmt.Errorf("decode reply: %w", err)
	}
	return r, nil
}
