package frame

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/boxsh/boxsh/internal/jsonx"
)

// EncodeCall encodes a call as json.Marshal does, but for a call with large
// arguments (a write of a big file), which are checked with jsonx and copied
// as they are instead of being compacted by encoding/json, which scans them
// several times slower.
func EncodeCall(c Call) ([]byte, error) {
	if len(c.Args) < jsonx.Large || c.Cancel || c.Progress != 0 || c.Tool == "" || !jsonx.Valid(c.Args) {
		return json.Marshal(c)
	}
	tool, err := json.Marshal(c.Tool)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(c.Args)+len(tool)+48)
	b = strconv.AppendUint(append(b, `{"id":`...), c.ID, 10)
	b = append(append(b, `,"tool":`...), tool...)
	b = append(append(b, `,"args":`...), c.Args...)
	return append(b, '}'), nil
}

// WriteCall encodes c (see EncodeCall) and writes it as one frame.
func (fw *Writer) WriteCall(c Call) error {
	b, err := EncodeCall(c)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	return fw.Write(b)
}

// DecodeCall decodes a call as json.Unmarshal does; a large one, as
// EncodeCall writes it, is split without scanning its arguments with
// encoding/json, and its Args then refer to payload (as DecodeReply's
// Result does) instead of a copy.
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

// decodeLargeCall decodes a call whose members are exactly those
// EncodeCall writes for a large call; ok is false for anything else.
func decodeLargeCall(payload []byte) (Call, bool) {
	members, ok := jsonx.Members(payload)
	if !ok || len(members) != 3 || members[0].Key != "id" || members[1].Key != "tool" || members[2].Key != "args" {
		return Call{}, false
	}
	id, err := strconv.ParseUint(string(members[0].Value), 10, 64)
	if err != nil {
		return Call{}, false
	}
	tool, ok := jsonx.Unquote(members[1].Value)
	if !ok {
		return Call{}, false
	}
	return Call{ID: id, Tool: tool, Args: members[2].Value}, true
}
