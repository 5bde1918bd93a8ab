package largecall

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/jsonx"
)

// WriteCall writes c as one frame on fw, as the front sends calls; it is
// initproto.ClientConfig.WriteCall.
//
// A call with large arguments is written with its arguments copied as they
// are, after the other members (see EncodeCall). Any other call is written
// with fw.WriteCall.
func WriteCall(fw *initproto.Writer, c initproto.Call) error {
	if head, ok := largeCallHead(c); ok {
		return fw.WriteParts(head, c.Args, []byte{'}'})
	}
	return fw.WriteCall(c)
}

// EncodeCall encodes a call as json.Marshal does, except for a call with
// large arguments. Those arguments are copied as they are, after the other
// members, neither checked nor compacted as encoding/json would (which is
// much slower). The front only sends arguments it has checked, and
// boxsh-init checks them again as it decodes them for the tool.
//
// Such a frame starts with "tool", where json.Marshal starts with "id".
// DecodeCall knows it by that, and takes everything up to the frame's
// closing brace as the arguments, never as other members.
func EncodeCall(c initproto.Call) ([]byte, error) {
	if head, ok := largeCallHead(c); ok {
		b := make([]byte, 0, len(head)+len(c.Args)+1)
		return append(append(append(b, head...), c.Args...), '}'), nil
	}
	return json.Marshal(c)
}

// largeHead starts the frame of a call with large arguments.
const largeHead = `{"tool":`

// largeCallHead returns what comes before the arguments of c in its frame
// if its arguments are large; ok is false for another call, which
// json.Marshal encodes.
func largeCallHead(c initproto.Call) (head []byte, ok bool) {
	if len(c.Args) < Large || c.Cancel || c.Progress != 0 || c.Tool == "" {
		return nil, false
	}
	tool, err := json.Marshal(c.Tool)
	if err != nil {
		return nil, false
	}
	b := make([]byte, 0, len(tool)+48)
	b = append(append(b, largeHead...), tool...)
	b = strconv.AppendUint(append(b, `,"id":`...), c.ID, 10)
	return append(b, `,"args":`...), true
}

// DecodeCall decodes a call as initproto.DecodeCall (json.Unmarshal) does,
// except for a call with large arguments as EncodeCall writes it: tool, id,
// then the arguments.
//
// For such a call, Args are the bytes from `"args":` to the frame's closing
// brace, not looked at. They refer to payload instead of a copy, as
// initproto.DecodeReply's Result does. If they are not one valid JSON value,
// the tool's decoding of them fails: boxsh-init decodes every tool's arguments
// with UnmarshalArgs, which checks them. Nothing in them can pass for another
// member of the frame.
func DecodeCall(payload []byte) (initproto.Call, error) {
	if len(payload) >= Large {
		if c, ok := decodeLargeCall(payload); ok {
			return c, nil
		}
	}
	return initproto.DecodeCall(payload)
}

// decodeLargeCall splits a call framed as EncodeCall frames one with large
// arguments; ok is false for anything else.
func decodeLargeCall(payload []byte) (initproto.Call, bool) {
	rest, ok := bytes.CutPrefix(payload, []byte(largeHead))
	if !ok {
		return initproto.Call{}, false
	}
	tool, n, ok := jsonx.UnquotePrefix(rest)
	if !ok {
		return initproto.Call{}, false
	}
	if rest, ok = bytes.CutPrefix(rest[n:], []byte(`,"id":`)); !ok {
		return initproto.Call{}, false
	}
	n = 0
	for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
		n++
	}
	if n == 0 || n > 1 && rest[0] == '0' {
		return initproto.Call{}, false
	}
	id, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	if err != nil {
		return initproto.Call{}, false
	}
	if rest, ok = bytes.CutPrefix(rest[n:], []byte(`,"args":`)); !ok || len(rest) <= Large || rest[len(rest)-1] != '}' {
		return initproto.Call{}, false
	}
	return initproto.Call{ID: id, Tool: tool, Args: rest[:len(rest)-1]}, true
}
