package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
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

	client, session := yamuxPair(t)
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

// A tunnel the proxy terminates over a yamux stream serves its requests
// one after another on one connection: a yamux deadline error, which is
// not temporary, must not break the TLS connection between requests.
func TestTerminateYamuxKeepsAlive(t *testing.T) {
	_, gh, _ := testSecrets(t)
	gh.Hosts = []string{"example.com"}
	set, err := NewSecrets([]Secret{gh})
	require.NoError(t, err)
	origin, roots, seen := tlsOrigin(t, "example.com")
	set.CA, err = NewCA("boxsh test CA")
	require.NoError(t, err)
	set.Roots = roots
	w := world{"example.com:443": origin.Listener.Addr().String()}
	r, err := NewRules([]string{"example.com"}, nil)
	require.NoError(t, err)

	client, session := yamuxPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var connects atomic.Int32
	go func() {
		_ = (&Server{Rules: r, Dial: w.dial, Secrets: set, Decided: func(d Decision) {
			if d.Protocol == "connect" {
				connects.Add(1)
			}
		}}).Serve(ctx, session)
	}()
	trusting := x509.NewCertPool()
	require.True(t, trusting.AppendCertsFromPEM(set.CA.CertPEM()))
	hc := &http.Client{Timeout: testTimeout, Transport: &http.Transport{
		Proxy:           http.ProxyURL(must(t, "http://127.0.0.1:3128")),
		DialContext:     func(context.Context, string, string) (net.Conn, error) { return client.Open() },
		TLSClientConfig: &tls.Config{RootCAs: trusting},
	}}
	for range 3 {
		resp, err := hc.Get("https://example.com/again")
		require.NoError(t, err)
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	assert.Len(t, seen(), 3)
	assert.Equal(t, int32(1), connects.Load(), "one tunnel for the three requests")
}

// A TLS connection the proxy serves over a yamux stream outlives a read
// deadline, as net/http's wait for the next request sets one: the stream's
// timeout error is not temporary, and crypto/tls would keep it for good.
func TestTerminatedReadOutlivesDeadline(t *testing.T) {
	client, session := yamuxPair(t)
	defer session.Close()
	ca, err := NewCA("boxsh test CA")
	require.NoError(t, err)
	cs, err := client.Open()
	require.NoError(t, err)
	_, err = cs.Write([]byte{0}) // for Accept to return
	require.NoError(t, err)
	ss, err := session.Accept()
	require.NoError(t, err)
	_, err = io.ReadFull(ss, make([]byte, 1))
	require.NoError(t, err)

	server := tls.Server(&prefixConn{Conn: ss}, &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return ca.leaf("example.com") }})
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca.CertPEM()))
	cl := tls.Client(cs, &tls.Config{ServerName: "example.com", RootCAs: roots})
	shook := make(chan error, 1)
	go func() { shook <- cl.Handshake() }()
	require.NoError(t, server.Handshake())
	require.NoError(t, <-shook)

	require.NoError(t, server.SetReadDeadline(time.Now().Add(-time.Second)))
	_, err = server.Read(make([]byte, 1))
	require.Error(t, err, "the deadline passed")
	require.NoError(t, server.SetReadDeadline(time.Time{}))
	go func() { _, _ = cl.Write([]byte("next")) }()
	buf := make([]byte, 4)
	_, err = io.ReadFull(server, buf)
	require.NoError(t, err, "the connection reads on after the deadline")
	assert.Equal(t, "next", string(buf))
}

// yamuxPair is a yamux session's two ends over a pipe, as boxsh-init's
// (client) and the front's (session); the test's end closes the client.
func yamuxPair(t *testing.T) (client, session *yamux.Session) {
	t.Helper()
	inner, outer := net.Pipe()
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	client, err := yamux.Client(inner, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	session, err = yamux.Server(outer, cfg)
	require.NoError(t, err)
	return client, session
}
