package largecall

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/boxsh/boxsh/internal/jsonx"
)

// Request is a JSON-RPC message as the front reads it.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// CallParams are the params of a tools/call.
type CallParams struct {
	Name      any             `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// Meta is kept raw: a _meta of the wrong shape only loses its
	// progress token (see metaProgressToken).
	Meta json.RawMessage `json:"_meta"`
}

// UnmarshalRequest decodes msg into req as json.Unmarshal does.
//
// A large message, such as a write of a big file, is split with jsonx,
// which scans it faster. Anything jsonx would not decode exactly as
// encoding/json does goes to encoding/json. The params of a large message
// are not copied, as encoding/json copies a json.RawMessage: they refer to
// msg, which must not change while they are in use. (Each message is read
// into a slice of its own.)
func UnmarshalRequest(msg []byte, req *Request) error {
	if len(msg) >= Large {
		if members, ok := jsonx.Members(msg); ok {
			var r Request
			if decodeMembers(members, map[string]func([]byte) bool{
				"jsonrpc": func(v []byte) bool { return decodeString(v, &r.JSONRPC) },
				"id":      func(v []byte) bool { r.ID = bytes.Clone(v); return true },
				"method": func(v []byte) bool {
					var s string
					if !decodeString(v, &s) || string(v) == "null" {
						return false
					}
					r.Method = &s
					return true
				},
				"params": func(v []byte) bool { r.Params = v; return true },
			}) {
				*req = r
				return nil
			}
		}
	}
	return json.Unmarshal(msg, req)
}

// UnmarshalCallParams decodes the params of a tools/call into p as
// json.Unmarshal does, large ones with jsonx (see UnmarshalRequest). The
// params are those of a decoded request, so valid JSON: jsonx splits large
// ones without checking them again.
func UnmarshalCallParams(params []byte, p *CallParams) error {
	if len(params) >= Large {
		if members, ok := jsonx.MembersOfValid(params); ok {
			var c CallParams
			if decodeMembers(members, map[string]func([]byte) bool{
				"name":      func(v []byte) bool { return json.Unmarshal(v, &c.Name) == nil },
				"arguments": func(v []byte) bool { c.Arguments = v; return true },
				"_meta":     func(v []byte) bool { c.Meta = v; return true },
			}) {
				*p = c
				return nil
			}
		}
	}
	return json.Unmarshal(params, p)
}

// decodeMembers stores each member with the decoder of its key, in order
// (the last of duplicates wins), and ignores unknown keys. It fails, for
// the caller to use encoding/json, when a decoder fails or when a key
// differs from a known one only in case (encoding/json matches keys
// without regard to case).
func decodeMembers(members []jsonx.Member, decoders map[string]func([]byte) bool) bool {
	for _, m := range members {
		dec, ok := decoders[m.Key]
		if !ok {
			for k := range decoders {
				if strings.EqualFold(k, m.Key) {
					return false
				}
			}
			continue
		}
		if !dec(m.Value) {
			return false
		}
	}
	return true
}

// decodeString decodes a JSON string or null (which leaves s as it is)
// into s.
func decodeString(v []byte, s *string) bool {
	if string(v) == "null" {
		return true
	}
	u, ok := jsonx.Unquote(v)
	if ok {
		*s = u
	}
	return ok
}

// UnmarshalMembers decodes params, the params of a decoded request, into v as
// json.Unmarshal does.
//
// v is a struct with fields for the members keys only (see OnlyMembers).
func UnmarshalMembers(params []byte, v any, keys ...string) error {
	return json.Unmarshal(OnlyMembers(params, keys...), v)
}

// OnlyMembers returns params, the params of a decoded request, with only the
// members named by keys if it is large.
//
// The other members, such as a big file's content, are dropped. They are found
// without checking them again, since the request was checked, instead of being
// scanned by encoding/json. encoding/json then decodes what is left into a
// struct of fields for keys, as it would have decoded params. Keys match as
// encoding/json matches them, regardless of case. Members keep their order,
// duplicates included.
func OnlyMembers(params []byte, keys ...string) []byte {
	if len(params) < Large {
		return params
	}
	members, ok := jsonx.MembersOfValid(params)
	if !ok {
		return params
	}
	b := []byte{'{'}
	for _, m := range members {
		if !slices.ContainsFunc(keys, func(k string) bool { return strings.EqualFold(k, m.Key) }) {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		key, err := json.Marshal(m.Key)
		if err != nil {
			return params
		}
		b = append(append(append(b, key...), ':'), m.Value...)
	}
	return append(b, '}')
}
