package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every decision is one Info line with host, port, protocol, allowed
// and rule, and is told to Decided.
func TestDecisionLog(t *testing.T) {
	echo := startEcho(t)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer origin.Close()
	w := world{"echo.example.com:7": echo, "web.example.com:80": origin.Listener.Addr().String()}
	buf := &logBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Output: buf, JSONFormat: true, Level: hclog.Info})
	var mu sync.Mutex
	var decided []Decision
	p := startProxy(t, &Server{Dial: w.dial, Log: log, Decided: func(d Decision) {
		mu.Lock()
		decided = append(decided, d)
		mu.Unlock()
	}}, []string{"*.example.com"}, []string{"ads.example.com"})
	p.log = buf

	status, _ := p.get(t, "http://web.example.com/")
	require.Equal(t, http.StatusOK, status)
	status, _ = p.get(t, "http://ADS.example.com./")
	require.Equal(t, http.StatusForbidden, status)
	_, resp, _ := p.connect(t, "echo.example.com:7")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err := socksDialer(t, p).DialContext(context.Background(), "tcp", "127.0.0.1:7")
	require.Error(t, err)

	want := []map[string]any{
		{"host": "web.example.com", "port": 80.0, "protocol": "http", "allowed": true, "rule": "*.example.com"},
		{"host": "ads.example.com", "port": 80.0, "protocol": "http", "allowed": false, "rule": "ads.example.com"},
		{"host": "echo.example.com", "port": 7.0, "protocol": "connect", "allowed": true, "rule": "*.example.com"},
		{"host": "127.0.0.1", "port": 7.0, "protocol": "socks5", "allowed": false, "rule": ""},
	}
	got := buf.decisions(t)
	require.Len(t, got, len(want), "one line per decision: %s", buf)
	for i, w := range want {
		assert.Equal(t, "info", got[i]["@level"])
		for k, v := range w {
			assert.Equal(t, v, got[i][k], "decision %d, %s", i, k)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []Decision{
		{Host: "web.example.com", Port: 80, Protocol: "http", Allowed: true, Rule: "*.example.com"},
		{Host: "ads.example.com", Port: 80, Protocol: "http", Allowed: false, Rule: "ads.example.com",
			Reason: `refused by the denied domain "ads.example.com"`, Allow: `remove "ads.example.com" from network.deniedDomains`},
		{Host: "echo.example.com", Port: 7, Protocol: "connect", Allowed: true, Rule: "*.example.com"},
		{Host: "127.0.0.1", Port: 7, Protocol: "socks5", Allowed: false,
			Reason: "an IP address is allowed only when named exactly", Allow: "--allow-domain 127.0.0.1"},
	}, decided)
}

// Beyond MaxConns, clients are refused at once, and served again when
// the slots are free.
func TestMaxConns(t *testing.T) {
	echo := startEcho(t)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer origin.Close()
	w := world{"echo.example.com:7": echo, "web.example.com:80": origin.Listener.Addr().String()}
	p := startProxy(t, &Server{Dial: w.dial, MaxConns: 2}, []string{"*.example.com"}, nil)

	var tunnels []net.Conn
	for range 2 {
		c, resp, _ := p.connect(t, "echo.example.com:7")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		tunnels = append(tunnels, c)
	}
	status, body := p.get(t, "http://web.example.com/")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, body, "busy")
	_, err := socksDialer(t, p).DialContext(context.Background(), "tcp", "echo.example.com:7")
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "general SOCKS server failure")
	}
	for _, c := range tunnels {
		echoes(t, c, "still served")
		c.Close()
	}
	require.Eventually(t, func() bool {
		resp, err := p.client().Get("http://web.example.com/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, testTimeout, 10*time.Millisecond, "served again")
}

// A flood of clients that never send their header is closed after
// HeaderTimeout, in bounded memory, and the proxy serves on.
func TestSlowClientFlood(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer origin.Close()
	w := world{"web.example.com:80": origin.Listener.Addr().String()}
	p := startProxy(t, &Server{Dial: w.dial, MaxConns: 100, HeaderTimeout: 200 * time.Millisecond},
		[]string{"web.example.com"}, nil)

	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const n = 500
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		c, err := net.Dial("tcp", p.addr)
		require.NoError(t, err, "connection %d", i)
		conns = append(conns, c)
		if i%5 == 0 {
			_, err = io.WriteString(c, "GET http://web.exa") // and no more
			require.NoError(t, err)
		}
	}
	runtime.ReadMemStats(&during)
	growth := int64(during.HeapAlloc) - int64(before.HeapAlloc)
	assert.Less(t, growth, int64(32<<20), "heap growth with %d slow clients", n)

	var wg sync.WaitGroup
	var mu sync.Mutex
	open := 0
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(testTimeout))
			_, err := io.Copy(io.Discard, c)
			if isTimeout(err) {
				mu.Lock()
				open++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, open, "slow clients still open after %v", testTimeout)

	status, body := p.get(t, "http://web.example.com/")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ok", body)
}

// A tunnel without traffic either way for IdleTimeout is closed; one
// with traffic in one direction only is not.
func TestIdleTimeout(t *testing.T) {
	echo := startEcho(t)
	// A server that sends a byte every 20 ms and reads nothing.
	ticker := startServer(t, func(c net.Conn) {
		for range 25 {
			if _, err := c.Write([]byte{'.'}); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	w := world{"echo.example.com:7": echo, "ticker.example.com:7": ticker}
	p := startProxy(t, &Server{Dial: w.dial, IdleTimeout: 300 * time.Millisecond}, []string{"*.example.com"}, nil)

	c, resp, _ := p.connect(t, "echo.example.com:7")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	echoes(t, c, "before idling")
	closedByPeer(t, c)

	// 25 bytes over about 500 ms downstream, nothing upstream: alive to
	// the end, past the idle timeout.
	c, resp, _ = p.connect(t, "ticker.example.com:7")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(testTimeout)))
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Len(t, got, 25)
}

// Ending the context stops Serve, closing the listener and the tunnels.
func TestServeCancel(t *testing.T) {
	echo := startEcho(t)
	w := world{"echo.example.com:7": echo}
	r, err := NewRules([]string{"echo.example.com"}, nil)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &testProxy{addr: l.Addr().String()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- (&Server{Rules: r, Dial: w.dial}).Serve(ctx, l) }()

	tunnel, resp, _ := p.connect(t, "echo.example.com:7")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	echoes(t, tunnel, "open")
	idle, err := net.Dial("tcp", p.addr) // a client still to send its header
	require.NoError(t, err)
	defer idle.Close()
	socks, err := net.Dial("tcp", p.addr) // and one mid-handshake
	require.NoError(t, err)
	defer socks.Close()
	_, err = socks.Write([]byte{5, 1, 0})
	require.NoError(t, err)
	_, err = io.ReadFull(socks, make([]byte, 2))
	require.NoError(t, err)

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err, "nil when ctx ended")
	case <-time.After(testTimeout):
		t.Fatal("Serve did not return")
	}
	closedByPeer(t, tunnel)
	closedByPeer(t, idle)
	closedByPeer(t, socks)
	_, err = net.Dial("tcp", p.addr)
	assert.Error(t, err, "the listener is closed")
}

// failingListener fails its first Accept.
type failingListener struct {
	net.Listener
	err error
}

func (l *failingListener) Accept() (net.Conn, error) { return nil, l.err }

// A listener failing makes Serve return its error.
func TestServeListenerError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	boom := errors.New("boom")
	err = (&Server{}).Serve(context.Background(), &failingListener{l, boom})
	assert.ErrorIs(t, err, boom)
	_, err = net.Dial("tcp", l.Addr().String())
	assert.Error(t, err, "closed")
}

// Streaming: a large response passes through in full, chunked, and a
// large tunnel transfer is echoed whole.
func TestLargeTransfers(t *testing.T) {
	const size = 4 << 20
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for i := 0; i < size/len(chunk); i++ {
			w.Write(chunk)
			w.(http.Flusher).Flush()
		}
	}))
	defer origin.Close()
	echo := startEcho(t)
	w := world{"web.example.com:80": origin.Listener.Addr().String(), "echo.example.com:7": echo}
	p := startProxy(t, &Server{Dial: w.dial}, []string{"*.example.com"}, nil)

	resp, err := p.client().Get("http://web.example.com/big")
	require.NoError(t, err)
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, int64(size), n)

	c, resp, _ := p.connect(t, "echo.example.com:7")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	go func() {
		data := make([]byte, size)
		c.Write(data)
		c.(*bufConn).CloseWrite()
	}()
	n, err = io.Copy(io.Discard, c)
	require.NoError(t, err)
	assert.Equal(t, int64(size), n, "echoed whole, and the half-close passed on")
}

// Decisions on a few destinations.
func ExampleRules_Decide() {
	r, _ := NewRules([]string{"*.example.com", "registry.npmjs.org:443"}, []string{"ads.example.com"})
	for _, dest := range []struct {
		host string
		port int
	}{{"www.example.com", 80}, {"ads.example.com", 443}, {"registry.npmjs.org", 80}, {"93.184.216.34", 443}} {
		allowed, rule := r.Decide(dest.host, dest.port)
		fmt.Printf("%s:%d allowed=%v rule=%q\n", dest.host, dest.port, allowed, rule)
	}
	// Output:
	// www.example.com:80 allowed=true rule="*.example.com"
	// ads.example.com:443 allowed=false rule="ads.example.com"
	// registry.npmjs.org:80 allowed=false rule=""
	// 93.184.216.34:443 allowed=false rule=""
}
