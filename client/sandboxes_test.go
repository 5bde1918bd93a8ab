package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Behind a router, a server that is down or restarting is a retry-able
// error; a sandbox that does not exist is a 404, never a new sandbox.
func TestSandboxUnavailable(t *testing.T) {
	var paths []string
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		switch r.URL.Path {
		case "/s/down/v1/tools/bash":
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>502 Bad Gateway</html>"))
		case "/s/stopping/v1/tools/bash":
			w.Header().Set(ServerHeader, "boxsh-1")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":503,"detail":"the server is shutting down"}`))
		default:
			w.Header().Set(ServerHeader, "boxsh-2")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"status":404,"detail":"no sandbox gone"}`))
		}
	}))
	defer router.Close()
	srv := NewServer(router.URL, "tok", nil)
	ctx := context.Background()

	_, err := srv.Sandbox("down", "").Run(ctx, "true")
	assert.ErrorIs(t, err, ErrSandboxUnavailable, "a 502 of the router")
	_, err = srv.Sandbox("stopping", "").Run(ctx, "true")
	assert.ErrorIs(t, err, ErrSandboxUnavailable, "a 503 of a server")
	var he *HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, "boxsh-1", he.Server)

	_, err = srv.Sandbox("gone", "").Run(ctx, "true")
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusNotFound, he.StatusCode)
	assert.False(t, errors.Is(err, ErrSandboxUnavailable), "a missing sandbox is not retried")
	assert.Equal(t, []string{"POST /s/down/v1/tools/bash", "POST /s/stopping/v1/tools/bash", "POST /s/gone/v1/tools/bash"}, paths, "a call creates nothing")

	// Nobody listens: a connection refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = NewServer("http://"+addr, "tok", nil).Sandbox("x", "").Run(ctx, "true")
	assert.ErrorIs(t, err, ErrSandboxUnavailable, "a connection refused")
	_, err = NewServer("http://"+addr, "tok", nil).Create(ctx, "x", FromWorkspace)
	assert.ErrorIs(t, err, ErrSandboxUnavailable)
}
