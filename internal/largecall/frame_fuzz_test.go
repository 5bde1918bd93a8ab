package largecall

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
)

// FuzzLargeCallFrame checks that boxsh-init reads a large call's frame back as
// the call the front wrote, whatever bytes its arguments hold.
//
// The arguments may be valid JSON or not, and hold frame members, braces or
// quotes of their own. The call read back has the same tool and id, no cancel
// or progress, and the arguments byte for byte. DecodeCall never fails on such
// a frame.
func FuzzLargeCallFrame(f *testing.F) {
	f.Add("write", uint64(1), `{"path":"/x","content":"`, `"}`)
	f.Add("write", uint64(0), `{"content":"x"},"cancel":true,"id":7,"x":{"a":"`, `"}}},"progress":5}`)
	f.Add("bash", uint64(1<<64-1), `"`, `\"}`)
	f.Add("w\"r\\ite<&>\u2028", uint64(10), ``, `}`)
	f.Fuzz(func(t *testing.T, tool string, id uint64, pre, post string) {
		if tool == "" || !utf8.ValidString(tool) {
			return // the front sends only its own tools' names
		}
		args := json.RawMessage(pre + strings.Repeat("x", Large) + post)
		c := initproto.Call{ID: id, Tool: tool, Args: args}
		b, err := EncodeCall(c)
		require.NoError(t, err)
		got, err := DecodeCall(b)
		require.NoError(t, err)
		require.Equal(t, c, got)

		var buf bytes.Buffer
		require.NoError(t, WriteCall(initproto.NewWriter(&buf), c))
		payload, err := initproto.NewReader(&buf).Read()
		require.NoError(t, err)
		require.Equal(t, b, payload, "WriteCall writes what EncodeCall encodes")
	})
}
