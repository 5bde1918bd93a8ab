package largecall

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
)

// TestCallEncoding checks that EncodeCall's frames decode, with DecodeCall
// and with encoding/json, to the call encoded, small and large, and that
// invalid arguments fail as json.Marshal fails.
func TestCallEncoding(t *testing.T) {
	content, err := json.Marshal(strings.Repeat("text \"quoted\" é\n", 10000))
	require.NoError(t, err)
	large := json.RawMessage(`{"path":"/x", "content":` + string(content) + `}`)
	for _, c := range []initproto.Call{
		{ID: 1, Tool: "read", Args: json.RawMessage(`{"path":"/x"}`)},
		{ID: 2, Tool: "write", Args: large},
		{ID: 3, Tool: "t\"ool", Args: large},
		{ID: 4, Cancel: true},
		{ID: 5, Tool: "bash", Args: large, Progress: 1000},
	} {
		b, err := EncodeCall(c)
		require.NoError(t, err)
		got, err := DecodeCall(b)
		require.NoError(t, err)
		var std initproto.Call
		require.NoError(t, json.Unmarshal(b, &std))
		for _, d := range []initproto.Call{got, std} {
			assert.Equal(t, c.ID, d.ID)
			assert.Equal(t, c.Tool, d.Tool)
			assert.Equal(t, c.Cancel, d.Cancel)
			assert.Equal(t, c.Progress, d.Progress)
			if c.Args == nil {
				assert.Nil(t, d.Args)
			} else {
				assert.JSONEq(t, string(c.Args), string(d.Args))
			}
		}
	}
	// Small invalid arguments fail as json.Marshal fails; large ones are
	// not checked, and come back as they were, to fail in the tool's
	// decoding.
	small := initproto.Call{ID: 5, Tool: "write", Args: json.RawMessage(`{"content":"x}`)}
	_, err = EncodeCall(small)
	_, want := json.Marshal(small)
	assert.Error(t, err)
	assert.Equal(t, want, err)
	for _, args := range []string{
		`{"content":` + string(content[:len(content)-1]) + `}`,
		`{"content":` + string(content) + `}},"progress":5,"x":{`,
		`{"content":` + string(content) + `},"cancel":true,"id":7,"x":{`,
		`{"content":` + string(content) + "\x01\"}",
	} {
		b, err := EncodeCall(initproto.Call{ID: 6, Tool: "write", Args: json.RawMessage(args)})
		require.NoError(t, err)
		got, err := DecodeCall(b)
		require.NoError(t, err)
		assert.Equal(t, initproto.Call{ID: 6, Tool: "write", Args: json.RawMessage(args)}, got, "never another member")
		assert.False(t, json.Valid(got.Args))
	}
	// Large payloads of other shapes decode as encoding/json decodes them.
	for _, odd := range []string{
		`{"id":9,"tool":"write","args":` + string(large) + `}`,
		`{"id":9,"tool":"write","args":` + string(large) + `,"progress":5}`,
		`{"id":9,"tool":"write","args":` + string(large) + `,"cancel":true}`,
		`{"tool":"wr\u0069te","id":9,"args":` + string(large) + `}`,
		`{"tool":"write","id":09,"args":` + string(large) + `}`,
		`{"tool":"write","id":1e3,"args":` + string(large) + `}`,
		`{"tool":"write","id":-1,"args":` + string(large) + `}`,
		`{"tool":"write","id":18446744073709551616,"args":` + string(large) + `}`,
		`{"tool":"write","id":9,"args":` + string(large) + ` }`,
		`{"tool":"write","id":9, "args":` + string(large) + `}`,
	} {
		var want initproto.Call
		wantErr := json.Unmarshal([]byte(odd), &want)
		got, err := DecodeCall([]byte(odd))
		assert.Equal(t, wantErr, err, "%.40s", odd)
		if want.Args != nil {
			want.Args = bytes.TrimSpace(want.Args)
			got.Args = bytes.TrimSpace(got.Args)
		}
		assert.Equal(t, want, got, "%.40s", odd)
	}
}
