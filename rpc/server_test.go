package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/jsontest"
	"github.com/boxsh/boxsh/internal/tool"
)

// fakeBackend answers bash calls with the command as stdout; a command
// "block" waits until its context ends, "fail" returns a plain error and
// "bad" a protocol error. A read blocks, as a read of a FIFO would; the
// other tools answer an empty result. blocked counts the bash calls that
// wait in "block".
type fakeBackend struct{ blocked atomic.Int32 }

func (b *fakeBackend) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
	switch name {
	case tool.Read:
		go func() {
			<-ctx.Done()
			done(nil, ctx.Err())
		}()
		return nil
	case tool.Bash:
	default:
		go done(json.RawMessage(`{"content":[]}`), nil)
		return nil
	}
	go func() {
		if isBlock(args) {
			b.blocked.Add(1)
			defer b.blocked.Add(-1)
		}
		done(fakeRun(ctx, args))
	}()
	return nil
}

// isBlock tells whether args are those of a bash call of "block".
func isBlock(args json.RawMessage) bool {
	var a tool.BashArgs
	return json.Unmarshal(args, &a) == nil && a.Command == "block"
}

func fakeRun(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	var a tool.BashArgs
	_ = json.Unmarshal(args, &a)
	switch a.Command {
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	case "fail":
		return nil, errors.New("backend broke")
	case "bad":
		return nil, &initproto.Error{Code: CodeInvalidParams, Message: "bad thing"}
	}
	if ms, ok := strings.CutPrefix(a.Command, "sleep:"); ok {
		d, _ := time.ParseDuration(ms + "ms")
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return json.Marshal(tool.StructuredResult(tool.BashOutput{Stdout: a.Command}))
}

type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// serve runs a server on input and returns its responses in order.
func serve(t *testing.T, input string) []response {
	t.Helper()
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	s := &Server{Tools: tools, Backend: &fakeBackend{}, Name: "boxsh", Version: "test"}
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Serve(ctx, strings.NewReader(input), &out))
	var resps []response
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var r response
		require.NoError(t, jsontest.Unmarshal([]byte(line), &r), "response is not JSON: %s", line)
		resps = append(resps, r)
	}
	return resps
}

func call(id, command string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"bash","arguments":{"command":%q}}}`, id, command)
}

func TestInitializeVersions(t *testing.T) {
	for requested, want := range map[string]string{
		``:             "2024-11-05",
		`,"params":{}`: "2024-11-05",
		`,"params":{"protocolVersion":"2025-06-18"}`: "2025-06-18",
		`,"params":{"protocolVersion":"2025-11-25"}`: "2025-11-25",
		`,"params":{"protocolVersion":"1999-01-01"}`: ProtocolVersions[len(ProtocolVersions)-1],
	} {
		resps := serve(t, `{"jsonrpc":"2.0","id":1,"method":"initialize"`+requested+"}\n")
		require.Len(t, resps, 1)
		var r struct {
			ProtocolVersion string
			ServerInfo      struct{ Name, Version string }
			Capabilities    map[string]any
		}
		require.NoError(t, json.Unmarshal(resps[0].Result, &r))
		assert.Equal(t, want, r.ProtocolVersion, "request %s", requested)
		assert.Equal(t, "boxsh", r.ServerInfo.Name)
		assert.Contains(t, r.Capabilities, "tools")
	}
}

func TestIDsKeepTheirType(t *testing.T) {
	in := call(`"s"`, "a") + "\n" + call(`7`, "b") + "\n" + call(`0`, "c") + "\n" + call(`null`, "d") + "\n" +
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"bash","arguments":{"command":"e"}}}` + "\n"
	resps := serve(t, in)
	require.Len(t, resps, 5)
	ids := map[string]bool{}
	for _, r := range resps {
		ids[string(r.ID)] = true
	}
	assert.Equal(t, map[string]bool{`"s"`: true, `7`: true, `0`: true, `null`: true}, ids)
}

func TestNotificationsAreNotAnswered(t *testing.T) {
	resps := serve(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`+"\n"+
		`{"jsonrpc":"2.0","id":"p","method":"ping"}`+"\n")
	require.Len(t, resps, 1)
	assert.Equal(t, `"p"`, string(resps[0].ID))
	assert.Equal(t, `{}`, string(resps[0].Result))
}

func TestProtocolErrors(t *testing.T) {
	cases := []struct {
		in      string
		code    int
		message string
	}{
		{`not json`, CodeParseError, "parse_error: invalid JSON"},
		{`[1,2,3]`, CodeInvalidRequest, "parse_error"},
		{`null`, CodeInvalidRequest, "must be a JSON object"},
		{`{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest, "parse_error: missing or non-string field: method"},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, CodeInvalidRequest, "parse_error"},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, CodeInvalidRequest, "id must be"},
		{`{"jsonrpc":"2.0","id":1,"method":"nope"}`, CodeMethodNotFound, "unknown method: nope"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, CodeInvalidParams, "tools/call missing string field: params.name"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"magic"}}`, CodeInvalidParams, "unknown tool: magic"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":{}}}`, CodeInvalidParams, "bash tool missing string field: command"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":{"command":1}}}`, CodeInvalidParams, "field command must be a string"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":{"command":"x","timeout":"5"}}}`, CodeInvalidParams, "field timeout must be a number"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"path":"/x"}}}`, CodeInvalidParams, "write tool missing string field: content"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"edit","arguments":{"path":"/x","edits":"no"}}}`, CodeInvalidParams, "field edits must be an array"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"edit","arguments":{"path":"/x","edits":[{"oldText":"a"}]}}}`, CodeInvalidParams, "missing string field: edits[0].newText"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":"x"}}`, CodeInvalidParams, "arguments must be an object"},
		{call("1", "bad"), CodeInvalidParams, "bad thing"},
	}
	for _, c := range cases {
		resps := serve(t, c.in+"\n"+call(`"after"`, "still here")+"\n")
		require.Len(t, resps, 2, "input %s", c.in)
		var errResp, ok response
		for _, r := range resps {
			if string(r.ID) == `"after"` {
				ok = r
			} else {
				errResp = r
			}
		}
		require.NotNil(t, errResp.Error, "input %s", c.in)
		assert.Equal(t, c.code, errResp.Error.Code, "input %s", c.in)
		assert.Contains(t, errResp.Error.Message, c.message, "input %s", c.in)
		assert.Nil(t, errResp.Result)
		assert.Contains(t, string(ok.Result), "still here", "the server keeps serving after %s", c.in)
	}
}

func TestBackendFailureIsToolError(t *testing.T) {
	resps := serve(t, call("1", "fail")+"\n")
	require.Len(t, resps, 1)
	require.Nil(t, resps[0].Error)
	var r tool.Result
	require.NoError(t, json.Unmarshal(resps[0].Result, &r))
	assert.True(t, r.IsError)
	assert.Contains(t, r.Content[0].Text, "backend broke")
}

func TestToolsList(t *testing.T) {
	resps := serve(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	var r struct {
		Tools []struct {
			Name        string
			InputSchema struct {
				Type       string
				Properties map[string]any
				Required   []string
			}
			Annotations map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(resps[0].Result, &r))
	require.Len(t, r.Tools, 9)
	for _, tl := range r.Tools {
		assert.Equal(t, "object", tl.InputSchema.Type, tl.Name)
		assert.NotNil(t, tl.InputSchema.Properties, tl.Name)
		assert.NotNil(t, tl.InputSchema.Required, tl.Name)
		assert.Contains(t, tl.Annotations, "readOnlyHint", tl.Name)
	}
}

// TestToolsListByProtocolVersion checks that clients of boxsh v3's
// protocol version see its nine tools, and later clients list and stat.
func TestToolsListByProtocolVersion(t *testing.T) {
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	all := len(tools.AllSpecs())
	for init, want := range map[string]int{
		"": 9,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n":                               9,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}` + "\n": 9,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}` + "\n": all,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}` + "\n": all,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2099-01-01"}}` + "\n": all,
	} {
		resps := serve(t, init+list)
		var r struct{ Tools []struct{ Name string } }
		require.NoError(t, json.Unmarshal(resps[len(resps)-1].Result, &r))
		var names []string
		for _, tl := range r.Tools {
			names = append(names, tl.Name)
		}
		assert.Len(t, names, want, "after %s", init)
		if want == all {
			assert.Subset(t, names, tool.Names(tool.SandboxSet, func(in *tool.Info) bool { return in.BeyondV3 }))
		}
	}
}

func TestCancelledCallGetsNoAnswer(t *testing.T) {
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	s := &Server{Tools: tools, Backend: &fakeBackend{}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), inR, outW); outW.Close() }()
	lines := bufio.NewScanner(jsontest.NewReader(outR))

	fmt.Fprintln(inW, call("1", "block"))
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}`)
	fmt.Fprintln(inW, call("2", "next"))
	require.True(t, lines.Scan())
	assert.Contains(t, lines.Text(), `"id":2`)
	inW.Close()
	require.NoError(t, <-done)
	assert.False(t, lines.Scan(), "no answer for the cancelled call: %s", lines.Text())
}

func TestFramedInputGetsFramedOutput(t *testing.T) {
	body := call("1", "héllo")
	tools, _ := tool.NewRegistry()
	s := &Server{Tools: tools, Backend: &fakeBackend{}}
	var out strings.Builder
	require.NoError(t, s.Serve(context.Background(), strings.NewReader(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)), &out))
	hdr, rest, ok := strings.Cut(out.String(), "\r\n\r\n")
	require.True(t, ok)
	assert.Equal(t, fmt.Sprintf("Content-Length: %d", len(rest)), hdr)
	assert.NoError(t, jsontest.UniqueKeys([]byte(rest)))
}

func TestInvalidUTF8IDIsSanitized(t *testing.T) {
	resps := serve(t, "{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"ping\"}\n")
	require.Len(t, resps, 1)
	assert.Equal(t, "\"a\ufffdb\"", string(resps[0].ID))
}

func TestCancelledContextEndsServeWhileInputIsOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tools, _ := tool.NewRegistry()
		s := &Server{Tools: tools, Backend: &fakeBackend{}}
		inR, inW := io.Pipe()
		defer inW.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx, inR, io.Discard) }()
		fmt.Fprintln(inW, call("1", "block"))
		synctest.Wait() // the call blocks in the backend
		cancel()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
		case <-time.After(5 * time.Second):
			t.Fatal("Serve did not return after its context was cancelled")
		}
	})
}

// TestEndOfInputCancelsBlockedCalls checks what happens at the end of
// input. A bash call is answered. A call of another tool that still runs
// after EndOfInputGrace is cancelled and answered with an error saying
// so. Serve then returns.
func TestEndOfInputCancelsBlockedCalls(t *testing.T) {
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	s := &Server{Tools: tools, Backend: &fakeBackend{}, Name: "boxsh", Version: "test", EndOfInputGrace: 50 * time.Millisecond}
	input := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"fifo"}}}` + "\n" + call("2", "quick") + "\n"
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, s.Serve(ctx, strings.NewReader(input), &out))
	assert.Less(t, time.Since(start), 5*time.Second)
	byID := map[string]response{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r response
		require.NoError(t, jsontest.Unmarshal([]byte(line), &r), line)
		byID[string(r.ID)] = r
	}
	require.Len(t, byID, 2, out.String())
	assert.Contains(t, string(byID["2"].Result), "quick")
	var r tool.Result
	require.NoError(t, json.Unmarshal(byID["1"].Result, &r), out.String())
	assert.True(t, r.IsError)
	assert.Contains(t, string(byID["1"].Result), "end of input")
}
