package largecall

import (
	"encoding/json"

	"github.com/boxsh/boxsh/internal/jsonx"
	"github.com/boxsh/boxsh/internal/tool"
)

// keepRaw is the length of JSON text from which Validate keeps a string
// undecoded: only its type matters to a schema.
const keepRaw = 4 << 10

// Validate checks a call's arguments against spec's input schema, as
// spec.Validate does. valid tells that they are known to be valid JSON,
// as those of a decoded request are. Large arguments, such as a big file
// to write, take a faster path: their long strings are only checked, or
// skipped if valid (see tool.Spec.ValidateDecoded).
func Validate(spec *tool.Spec, args json.RawMessage, valid bool) error {
	if len(args) >= Large {
		decode := jsonx.DecodeAny
		if valid {
			decode = jsonx.DecodeAnyOfValid
		}
		if v, ok := decode(args, keepRaw); ok {
			return spec.ValidateDecoded(v)
		}
	}
	return spec.Validate(args)
}
