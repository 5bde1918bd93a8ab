package largecall

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// TestDecodeLargeWriteArgs checks that large write arguments decode as
// encoding/json decodes them, or are left to it, and that UnmarshalArgs
// gives what json.Unmarshal gives.
func TestDecodeLargeWriteArgs(t *testing.T) {
	content, err := json.Marshal(strings.Repeat("text \"quoted\" é\n\x01", 10000) + "\xff")
	require.NoError(t, err)
	c := string(content)
	for _, args := range []string{
		`{"path":"/x","content":` + c + `}`,
		`{"content":` + c + `,"path":"/x","encoding":"base64"}`,
		`{"path":"/x","path":"/y","content":` + c + `}`,
		`{"Path":"/x","content":` + c + `}`,
		`{"path":null,"content":` + c + `}`,
		`{"path":1,"content":` + c + `}`,
		`{"path":"/x","content":` + c + `,"other":1}`,
		`{"path":"/x","content":` + c,
		`{"path":"/x","content":` + c + `}}`,
		`{"path":"/x","content":` + c[:len(c)-1] + "\x01\"}",
		`{"path":"/x","content":` + c[:len(c)-1] + `\q"}`,
		`{"path":"/x","content":` + c[:len(c)-1] + `\ud83d\ude00\ud83d\u00e9\ude00"}`,
		` { "path" : "/\u0078" , "content" : ` + c + ` } `,
	} {
		var want tool.WriteArgs
		wantErr := json.Unmarshal([]byte(args), &want)
		var via tool.WriteArgs
		viaErr := UnmarshalArgs(json.RawMessage(args), &via)
		assert.Equal(t, wantErr, viaErr, "UnmarshalArgs: %.60s", args)
		assert.Equal(t, want, via, "UnmarshalArgs: %.60s", args)
		got, ok := decodeWriteArgs([]byte(args))
		if ok {
			require.NoError(t, wantErr, "%.60s", args)
			assert.Equal(t, want, got, "%.60s", args)
		} else {
			// Only what encoding/json refuses, and the keys and values
			// left to it.
			assert.True(t, wantErr != nil || strings.Contains(args, "Path") || strings.Contains(args, "null") || strings.Contains(args, "other"), "%.60s", args)
		}
	}
	_, ok := decodeWriteArgs([]byte(`{"path":"/x","content":` + c + `}`))
	assert.True(t, ok, "the common shape takes the fast path")
}

// TestValidateLarge checks that large arguments are validated as small
// ones are.
func TestValidateLarge(t *testing.T) {
	reg, err := tool.NewRegistry()
	require.NoError(t, err)
	write, ok := reg.Lookup(tool.Write)
	require.True(t, ok)
	content, err := json.Marshal(strings.Repeat("x\n", 40000))
	require.NoError(t, err)
	c := string(content)
	for args, want := range map[string]string{
		`{"path":"/x","content":` + c + `}`:                     "",
		`{"path":"/x","content":` + c + `,"encoding":"base64"}`: "",
		`{"content":` + c + `}`:                                 "write tool missing string field: path",
		`{"path":1,"content":` + c + `}`:                        "write tool: field path must be a string, got integer",
		`{"path":"/x","content":` + c + `,"encoding":"hex"}`:    "write tool: field encoding must be one of [utf8 text base64], got hex",
		`[` + c + `]`: "write tool: arguments must be an object, got array",
	} {
		err := Validate(write, json.RawMessage(args), false)
		small := write.Validate(json.RawMessage(strings.Replace(args, c, `"x"`, 1)))
		assert.Equal(t, small, err, "as encoding/json's path: %.60s", args)
		assert.Equal(t, write.Validate(json.RawMessage(args)), err, "as tool.Spec.Validate: %.60s", args)
		assert.Equal(t, err, Validate(write, json.RawMessage(args), true), "valid: %.60s", args)
		if want == "" {
			assert.NoError(t, err, "%.60s", args)
		} else if assert.Error(t, err, "%.60s", args) {
			assert.Equal(t, want, err.Error())
		}
	}
}

// FuzzDecodeLargeWriteArgs checks boxsh-init's decoding of a large write's
// arguments, which says which path it writes, against encoding/json: any
// text around a large content decodes to the same path, content and
// encoding, or is left to encoding/json.
func FuzzDecodeLargeWriteArgs(f *testing.F) {
	f.Add(`{"path":"/x","content":`, `}`)
	f.Add(`{"path":"/a","content":`, `,"PATH":"/b"}`)
	f.Add(`{"path":"/a","path":"/\u0062","content":`, `,"encoding":"base64"} `)
	f.Add(`{"pa\u0074h":"/a","content":`, `}}`)
	f.Add("{\"path\":\"/\xff\\ud800\",\"content\":", `,"encoding":null}`)
	f.Fuzz(func(t *testing.T, pre, post string) {
		c, err := json.Marshal(strings.Repeat("x\"\\é\n", Large/5))
		require.NoError(t, err)
		args := []byte(pre + string(c) + post)
		got, ok := decodeWriteArgs(args)
		if !ok {
			return
		}
		var want tool.WriteArgs
		require.NoError(t, json.Unmarshal(args, &want), "accepted %.100q", args)
		require.Equal(t, want, got)
	})
}
