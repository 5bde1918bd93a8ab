package initproto

import (
	"bytes"
	"encoding/json"
	"errors"
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

// Error is a protocol-level failure of a call. It is reported to the client as
// a JSON-RPC error, and Code is one of the Code constants.
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
	// State makes the frame a notice, not the reply. The call waits for a
	// worker (StateQueued), or has got one and runs (StateStarted). Only
	// calls that wait get notices. The front resends a queued call that
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

// ErrMalformed marks a reply frame that is not a well-formed Reply. The front
// never passes one on.
//
// Such a frame is not JSON, has a second JSON text after the first, has a
// result that is not one JSON object, or has neither a result nor an error.
var ErrMalformed = errors.New("malformed reply")

// maxIDLen is the length of the longest id, a uint64 in decimal.
const maxIDLen = 20

// DecodeReply decodes a Reply and checks it.
//
// A reply carries exactly one of a result (one JSON object), an error or a
// state. Payloads in the form that EncodeReply writes are split without
// decoding the result, which may be many megabytes; only its grammar is
// checked (validObject). Anything else goes through encoding/json. A malformed
// reply gives an error wrapping ErrMalformed, with the Reply's ID set when it
// could be read, else 0, which no call has.
func DecodeReply(payload []byte) (Reply, error) {
	if rest, ok := bytes.CutPrefix(payload, replyPrefix); ok {
		head := rest[:min(len(rest), maxIDLen+len(stateInfix))]
		// A notice, as EncodeState writes it.
		if i := bytes.Index(head, stateInfix); i > 0 {
			if id, ok := parseID(rest[:i]); ok {
				switch string(rest[i+len(stateInfix):]) {
				case StateQueued + `"}`:
					return Reply{ID: id, State: StateQueued}, nil
				case StateStarted + `"}`:
					return Reply{ID: id, State: StateStarted}, nil
				}
			}
		}
		if i := bytes.Index(head, replyInfix); i > 0 && bytes.HasSuffix(rest, []byte("}")) {
			if id, ok := parseID(rest[:i]); ok {
				raw := rest[i+len(replyInfix) : len(rest)-1]
				if validObject(raw) {
					return Reply{ID: id, Result: raw}, nil
				}
				// Perhaps white space after the reply's closing brace;
				// encoding/json decides.
			}
		}
	}
	var r Reply
	if err := json.Unmarshal(payload, &r); err != nil {
		return Reply{ID: leadingID(payload)}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	var why string
	switch {
	case r.ID == 0:
		why = "no id"
	case r.State != "" && (r.Result != nil || r.Error != nil):
		why = "a state with a result or an error"
	case r.State != "":
		return r, nil
	case r.Error != nil && r.Result != nil:
		why = "both a result and an error"
	case r.Error != nil:
		return r, nil
	case r.Result == nil:
		why = "neither a result nor an error"
	case !validObject(r.Result):
		why = "a result that is not a JSON object"
	default:
		return r, nil
	}
	return Reply{ID: r.ID}, fmt.Errorf("%w: reply %d has %s", ErrMalformed, r.ID, why)
}

// parseID parses an id as JSON writes a uint64: decimal digits, without
// leading zeros.
func parseID(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > maxIDLen || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	return id, err == nil
}

// leadingID is the id of a payload that starts as EncodeReply's do, else 0.
func leadingID(payload []byte) uint64 {
	rest, ok := bytes.CutPrefix(payload, replyPrefix)
	if !ok {
		return 0
	}
	n := 0
	for n < len(rest) && n <= maxIDLen && isDigit(rest[n]) {
		n++
	}
	id, _ := parseID(rest[:n])
	return id
}
