package frame

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/boxsh/boxsh/internal/jsonx"
)

// EncodeCall encodes a call as json.Marshal does; but for a call with large
// arguments (a write of a big file), whose arguments are copied as they
// are: not checked nor compacted, as encoding/json would (several times
// slower). The front only sends arguments it has checked, and boxsh-init
// checks them again as it decodes them for the tool (see DecodeCall).
func EncodeCall(c Call) ([]byte, error) {
	if head, ok := largeCallHead(c); ok {
		b := make([]byte, 0, len(head)+len(c.Args)+1)
		return append(append(append(b, head...), c.Args...), '}'), nil
	}
	return json.Marshal(c)
}

// WriteCall encodes c (see EncodeCall) and writes it as one frame. A call
// with large arguments is written from its parts, without copying them.
func (fw *Writer) WriteCall(c Call) error {
	if head, ok := largeCallHead(c); ok {
		return fw.writeParts(head, c.Args, []byte{'}'})
	}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	return fw.Write(b)
}

// largeCallHead returns what comes before the arguments of c in its frame
// if its arguments are large; ok is false for another call, which
// json.Marshal encodes.
func largeCallHead(c Call) (head []byte, ok bool) {
	if len(c.Args) < jsonx.Large || c.Cancel || c.Progress != 0 || c.Tool == "" {
		return nil, false
	}
	tool, err := json.Marshal(c.Tool)
	if err != nil {
		return nil, false
	}
	b := make([]byte, 0, len(tool)+48)
	b = strconv.AppendUint(append(b, `{"id":`...), c.ID, 10)
	b = append(append(b, `,"tool":`...), tool...)
	return append(b, `,"args":`...), true
}

// DecodeCall decodes a call as json.Unmarshal does; a call with large
// arguments, as EncodeCall writes it, is split without checking its
// arguments: its Args are the bytes from `"args":` to the brace that closes
// the frame, if they end there, and refer to payload (as DecodeReply's
// Result does) instead of a copy. Where they end is found as in valid JSON,
// which is what a front sends. If they are not, the tool's decoding of them
// fails, where json.Unmarshal would have failed on the frame: boxsh-init
// decodes every tool's arguments with encoding/json or jsonx.StringMembers,
// which check them (if the Args are valid, so is the frame).
func DecodeCall(payload []byte) (Call, error) {
	if len(payload) >= jsonx.Large {
		if c, ok := decodeLargeCall(payload); ok {
			return c, nil
		}
	}
	var c Call
	err := json.Unmarshal(payload, &c)
	return c, err
}

// decodeLargeCall splits a call framed as EncodeCall frames one with large
// arguments; ok is false for anything else.
func decodeLargeCall(payload []byte) (Call, bool) {
	rest, ok := bytes.CutPrefix(payload, []byte(`{"id":`))
	if !ok {
		return Call{}, false
	}
	n := 0
	for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
		n++
	}
	if n == 0 || n > 1 && rest[0] == '0' {
		return Call{}, false
	}
	id, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	if err != nil {
		return Call{}, false
	}
	if rest, ok = bytes.CutPrefix(rest[n:], []byte(`,"tool":`)); !ok {
		return Call{}, false
	}
	tool, n, ok := jsonx.UnquotePrefix(rest)
	if !ok {
		return Call{}, false
	}
	if rest, ok = bytes.CutPrefix(rest[n:], []byte(`,"args":`)); !ok {
		return Call{}, false
	}
	// The arguments must be the last member, as EncodeCall writes them
	// (json.Marshal writes progress after them).
	if n, ok = jsonx.ValueLenOfValid(rest); !ok || n < jsonx.Large || n != len(rest)-1 || rest[n] != '}' {
		return Call{}, false
	}
	return Call{ID: id, Tool: tool, Args: rest[:n]}, true
}
