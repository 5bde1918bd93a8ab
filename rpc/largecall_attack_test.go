package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/largecall"
	"github.com/boxsh/boxsh/internal/tool"
)

// frameBackend sends each call it is given through a frame, as the front
// sends it to boxsh-init, and keeps what boxsh-init reads back from it.
type frameBackend struct {
	mu    sync.Mutex
	calls []initproto.Call
	sent  []json.RawMessage // the arguments the front validated
}

func (b *frameBackend) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
	var buf bytes.Buffer
	fw := initproto.NewWriter(&buf)
	if err := largecall.WriteCall(fw, initproto.Call{ID: 42, Tool: name, Args: args}); err != nil {
		return err
	}
	payload, err := initproto.NewReader(&buf).Read()
	if err != nil {
		return err
	}
	c, err := largecall.DecodeCall(payload)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.calls = append(b.calls, c)
	b.sent = append(b.sent, bytes.Clone(args))
	b.mu.Unlock()
	go done(json.RawMessage(`{"content":[]}`), nil)
	return nil
}

// initDecodeWrite decodes a write call's arguments as boxsh-init does
// (agent.decode).
func initDecodeWrite(args []byte) (tool.WriteArgs, error) {
	var w tool.WriteArgs
	err := largecall.UnmarshalArgs(args, &w)
	return w, err
}

// TestLargeCallFrameCarriesWhatWasValidated plays an attacker who controls
// the client's bytes. Its tools/call requests are at and around the size
// from which the fast paths (largecall's, the large-call frame) are taken.
// Each must reach boxsh-init as the tool, id and arguments encoding/json
// reads in the request. It must never arrive as another tool, another id
// or a cancel. A call the front refuses must never reach boxsh-init.
func TestLargeCallFrameCarriesWhatWasValidated(t *testing.T) {
	content := func(n int) string {
		b, _ := json.Marshal(strings.Repeat("ab\"\\c", n/5+1)[:n])
		return string(b)
	}
	// A content whose args land on each side of largecall.Large.
	var sizes []string
	for _, d := range []int{-40, -39, -38, -2, -1, 0, 1, 2, 40} {
		sizes = append(sizes, content(largecall.Large*5/8+d))
	}
	big := content(largecall.Large + 100)
	inject := `"` + strings.Repeat("x", largecall.Large) + `\"},\"tool\":\"bash\",\"id\":7,\"cancel\":true,\"args\":{\"command\":\"id\"}}"`
	type tc struct {
		args   string
		accept bool
	}
	cases := []tc{
		{`{"path":"/x","content":` + big + `}`, true},
		{`{"path":"/x","content":` + inject + `}`, true},
		{`{"path":"/x","content":` + big + `,"x":{"a":"}","b":["]","}"]},"y":[{"}":{}}]}`, true},
		{`{"path":"/x","content":` + big + `},"tool":"bash","x":{`, false},
		{`{"path":"/a","content":` + big + `,"path":"/b"}`, true},
		{`{"path":"/a","content":` + big + `,"PATH":"/b"}`, true},
		{`{"Path":"/a","content":` + big + `,"path":"/b","pAtH":"/c"}`, true},
		{`{"path":"/a","Content":` + big + `,"content":"small"}`, true},
		{`{"path":"/a","content":"small","content":` + big + `}`, true},
		{`{"path":"/\u0061\ud800\udc00\ud800x","content":` + big + `}`, true},
		{"{\"path\":\"/\xff\xfe\",\"content\":" + big + "}", true},
		{"{\"pa\xffth\":\"/a\",\"path\":\"/b\",\"content\":" + big + "}", true},
		{`{"path":"/a","content":` + big + `,"encoding":"base64"}`, true},
		{`{"path":"/a","content":` + big + `,"encoding":"rot13"}`, false},
		{`{"path":"/a","content":` + big + `,"n":1e999}`, false},
		{`{"path":"/a","content":` + big + `,"n":-0.5e-3}`, true},
		{`{"path":"/a","content":` + big + " \t\r\n }", true},
		{`{"path":7,"content":` + big + `}`, false},
		{`{"path":null,"content":` + big + `}`, false},
		{`{"content":` + big + `}`, false},
		{`[` + big + `]`, false},
		{big, false},
		{`{"path":"/a","content":` + big[:len(big)-1] + "\x01\"}", false},
		{`{"path":"/a","content":` + big[:len(big)-1] + `\q"}`, false},
		{`{"path":"/a","content":` + big + `}}`, false},
		{`{"path":"/a","content":` + big + `} {}`, false},
		{`{"path":"/a","content":` + big, false},
		{`{"path":"/a","content":` + big + `,}`, false},
	}
	for _, s := range sizes {
		cases = append(cases, tc{`{"path":"/x","content":` + s + `}`, true})
	}
	type wrap struct{ pre, post string }
	wraps := []wrap{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":`, `}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":`, `,"name":"write","_meta":{"progressToken":"p"}}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":{"command":"id"},"name":"write","arguments":`, `}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","NAME":"bash","arguments":`, `}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":`, `,"Arguments":{"command":"id"}}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":{"command":"id"}},"params":{"name":"write","arguments":`, `}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":`, `},"PARAMS":{"name":"bash","arguments":{"command":"id"}}}`},
		{` { "jsonrpc" : "2.0" , "id" : 1 , "method" : "tools/call" , "params" : { "name" : "wr\u0069te" , "arguments" : `, ` } } `},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":`, `}}{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"id"}}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"arguments":`, `}}`},
	}
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	for wi, w := range wraps {
		for ci, c := range cases {
			msg := w.pre + c.args + w.post
			for _, framing := range []string{"line", "content-length"} {
				if framing == "line" && strings.Contains(msg, "\n") {
					continue
				}
				input := msg + "\n"
				if framing == "content-length" {
					input = fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(msg), msg)
				}
				b := &frameBackend{}
				s := &Server{Tools: tools, Backend: b, Name: "boxsh", Version: "test"}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				var out strings.Builder
				require.NoError(t, s.Serve(ctx, strings.NewReader(input), &out))
				cancel()
				where := fmt.Sprintf("wrap %d case %d (%s, %d bytes): %.100s", wi, ci, framing, len(c.args), msg)

				// What encoding/json reads in the request.
				var req struct {
					Params struct {
						Name      string          `json:"name"`
						Arguments json.RawMessage `json:"arguments"`
					} `json:"params"`
				}
				reqErr := json.Unmarshal([]byte(msg), &req)
				b.mu.Lock()
				calls, sent := b.calls, b.sent
				b.mu.Unlock()
				accept := c.accept && req.Params.Name == tool.Write && bytes.Equal(req.Params.Arguments, []byte(c.args)) ||
					req.Params.Name == tool.Bash && string(req.Params.Arguments) == `{"command":"id"}`
				if reqErr != nil || !accept {
					assert.Empty(t, calls, "refused: %s\n%s", where, out.String())
					continue
				}
				if !assert.Len(t, calls, 1, "%s\n%.300s", where, out.String()) {
					continue
				}
				got := calls[0]
				assert.Equal(t, uint64(42), got.ID, where)
				assert.False(t, got.Cancel, where)
				assert.Equal(t, req.Params.Name, got.Tool, where)
				assert.Equal(t, string(sent[0]), string(got.Args), "the arguments validated, byte for byte: %s", where)
				assert.True(t, json.Valid(got.Args), where)
				if got.Tool == tool.Write {
					var want tool.WriteArgs
					require.NoError(t, json.Unmarshal(req.Params.Arguments, &want), where)
					have, err := initDecodeWrite(got.Args)
					require.NoError(t, err, where)
					assert.Equal(t, want, have, where)
				}
			}
		}
	}
}

// TestLargeCallOverHTTP sends large modern tools/call requests over HTTP.
// The Mcp-Name header is checked against the name encoding/json reads: the
// last of the keys that are equal regardless of case. A call that passes
// reaches boxsh-init's frame as the tool and arguments of the body.
func TestLargeCallOverHTTP(t *testing.T) {
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	b := &frameBackend{}
	s := &Server{Tools: tools, Backend: b, Name: "boxsh", Version: "test"}
	opts := HTTPOptions{Token: testToken}
	ln, err := Listen("127.0.0.1:0", opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeStreamable(ctx, ln, opts) }()
	defer func() { cancel(); <-done }()
	url := "http://" + ln.Addr().String() + "/mcp"

	content := `"` + strings.Repeat("x", largecall.Large) + `\"},\"name\":\"bash\",\"arguments\":{\"command\":\"id\"}}"`
	args := `{"path":"/x","content":` + content + `}`
	for _, tc := range []struct {
		extra, header string
		status        int
	}{
		{`"name":"write","arguments":` + args + `,"NAME":"bash"`, "write", 400},
		{`"name":"write","arguments":` + args + `,"nAmE":"bash"`, "bash", 400},
		{`"name":"bash","arguments":` + args + `,"Name":"write"`, "write", 200},
		{`"name":"write","arguments":` + args, "write", 200},
	} {
		b.mu.Lock()
		b.calls, b.sent = nil, nil
		b.mu.Unlock()
		r := post(t, url, modernReq("1", "tools/call", tc.extra), modernHeaders("tools/call", tc.header))
		assert.Equal(t, tc.status, r.status, "%.200s", r.body)
		b.mu.Lock()
		calls := b.calls
		b.mu.Unlock()
		if tc.status != 200 {
			assert.Empty(t, calls)
			continue
		}
		if assert.Len(t, calls, 1) {
			assert.Equal(t, tool.Write, calls[0].Tool)
			assert.False(t, calls[0].Cancel)
			assert.Equal(t, args, string(calls[0].Args))
		}
	}
}
