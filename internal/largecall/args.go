package largecall

import (
	"encoding/json"

	"github.com/boxsh/boxsh/internal/jsonx"
	"github.com/boxsh/boxsh/internal/tool"
)

// UnmarshalArgs decodes a tool's arguments into v as json.Unmarshal does,
// and returns its error. The large arguments of a write (v a
// *tool.WriteArgs) are checked and decoded in one pass, several times
// faster (see decodeWriteArgs).
func UnmarshalArgs(args json.RawMessage, v any) error {
	if w, ok := v.(*tool.WriteArgs); ok && len(args) >= Large {
		if d, ok := decodeWriteArgs(args); ok {
			*w = d
			return nil
		}
	}
	return json.Unmarshal(args, v)
}

// decodeWriteArgs decodes a write call's arguments as json.Unmarshal
// does, with jsonx, which checks and decodes a big file's content in one
// pass. ok is false, for the caller to use encoding/json, for anything it
// would not decode exactly as encoding/json does: members other than
// path, content and encoding (encoding/json matches keys regardless of
// case), values that are not strings, or invalid JSON.
func decodeWriteArgs(args []byte) (w tool.WriteArgs, ok bool) {
	members, ok := jsonx.StringMembers(args)
	if !ok {
		return w, false
	}
	for _, m := range members {
		switch m.Key {
		case "path":
			w.Path = m.Value
		case "content":
			w.Content = m.Value
		case "encoding":
			w.Encoding = m.Value
		default:
			return w, false
		}
	}
	return w, true
}
