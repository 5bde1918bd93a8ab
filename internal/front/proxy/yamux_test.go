package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Over a yamux session, as boxsh's front serves the streams boxsh-init
// opens: requests, tunnels with half-closes, idle timeouts, and the end.
func TestServeYamux(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from "+r.Host)
	}))
	defer origin.Close()
	echo := startEcho(t)
	w := world{"web.example.com:80": origin.Listener.Addr().String(), "echo.example.com:7": echo}
	r, err := NewRules([]string{"*.example.com"}, nil)
	require.NoError(t, err)

	inner, outer := net.Pipe()
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	client, err := yamux.Client(inner, cfg)
	require.NoError(t, err)
	defer client.Close()
	session, err := yamux.Server(outer, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- (&Server{Rules: r, Dial: w.dial, IdleTimeout: 200 * time.Millisecond}).Serve(ctx, session)
	}()

	hc := &http.Client{Transport: &http.Transport{
		Proxy:       http.ProxyURL(must(t, "http://127.0.0.1:3128")),
		DialContext: func(context.Context, string, string) (net.Conn, error) { return client.Open() },
	}, Timeout: testTimeout}
	resp, err := hc.Get("http://web.example.com/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "hello from web.example.com", string(body))
	resp, err = hc.Get("http://web.example.org/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	// A tunnel: the stream's Close is a half-close, and the echo still
	// comes back.
	connect := func() (net.Conn, *bufio.Reader) {
		s, err := client.Open()
		require.NoError(t, err)
		require.NoError(t, s.SetDeadline(time.Now().Add(testTimeout)))
		_, err = io.WriteString(s, "CONNECT echo.example.com:7 HTTP/1.1\r\n\r\n")
		require.NoError(t, err)
		br := bufio.NewReader(s)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return s, br
	}
	s, br := connect()
	_, err = io.WriteString(s, "half\n")
	require.NoError(t, err)
	require.NoError(t, s.Close())
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.Equal(t, "half\n", string(rest))

	// An idle tunnel is closed.
	s, br = connect()
	_, err = io.ReadAll(br)
	assert.NoError(t, err, "closed, not timed out on the client's side")
	s.Close()

	// The end: Serve returns, open streams end.
	s, br = connect()
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(testTimeout):
		t.Fatal("Serve did not return")
	}
	_, err = io.ReadAll(br)
	assert.False(t, isTimeout(err), "the stream ended: %v", err)
	s.Close()
}
