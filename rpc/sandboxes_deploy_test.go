package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/tool"
)

// A create can name its sandbox in the path (PUT), which a router hashes;
// it answers as POST does.
func TestSandboxRouterPut(t *testing.T) {
	host := &fakeHost{sbs: map[string]*fakeSandbox{}, max: 4}
	base := serveRouterWith(t, host, HTTPOptions{Token: "tok", ServerID: "pod-1"})

	res, body := hcall(t, "PUT", base+"/v1/sandboxes/a", "tok", nil, "")
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	var a apitype.SandboxInfo
	require.NoError(t, json.Unmarshal([]byte(body), &a))
	assert.Equal(t, "a", a.Name)
	assert.Equal(t, "/s/a/mcp", a.Endpoint)
	assert.Len(t, a.Token, 64)
	assert.Equal(t, "pod-1", a.Server, "the server is named in the answer")
	assert.Equal(t, "pod-1", res.Header.Get(ServerHeader))

	res, body = hcall(t, "PUT", base+"/v1/sandboxes/b", "tok", nil, `{"from":"empty"}`)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	assert.Contains(t, body, `"from":"empty"`)
	res, body = hcall(t, "PUT", base+"/v1/sandboxes/c", "tok", nil, `{"name":"c"}`)
	require.Equal(t, http.StatusCreated, res.StatusCode, "the same name in the body: %s", body)

	for _, c := range []struct {
		name, path, token, body string
		status                  int
	}{
		{"a name taken", "/v1/sandboxes/a", "tok", "", http.StatusConflict},
		{"another name in the body", "/v1/sandboxes/d", "tok", `{"name":"e"}`, http.StatusBadRequest},
		{"an unknown member", "/v1/sandboxes/d", "tok", `{"form":"empty"}`, http.StatusBadRequest},
		{"a session's name", "/v1/sandboxes/mcp-0123", "tok", "", http.StatusBadRequest},
		{"no token", "/v1/sandboxes/d", "", "", http.StatusUnauthorized},
		{"a sandbox's token", "/v1/sandboxes/d", a.Token, "", http.StatusUnauthorized},
		{"a limit", "/v1/sandboxes/d", "tok", "", http.StatusCreated},
		{"past the limit", "/v1/sandboxes/e", "tok", "", http.StatusTooManyRequests},
	} {
		res, body := hcall(t, "PUT", base+c.path, c.token, nil, c.body)
		assert.Equal(t, c.status, res.StatusCode, "%s: %s", c.name, body)
		assert.Equal(t, "pod-1", res.Header.Get(ServerHeader), "%s: the server is named in a refusal too", c.name)
	}

	// A POST create that a router sent by its X-Sandbox header must name
	// the same sandbox.
	res, body = hcall(t, "POST", base+"/v1/sandboxes", "tok", map[string]string{SandboxHeader: "x"}, `{"name":"y"}`)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Contains(t, body, `the X-Sandbox header names sandbox \"x\"`)
	res, body = hcall(t, "POST", base+"/v1/snapshots", "tok", map[string]string{SandboxHeader: "x"}, `{"name":"s","sandbox":"a"}`)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, body)

	res, body = hcall(t, "GET", base+"/v1/sandboxes", "tok", nil, "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	var list apitype.SandboxList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Sandboxes, 4)
	for _, s := range list.Sandboxes {
		assert.Equal(t, "pod-1", s.Server, s.Name)
	}
	res, _ = hcall(t, "POST", base+"/s/a/v1/tools/bash", a.Token, nil, `{"command":"true"}`)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "pod-1", res.Header.Get(ServerHeader), "a sandbox's endpoint names the server")
	res, _ = hcall(t, "POST", base+"/s/zz/v1/tools/bash", "tok", nil, `{"command":"true"}`)
	assert.Equal(t, http.StatusNotFound, res.StatusCode, "no sandbox is made for an unknown name")
	assert.Equal(t, "pod-1", res.Header.Get(ServerHeader))
	_, ok := host.Lookup("zz")
	assert.False(t, ok)
}

// The probes answer without a token; /readyz follows HTTPOptions.Ready and
// turns 503 once the shutdown began, while the calls in flight end and
// creates are refused (Drain).
func TestSandboxRouterHealthAndDrain(t *testing.T) {
	host := &fakeHost{sbs: map[string]*fakeSandbox{}, max: 4, gates: map[string]chan struct{}{"slow": make(chan struct{})}, entered: make(chan string, 1)}
	var ready atomic.Pointer[error]
	notYet := errors.New("filling the warm pool: 0 of 2 sandboxes started")
	ready.Store(&notYet)
	opts := HTTPOptions{Token: "tok", ServerID: "pod-2", ShutdownGrace: time.Minute,
		Ready: func() error { return *ready.Load() }}
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	srv := &Server{Tools: tools, Name: "boxsh", Version: "test"}
	life, endLife := context.WithCancel(context.Background())
	defer endLife()
	stop, stopNow := context.WithCancel(context.Background())
	rt, err := NewSandboxRouter(life, srv, host, opts)
	require.NoError(t, err)
	srv.Backend = rt.SessionBackend()
	opts.Extra, err = rt.Management()
	require.NoError(t, err)
	opts.Sandboxes = rt
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.ServeStreamable(stop, ln, opts) }()
	base := "http://" + ln.Addr().String()

	res, body := hcall(t, "GET", base+"/healthz", "", nil, "")
	assert.Equal(t, http.StatusOK, res.StatusCode, body)
	assert.Equal(t, "pod-2", res.Header.Get(ServerHeader))
	res, body = hcall(t, "GET", base+"/readyz", "", nil, "")
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	assert.Contains(t, body, "filling the warm pool", "the reason")
	var none error
	ready.Store(&none)
	res, _ = hcall(t, "GET", base+"/readyz", "", nil, "")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	res, _ = hcall(t, "POST", base+"/healthz", "", nil, "")
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)

	res, body = hcall(t, "PUT", base+"/v1/sandboxes/slow", "tok", nil, "")
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	// A call in flight when the shutdown begins.
	answered := make(chan string, 1)
	go func() {
		res, body := hcall(t, "POST", base+"/s/slow/v1/tools/bash", "tok", nil, `{"command":"true"}`)
		answered <- res.Status + " " + body
	}()
	require.Equal(t, "slow", <-host.entered)
	rt.Drain()
	res, body = hcall(t, "PUT", base+"/v1/sandboxes/late", "tok", nil, "")
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "a create once draining: %s", body)
	assert.Equal(t, "1", res.Header.Get("Retry-After"))
	assert.Contains(t, body, "shutting down")
	stopNow()
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	}, 5*time.Second, 5*time.Millisecond, "the listener closes")
	_, ok := host.Lookup("late")
	assert.False(t, ok, "no create once draining")
	select {
	case got := <-answered:
		t.Fatalf("the call ended before its sandbox answered: %s", got)
	case <-served:
		t.Fatal("the server stopped with a call in flight")
	default:
	}
	close(host.gates["slow"])
	got := <-answered
	assert.Contains(t, got, "200 OK")
	assert.Contains(t, got, `"slow"`, "the call in flight finished")
	require.NoError(t, <-served)
}

// /readyz answers 503 once the shutdown began, ready or not; /healthz
// 200.
func TestReadyzStopping(t *testing.T) {
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	srv := &Server{Tools: tools, Name: "boxsh", Version: "test"}
	require.NoError(t, srv.prepare())
	opts := HTTPOptions{Token: "tok"}
	opts.defaults()
	tr := newTransport(srv, opts, context.Background())
	tr.health = true
	tr.stopping.Store(true)
	rec := httptest.NewRecorder()
	tr.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "shutting down")
	rec = httptest.NewRecorder()
	tr.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Empty(t, rec.Header().Get(ServerHeader), "no server id, no header")
	// The endpoints of sandboxes do not serve the probes.
	tr.health = false
	rec = httptest.NewRecorder()
	tr.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
}

// While the server starts, its listener answers that it does: the
// probes, and 503 with Retry-After for the rest; then the listener serves
// on as ServeStreamable's.
func TestServeStarting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	stop := ServeStarting(ln, HTTPOptions{ServerID: "pod-3"}, "hosting earlier sandboxes again")
	res, _ := hcall(t, "GET", base+"/healthz", "", nil, "")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "pod-3", res.Header.Get(ServerHeader))
	res, body := hcall(t, "GET", base+"/readyz", "", nil, "")
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	assert.Contains(t, body, "hosting earlier sandboxes again")
	res, body = hcall(t, "POST", base+"/s/a/v1/tools/bash", "tok", nil, `{"command":"true"}`)
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	assert.Equal(t, "1", res.Header.Get("Retry-After"))
	assert.Contains(t, body, "the server is starting")
	stop()

	host := &fakeHost{sbs: map[string]*fakeSandbox{}, max: 1}
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	srv := &Server{Tools: tools, Name: "boxsh", Version: "test"}
	ctx, cancel := context.WithCancel(context.Background())
	opts := HTTPOptions{Token: "tok"}
	rt, err := NewSandboxRouter(ctx, srv, host, opts)
	require.NoError(t, err)
	opts.Extra, err = rt.Management()
	require.NoError(t, err)
	opts.Sandboxes = rt
	done := make(chan error, 1)
	go func() { done <- srv.ServeStreamable(ctx, ln, opts) }()
	defer func() { cancel(); <-done }()
	res, body = hcall(t, "PUT", base+"/v1/sandboxes/a", "tok", nil, "")
	assert.Equal(t, http.StatusCreated, res.StatusCode, "the same listener, served: %s", body)
	res, _ = hcall(t, "GET", base+"/readyz", "", nil, "")
	assert.Equal(t, http.StatusOK, res.StatusCode)
}
