package rpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client/apitype"
)

func TestRequestLimit(t *testing.T) {
	l := newRequestLimit("sandbox a", 2, "--sandbox-requests")
	require.True(t, l.enter())
	require.True(t, l.enter())
	assert.False(t, l.enter(), "a third request over a limit of 2")
	assert.Equal(t, 2, l.inFlight())
	l.leave()
	assert.True(t, l.enter(), "the place of one that ended")
	assert.Equal(t, "too many concurrent requests: sandbox a has 2 requests in flight, its limit (set by --sandbox-requests 2); retry once one has ended", l.refusal())
	assert.Contains(t, newRequestLimit("the management API", 64, "").refusal(), "the management API has 64 requests in flight, its limit (a fixed limit)")

	for _, c := range []struct {
		path, ctype string
	}{{"/s/a/mcp", "application/json"}, {"/v1/manage/mcp", "application/json"}, {"/s/a/v1/tools/bash", "application/problem+json"}, {"/v1/sandboxes", "application/problem+json"}} {
		w := httptest.NewRecorder()
		l.refuse(w, httptest.NewRequest(http.MethodPost, c.path, nil))
		assert.Equal(t, http.StatusTooManyRequests, w.Code, c.path)
		assert.Equal(t, "1", w.Header().Get("Retry-After"), c.path)
		assert.Equal(t, c.ctype, w.Header().Get("Content-Type"), c.path)
		var body struct {
			Detail string `json:"detail"`
			Error  *Error `json:"error"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), c.path)
		if c.ctype == "application/json" {
			require.NotNil(t, body.Error, c.path)
			assert.Equal(t, l.refusal(), body.Error.Message, c.path)
		} else {
			assert.Equal(t, l.refusal(), body.Detail, c.path)
		}
	}
}

// TestRequestLimitConcurrent checks that concurrent enters never take more
// places than the limit.
func TestRequestLimitConcurrent(t *testing.T) {
	l := newRequestLimit("sandbox a", 5, "--sandbox-requests")
	var mu sync.Mutex
	in, most := 0, 0
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 200 {
				if !l.enter() {
					continue
				}
				mu.Lock()
				in++
				most = max(most, in)
				mu.Unlock()
				mu.Lock()
				in--
				mu.Unlock()
				l.leave()
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, most, 5)
	assert.Equal(t, 0, l.inFlight())
}

// TestSandboxRouterRequestLimit checks that a sandbox whose requests fill
// its bound gets 429 naming the limit, on its MCP endpoint and its REST
// twin. Another sandbox and the management API answer meanwhile. The
// sandbox itself answers again once one of its requests has ended.
func TestSandboxRouterRequestLimit(t *testing.T) {
	host := &fakeHost{sbs: map[string]*fakeSandbox{}, max: 4,
		gates: map[string]chan struct{}{"a": make(chan struct{})}, entered: make(chan string, 8)}
	base := serveRouterWith(t, host, HTTPOptions{Token: "tok", SandboxRequests: 2})
	var a, b apitype.SandboxInfo
	for name, info := range map[string]*apitype.SandboxInfo{"a": &a, "b": &b} {
		res, body := hcall(t, "POST", base+"/v1/sandboxes", "tok", nil, `{"name":"`+name+`"}`)
		require.Equal(t, http.StatusCreated, res.StatusCode, body)
		require.NoError(t, json.Unmarshal([]byte(body), info))
	}
	held := make(chan string, 2)
	for range 2 {
		go func() {
			res, body := hcall(t, "POST", base+"/s/a/v1/tools/bash", a.Token, nil, `{"command":"true"}`)
			held <- res.Status + " " + body
		}()
	}
	<-host.entered
	<-host.entered

	want := "sandbox a has 2 requests in flight, its limit (set by --sandbox-requests 2)"
	res, body := hcall(t, "POST", base+"/s/a/v1/tools/bash", a.Token, nil, `{"command":"true"}`)
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode, body)
	assert.Equal(t, "1", res.Header.Get("Retry-After"))
	assert.Contains(t, body, want)
	res, body = hcall(t, "POST", base+"/s/a/mcp", "tok", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode, "the server's token on a's endpoint counts as a's: %s", body)
	assert.Contains(t, body, `"error":{"code":`)
	assert.Contains(t, body, want)
	res, _ = hcall(t, "POST", base+"/s/a/mcp", "", nil, `{}`)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "no token is refused before the bound")

	res, body = hcall(t, "POST", base+"/s/b/v1/tools/bash", b.Token, nil, `{"command":"true"}`)
	assert.Equal(t, http.StatusOK, res.StatusCode, body)
	assert.Contains(t, body, `"b"`)
	res, body = hcall(t, "GET", base+"/v1/sandboxes", "tok", nil, "")
	assert.Equal(t, http.StatusOK, res.StatusCode, body)

	close(host.gates["a"])
	assert.Contains(t, <-held, "200 OK")
	assert.Contains(t, <-held, "200 OK")
	res, body = hcall(t, "POST", base+"/s/a/v1/tools/bash", a.Token, nil, `{"command":"true"}`)
	assert.Equal(t, http.StatusOK, res.StatusCode, body)
}

// TestSandboxRouterManageLimit checks that the management API has a bound
// of its own. When full, it refuses with 429 while the sandboxes' endpoints
// answer.
func TestSandboxRouterManageLimit(t *testing.T) {
	host := &fakeHost{sbs: map[string]*fakeSandbox{}, max: 4,
		gates: map[string]chan struct{}{"create slow": make(chan struct{})}, entered: make(chan string, 1)}
	base := serveRouterWith(t, host, HTTPOptions{Token: "tok", ManageRequests: 2})
	res, body := hcall(t, "POST", base+"/v1/sandboxes", "tok", nil, `{"name":"a"}`)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	var a apitype.SandboxInfo
	require.NoError(t, json.Unmarshal([]byte(body), &a))

	done := make(chan int)
	go func() {
		res, _ := hcall(t, "POST", base+"/v1/sandboxes", "tok", nil, `{"name":"slow"}`)
		done <- res.StatusCode
	}()
	<-host.entered
	res, body = hcall(t, "GET", base+"/v1/sandboxes", "tok", nil, "")
	assert.Equal(t, http.StatusOK, res.StatusCode, "one place left: %s", body)
	// A request that stays: the second place.
	second := make(chan int)
	host.mu.Lock()
	host.gates["create slow2"] = make(chan struct{})
	host.mu.Unlock()
	go func() {
		res, _ := hcall(t, "POST", base+"/v1/sandboxes", "tok", nil, `{"name":"slow2"}`)
		second <- res.StatusCode
	}()
	<-host.entered
	res, body = hcall(t, "GET", base+"/v1/sandboxes", "tok", nil, "")
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode, body)
	assert.Contains(t, body, "the management API has 2 requests in flight")
	res, body = hcall(t, "POST", base+"/s/a/v1/tools/bash", a.Token, nil, `{"command":"true"}`)
	assert.Equal(t, http.StatusOK, res.StatusCode, "a sandbox answers: %s", body)
	close(host.gates["create slow"])
	close(host.gates["create slow2"])
	assert.Equal(t, http.StatusCreated, <-done)
	assert.Equal(t, http.StatusCreated, <-second)
}

// TestOutOfDescriptors checks that a create that fails for want of
// descriptors is answered 503 with Retry-After and what to do, never 500.
// Other failures keep their status.
func TestOutOfDescriptors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		w := httptest.NewRecorder()
		writeSandboxError(w, fmt.Errorf("create a: session: open /x: %w", errno))
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		assert.Equal(t, "1", w.Header().Get("Retry-After"))
		assert.Contains(t, w.Body.String(), "the server has no file descriptor left; retry later, or raise its limit (ulimit -n) or lower --max-sandboxes: create a: session: open /x: "+errno.Error())
	}
	w := httptest.NewRecorder()
	writeSandboxError(w, errors.New("boom"))
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	res, err := toolResult(nil, fmt.Errorf("create: %w", syscall.EMFILE))
	require.NoError(t, err)
	assert.Contains(t, string(res), "the server has no file descriptor left")
	assert.Contains(t, string(res), `"isError":true`)
}
