package toolhost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/largecall"
)

// TestServeLargeWrites sends write calls with large arguments as the front
// frames them, unchecked (see largecall.EncodeCall):
//   - valid ones write the file encoding/json's decoding gives;
//   - invalid ones, and ones that try to add members to the frame, fail
//     with invalid params and leave the channel serving.
func TestServeLargeWrites(t *testing.T) {
	r, w := serveOnPipe(t)
	call := func(id uint64, args string) initproto.Reply {
		t.Helper()
		require.NoError(t, largecall.WriteCall(w, initproto.Call{ID: id, Tool: "write", Args: json.RawMessage(args)}))
		reply := nextReply(t, r)
		require.Equal(t, id, reply.ID)
		return reply
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "big.txt")
	content, err := json.Marshal(strings.Repeat("line \"q\" \\ é\t✓\n", 10000))
	require.NoError(t, err)
	odd := `\ud83d\ude00\ud800 \u00e9` + "\xff"
	args := `{"path":` + mustJSON(t, path) + `,"content":` + string(content[:len(content)-1]) + odd + `"}`
	var want struct{ Content string }
	require.NoError(t, json.Unmarshal([]byte(args), &want))
	reply := call(1, args)
	require.Nil(t, reply.Error)
	assert.Contains(t, string(reply.Result), `"written `)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, want.Content, string(got))

	other := filepath.Join(dir, "other.txt")
	for i, bad := range []string{
		`{"path":` + mustJSON(t, other) + `,"content":` + string(content[:len(content)-1]) + "\x01\"}",
		`{"path":` + mustJSON(t, other) + `,"content":` + string(content) + `},"cancel":true,"x":{`,
		`{"path":` + mustJSON(t, other) + `,"content":` + string(content) + `}}`,
	} {
		reply := call(uint64(2+i), bad)
		require.NotNil(t, reply.Error, "call %d", 2+i)
		assert.Equal(t, initproto.CodeInvalidParams, reply.Error.Code, "call %d", 2+i)
		assert.NoFileExists(t, other)
	}
	// Still serving.
	reply = call(9, `{"path":`+mustJSON(t, other)+`,"content":`+string(content)+`}`)
	require.Nil(t, reply.Error)
	assert.FileExists(t, other)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
