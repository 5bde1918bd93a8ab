package proxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	xproxy "golang.org/x/net/proxy"
)

func socksDialer(t *testing.T, p *testProxy) xproxy.ContextDialer {
	t.Helper()
	d, err := xproxy.SOCKS5("tcp", p.addr, nil, &net.Dialer{Timeout: testTimeout})
	require.NoError(t, err)
	return d.(xproxy.ContextDialer)
}

func TestSOCKS5(t *testing.T) {
	echo := startEcho(t)
	_, echoPort, _ := net.SplitHostPort(echo)
	w := world{"echo.example.com:7": echo, "down.example.com:7": closedAddr(t)}
	p := startProxy(t, &Server{Dial: w.dial}, []string{"echo.example.com", "down.example.com", "127.0.0.1:" + echoPort}, nil)
	d := socksDialer(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	// An allowed name, resolved by the proxy.
	c, err := d.DialContext(ctx, "tcp", "echo.example.com:7")
	require.NoError(t, err)
	echoes(t, c, "hello over socks")
	c.Close()

	// A refused name.
	_, err = d.DialContext(ctx, "tcp", "evil.example.org:7")
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "connection not allowed by ruleset")
	}

	// An IPv4 address: refused unless allowed exactly.
	c, err = d.DialContext(ctx, "tcp", echo)
	require.NoError(t, err, "allowed exactly")
	echoes(t, c, "by address")
	c.Close()
	_, err = d.DialContext(ctx, "tcp", "127.0.0.2:"+echoPort)
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "connection not allowed by ruleset")
	}
	_, err = d.DialContext(ctx, "tcp", "[::1]:"+echoPort)
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "connection not allowed by ruleset", "IPv6 too")
	}

	// Upstream failures.
	_, err = d.DialContext(ctx, "tcp", "down.example.com:7")
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "connection refused")
	}
}

// An http.Client with a SOCKS5 proxy (as for ALL_PROXY=socks5h://...).
func TestSOCKS5HTTPClient(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	defer origin.Close()
	w := world{"registry.npmjs.org:80": origin.Listener.Addr().String()}
	p := startProxy(t, &Server{Dial: w.dial}, []string{"registry.npmjs.org"}, nil)
	client := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(must(t, "socks5h://"+p.addr)), DisableKeepAlives: true,
	}, Timeout: testTimeout}
	resp, err := client.Get("http://registry.npmjs.org/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "hello from registry.npmjs.org", string(body))
}

// socksHandshake greets p with methods, and returns the connection and
// the method p chose.
func socksHandshake(t *testing.T, p *testProxy, methods ...byte) (net.Conn, byte) {
	t.Helper()
	c, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	_, err = c.Write(append([]byte{5, byte(len(methods))}, methods...))
	require.NoError(t, err)
	var reply [2]byte
	_, err = io.ReadFull(c, reply[:])
	require.NoError(t, err)
	require.Equal(t, byte(5), reply[0])
	return c, reply[1]
}

// socksRequest sends a request with command cmd for name:port on c and
// returns the reply code.
func socksRequest(t *testing.T, c net.Conn, cmd byte, name string, port uint16) byte {
	t.Helper()
	req := append([]byte{5, cmd, 0, 3, byte(len(name))}, name...)
	req = binary.BigEndian.AppendUint16(req, port)
	_, err := c.Write(req)
	require.NoError(t, err)
	var reply [10]byte
	_, err = io.ReadFull(c, reply[:])
	require.NoError(t, err)
	assert.Equal(t, []byte{5}, reply[:1])
	assert.Equal(t, []byte{0, 1, 0, 0, 0, 0, 0, 0}, reply[2:], "IPv4 0.0.0.0:0 bound")
	return reply[1]
}

// What a hand-written client sees of the protocol.
func TestSOCKS5Protocol(t *testing.T) {
	echo := startEcho(t)
	w := world{"echo.example.com:7": echo}
	p := startProxy(t, &Server{Dial: w.dial}, []string{"echo.example.com"}, nil)

	// Authentication is not offered.
	_, method := socksHandshake(t, p, 2)
	assert.Equal(t, byte(0xff), method, "no acceptable method")

	// BIND and UDP ASSOCIATE are not supported.
	for _, cmd := range []byte{2, 3} {
		c, method := socksHandshake(t, p, 2, 0)
		require.Equal(t, byte(0), method, "no authentication")
		assert.Equal(t, byte(7), socksRequest(t, c, cmd, "echo.example.com", 7), "command not supported")
	}

	// An unknown address type.
	c, _ := socksHandshake(t, p, 0)
	_, err := c.Write([]byte{5, 1, 0, 9, 0, 0})
	require.NoError(t, err)
	var reply [10]byte
	_, err = io.ReadFull(c, reply[:])
	require.NoError(t, err)
	assert.Equal(t, byte(8), reply[1], "address type not supported")

	// CONNECT, refused and allowed, then a tunnel.
	c, _ = socksHandshake(t, p, 0)
	assert.Equal(t, byte(2), socksRequest(t, c, 1, "evil.example.org", 443), "not allowed by ruleset")
	c, _ = socksHandshake(t, p, 0)
	assert.Equal(t, byte(2), socksRequest(t, c, 1, "127.0.0.1.", 7), "a raw IP address, as a name: refused")
	c, _ = socksHandshake(t, p, 0)
	require.Equal(t, byte(0), socksRequest(t, c, 1, "Echo.Example.COM.", 7))
	echoes(t, c, "a\x00binary\xffline")
}

func must(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// Both protocols on one listener, at once.
func TestSniffing(t *testing.T) {
	echo := startEcho(t)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "plain")
	}))
	defer origin.Close()
	w := world{"echo.example.com:7": echo, "web.example.com:80": origin.Listener.Addr().String()}
	p := startProxy(t, &Server{Dial: w.dial}, []string{"*.example.com"}, nil)
	d := socksDialer(t, p)

	socks, err := d.DialContext(context.Background(), "tcp", "echo.example.com:7")
	require.NoError(t, err)
	defer socks.Close()
	tunnel, resp, _ := p.connect(t, "echo.example.com:7")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	status, body := p.get(t, "http://web.example.com/")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "plain", body)
	echoes(t, socks, "socks")
	echoes(t, tunnel, "connect")

	// SOCKS4 is refused in its own words.
	c, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	_, err = c.Write([]byte{4, 1, 0, 7, 127, 0, 0, 1, 0})
	require.NoError(t, err)
	reply, err := io.ReadAll(bufio.NewReader(c))
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0x5b, 0, 0, 0, 0, 0, 0}, reply)
}
