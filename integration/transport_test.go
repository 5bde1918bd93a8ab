package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// initializeParams are the params a typical client sends.
func initializeParams(version string) map[string]any {
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "integration-test", "version": "1.0"},
	}
}

// requireInitializeResult checks an initialize answer.
func requireInitializeResult(t *testing.T, m message, wantVersion string) {
	t.Helper()
	require.Nil(t, m.Error, "initialize failed: %s", m.Raw)
	var r struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
		ServerInfo      struct{ Name, Version string }
	}
	require.NoError(t, json.Unmarshal(m.Result, &r))
	assert.Equal(t, wantVersion, r.ProtocolVersion)
	assert.Contains(t, r.Capabilities, "tools")
	assert.Equal(t, "boxsh", r.ServerInfo.Name)
	assert.NotEmpty(t, r.ServerInfo.Version)
}

// requireToolsList checks a tools/list answer to a client of a protocol
// version after 2024-11-05: v3's nine tools, list and stat.
func requireToolsList(t *testing.T, m message) {
	t.Helper()
	assert.ElementsMatch(t, allToolNamesNow, toolNames(t, m))
}

// allToolNames are the nine tools of boxsh v3, which tools/list shows
// clients of protocol version 2024-11-05; allToolNamesNow are all tools,
// which later clients see.
var (
	allToolNames    = tool.Names(tool.SandboxSet, tool.InV3)
	allToolNamesNow = tool.Names(tool.SandboxSet, nil)
)

// TestTransportSession runs a session in each framing:
//   - initialize;
//   - the initialized notification, which gets no answer;
//   - ping, tools/list and a tool call, each answered in the framing of the
//     request;
//   - a clean exit at the end of input.
func TestTransportSession(t *testing.T) {
	t.Parallel()
	for _, framed := range []bool{false, true} {
		t.Run(map[bool]string{false: "newline", true: "content-length"}[framed], func(t *testing.T) {
			s := startServer(t, testContext(t), serverOptions{framed: framed})

			s.request(1, "initialize", initializeParams("2025-06-18"))
			m := s.expect("1")
			assert.Equal(t, framed, m.Framed, "response framing must match the request's")
			requireInitializeResult(t, m, "2025-06-18")

			s.request(noID, "notifications/initialized", nil)
			s.request(2, "ping", nil)
			m = s.expect("2") // the notification got no answer
			assert.Equal(t, framed, m.Framed)
			assert.JSONEq(t, `{}`, string(m.Result))

			s.request(3, "tools/list", nil)
			m = s.expect("3")
			assert.Equal(t, framed, m.Framed)
			requireToolsList(t, m)

			s.callTool(4, "bash", map[string]any{"command": "echo framed-$((1+1))"})
			m = s.expect("4")
			assert.Equal(t, framed, m.Framed)
			out := m.bash(t)
			assert.Equal(t, "framed-2\n", out.Stdout)

			assert.Empty(t, s.drain(), "no further responses")
			s.requireExitZero()
		})
	}
}

func TestInitializeProtocolVersions(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		requireInitializeResult(t, s.roundTrip("initialize", initializeParams(v)), v)
	}
	// No version: the oldest.
	requireInitializeResult(t, s.roundTrip("initialize", map[string]any{}), "2024-11-05")
	m := s.roundTrip("initialize", nil)
	requireInitializeResult(t, m, "2024-11-05")
}

// TestTransportPipelined checks that requests written all at once are all
// answered, in either framing. Every id is answered exactly once.
func TestTransportPipelined(t *testing.T) {
	t.Parallel()
	const n = 40
	for _, framed := range []bool{false, true} {
		t.Run(map[bool]string{false: "newline", true: "content-length"}[framed], func(t *testing.T) {
			s := startServer(t, testContext(t), serverOptions{framed: framed})
			var all bytes.Buffer
			for i := 0; i < n; i++ {
				var body []byte
				if i%2 == 0 {
					body = requestJSON(i, "ping", nil)
				} else {
					body = requestJSON(i, "tools/call", callParams("bash", map[string]any{"command": fmt.Sprintf("echo out-%d", i)}))
				}
				if framed {
					all.Write(frame(body))
				} else {
					all.Write(body)
					all.WriteString("\r\n") // CRLF line ends are accepted too
				}
			}
			s.writeRaw(all.Bytes())
			seen := map[int]bool{}
			for len(seen) < n {
				m := s.next()
				assert.Equal(t, framed, m.Framed)
				id, err := strconv.Atoi(string(m.ID))
				require.NoError(t, err, "id %s", m.ID)
				require.False(t, seen[id], "id %d answered twice", id)
				seen[id] = true
				if id%2 == 0 {
					assert.JSONEq(t, `{}`, string(m.Result))
				} else {
					assert.Equal(t, fmt.Sprintf("out-%d\n", id), m.bash(t).Stdout)
				}
			}
			assert.Empty(t, s.drain())
			s.requireExitZero()
		})
	}
}

// TestContentLengthUnicode checks that Content-Length counts bytes. A body
// with multi-byte characters, and the answers with them, must be framed by
// their byte length.
func TestContentLengthUnicode(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{framed: true})
	const text = "héllo wörld ✓ 😀 — 日本語"
	body := requestJSON(1, "tools/call", callParams("bash", map[string]any{"command": "printf '%s\\n' '" + text + "'"}))
	require.Greater(t, len(body), len([]rune(string(body))), "the body must hold multi-byte characters")
	s.writeRaw(frame(body))
	// A second message right behind it: a wrong length would swallow it or
	// corrupt it.
	s.request(2, "ping", nil)

	got := s.expectSet("1", "2")
	assert.True(t, got["1"].Framed)
	assert.Equal(t, text+"\n", got["1"].bash(t).Stdout)
	assert.True(t, got["2"].Framed)
	assert.JSONEq(t, `{}`, string(got["2"].Result))
	assert.Empty(t, s.drain())
	s.requireExitZero()
}

// TestContentLengthHeaders checks header variants of Content-Length
// framing: other headers, any case, a message split across writes, and
// blank lines between messages.
func TestContentLengthHeaders(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{framed: true})
	ping := func(id int) []byte { return requestJSON(id, "ping", nil) }

	b := ping(1)
	s.writeRaw(fmt.Appendf(nil, "Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n%s", len(b), b))
	assert.True(t, s.expect("1").Framed)

	b = ping(2)
	s.writeRaw(fmt.Appendf(nil, "content-length:%d\r\n\r\n%s", len(b), b))
	assert.True(t, s.expect("2").Framed)

	b = ping(3)
	whole := frame(b)
	for _, cut := range [][2]int{{0, 7}, {7, 20}, {20, 30}, {30, len(whole)}} {
		s.writeRaw(whole[cut[0]:cut[1]])
		time.Sleep(20 * time.Millisecond)
	}
	assert.True(t, s.expect("3").Framed)

	s.writeRaw([]byte("\r\n"))
	s.writeRaw(frame(ping(4)))
	assert.True(t, s.expect("4").Framed)

	assert.Empty(t, s.drain())
	s.requireExitZero()
}

// TestIDTypes checks that ids are echoed with their JSON type and value.
// That holds on answers written by the front (ping) and on tool results. A
// request without id is answered with id null.
func TestIDTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		id   any
		want string
	}{
		{"string", "abc-1", `"abc-1"`},
		{"empty string", "", `""`},
		{"string of digits", "7", `"7"`},
		{"number", 7, `7`},
		{"zero", 0, `0`},
		{"negative", -1, `-1`},
		{"large number", json.Number("12345678901234567890"), `12345678901234567890`},
		{"fraction", json.Number("1.5"), `1.5`},
		{"null", nil, `null`},
		{"missing", noID, `null`},
	}
	for _, framed := range []bool{false, true} {
		t.Run(map[bool]string{false: "newline", true: "content-length"}[framed], func(t *testing.T) {
			s := startServer(t, testContext(t), serverOptions{framed: framed})
			for _, c := range cases {
				s.request(c.id, "ping", nil)
				m := s.expect(c.want)
				assert.JSONEq(t, `{}`, string(m.Result), c.name)

				s.callTool(c.id, "bash", map[string]any{"command": "echo id"})
				m = s.expect(c.want)
				assert.Equal(t, "id\n", m.bash(t).Stdout, c.name)

				s.request(c.id, "no/such/method", nil)
				m = s.expect(c.want)
				assert.Equal(t, -32601, m.rpcErr(t).Code, c.name)
			}
			assert.Empty(t, s.drain())
			s.requireExitZero()
		})
	}
}

// TestCompletionOrder checks that responses are written as soon as they are
// ready. With two workers, a quick call sent after a slow one is answered
// first.
func TestCompletionOrder(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{args: []string{"--workers", "2"}})
	s.callTool("slow", "bash", map[string]any{"command": "sleep 0.5; echo slow"})
	s.callTool("fast", "bash", map[string]any{"command": "echo fast"})
	assert.Equal(t, "fast\n", s.expect(`"fast"`).bash(t).Stdout)
	assert.Equal(t, "slow\n", s.expect(`"slow"`).bash(t).Stdout)
	// Answers of the front itself do not wait for running calls either.
	s.callTool("slow2", "bash", map[string]any{"command": "sleep 0.5; echo slow2"})
	s.request("ping", "ping", nil)
	s.expect(`"ping"`)
	assert.Equal(t, "slow2\n", s.expect(`"slow2"`).bash(t).Stdout)
}

// TestOneWorkerKeepsOrder checks that with one worker, calls run one at a
// time in the order they arrive. So they are answered in request order.
func TestOneWorkerKeepsOrder(t *testing.T) {
	s := startServer(t, testContext(t), serverOptions{args: []string{"--workers", "1"}})
	const n = 5
	for i := 0; i < n; i++ {
		// Earlier calls take longer: only running in arrival order answers
		// them in order.
		s.callTool(i, "bash", map[string]any{"command": fmt.Sprintf("sleep 0.%d; echo %d", n-i, i)})
	}
	for i := 0; i < n; i++ {
		m := s.expect(strconv.Itoa(i))
		assert.Equal(t, fmt.Sprintf("%d\n", i), m.bash(t).Stdout)
	}
}
