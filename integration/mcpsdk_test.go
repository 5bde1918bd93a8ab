package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sdkSession connects the official MCP Go SDK client to `boxsh --rpc`.
func sdkSession(t *testing.T, ctx context.Context) *mcp.ClientSession {
	t.Helper()
	cmd := exec.CommandContext(ctx, boxshPath(), "--rpc")
	cmd.Dir = t.TempDir()
	cmd.WaitDelay = 5 * time.Second
	client := mcp.NewClient(&mcp.Implementation{Name: "boxsh-integration", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitTimeout}, nil)
	require.NoError(t, err, "connect to boxsh --rpc")
	t.Cleanup(func() {
		assert.NoError(t, session.Close(), "close the session")
		if cmd.ProcessState != nil {
			assert.Equal(t, 0, cmd.ProcessState.ExitCode(), "boxsh exit status")
		}
	})
	return session
}

// sdkCall calls a tool through the SDK, requiring a protocol success.
func sdkCall(t *testing.T, ctx context.Context, s *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "CallTool %s", name)
	require.NotNil(t, res)
	return res
}

// sdkText is the text of the result's first content block, which must be
// text.
func sdkText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotEmpty(t, res.Content, "result without content")
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "first content block is %T, not text", res.Content[0])
	return tc.Text
}

// sdkStructured decodes the result's structuredContent into v.
func sdkStructured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	require.NotNil(t, res.StructuredContent, "result without structuredContent")
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v), "structuredContent: %s", b)
}

// terminalSnapshot is the structured result of the terminal tools.
type terminalSnapshot struct {
	ID       string `json:"id"`
	Output   string `json:"output"`
	Exited   bool   `json:"exited"`
	ExitCode *int   `json:"exit_code"`
}

type terminalList struct {
	Sessions []struct {
		ID      string `json:"id"`
		Command string `json:"command"`
		Alive   bool   `json:"alive"`
		Cols    int    `json:"cols"`
		Rows    int    `json:"rows"`
	} `json:"sessions"`
}

func TestSDKListTools(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := sdkSession(t, ctx)
	init := s.InitializeResult()
	require.NotNil(t, init)
	assert.Equal(t, "boxsh", init.ServerInfo.Name)
	require.NotNil(t, init.Capabilities.Tools, "tools capability")

	res, err := s.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		assert.NotEmpty(t, tl.Description, tl.Name)
		schema, ok := tl.InputSchema.(map[string]any)
		require.True(t, ok, "%s: inputSchema is %T", tl.Name, tl.InputSchema)
		assert.Equal(t, "object", schema["type"], "%s: inputSchema type", tl.Name)
		_, hasProps := schema["properties"].(map[string]any)
		assert.True(t, hasProps, "%s: inputSchema properties", tl.Name)
		if tl.OutputSchema != nil {
			out, ok := tl.OutputSchema.(map[string]any)
			require.True(t, ok, "%s: outputSchema is %T", tl.Name, tl.OutputSchema)
			assert.Equal(t, "object", out["type"], "%s: outputSchema type", tl.Name)
		}
	}
	// The SDK speaks a protocol version after 2024-11-05: it sees the
	// tools beyond v3's nine.
	assert.ElementsMatch(t, allToolNamesNow, names)
	require.NoError(t, s.Ping(ctx, nil))
}

func TestSDKBash(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := sdkSession(t, ctx)
	res := sdkCall(t, ctx, s, "bash", map[string]any{"command": "echo sdk-$((20+22)); echo err >&2"})
	assert.False(t, res.IsError)
	var out bashOutput
	sdkStructured(t, res, &out)
	assert.Equal(t, 0, out.ExitCode)
	assert.Equal(t, "sdk-42\n", out.Stdout)
	assert.Equal(t, "err\n", out.Stderr)
	assert.JSONEq(t, mustJSON(t, res.StructuredContent), sdkText(t, res), "text block is the JSON of structuredContent")

	res = sdkCall(t, ctx, s, "bash", map[string]any{"command": "exit 3"})
	assert.True(t, res.IsError, "a failing command is a failed tool result")
	sdkStructured(t, res, &out)
	assert.Equal(t, 3, out.ExitCode)
}

func TestSDKFileTools(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := sdkSession(t, ctx)
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "dir", "notes.txt")
	const text = "first line\nsecond line — ünïcode\nthird line\n"

	res := sdkCall(t, ctx, s, "write", map[string]any{"path": path, "content": text})
	assert.False(t, res.IsError, sdkText(t, res))
	assert.Equal(t, "written 48 bytes", sdkText(t, res))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, text, string(b))

	res = sdkCall(t, ctx, s, "read", map[string]any{"path": path})
	assert.False(t, res.IsError, sdkText(t, res))
	var rd struct {
		Content    string `json:"content"`
		Encoding   string `json:"encoding"`
		MimeType   string `json:"mime_type"`
		LineCount  *int   `json:"line_count"`
		Truncated  *bool  `json:"truncated"`
		TotalLines int    `json:"total_lines"`
		NextOffset int    `json:"next_offset"`
	}
	sdkStructured(t, res, &rd)
	assert.Equal(t, text, rd.Content)
	assert.Equal(t, "text", rd.Encoding)
	assert.True(t, strings.HasPrefix(rd.MimeType, "text/plain"), rd.MimeType)
	require.NotNil(t, rd.LineCount)
	assert.Equal(t, 3, *rd.LineCount)
	require.NotNil(t, rd.Truncated)
	assert.False(t, *rd.Truncated)
	assert.Contains(t, sdkText(t, res), "second line — ünïcode")

	// Paging.
	res = sdkCall(t, ctx, s, "read", map[string]any{"path": path, "offset": 2, "limit": 1})
	rd.LineCount, rd.Truncated = nil, nil
	sdkStructured(t, res, &rd)
	assert.Equal(t, "second line — ünïcode\n", rd.Content)
	require.NotNil(t, rd.Truncated)
	assert.True(t, *rd.Truncated)
	assert.Equal(t, 3, rd.TotalLines)
	assert.Equal(t, 3, rd.NextOffset)

	// Binary content through base64.
	bin := filepath.Join(dir, "blob.bin")
	res = sdkCall(t, ctx, s, "write", map[string]any{"path": bin, "content": "AAEC//79", "encoding": "base64"})
	assert.False(t, res.IsError, sdkText(t, res))
	b, err = os.ReadFile(bin)
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 1, 2, 0xff, 0xfe, 0xfd}, b)

	res = sdkCall(t, ctx, s, "edit", map[string]any{"path": path, "edits": []map[string]string{
		{"oldText": "second line", "newText": "2nd line"},
		{"oldText": "third line", "newText": "3rd line"},
	}})
	assert.False(t, res.IsError, sdkText(t, res))
	var ed struct {
		Diff             string `json:"diff"`
		FirstChangedLine int    `json:"firstChangedLine"`
	}
	sdkStructured(t, res, &ed)
	assert.Equal(t, 2, ed.FirstChangedLine)
	diffLines := strings.Split(ed.Diff, "\n")
	for _, want := range []string{"@@ -1,3 +1,3 @@", " first line", "-second line — ünïcode", "-third line", "+2nd line — ünïcode", "+3rd line"} {
		assert.Contains(t, diffLines, want, "diff:\n%s", ed.Diff)
	}
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "first line\n2nd line — ünïcode\n3rd line\n", string(b))

	// A failed edit is a tool failure, and leaves the file alone.
	res = sdkCall(t, ctx, s, "edit", map[string]any{"path": path, "edits": []map[string]string{{"oldText": "no such text", "newText": "x"}}})
	assert.True(t, res.IsError)
	assert.NotEmpty(t, sdkText(t, res))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "first line\n2nd line — ünïcode\n3rd line\n", string(b))
}

func TestSDKTerminal(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := sdkSession(t, ctx)

	res := sdkCall(t, ctx, s, "run_in_terminal", map[string]any{"command": "bash --norc --noprofile", "cols": 100, "rows": 30})
	require.False(t, res.IsError, sdkText(t, res))
	var snap terminalSnapshot
	sdkStructured(t, res, &snap)
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, snap.ID, "a UUID v4")
	assert.False(t, snap.Exited)
	assert.Nil(t, snap.ExitCode, "exit_code is null while running")
	id := snap.ID

	res = sdkCall(t, ctx, s, "send_to_terminal", map[string]any{"id": id, "command": "echo hi_$((40+2))\n"})
	require.False(t, res.IsError, sdkText(t, res))
	sdkStructured(t, res, &snap)
	output := snap.Output
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(output, "hi_42") && time.Now().Before(deadline) {
		res = sdkCall(t, ctx, s, "get_terminal_output", map[string]any{"id": id})
		require.False(t, res.IsError, sdkText(t, res))
		snap = terminalSnapshot{}
		sdkStructured(t, res, &snap)
		output = snap.Output
	}
	require.Contains(t, output, "hi_42", "terminal screen")
	assert.Contains(t, output, "echo hi_$((40+2))", "the typed command is echoed on the screen")
	assert.False(t, snap.Exited)

	res = sdkCall(t, ctx, s, "list_terminals", map[string]any{})
	require.False(t, res.IsError, sdkText(t, res))
	var list terminalList
	sdkStructured(t, res, &list)
	found := false
	for _, se := range list.Sessions {
		if se.ID == id {
			found = true
			assert.Equal(t, "bash --norc --noprofile", se.Command)
			assert.True(t, se.Alive)
			assert.Equal(t, 100, se.Cols)
			assert.Equal(t, 30, se.Rows)
		}
	}
	assert.True(t, found, "list_terminals lists the session: %+v", list)

	res = sdkCall(t, ctx, s, "kill_terminal", map[string]any{"id": id})
	require.False(t, res.IsError, sdkText(t, res))
	var killed struct {
		Output *string `json:"output"`
	}
	sdkStructured(t, res, &killed)
	require.NotNil(t, killed.Output)
	assert.Contains(t, *killed.Output, "hi_42", "the final screen")

	res = sdkCall(t, ctx, s, "list_terminals", nil)
	list = terminalList{}
	sdkStructured(t, res, &list)
	for _, se := range list.Sessions {
		assert.NotEqual(t, id, se.ID, "killed session still listed")
	}

	res = sdkCall(t, ctx, s, "get_terminal_output", map[string]any{"id": id})
	assert.True(t, res.IsError, "a killed session is unknown")
	assert.Contains(t, sdkText(t, res), id)
}

// TestSDKErrors checks that protocol errors come back as errors from the
// SDK, and that the session stays usable.
func TestSDKErrors(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := sdkSession(t, ctx)
	_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown tool: no_such_tool")

	_, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "true", "timeout": "soon"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bash tool: field timeout must be a number, got string")

	res := sdkCall(t, ctx, s, "read", map[string]any{"path": filepath.Join(t.TempDir(), "missing.txt")})
	assert.True(t, res.IsError)
	assert.Contains(t, sdkText(t, res), "no such file or directory")

	res = sdkCall(t, ctx, s, "bash", map[string]any{"command": "echo ok"})
	var out bashOutput
	sdkStructured(t, res, &out)
	assert.Equal(t, "ok\n", out.Stdout)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
