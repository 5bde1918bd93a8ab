package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/syncbuf"
)

// testTimeout bounds every wait of a test, so that a bug fails the test
// rather than hanging it.
const testTimeout = 5 * time.Second

// world maps "name:port" to the addresses of the test servers on the
// loopback that stand for the outside world: this machine has no other.
type world map[string]string

// dial is a Server.Dial that connects names in w to their test servers,
// IP addresses as they are, and fails other names as unknown.
func (w world) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if to, ok := w[addr]; ok {
		addr = to
	} else if net.ParseIP(host) == nil {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// logBuffer collects a logger's output safely across goroutines.
type logBuffer struct{ syncbuf.Buffer }

// decisions are the decision lines of the JSON log.
func (b *logBuffer) decisions(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "line %q", line)
		if m["@message"] == "network access" {
			out = append(out, m)
		}
	}
	return out
}

// testProxy is a Server serving on the loopback.
type testProxy struct {
	addr   string
	url    *url.URL
	log    *logBuffer
	cancel context.CancelFunc
	done   chan error
}

// startProxy serves s (with rules allowed and denied, unless s has
// Rules) on a loopback listener until the test ends.
func startProxy(t testing.TB, s *Server, allowed, denied []string) *testProxy {
	t.Helper()
	if s.Rules == nil {
		r, err := NewRules(allowed, denied)
		require.NoError(t, err)
		s.Rules = r
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return serveProxy(t, s, l)
}

// serveProxy serves s on l until the test ends.
func serveProxy(t testing.TB, s *Server, l net.Listener) *testProxy {
	t.Helper()
	p := &testProxy{log: &logBuffer{}, done: make(chan error, 1)}
	if s.Log == nil {
		s.Log = hclog.New(&hclog.LoggerOptions{Output: p.log, JSONFormat: true, Level: hclog.Debug})
	}
	p.addr = l.Addr().String()
	p.url = &url.URL{Scheme: "http", Host: p.addr}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { p.done <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-p.done:
			require.NoError(t, err)
		case <-time.After(testTimeout):
			t.Error("Serve did not return")
		}
	})
	return p
}

// client is an HTTP client that goes through p.
func (p *testProxy) client() *http.Client {
	return &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyURL(p.url), DisableKeepAlives: true},
		Timeout:   testTimeout,
	}
}

// get fetches u through p, and returns the status and body.
func (p *testProxy) get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := p.client().Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// connect sends CONNECT target to p and reads the response. On 200 the
// connection is the tunnel.
func (p *testProxy) connect(t *testing.T, target string) (net.Conn, *http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	_, err = io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	var body []byte
	if resp.StatusCode != http.StatusOK {
		body, err = io.ReadAll(resp.Body)
		require.NoError(t, err)
	}
	return &bufConn{c.(*net.TCPConn), br}, resp, string(body)
}

// bufConn reads what its reader buffered first.
type bufConn struct {
	*net.TCPConn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// startEcho starts a TCP server that echoes what it reads, until the
// test ends.
func startEcho(t *testing.T) string {
	return startServer(t, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

// startServer starts a TCP server on loopback that runs serve on each
// connection (and then closes it), until the test ends. It returns the
// server's address.
func startServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return l.Addr().String()
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	return addr
}

// echoes checks that c echoes a line.
func echoes(t *testing.T, c net.Conn, line string) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	_, err := io.WriteString(c, line+"\n")
	require.NoError(t, err)
	got, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, line+"\n", got)
}

// closedByPeer waits until the peer closes c, and fails the test if it
// does not within testTimeout.
func closedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(testTimeout)))
	_, err := io.Copy(io.Discard, c)
	if err != nil {
		require.False(t, isTimeout(err), "still open after %v", testTimeout)
	}
}
