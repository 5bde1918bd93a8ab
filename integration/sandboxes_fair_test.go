//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/tool"
)

// post sends one request with its own connection (none is shared, as
// between the clients of many tenants) and returns its status and body.
func (m *manyBoxsh) post(ctx context.Context, hc *http.Client, path, token string, hdr map[string]string, body string) (int, string, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.base+path, strings.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header, err
}

// modernCall is a tools/call of the 2026-07-28 era (no session), with
// the headers it needs.
func modernCall(name string, args any) (map[string]string, string) {
	a, _ := json.Marshal(args)
	hdr := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}
	return hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, name, a)
}

// TestSandboxesRequestFairness checks that one tenant's long-polls take its
// own streams only. Sandbox a opens far more long process_output requests
// than its bound of --sandbox-requests. They are REST, MCP over HTTP, and
// the official SDK's calls, SSE streams among them. Its excess get 429
// naming the limit at once. Sandbox b's calls and the management API (list,
// create) answer within a short deadline while a's are held.
func TestSandboxesRequestFairness(t *testing.T) {
	ctx := testContext(t)
	m := startMany(t, ctx)
	a := m.create(t, "a", "empty")
	b := m.create(t, "b", "empty")
	sa := m.connect(t, ctx, a.Endpoint, a.Token, "")
	var bg tool.BashOutput
	sdkOK(t, ctx, sa, "bash", map[string]any{"command": "sleep 600", "background": true}, &bg)
	require.NotEmpty(t, bg.ID)
	poll := map[string]any{"id": bg.ID, "wait_ms": 30000}
	pollBody, err := json.Marshal(poll)
	require.NoError(t, err)
	mcpHdr, mcpBody := modernCall("process_output", poll)
	mcpHdr["Accept"] = "text/event-stream" // answered as an SSE stream

	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	held, cancelHeld := context.WithCancel(ctx)
	defer cancelHeld()
	const restFlood, mcpFlood, sdkFlood = 80, 40, 20
	var refused, answered atomic.Int32
	var mu sync.Mutex
	var refusals []string
	var wg sync.WaitGroup
	refuse := func(s string) {
		refused.Add(1)
		mu.Lock()
		refusals = append(refusals, s)
		mu.Unlock()
	}
	flood := func(n int, path string, hdr map[string]string, body string) {
		for range n {
			wg.Go(func() {
				status, got, h, err := m.post(held, hc, path, a.Token, hdr, body)
				switch {
				case err != nil:
				case status == http.StatusTooManyRequests:
					refuse(h.Get("Content-Type") + " " + h.Get("Retry-After") + " " + got)
				default:
					answered.Add(1)
				}
			})
		}
	}
	// REST first fills the bound, so that every MCP and SDK request
	// after it is past the bound, whatever order the server takes them in.
	flood(restFlood, "/s/a/v1/tools/process_output", nil, string(pollBody))
	require.Eventually(t, func() bool { return refused.Load() == restFlood-32 }, 15*time.Second, 20*time.Millisecond,
		"a's REST excess refused: %d of %d (answered %d)", refused.Load(), restFlood-32, answered.Load())
	flood(mcpFlood, "/s/a/mcp", mcpHdr, mcpBody)
	var sdkRefused atomic.Int32
	for range sdkFlood {
		wg.Go(func() {
			_, err := sa.CallTool(held, &mcp.CallToolParams{Name: "process_output", Arguments: poll})
			if err != nil && strings.Contains(err.Error(), "Too Many Requests") {
				sdkRefused.Add(1)
				refused.Add(1)
			}
		})
	}
	total := int32(restFlood + mcpFlood + sdkFlood)
	// Every request past the bound is refused at once; the bound's
	// worth stays held.
	assert.Eventually(t, func() bool { return refused.Load() == total-32 }, 15*time.Second, 20*time.Millisecond,
		"a's excess refused: %d of %d (answered %d)", refused.Load(), total-32, answered.Load())
	assert.Zero(t, answered.Load(), "a's long-polls still held")

	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sb := m.connect(t, short, b.Endpoint, b.Token, "")
	assert.Equal(t, "b\n", sh(t, short, sb, "echo b"), "b answers while a is full")
	status, got, _, err := m.post(short, hc, "/s/b/v1/tools/bash", b.Token, nil, `{"command":"echo b"}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status, "b's REST twin: %s", got)
	assert.Equal(t, names([]sandboxInfo{{Name: "a"}, {Name: "b"}}), names(m.list(t)), "management lists")
	create, cancelCreate := context.WithTimeout(ctx, 30*time.Second)
	defer cancelCreate()
	status, got, _, err = m.post(create, hc, "/v1/sandboxes", m.token, nil, `{"name":"c","from":"empty"}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, status, "management creates while a is full: %s", got)
	mgmt := m.connect(t, short, "/v1/manage/mcp", m.token, "")
	_, err = mgmt.ListTools(short, nil)
	assert.NoError(t, err, "the management MCP endpoint answers")

	mu.Lock()
	defer mu.Unlock()
	var problems, rpcErrors int
	for _, r := range refusals {
		assert.Contains(t, r, "sandbox a has 32 requests in flight, its limit (set by --sandbox-requests 32)")
		assert.Contains(t, r, " 1 ", "Retry-After: 1")
		switch {
		case strings.HasPrefix(r, "application/problem+json"):
			problems++
		case strings.HasPrefix(r, "application/json") && strings.Contains(r, `"error":{"code":`):
			rpcErrors++
		}
	}
	assert.Equal(t, restFlood-32, problems, "REST refusals are problem+json")
	assert.Equal(t, mcpFlood, rpcErrors, "MCP refusals are JSON-RPC errors")
	assert.Equal(t, len(refusals), problems+rpcErrors)
	assert.Equal(t, int32(sdkFlood), sdkRefused.Load(), "the SDK's calls past the bound are refused")
	cancelHeld()
	wg.Wait()
}

// TestSandboxesForwardLimit checks that a tenant's forwards are bounded
// (--sandbox-forwards). The one past the bound is refused naming the limit.
// Meanwhile another sandbox still exposes, and the management API still
// creates.
func TestSandboxesForwardLimit(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	a := m.create(t, "a", "empty")
	b := m.create(t, "b", "empty")
	sa := m.connect(t, ctx, a.Endpoint, a.Token, "")
	var refusal string
	exposed := 0
	for port := 1000; port < 1200; port++ {
		res := sdkCall(t, ctx, sa, "expose", map[string]any{"port": port})
		if res.IsError {
			refusal = sdkText(t, res)
			break
		}
		exposed++
	}
	assert.Equal(t, 32, exposed, "a's forwards")
	assert.Contains(t, refusal, "expose: port 1032: too many exposed ports: 32 ports are exposed, the sandbox's limit (set by --sandbox-forwards 32); unexpose one first")

	sb := m.connect(t, ctx, b.Endpoint, b.Token, "")
	var info tool.PortInfo
	sdkOK(t, ctx, sb, "bash", map[string]any{"command": "true"}, nil)
	sdkOK(t, ctx, sb, "expose", map[string]any{"port": 8080}, &info)
	c, err := net.Dial("tcp", info.Address)
	require.NoError(t, err, "b's forward listens")
	c.Close()
	before := m.held(t).fds
	m.create(t, "c", "empty")
	t.Logf("descriptors of the server: %d before a create, %d after", before, m.held(t).fds)

	sdkOK(t, ctx, sa, "unexpose", map[string]any{"port": 1000}, nil)
	sdkOK(t, ctx, sa, "expose", map[string]any{"port": 1300}, nil)
}

// TestSandboxesBoundFlags checks that --sandbox-requests and
// --sandbox-forwards set the bounds, and that the refusals name them with
// their values.
func TestSandboxesBoundFlags(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx, "--sandbox-requests", "3", "--sandbox-forwards", "2")
	a := m.create(t, "a", "empty")
	sa := m.connect(t, ctx, a.Endpoint, a.Token, "")
	sdkOK(t, ctx, sa, "expose", map[string]any{"port": 1001}, nil)
	sdkOK(t, ctx, sa, "expose", map[string]any{"port": 1002}, nil)
	res := sdkCall(t, ctx, sa, "expose", map[string]any{"port": 1003})
	require.True(t, res.IsError)
	assert.Contains(t, sdkText(t, res), "2 ports are exposed, the sandbox's limit (set by --sandbox-forwards 2)")

	var bg tool.BashOutput
	sdkOK(t, ctx, sa, "bash", map[string]any{"command": "sleep 600", "background": true}, &bg)
	poll, err := json.Marshal(map[string]any{"id": bg.ID, "wait_ms": 30000})
	require.NoError(t, err)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	held, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	refusals := make(chan string, 6)
	for range 6 {
		wg.Go(func() {
			status, body, _, err := m.post(held, hc, "/s/a/v1/tools/process_output", a.Token, nil, string(poll))
			if err == nil && status == http.StatusTooManyRequests {
				refusals <- body
			}
		})
	}
	for range 3 {
		select {
		case r := <-refusals:
			assert.Contains(t, r, "sandbox a has 3 requests in flight, its limit (set by --sandbox-requests 3)")
		case <-time.After(20 * time.Second):
			t.Fatal("no refusal past --sandbox-requests 3")
		}
	}
}

// TestSandboxesOutOfDescriptors checks that a server short of descriptors
// never answers 500. Its limit is lowered under it, as another tenant
// spending descriptors would leave it.
//   - A create that fails for want of them is 503, with Retry-After and
//     what to do.
//   - An expose names them.
//   - Once descriptors are back, the server creates again.
func TestSandboxesOutOfDescriptors(t *testing.T) {
	ctx := testContext(t)
	m := startMany(t, ctx)
	a := m.create(t, "a", "empty")
	sa := m.connect(t, ctx, a.Endpoint, a.Token, "")
	sdkOK(t, ctx, sa, "bash", map[string]any{"command": "true"}, nil)
	pid := m.cmd.Process.Pid
	var old unix.Rlimit
	require.NoError(t, unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old))
	open := m.held(t).fds
	low := unix.Rlimit{Cur: uint64(open + 8), Max: old.Max}
	require.NoError(t, unix.Prlimit(pid, unix.RLIMIT_NOFILE, &low, nil))
	restored := false
	restore := func() {
		if !restored {
			restored = true
			require.NoError(t, unix.Prlimit(pid, unix.RLIMIT_NOFILE, &old, nil))
		}
	}
	defer restore()

	var refusal string
	var exposed []int
	for port := 1000; port < 1032; port++ {
		res := sdkCall(t, ctx, sa, "expose", map[string]any{"port": port})
		if res.IsError {
			refusal = sdkText(t, res)
			break
		}
		exposed = append(exposed, port)
	}
	assert.Contains(t, refusal, "the server has no file descriptor left; retry later")
	// A few back: enough to take a request, not to start a sandbox.
	require.GreaterOrEqual(t, len(exposed), 4)
	for _, port := range exposed[:4] {
		sdkOK(t, ctx, sa, "unexpose", map[string]any{"port": port}, nil)
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	status, body, h, err := m.post(ctx, hc, "/v1/sandboxes", m.token, nil, `{"name":"b","from":"empty"}`)
	require.NoError(t, err, "the server still answers")
	assert.Equal(t, http.StatusServiceUnavailable, status, "%s", body)
	assert.Equal(t, "1", h.Get("Retry-After"))
	assert.Contains(t, body, "the server has no file descriptor left; retry later, or raise its limit (ulimit -n)")
	restore()
	m.create(t, "c", "empty")
}
