package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testCaptured is a captured connection as internal/fdpass passes it.
type testCaptured struct {
	*net.TCPConn
	host string
	port int
}

func (c *testCaptured) Destination() (string, int) { return c.host, c.port }
func (c *testCaptured) TCP() *net.TCPConn          { return c.TCPConn }

// capturedListener makes each connection it accepts a captured one, to
// the destination next names.
type capturedListener struct {
	net.Listener
	next func() (string, int)
}

func (l capturedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	host, port := l.next()
	return &testCaptured{c.(*net.TCPConn), host, port}, nil
}

// A captured connection is decided on the name and port it was captured
// for, recorded as "transparent", and spliced to the destination; a
// refused one is reset. Its bytes are counted.
func TestCapturedPassed(t *testing.T) {
	echo := startEcho(t)
	w := world{"echo.example.com:22": echo}
	r, err := NewRules([]string{"echo.example.com:22"}, nil)
	require.NoError(t, err)
	var mu sync.Mutex
	var got []Decision
	dest := make(chan [2]any, 4)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	traffic := &Traffic{}
	s := &Server{Rules: r, Dial: w.dial, Traffic: traffic, Decided: func(d Decision) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, d)
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(ctx, capturedListener{l, func() (string, int) { d := <-dest; return d[0].(string), d[1].(int) }})
	}()
	defer func() { cancel(); <-done }()

	dial := func(host string, port int) net.Conn {
		dest <- [2]any{host, port}
		c, err := net.Dial("tcp", l.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
		return c
	}
	c := dial("Echo.Example.COM.", 22)
	echoes(t, c, "ssh-ish")
	// Counted as the splices of the open tunnel end their ticks.
	require.Eventually(t, func() bool {
		return traffic.Out.Load() >= int64(len("ssh-ish\n")) && traffic.In.Load() >= int64(len("ssh-ish\n"))
	}, testTimeout, 10*time.Millisecond)
	for _, d := range [][2]any{{"echo.example.com", 443}, {"evil.example.org", 22}, {"127.0.0.1", 22}} {
		dest <- d
		// The reset may come before the dial has seen its connection up.
		c, err := net.Dial("tcp", l.Addr().String())
		if err == nil {
			require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
			_, err = c.Read(make([]byte, 1))
			c.Close()
		}
		assert.True(t, errors.Is(err, syscall.ECONNRESET), "%v: reset, not %v", d, err)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 4)
	assert.Equal(t, Decision{Host: "echo.example.com", Port: 22, Protocol: "transparent", Allowed: true, Rule: "echo.example.com:22"}, got[0])
	for _, d := range got[1:] {
		assert.Equal(t, "transparent", d.Protocol)
		assert.False(t, d.Allowed, "%+v", d)
	}
}

// bigBody is a body of n bytes that are not all the same.
func bigBody(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7 / 3)
	}
	return b
}

// A large body of a stated length is spliced from the origin to the
// client, whole, with the header resp.Write would write, and counted; the
// upstream connection is kept for the next GET. A tunnel's bytes are
// spliced too.
func TestSpliceForwardedBody(t *testing.T) {
	body := bigBody(8<<20 + 17)
	var conns atomic.Int32
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Test", "yes")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	origin.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	origin.Start()
	defer origin.Close()
	blob := startServer(t, func(c net.Conn) { _, _ = c.Write(body) })
	w := world{"web.example.com:80": origin.Listener.Addr().String(), "blob.example.com:7": blob}
	traffic := &Traffic{}
	p := startProxy(t, &Server{Dial: w.dial, Traffic: traffic}, []string{"*.example.com"}, nil)

	want := sha256.Sum256(body)
	for i := range 2 {
		resp, err := p.client().Get("http://web.example.com/big")
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, want, sha256.Sum256(got), "request %d", i)
		assert.Equal(t, "yes", resp.Header.Get("X-Test"))
		assert.True(t, resp.Close, "Connection: close to the client")
	}
	assert.Equal(t, int32(1), conns.Load(), "the upstream connection kept for the second GET")
	assert.Greater(t, traffic.In.Load(), int64(2*len(body)))

	c, resp, _ := p.connect(t, "blob.example.com:7")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Equal(t, want, sha256.Sum256(got))
	assert.Greater(t, traffic.In.Load(), int64(3*len(body)))
}

// spliceResponse writes the header resp.Write writes.
func TestSpliceHead(t *testing.T) {
	for _, status := range []string{"200 OK", "206 Partial Content", "299 Odd", ""} {
		resp := &http.Response{StatusCode: 200, Status: status, ProtoMajor: 1, ProtoMinor: 1, Close: true, ContentLength: 70000,
			Header: http.Header{"X-B": {"2"}, "X-A": {"1", "3"}, "Content-Type": {"application/octet-stream"}}}
		if status != "" {
			resp.StatusCode, _ = strconv.Atoi(status[:3])
		}
		full := *resp
		full.Body = io.NopCloser(bytes.NewReader(make([]byte, 70000)))
		var want bytes.Buffer
		require.NoError(t, full.Write(&want))
		head, _, ok := bytes.Cut(want.Bytes(), []byte("\r\n\r\n"))
		require.True(t, ok)

		var got bytes.Buffer
		w := bufio.NewWriter(&got)
		h := *resp
		h.Body = headOnly{}
		require.ErrorIs(t, h.Write(w), errHeadWritten)
		require.NoError(t, w.Flush())
		assert.Equal(t, string(head)+"\r\n\r\n", got.String())
	}
}

// A captured connection past MaxConns is reset at once.
func TestCapturedBusy(t *testing.T) {
	echo := startEcho(t)
	w := world{"echo.example.com:22": echo}
	r, err := NewRules([]string{"echo.example.com:22"}, nil)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&Server{Rules: r, Dial: w.dial, MaxConns: 1}).Serve(ctx, capturedListener{l, func() (string, int) { return "echo.example.com", 22 }})
	}()
	defer func() { cancel(); <-done }()

	held, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer held.Close()
	echoes(t, held, "holding the only slot")
	c, err := net.Dial("tcp", l.Addr().String())
	if err == nil {
		require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	assert.True(t, errors.Is(err, syscall.ECONNRESET), "reset, not %v", err)
	echoes(t, held, "still served")
}
