package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/jsontest"
	"github.com/boxsh/boxsh/internal/tool"
)

const testToken = "secret-token"

// httpServer serves a fake-backed server over HTTP on loopback; stop ends
// it and waits.
func httpServer(t *testing.T, opts HTTPOptions) (url string, stop func()) {
	t.Helper()
	return httpServerOn(t, opts, &fakeBackend{})
}

// httpServerOn is httpServer with the backend b.
func httpServerOn(t *testing.T, opts HTTPOptions, b Backend) (url string, stop func()) {
	t.Helper()
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	s := &Server{Tools: tools, Backend: b, Name: "boxsh", Version: "test"}
	ln, err := Listen("127.0.0.1:0", opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeStreamable(ctx, ln, opts) }()
	var once bool
	stop = func() {
		if once {
			return
		}
		once = true
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("ServeStreamable did not return")
		}
	}
	t.Cleanup(stop)
	return "http://" + ln.Addr().String() + "/mcp", stop
}

type httpReply struct {
	status int
	header http.Header
	body   []byte
	resp   response
}

// post sends body with the token, the modern headers of method when
// version is set, and extra headers.
func post(t *testing.T, url, body string, hdr map[string]string) httpReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := jsontest.NewClient().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	r := httpReply{status: res.StatusCode, header: res.Header, body: b}
	if bytes.HasPrefix(b, []byte("event: ")) {
		// An event stream: its last message is the answer.
		i := bytes.LastIndex(b, []byte("\ndata: "))
		b = bytes.TrimSpace(b[i+len("\ndata: "):])
	}
	if len(b) > 0 && b[0] == '{' {
		require.NoError(t, json.Unmarshal(b, &r.resp), "%s", b)
	}
	return r
}

func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

func TestHTTPModern(t *testing.T) {
	url, _ := httpServer(t, HTTPOptions{Token: testToken})
	r := post(t, url, modernReq("1", "server/discover", ""), modernHeaders("server/discover", ""))
	require.Equal(t, 200, r.status, "%s", r.body)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.Contains(t, string(r.resp.Result), `"supportedVersions"`)
	assert.Empty(t, r.header.Get("Mcp-Session-Id"), "modern requests are stateless")

	r = post(t, url, modernReq("2", "tools/call", `"name":"bash","arguments":{"command":"over-http"}`), modernHeaders("tools/call", "bash"))
	require.Equal(t, 200, r.status, "%s", r.body)
	assert.Contains(t, string(r.resp.Result), `"resultType":"complete"`)
	assert.Contains(t, string(r.resp.Result), `over-http`)

	// Base64 sentinel encoding of Mcp-Name.
	r = post(t, url, modernReq("3", "tools/call", `"name":"bash","arguments":{"command":"b64"}`), modernHeaders("tools/call", "=?base64?YmFzaA==?="))
	require.Equal(t, 200, r.status, "%s", r.body)

	// SSE when the client takes only an event stream.
	h := modernHeaders("tools/list", "")
	h["Accept"] = "text/event-stream"
	r = post(t, url, modernReq("4", "tools/list", ""), h)
	require.Equal(t, 200, r.status)
	assert.Equal(t, "text/event-stream", r.header.Get("Content-Type"))
	assert.Equal(t, "4", string(r.resp.ID))
}

func TestHTTPModernErrors(t *testing.T) {
	url, _ := httpServer(t, HTTPOptions{Token: testToken})
	for name, tc := range map[string]struct {
		body   string
		hdr    map[string]string
		status int
		code   int
	}{
		"missing version header": {modernReq("1", "tools/list", ""), map[string]string{"Mcp-Method": "tools/list"}, 400, CodeHeaderMismatch},
		"method mismatch":        {modernReq("1", "tools/list", ""), modernHeaders("server/discover", ""), 400, CodeHeaderMismatch},
		"name mismatch":          {modernReq("1", "tools/call", `"name":"bash","arguments":{"command":"x"}`), modernHeaders("tools/call", "read"), 400, CodeHeaderMismatch},
		"name missing":           {modernReq("1", "tools/call", `"name":"bash","arguments":{"command":"x"}`), modernHeaders("tools/call", ""), 400, CodeHeaderMismatch},
		"unsupported version": {`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + modernParams("2099-01-01", "") + `}`,
			map[string]string{"MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"}, 400, CodeUnsupportedProtocolVersion},
		"unknown method": {modernReq("1", "nope", ""), modernHeaders("nope", ""), 404, CodeMethodNotFound},
		"bad arguments":  {modernReq("1", "tools/call", `"name":"bash","arguments":{}`), modernHeaders("tools/call", "bash"), 400, CodeInvalidParams},
		"batch":          {`[` + modernReq("1", "tools/list", "") + `]`, modernHeaders("tools/list", ""), 400, CodeInvalidRequest},
	} {
		t.Run(name, func(t *testing.T) {
			r := post(t, url, tc.body, tc.hdr)
			assert.Equal(t, tc.status, r.status, "%s", r.body)
			require.NotNil(t, r.resp.Error, "%s", r.body)
			assert.Equal(t, tc.code, r.resp.Error.Code, r.resp.Error.Message)
		})
	}
}

func TestHTTPSecurity(t *testing.T) {
	url, _ := httpServer(t, HTTPOptions{Token: testToken, MaxBodyBytes: 1 << 10})
	body := modernReq("1", "tools/list", "")
	h := modernHeaders("tools/list", "")

	h["Authorization"] = ""
	assert.Equal(t, 401, post(t, url, body, h).status, "no token")
	h["Authorization"] = "Bearer wrong"
	r := post(t, url, body, h)
	assert.Equal(t, 401, r.status, "wrong token")
	assert.Contains(t, r.header.Get("WWW-Authenticate"), "Bearer")
	delete(h, "Authorization")

	h["Origin"] = "http://evil.example"
	assert.Equal(t, 403, post(t, url, body, h).status, "foreign origin")
	h["Origin"] = "http://localhost:6274"
	assert.Equal(t, 200, post(t, url, body, h).status, "loopback origin")
	delete(h, "Origin")

	big := modernReq("1", "tools/call", `"name":"bash","arguments":{"command":"`+strings.Repeat("x", 2000)+`"}`)
	assert.Equal(t, 413, post(t, url, big, modernHeaders("tools/call", "bash")).status)

	res, err := http.Get(url)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 401, res.StatusCode, "checks come before the method")
}

func TestHTTPNoTokenLoopbackOnly(t *testing.T) {
	_, err := Listen("0.0.0.0:0", HTTPOptions{})
	require.ErrorIs(t, err, ErrNeedToken)
	url, _ := httpServer(t, HTTPOptions{})
	// Without a token the Host must be loopback too: a rebound name is
	// refused even without an Origin.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(modernReq("1", "tools/list", "")))
	req.Host = "attacker.example"
	for k, v := range modernHeaders("tools/list", "") {
		req.Header.Set(k, v)
	}
	res, err := jsontest.NewClient().Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 403, res.StatusCode)
}

func TestHTTPLegacySession(t *testing.T) {
	url, _ := httpServer(t, HTTPOptions{Token: testToken})
	r := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
	require.Equal(t, 200, r.status, "%s", r.body)
	sid := r.header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
	assert.Equal(t, 202, post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr).status)
	r = post(t, url, call("2", "legacy"), hdr)
	require.Equal(t, 200, r.status)
	assert.Contains(t, string(r.resp.Result), "legacy")
	assert.NotContains(t, string(r.resp.Result), "resultType")
	// An error of the legacy era stays 200, as 2025 servers answer.
	r = post(t, url, `{"jsonrpc":"2.0","id":3,"method":"nope"}`, hdr)
	assert.Equal(t, 200, r.status)

	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Mcp-Session-Id", sid)
	res, err := jsontest.NewClient().Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 204, res.StatusCode)
	assert.Equal(t, 404, post(t, url, call("4", "gone"), hdr).status)

	// A sessionless legacy request is served too (curl).
	r = post(t, url, call("5", "nosession"), nil)
	assert.Equal(t, 200, r.status)
}

// TestHTTPShutdownAnswersInFlight checks that stopping the server answers
// the calls in flight, cancelled after the grace, instead of dropping them.
func TestHTTPShutdownAnswersInFlight(t *testing.T) {
	b := &fakeBackend{}
	url, stop := httpServerOn(t, HTTPOptions{Token: testToken, ShutdownGrace: 300 * time.Millisecond}, b)
	got := make(chan httpReply, 3)
	for i := range 3 {
		go func() {
			got <- post(t, url, modernReq(fmt.Sprint(i), "tools/call", `"name":"bash","arguments":{"command":"block"}`), modernHeaders("tools/call", "bash"))
		}()
	}
	require.Eventually(t, func() bool { return b.blocked.Load() == 3 }, 10*time.Second, time.Millisecond, "the calls in flight")
	start := time.Now()
	stop()
	assert.Less(t, time.Since(start), 10*time.Second)
	for range 3 {
		select {
		case r := <-got:
			assert.Equal(t, 200, r.status, "%s", r.body)
			assert.Contains(t, string(r.resp.Result), `"isError":true`)
		case <-time.After(10 * time.Second):
			t.Fatal("a call in flight was not answered")
		}
	}
}

func TestLoadOrCreateToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tok")
	tok, created, err := LoadOrCreateToken(path)
	require.NoError(t, err)
	assert.True(t, created)
	assert.Len(t, tok, 64)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	again, created, err := LoadOrCreateToken(path)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, tok, again)
}

func TestRESTTwin(t *testing.T) {
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	s := &Server{Tools: tools, Backend: &fakeBackend{}, Name: "boxsh", Version: "test"}
	rest, err := RESTHandler(s)
	require.NoError(t, err)
	url, _ := httpServer(t, HTTPOptions{Token: testToken, Extra: rest})
	base := strings.TrimSuffix(url, "/mcp")

	do := func(method, path, body, token string) (int, []byte) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := jsontest.NewClient().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	status, b := do(http.MethodPost, "/v1/tools/bash", `{"command":"rest-call"}`, testToken)
	require.Equal(t, 200, status, "%s", b)
	var res struct {
		Content           []struct{ Type, Text string }
		StructuredContent struct{ Stdout string }
	}
	require.NoError(t, json.Unmarshal(b, &res), "%s", b)
	assert.Equal(t, "rest-call", res.StructuredContent.Stdout)

	status, b = do(http.MethodPost, "/v1/tools/bash", `{"command":1}`, testToken)
	assert.Equal(t, 400, status)
	assert.Contains(t, string(b), "bash tool: field command must be a string, got integer")

	status, _ = do(http.MethodPost, "/v1/tools/bash", `{"command":"x"}`, "")
	assert.Equal(t, 401, status)
	status, _ = do(http.MethodPost, "/v1/tools/nope", `{}`, testToken)
	assert.Equal(t, 404, status)

	status, b = do(http.MethodGet, "/openapi.json", "", testToken)
	require.Equal(t, 200, status)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Equal(t, "3.1.0", doc.OpenAPI)
	for _, sp := range tools.AllSpecs() {
		assert.Contains(t, doc.Paths, "/v1/tools/"+sp.Name, "every tool of the registry")
	}
	assert.Contains(t, string(b), `"exit_code"`, "bash's output schema")
}

// TestHTTPTask checks that a task made over HTTP outlives the exchange that
// returned its handle, and that any later exchange can poll it.
func TestHTTPTask(t *testing.T) {
	setTaskTiming(t, 50*time.Millisecond, time.Minute)
	url, _ := httpServer(t, HTTPOptions{Token: testToken})
	r := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+taskParams(`"name":"bash","arguments":{"command":"sleep:300"}`)+`}`, modernHeaders("tools/call", "bash"))
	require.Equal(t, 200, r.status, "%s", r.body)
	v := decodeTask(t, r.resp)
	require.Equal(t, "task", v.ResultType)

	hdr := modernHeaders("tasks/get", v.TaskID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r = post(t, url, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":`+taskParams(`"taskId":"`+v.TaskID+`"`)+`}`, hdr)
		require.Equal(t, 200, r.status, "%s", r.body)
		if decodeTask(t, r.resp).Status != taskWorking || time.Now().After(deadline) {
			break
		}
		time.Sleep(30 * time.Millisecond)
	}
	done := decodeTask(t, r.resp)
	assert.Equal(t, taskCompleted, done.Status, "the call was not cancelled when its exchange ended")
	assert.Contains(t, string(done.Result), "sleep:300")

	// Mcp-Name must name the task.
	r = post(t, url, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":`+taskParams(`"taskId":"`+v.TaskID+`"`)+`}`, modernHeaders("tasks/get", "other"))
	assert.Equal(t, 400, r.status)
}

func TestCreateTokenReplacesPlanted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tok")
	require.NoError(t, os.WriteFile(path, []byte("planted\n"), 0o644))
	tok, err := CreateToken(path)
	require.NoError(t, err)
	assert.NotEqual(t, "planted", tok)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, tok+"\n", string(b))
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// A symlink planted in its place is replaced, not followed.
	target := filepath.Join(t.TempDir(), "target")
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Symlink(target, path))
	_, err = CreateToken(path)
	require.NoError(t, err)
	_, err = os.Stat(target)
	assert.True(t, os.IsNotExist(err), "the symlink's target was not written")
}

// TestHTTPToolsListVersions checks that tools/list over HTTP shows every
// tool after 2024-11-05, as on stdio. That holds per MCP session, per
// request header, and for modern requests.
func TestHTTPToolsListVersions(t *testing.T) {
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	nine, all := len(tools.Specs()), len(tools.AllSpecs())
	url, _ := httpServer(t, HTTPOptions{Token: testToken})
	count := func(r httpReply) int {
		var l struct{ Tools []struct{ Name string } }
		require.NoError(t, json.Unmarshal(r.resp.Result, &l), "%s", r.body)
		return len(l.Tools)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for version, want := range map[string]int{"2024-11-05": nine, "2025-06-18": all} {
		r := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`"}}`, nil)
		sid := r.header.Get("Mcp-Session-Id")
		require.NotEmpty(t, sid)
		assert.Equal(t, want, count(post(t, url, list, map[string]string{"Mcp-Session-Id": sid})), version)
	}
	assert.Equal(t, all, count(post(t, url, list, map[string]string{"MCP-Protocol-Version": "2025-11-25"})))
	assert.Equal(t, nine, count(post(t, url, list, nil)))
	assert.Equal(t, all, count(post(t, url, modernReq("3", "tools/list", ""), modernHeaders("tools/list", ""))))
}

// TestHTTPListenResultOneMeta checks that the result that ends a
// subscriptions/listen stream over HTTP has one _meta, with the server's
// identity and the subscription id.
func TestHTTPListenResultOneMeta(t *testing.T) {
	url, _ := httpServer(t, HTTPOptions{Token: testToken})
	r := post(t, url, modernReq(`"L1"`, "subscriptions/listen", `"notifications":{"taskIds":[]}`), modernHeaders("subscriptions/listen", ""))
	require.Equal(t, 200, r.status, "%s", r.body)
	var res struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(r.resp.Result, &res), "%s", r.body)
	assert.Equal(t, `"L1"`, string(res.Meta[metaSubscriptionID]), "%s", r.body)
	assert.Contains(t, res.Meta, metaServerInfo, "%s", r.body)
}
