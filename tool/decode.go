package tool

import "github.com/boxsh/boxsh/internal/jsonx"

// DecodeLargeWriteArgs decodes a write call's arguments as json.Unmarshal
// does, with jsonx, which checks and decodes a big file's content in one
// pass, several times faster. ok is false, for the caller to use
// encoding/json, for anything it would not decode exactly as encoding/json
// does: members other than path, content and encoding (encoding/json
// matches keys regardless of case), values that are not strings, or
// invalid JSON.
func DecodeLargeWriteArgs(args []byte) (w WriteArgs, ok bool) {
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
