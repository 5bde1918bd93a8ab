package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// requireRPCError checks that m is the JSON-RPC error (code, exact message)
// answering id.
func requireRPCError(t *testing.T, m message, id string, code int, msg string) {
	t.Helper()
	assert.Equal(t, id, m.idString(), "id of the error: %s", truncate(m.Raw))
	e := m.rpcErr(t)
	assert.Equal(t, code, e.Code, "error code: %s", truncate(m.Raw))
	assert.Equal(t, msg, e.Message)
}

// requireToolFailure checks that m is a failed tool result whose text
// contains each of want.
func requireToolFailure(t *testing.T, m message, want ...string) {
	t.Helper()
	r := m.toolResult(t)
	assert.True(t, r.IsError, "expected isError: %s", truncate(m.Raw))
	for _, w := range want {
		assert.Contains(t, r.text(), w)
	}
}

// TestMalformedMessages checks input that is not JSON-RPC at all. Each
// message gets a specific error with id null, and boxsh keeps serving.
func TestMalformedMessages(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, input string
		code        int
		msgPrefix   string
	}{
		{"truncated object", `{"jsonrpc":"2.0","id":1,"method":`, -32700, "parse_error: invalid JSON"},
		{"garbage", `hello boxsh`, -32700, "parse_error: invalid JSON"},
		{"trailing comma", `{"jsonrpc":"2.0","id":1,"method":"ping",}`, -32700, "parse_error: invalid JSON"},
		{"array", `[1,2,3]`, -32600, "parse_error: a request must be a JSON object"},
		{"batch array", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600, "parse_error: a request must be a JSON object"},
		{"string", `"ping"`, -32600, "parse_error: a request must be a JSON object"},
		{"number", `42`, -32600, "parse_error: a request must be a JSON object"},
		{"missing method", `{"jsonrpc":"2.0","id":1}`, -32600, "parse_error: missing or non-string field: method"},
		{"method not a string", `{"jsonrpc":"2.0","id":1,"method":5}`, -32600, "parse_error:"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "parse_error: id must be a string, a number or null"},
	}
	for _, framed := range []bool{false, true} {
		t.Run(map[bool]string{false: "newline", true: "content-length"}[framed], func(t *testing.T) {
			s := startServer(t, testContext(t), serverOptions{framed: framed})
			for _, c := range cases {
				s.send([]byte(c.input))
				m := s.next()
				assert.Equal(t, framed, m.Framed, c.name)
				e := m.rpcErr(t)
				assert.Equal(t, c.code, e.Code, "%s: %s", c.name, m.Raw)
				assert.True(t, strings.HasPrefix(e.Message, c.msgPrefix), "%s: message %q, want prefix %q", c.name, e.Message, c.msgPrefix)
				if c.name != "missing method" && c.name != "method not a string" {
					assert.Equal(t, "null", m.idString(), c.name)
				}
				s.requireServing()
			}
			assert.Empty(t, s.drain())
			s.requireExitZero()
		})
	}
}

// TestContentLengthTruncatedByEOF checks a Content-Length body cut short by
// the end of input. It gives one parse error, the calls before it are
// answered, and the exit status is 0.
func TestContentLengthTruncatedByEOF(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{framed: true})
	s.callTool(1, "bash", map[string]any{"command": "sleep 0.2; echo before"})
	body := requestJSON(2, "ping", nil)
	s.writeRaw(fmt.Appendf(nil, "Content-Length: %d\r\n\r\n%s", len(body)+50, body))
	rest := s.drain()
	require.Len(t, rest, 2, "the call's answer and one parse error: %v", rest)
	var gotCall, gotErr bool
	for _, m := range rest {
		assert.True(t, m.Framed)
		switch m.idString() {
		case "1":
			gotCall = true
			assert.Equal(t, "before\n", m.bash(t).Stdout)
		case "null":
			gotErr = true
			e := m.rpcErr(t)
			assert.Equal(t, -32700, e.Code)
			assert.True(t, strings.HasPrefix(e.Message, "parse_error:"), e.Message)
		default:
			t.Errorf("unexpected response %s", m.Raw)
		}
	}
	assert.True(t, gotCall && gotErr)
	s.requireExitZero()
}

// TestContentLengthBadHeader checks that header blocks that cannot be used
// are reported, and that the stream goes on.
func TestContentLengthBadHeader(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{framed: true})
	s.requireServing() // the first message selects Content-Length framing
	s.writeRaw([]byte("Content-Type: application/json\r\n\r\n"))
	m := s.next()
	assert.True(t, m.Framed)
	e := m.rpcErr(t)
	assert.Equal(t, -32700, e.Code)
	assert.Contains(t, e.Message, "Content-Length")
	s.requireServing()

	s.writeRaw([]byte("Content-Length: lots\r\n\r\n"))
	e = s.next().rpcErr(t)
	assert.Equal(t, -32700, e.Code)
	assert.Contains(t, e.Message, "Content-Length")
	s.requireServing()
}

// TestInvalidParams checks arguments of the wrong type, missing arguments,
// and unknown tools and methods. Each gets a JSON-RPC error with a specific
// message, and boxsh keeps serving.
func TestInvalidParams(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		method string
		params any
		code   int
		msg    string
	}{
		{"timeout as string", "tools/call", callParams("bash", map[string]any{"command": "true", "timeout": "5"}),
			-32602, "bash tool: field timeout must be a number, got string"},
		{"command as number", "tools/call", callParams("bash", map[string]any{"command": 5}),
			-32602, "bash tool: field command must be a string, got integer"},
		{"env value as number", "tools/call", callParams("bash", map[string]any{"command": "true", "env": map[string]any{"A": 1}}),
			-32602, "bash tool: field env.A must be a string, got integer"},
		{"edits not an array", "tools/call", callParams("edit", map[string]any{"path": "f", "edits": "replace all"}),
			-32602, "edit tool: field edits must be an array, got string"},
		{"edits empty", "tools/call", callParams("edit", map[string]any{"path": "f", "edits": []any{}}),
			-32602, "edit tool: field edits must have at least 1 item(s)"},
		{"edit without newText", "tools/call", callParams("edit", map[string]any{"path": "f", "edits": []any{map[string]any{"oldText": "a"}}}),
			-32602, "edit tool missing string field: edits[0].newText"},
		{"read offset as string", "tools/call", callParams("read", map[string]any{"path": "f", "offset": "1"}),
			-32602, "read tool: field offset must be an integer, got string"},
		{"write bad encoding", "tools/call", callParams("write", map[string]any{"path": "f", "content": "x", "encoding": "latin1"}),
			-32602, "write tool: field encoding must be one of [utf8 text base64], got latin1"},
		{"arguments not an object", "tools/call", callParams("bash", "echo hi"),
			-32602, "bash tool: arguments must be an object, got string"},
		{"missing command", "tools/call", callParams("bash", map[string]any{}),
			-32602, "bash tool missing string field: command (or array field: args)"},
		{"missing arguments", "tools/call", map[string]any{"name": "bash"},
			-32602, "bash tool missing string field: command (or array field: args)"},
		{"missing path", "tools/call", callParams("read", map[string]any{"offset": 1}),
			-32602, "read tool missing string field: path"},
		{"missing edits", "tools/call", callParams("edit", map[string]any{"path": "f"}),
			-32602, "edit tool missing array field: edits"},
		{"missing terminal id", "tools/call", callParams("send_to_terminal", map[string]any{"command": "ls\n"}),
			-32602, "send_to_terminal tool missing string field: id"},
		{"missing tool name", "tools/call", map[string]any{"arguments": map[string]any{}},
			-32602, "tools/call missing string field: params.name"},
		{"tool name not a string", "tools/call", map[string]any{"name": 7},
			-32602, "tools/call missing string field: params.name"},
		{"unknown tool", "tools/call", callParams("python", map[string]any{"code": "1"}),
			-32602, "unknown tool: python"},
		{"unknown method", "resources/list", nil,
			-32601, "unknown method: resources/list"},
		{"unknown method with params", "tools/run", map[string]any{"name": "bash"},
			-32601, "unknown method: tools/run"},
	}
	s := startServer(t, testContext(t), serverOptions{})
	for i, c := range cases {
		id := fmt.Sprintf("bad-%d", i)
		s.request(id, c.method, c.params)
		requireRPCError(t, s.expect(`"`+id+`"`), `"`+id+`"`, c.code, c.msg)
		s.requireServing()
	}
}

// bigRequest is a tools/call request of more than size bytes.
func bigRequest(id int, size int) []byte {
	pad := strings.Repeat("A", size)
	return requestJSON(id, "tools/call", callParams("bash", map[string]any{"command": "echo " + pad}))
}

// TestOversizedRequest checks that a request over the 64 MiB limit is
// answered with an error and skipped. The next request is answered.
func TestOversizedRequest(t *testing.T) {
	t.Parallel()
	const over = 64<<20 + 1024
	for _, framed := range []bool{false, true} {
		t.Run(map[bool]string{false: "newline", true: "content-length"}[framed], func(t *testing.T) {
			s := startServer(t, testContext(t), serverOptions{framed: framed})
			s.request(1, "ping", nil)
			s.expect("1")
			big := bigRequest(2, over)
			done := make(chan struct{})
			go func() {
				defer close(done)
				// Written from a goroutine: boxsh reads it while answering.
				s.send(big)
				s.request(3, "tools/call", callParams("bash", map[string]any{"command": "echo after-big"}))
			}()
			m := s.next()
			assert.Equal(t, framed, m.Framed)
			requireRPCError(t, m, "null", -32600, "parse_error: request buffer exceeded 64 MiB")
			m = s.expect("3")
			assert.Equal(t, "after-big\n", m.bash(t).Stdout)
			<-done
			s.requireServing()
			assert.Empty(t, s.drain())
			s.requireExitZero()
		})
	}
}

// TestLargeRequestUnderLimit checks that a request just under the limit is
// not refused for its size.
func TestLargeRequestUnderLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	stdin := strings.Repeat("0123456789abcdef", 3<<20/16) // 3 MiB
	id := s.newID()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.callTool(id, "bash", map[string]any{"command": "wc -c", "stdin": stdin})
	}()
	m := s.expect(`"` + id + `"`)
	<-done
	assert.Equal(t, fmt.Sprintf("%d", len(stdin)), strings.TrimSpace(m.bash(t).Stdout))
}

// TestInvalidUTF8InRequest checks invalid UTF-8 inside a JSON string of a
// request. The answer is valid JSON, and valid UTF-8, and boxsh keeps
// serving.
func TestInvalidUTF8InRequest(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})

	t.Run("in a command", func(t *testing.T) {
		s.writeRaw([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"bash\",\"arguments\":{\"command\":\"printf '%s' '\xff\xfeok'\"}}}\n"))
		m := s.expect("1")
		require.True(t, utf8.Valid(m.Raw), "response is not valid UTF-8: %q", m.Raw)
		require.True(t, json.Valid(m.Raw))
		out := m.bash(t)
		assert.Equal(t, 0, out.ExitCode)
		assert.Equal(t, "\uFFFD\uFFFDok", out.Stdout, "invalid bytes reach the shell as U+FFFD")
		s.requireServing()
	})
	t.Run("in a method name", func(t *testing.T) {
		s.writeRaw([]byte("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/\xc3list\"}\n"))
		m := s.expect("2")
		require.True(t, utf8.Valid(m.Raw), "response is not valid UTF-8: %q", m.Raw)
		assert.Equal(t, -32601, m.rpcErr(t).Code)
		s.requireServing()
	})
	t.Run("in an id", func(t *testing.T) {
		s.writeRaw([]byte("{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"ping\"}\n"))
		m := s.next()
		assert.True(t, utf8.Valid(m.Raw), "response is not valid UTF-8 (RFC 8259 §8.1): %q", m.Raw)
		var id string
		require.NoError(t, json.Unmarshal(m.ID, &id))
		assert.Equal(t, "a\uFFFDb", id, "the id as every JSON decoder reads the request")
		s.requireServing()
	})
}

// TestInvalidUTF8Output checks that command output that is not UTF-8 gives
// a valid JSON answer with U+FFFD.
func TestInvalidUTF8Output(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	id := s.newID()
	s.callTool(id, "bash", map[string]any{"command": `printf '\377\376'; printf 'x\300y' >&2`})
	m := s.expect(`"` + id + `"`)
	require.True(t, utf8.Valid(m.Raw), "response is not valid UTF-8: %q", truncate(m.Raw))
	require.True(t, json.Valid(m.Raw))
	out := m.bash(t)
	assert.Equal(t, "\uFFFD\uFFFD", out.Stdout)
	assert.Equal(t, "x\uFFFDy", out.Stderr)
	s.requireServing()
}

// TestFileToolFailures checks that tool failures on the file system are
// tool results with isError and a text naming the path and the problem.
func TestFileToolFailures(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.txt")
	file := filepath.Join(dir, "file.txt")
	require.NoError(t, os.WriteFile(file, []byte("content\n"), 0o644))
	edits := []map[string]string{{"oldText": "a", "newText": "b"}}

	t.Run("read missing", func(t *testing.T) {
		requireToolFailure(t, s.call("read", map[string]any{"path": missing}),
			"read: cannot open file: "+missing+": no such file or directory")
	})
	t.Run("edit missing", func(t *testing.T) {
		requireToolFailure(t, s.call("edit", map[string]any{"path": missing, "edits": edits}), missing, "no such file or directory")
		assert.NoFileExists(t, missing)
	})
	t.Run("write under a file", func(t *testing.T) {
		requireToolFailure(t, s.call("write", map[string]any{"path": filepath.Join(file, "x"), "content": "x"}), file, "not a directory")
	})
	t.Run("read a directory", func(t *testing.T) {
		requireToolFailure(t, s.call("read", map[string]any{"path": dir}), dir, "is a directory")
	})
	t.Run("write a directory", func(t *testing.T) {
		requireToolFailure(t, s.call("write", map[string]any{"path": dir, "content": "x"}), dir, "is a directory")
		fi, err := os.Stat(dir)
		require.NoError(t, err)
		assert.True(t, fi.IsDir(), "the directory is left alone")
	})
	t.Run("edit a directory", func(t *testing.T) {
		requireToolFailure(t, s.call("edit", map[string]any{"path": dir, "edits": edits}), dir, "is a directory")
	})
	t.Run("write bad base64", func(t *testing.T) {
		requireToolFailure(t, s.call("write", map[string]any{"path": missing, "content": "!!!", "encoding": "base64"}), "base64")
		assert.NoFileExists(t, missing)
	})
	t.Run("edit text not found", func(t *testing.T) {
		requireToolFailure(t, s.call("edit", map[string]any{"path": file, "edits": []map[string]string{{"oldText": "absent", "newText": "x"}}}))
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.Equal(t, "content\n", string(b))
	})
	t.Run("unknown id", func(t *testing.T) {
		// Every tool whose arguments require the id of a terminal or of
		// a background process fails naming an unknown one.
		tools, err := tool.NewRegistry()
		require.NoError(t, err)
		var called int
		for _, spec := range tools.AllSpecs() {
			var in struct{ Required []string }
			require.NoError(t, json.Unmarshal(spec.InputSchema(), &in))
			if slices.Contains(in.Required, "id") {
				called++
				requireToolFailure(t, s.call(spec.Name, map[string]any{"id": "no-such-session", "command": "x"}), "no-such-session")
			}
		}
		assert.NotZero(t, called)
	})
	s.requireServing()
}

// TestReadBinaryFile checks that reading a binary file gives metadata, not
// its bytes.
func TestReadBinaryFile(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	path := filepath.Join(t.TempDir(), "data.bin")
	data := bytes.Repeat([]byte{0x00, 0xff, 0x13, 0x37, 0x80, 0x01}, 1000)
	require.NoError(t, os.WriteFile(path, data, 0o644))

	m := s.call("read", map[string]any{"path": path})
	require.True(t, utf8.Valid(m.Raw))
	r := m.toolResult(t)
	assert.False(t, r.IsError)
	var out struct {
		Content  string `json:"content"`
		Encoding string `json:"encoding"`
		MimeType string `json:"mime_type"`
		Size     int64  `json:"size"`
	}
	require.NoError(t, json.Unmarshal(r.StructuredContent, &out))
	assert.Equal(t, "metadata", out.Encoding)
	assert.Empty(t, out.Content)
	assert.Equal(t, "application/octet-stream", out.MimeType)
	assert.Equal(t, int64(len(data)), out.Size)
	assert.Contains(t, r.text(), "6000 bytes")
	s.requireServing()
}
