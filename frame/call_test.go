package frame

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCallEncoding checks that EncodeCall's frames decode, with DecodeCall
// and with encoding/json, to the call encoded, small and large, and that
// invalid arguments fail as json.Marshal fails.
func TestCallEncoding(t *testing.T) {
	content, err := json.Marshal(strings.Repeat("text \"quoted\" é\n", 10000))
	require.NoError(t, err)
	large := json.RawMessage(`{"path":"/x", "content":` + string(content) + `}`)
	for _, c := range []Call{
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
		var std Call
		require.NoError(t, json.Unmarshal(b, &std))
		for _, d := range []Call{got, std} {
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
	bad := Call{ID: 5, Tool: "write", Args: append(json.RawMessage(`{"content":`), content[:len(content)-1]...)}
	_, err = EncodeCall(bad)
	_, want := json.Marshal(bad)
	assert.Error(t, err)
	assert.Equal(t, want, err)
	// A large payload of another shape still decodes, through encoding/json.
	odd := []byte(`{"tool":"write","id":9,"args":` + string(large) + `}`)
	got, err := DecodeCall(odd)
	require.NoError(t, err)
	assert.Equal(t, uint64(9), got.ID)
	assert.Equal(t, "write", got.Tool)
}
