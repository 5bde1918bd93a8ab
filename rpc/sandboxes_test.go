package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/tool"
)

// fakeHost is a SandboxHost whose sandboxes answer bash with their name.
type fakeHost struct {
	mu  sync.Mutex
	sbs map[string]*fakeSandbox
	max int
	// gates, when set, hold the calls of the sandboxes it names (and
	// the creates of "create NAME") until closed; entered is told each
	// call or create so held.
	gates   map[string]chan struct{}
	entered chan string
}

// hold waits for the gate of key, if it has one.
func (h *fakeHost) hold(ctx context.Context, key string) {
	h.mu.Lock()
	g := h.gates[key]
	h.mu.Unlock()
	if g == nil {
		return
	}
	h.entered <- key
	select {
	case <-g:
	case <-ctx.Done():
	}
}

type fakeSandbox struct {
	name string
	host *fakeHost
}

func (f *fakeSandbox) Start(ctx context.Context, _ string, _ json.RawMessage, done func(json.RawMessage, error)) error {
	go func() {
		f.host.hold(ctx, f.name)
		res, _ := json.Marshal(tool.TextResult(f.name))
		done(res, nil)
	}()
	return nil
}

func (h *fakeHost) Create(ctx context.Context, req SandboxRequest) (Backend, apitype.SandboxInfo, error) {
	h.hold(ctx, "create "+req.Name)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sbs[req.Name] != nil {
		return nil, apitype.SandboxInfo{}, &SandboxError{Status: http.StatusConflict, Msg: "exists"}
	}
	if len(h.sbs) >= h.max {
		return nil, apitype.SandboxInfo{}, &SandboxError{Status: http.StatusTooManyRequests, Msg: fmt.Sprintf("limit reached: %d sandboxes", h.max)}
	}
	sb := &fakeSandbox{name: req.Name, host: h}
	h.sbs[req.Name] = sb
	return sb, apitype.SandboxInfo{Name: req.Name, From: req.From}, nil
}

func (h *fakeHost) Lookup(name string) (Backend, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sb, ok := h.sbs[name]
	return sb, ok
}

func (h *fakeHost) Delete(name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sbs[name] == nil {
		return &SandboxError{Status: http.StatusNotFound, Msg: "no sandbox " + name}
	}
	delete(h.sbs, name)
	return nil
}

func (h *fakeHost) List() []apitype.SandboxInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []apitype.SandboxInfo
	for n := range h.sbs {
		out = append(out, apitype.SandboxInfo{Name: n})
	}
	return out
}

func (h *fakeHost) Warm() int { return 0 }

// The fake host's sandboxes have no files, figures or snapshots to give.
var errFake = &SandboxError{Status: http.StatusNotImplemented, Msg: "not in the fake host"}

func (h *fakeHost) Changes(string) (json.RawMessage, error) { return nil, errFake }

func (h *fakeHost) Diff(string, string) (string, error) { return "", errFake }

func (h *fakeHost) Apply(string, apitype.ApplyRequest) (json.RawMessage, error) {
	return nil, errFake
}

func (h *fakeHost) Stats(string) (tool.StatsOutput, error) { return tool.StatsOutput{}, errFake }

func (h *fakeHost) Snapshot(string, string) (apitype.SnapshotInfo, error) {
	return apitype.SnapshotInfo{}, errFake
}

func (h *fakeHost) Snapshots() ([]apitype.SnapshotInfo, error) { return nil, errFake }

func (h *fakeHost) DeleteSnapshot(string) error { return errFake }

func (h *fakeHost) Fork(context.Context, string, SandboxRequest) (Backend, apitype.SandboxInfo, error) {
	return nil, apitype.SandboxInfo{}, errFake
}

func (h *fakeHost) Restore(string, string) (apitype.SandboxInfo, error) {
	return apitype.SandboxInfo{}, errFake
}

// serveRouter serves a router of host on a loopback port with token.
func serveRouter(t *testing.T, host *fakeHost, token string) string {
	t.Helper()
	return serveRouterWith(t, host, HTTPOptions{Token: token})
}

// serveRouterWith serves a router of host on a loopback port with opts.
func serveRouterWith(t *testing.T, host *fakeHost, opts HTTPOptions) string {
	t.Helper()
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	srv := &Server{Tools: tools, Name: "boxsh", Version: "test"}
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := NewSandboxRouter(ctx, srv, host, opts)
	require.NoError(t, err)
	srv.Backend = rt.SessionBackend()
	opts.Extra, err = rt.Management()
	require.NoError(t, err)
	opts.Sandboxes = rt
	opts.SessionEnded = rt.EndSession
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.ServeStreamable(ctx, ln, opts) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

func hcall(t *testing.T, method, url, token string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

func TestSandboxRouterManagementAndTokens(t *testing.T) {
	host := &fakeHost{sbs: map[string]*fakeSandbox{}, max: 2}
	base := serveRouter(t, host, "server-token")

	res, _ := hcall(t, "POST", base+"/v1/sandboxes", "", nil, `{"name":"a"}`)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "create without the server's token")
	res, body := hcall(t, "POST", base+"/v1/sandboxes", "server-token", nil, `{"name":"a","form":"empty"}`)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, "an unknown member: %s", body)
	var a, b apitype.SandboxInfo
	res, body = hcall(t, "POST", base+"/v1/sandboxes", "server-token", nil, `{"name":"a"}`)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	require.NoError(t, json.Unmarshal([]byte(body), &a))
	res, body = hcall(t, "POST", base+"/v1/sandboxes", "server-token", nil, `{"name":"b","from":"empty"}`)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	require.NoError(t, json.Unmarshal([]byte(body), &b))
	assert.Equal(t, "/s/a/mcp", a.Endpoint)
	assert.Len(t, a.Token, 64)
	assert.NotEqual(t, a.Token, b.Token)

	res, body = hcall(t, "POST", base+"/v1/sandboxes", "server-token", nil, `{"name":"c"}`)
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	assert.Contains(t, body, "limit reached: 2 sandboxes", "the refusal names the limit")
	assert.Equal(t, "1", res.Header.Get("Retry-After"))
	res, _ = hcall(t, "POST", base+"/v1/sandboxes", "server-token", nil, `{"name":"mcp-0123"}`)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, "a name of the sessions' sandboxes")

	// Each endpoint takes its own token or the server's, and reaches its
	// own sandbox.
	for _, c := range []struct {
		path, token string
		status      int
		want        string
	}{
		{"/s/a/v1/tools/bash", a.Token, 200, `"a"`},
		{"/s/a/v1/tools/bash", "server-token", 200, `"a"`},
		{"/s/b/v1/tools/bash", b.Token, 200, `"b"`},
		{"/s/a/v1/tools/bash", b.Token, 401, ""},
		{"/s/a/v1/tools/bash", "", 401, ""},
		{"/s/zz/v1/tools/bash", a.Token, 401, ""},
		{"/s/zz/v1/tools/bash", "server-token", 404, "no sandbox zz"},
		{"/v1/tools/bash", "server-token", 404, "/s/NAME/v1/tools/bash"},
	} {
		res, body := hcall(t, "POST", base+c.path, c.token, nil, `{"command":"true"}`)
		assert.Equal(t, c.status, res.StatusCode, "%s with %.8s: %s", c.path, c.token, body)
		assert.Contains(t, body, c.want, c.path)
	}
	// MCP on a sandbox's endpoint, modern era.
	res, body = hcall(t, "POST", base+"/s/b/mcp", b.Token, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "bash"},
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":{"command":"true"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	assert.Equal(t, http.StatusOK, res.StatusCode, body)
	assert.Contains(t, body, `"text":"b"`)

	res, body = hcall(t, "GET", base+"/v1/sandboxes", a.Token, nil, "")
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "a sandbox's token lists")
	assert.Equal(t, "application/problem+json", res.Header.Get("Content-Type"), "REST refuses as REST does")
	assert.JSONEq(t, `{"title":"Unauthorized","status":401,"detail":"missing or wrong bearer token"}`, body)
	res, body = hcall(t, "POST", base+"/s/a/v1/tools/bash", b.Token, nil, `{"command":"true"}`)
	assert.Equal(t, "application/problem+json", res.Header.Get("Content-Type"), "a sandbox's REST twin too: %s", body)
	for _, mcpPath := range []string{"/s/a/mcp", "/mcp", ManagePath} {
		res, body = hcall(t, "POST", base+mcpPath, b.Token, nil, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode, mcpPath)
		assert.Contains(t, body, `"jsonrpc":"2.0"`, "an MCP endpoint refuses in JSON-RPC: %s", mcpPath)
	}
	res, body = hcall(t, "GET", base+"/v1/sandboxes", "server-token", nil, "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.JSONEq(t, `{"sandboxes":[{"name":"a","from":"","created":"0001-01-01T00:00:00Z","age_seconds":0,"idle_seconds":0,"calls":0,"running":0,"endpoint":"/s/a/mcp"},{"name":"b","from":"","created":"0001-01-01T00:00:00Z","age_seconds":0,"idle_seconds":0,"calls":0,"running":0,"endpoint":"/s/b/mcp"}],"warm":0}`, body)

	res, _ = hcall(t, "DELETE", base+"/v1/sandboxes/a", "server-token", nil, "")
	assert.Equal(t, http.StatusNoContent, res.StatusCode)
	res, _ = hcall(t, "POST", base+"/s/a/v1/tools/bash", a.Token, nil, `{"command":"true"}`)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "a deleted sandbox's token")
	// Made again under the same name: the old token does not reach it.
	res, body = hcall(t, "POST", base+"/v1/sandboxes", "server-token", nil, `{"name":"a"}`)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	res, _ = hcall(t, "POST", base+"/s/a/v1/tools/bash", a.Token, nil, `{"command":"true"}`)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "the token of a sandbox of the same name, deleted")
	res, _ = hcall(t, "DELETE", base+"/v1/sandboxes/zz", "server-token", nil, "")
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
}

// An MCP session on /mcp gets a sandbox at its first call, deleted when
// the session is.
func TestSandboxRouterSessionSandbox(t *testing.T) {
	host := &fakeHost{sbs: map[string]*fakeSandbox{}, max: 4}
	base := serveRouter(t, host, "tok")
	res, body := hcall(t, "POST", base+"/mcp", "tok", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	sid := res.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	assert.Empty(t, host.List(), "no sandbox before the first call")
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
	_, body = hcall(t, "POST", base+"/mcp", "tok", hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"true"}}}`)
	assert.Contains(t, body, SessionSandboxName(sid))
	_, ok := host.Lookup(SessionSandboxName(sid))
	require.True(t, ok)
	res, _ = hcall(t, "DELETE", base+"/mcp", "tok", hdr, "")
	require.Equal(t, http.StatusNoContent, res.StatusCode)
	require.Eventually(t, func() bool { _, ok := host.Lookup(SessionSandboxName(sid)); return !ok }, 5*time.Second, 10*time.Millisecond)
}
