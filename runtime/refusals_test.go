package runtime

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/internal/tool"
)

func refusal(host string, port int) proxy.Decision {
	return proxy.Decision{Host: host, Port: port, Protocol: "connect", Reason: "not in the allowlist", Allow: "--allow-domain " + host}
}

// decoded is a CallToolResult as a client reads it.
type decoded struct {
	Content           []tool.Content `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
}

func decode(t *testing.T, b json.RawMessage) decoded {
	t.Helper()
	var d decoded
	require.NoError(t, json.Unmarshal(b, &d), "%s", b)
	return d
}

// call runs wrap around a call of name whose result is res, the decisions
// made while it runs, and returns what reaches the client.
func call(t *testing.T, r *refusals, name, args string, res json.RawMessage, meanwhile ...proxy.Decision) json.RawMessage {
	t.Helper()
	var got json.RawMessage
	done := r.wrap(name, json.RawMessage(args), func(b json.RawMessage, err error) {
		require.NoError(t, err)
		got = b
	})
	for _, d := range meanwhile {
		r.rec.Record(d)
	}
	done(res, nil)
	return got
}

func bashResult(exit int, stdout string) json.RawMessage {
	return tool.EncodeStructured(tool.BashOutput{ExitCode: exit, Stdout: stdout}.AppendJSON(nil), exit != 0)
}

// A bash result gets the refusals made while it ran: in its structured
// content, in the text block that repeats it, and in one more line.
func TestRefusalsInBashResult(t *testing.T) {
	r := newRefusals()
	r.rec.Record(refusal("before.example", 443))
	plain := bashResult(0, "hi\n")
	assert.Equal(t, string(plain), string(call(t, r, tool.Bash, `{"command":"true"}`, plain)), "nothing refused: the result as it was")

	got := decode(t, call(t, r, tool.Bash, `{"command":"curl"}`, bashResult(56, "<x>&"), refusal("example.com", 443), refusal("example.com", 443)))
	want := []any{map[string]any{"host": "example.com", "port": 443.0, "reason": "not in the allowlist", "allow": "--allow-domain example.com"}}
	assert.Equal(t, want, got.StructuredContent["network_refusals"], "deduplicated; the earlier refusal is not this call's")
	assert.Equal(t, "<x>&", got.StructuredContent["stdout"])
	assert.True(t, got.IsError)
	require.Len(t, got.Content, 2)
	var text map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.Content[0].Text), &text))
	assert.Equal(t, got.StructuredContent, text, "the text block repeats the structured content")
	assert.Equal(t, "[boxsh: network refused: example.com:443 (not in the allowlist; allow with --allow-domain example.com)]", got.Content[1].Text)
}

// The line names a few and counts the others; the structured content is
// bounded too.
func TestRefusalsBounded(t *testing.T) {
	r := newRefusals()
	var many []proxy.Decision
	for i := range tool.MaxStatsRefusals + 4 {
		many = append(many, refusal(fmt.Sprintf("h%d.example", i), 443))
	}
	got := decode(t, call(t, r, tool.Bash, `{"command":"x"}`, bashResult(0, ""), many...))
	assert.Len(t, got.StructuredContent["network_refusals"], tool.MaxCallRefusals)
	assert.Equal(t, "[boxsh: network refused: h0.example:443 (not in the allowlist; allow with --allow-domain h0.example), "+
		"h1.example:443 (not in the allowlist; allow with --allow-domain h1.example), "+
		"h2.example:443 (not in the allowlist; allow with --allow-domain h2.example), and 33 more (see sandbox_stats)]", got.Content[1].Text)
	assert.Len(t, r.stats(), tool.MaxStatsRefusals)
}

// A read of a background process reports the refusals since it started
// or was last read; a terminal's the same.
func TestRefusalsSinceLastRead(t *testing.T) {
	r := newRefusals()
	started := tool.EncodeStructured(tool.BashOutput{ID: "p1", PID: 9}.AppendJSON(nil), false)
	assert.Equal(t, string(started), string(call(t, r, tool.Bash, `{"command":"curl","background":true}`, started)))
	r.rec.Record(refusal("bg.example", 443)) // between the calls
	output, err := json.Marshal(tool.StructuredResult(tool.ProcessOutputResult{ID: "p1", ProcessState: tool.ProcessState{State: tool.ProcessRunning}}))
	require.NoError(t, err)
	got := decode(t, call(t, r, tool.ProcessOutput, `{"id":"p1"}`, output))
	require.Len(t, got.StructuredContent["network_refusals"], 1)
	assert.Equal(t, "p1", got.StructuredContent["id"])
	assert.Equal(t, string(output), string(call(t, r, tool.ProcessOutput, `{"id":"p1"}`, output)), "reported once")

	r.rec.Record(refusal("other.example", 80))
	// Another process never read reports from its read's start only.
	assert.Equal(t, string(output), string(call(t, r, tool.ProcessOutput, `{"id":"p2"}`, output)))

	term, err := json.Marshal(tool.StructuredResult(map[string]any{"id": "t1", "screen": ""}))
	require.NoError(t, err)
	assert.Equal(t, string(term), string(call(t, r, tool.RunInTerminal, `{"command":"bash"}`, term)))
	r.rec.Record(refusal("term.example", 443))
	got = decode(t, call(t, r, tool.GetTerminalOutput, `{"id":"t1"}`, term))
	require.Len(t, got.StructuredContent["network_refusals"], 1)
	assert.Contains(t, got.Content[1].Text, "term.example:443")

	// Other tools are left alone.
	read := json.RawMessage(`{"content":[{"type":"text","text":"x"}]}`)
	assert.Equal(t, string(read), string(call(t, r, tool.Read, `{"path":"f"}`, read, refusal("x.example", 1))))
}

// A result without structured content gets the line only.
func TestRefusalsInTextResult(t *testing.T) {
	r := newRefusals()
	res, err := json.Marshal(tool.Errorf("bash: no worker"))
	require.NoError(t, err)
	got := decode(t, call(t, r, tool.Bash, `{"command":"x"}`, res, refusal("::1", 443)))
	assert.Nil(t, got.StructuredContent)
	require.Len(t, got.Content, 2)
	assert.Equal(t, "bash: no worker", got.Content[0].Text)
	assert.Equal(t, "[boxsh: network refused: [::1]:443 (not in the allowlist; allow with --allow-domain ::1)]", got.Content[1].Text)
}
