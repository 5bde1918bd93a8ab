package toolhost

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/tool"
)

// TestStatHandler checks the stat tool as boxsh-init runs it, through its
// handler. The arguments are decoded, and the object is described with the
// rule that refuses reading it. Arguments that do not decode are refused
// as invalid.
func TestStatHandler(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("x"), 0o600))
	a := &Host{cfg: Config{Rules: []initproto.PolicyRule{{Path: secret, Rule: "denyRead secret (f)"}}}}
	h, ok := tools.Lookup(tool.Stat)
	require.True(t, ok)

	r, err := h(context.Background(), a, json.RawMessage(`{"path":`+strconv.Quote(secret)+`}`))
	require.NoError(t, err)
	require.False(t, r.IsError, "%+v", r.Content)
	var out tool.StatOutput
	require.NoError(t, json.Unmarshal(r.StructuredContent.(json.RawMessage), &out))
	assert.Equal(t, secret, out.Path)
	assert.True(t, out.Exists)
	assert.Equal(t, tool.FileTypeFile, out.Type)
	assert.Equal(t, "0600", out.Mode)
	assert.Equal(t, "denyRead secret (f)", out.DeniedBy)

	r, err = h(context.Background(), a, json.RawMessage(`{"path":`+strconv.Quote(filepath.Join(dir, "none"))+`}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"path":`+strconv.Quote(filepath.Join(dir, "none"))+`,"exists":false}`, string(r.StructuredContent.(json.RawMessage)))

	_, err = h(context.Background(), a, json.RawMessage(`{"path":3}`))
	var fe *initproto.Error
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, initproto.CodeInvalidParams, fe.Code)
	assert.Contains(t, fe.Message, "stat tool: invalid arguments")
}
