package proxy

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A real TLS client reaches an allowed name through a CONNECT tunnel.
func TestConnectTLS(t *testing.T) {
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "tls hello %s %s", r.Host, r.URL.Path)
	}))
	origin.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshake below
	origin.StartTLS()
	defer origin.Close()
	w := world{"registry.npmjs.org:443": origin.Listener.Addr().String()}
	p := startProxy(t, &Server{Dial: w.dial}, []string{"registry.npmjs.org"}, nil)

	tr := origin.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(p.url)
	tr.TLSClientConfig.ServerName = "example.com" // what httptest's certificate is for
	client := &http.Client{Transport: tr, Timeout: testTimeout}
	defer tr.CloseIdleConnections()
	for range 2 {
		resp, err := client.Get("https://registry.npmjs.org/left-pad")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "tls hello registry.npmjs.org /left-pad", string(body))
		assert.NotNil(t, resp.TLS, "TLS end to end")
	}

	// The TLS client refuses an origin whose certificate does not match.
	tr2 := tr.Clone()
	tr2.TLSClientConfig = &tls.Config{ServerName: "example.com"}
	_, err := (&http.Client{Transport: tr2, Timeout: testTimeout}).Get("https://registry.npmjs.org/")
	assert.Error(t, err, "the tunnel passes TLS through; it does not terminate it")
}

// Plain HTTP in absolute form is forwarded to the origin, and its
// response streamed back.
func TestForwardHTTP(t *testing.T) {
	type seen struct {
		host, uri, proxyAuth, conn, custom, ua, body string
	}
	got := make(chan seen, 1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Host, r.RequestURI, r.Header.Get("Proxy-Authorization"), r.Header.Get("Connection"),
			r.Header.Get("X-Custom"), r.Header.Get("User-Agent"), string(body)}
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Origin", "yes")
		fmt.Fprintf(w, "hello from %s %s", r.Host, r.URL.Path)
	}))
	defer origin.Close()
	w := world{
		"registry.npmjs.org:80":   origin.Listener.Addr().String(),
		"registry.npmjs.org:8080": origin.Listener.Addr().String(),
	}
	p := startProxy(t, &Server{Dial: w.dial}, []string{"registry.npmjs.org"}, nil)

	req, err := http.NewRequest(http.MethodGet, "http://registry.npmjs.org/left-pad?v=1", nil)
	require.NoError(t, err)
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	req.Header.Set("X-Custom", "kept")
	resp, err := p.client().Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "hello from registry.npmjs.org /left-pad", string(body))
	assert.Equal(t, "yes", resp.Header.Get("X-Origin"))
	assert.Empty(t, resp.Header.Get("Keep-Alive"), "hop-by-hop headers stripped from the response")
	s := <-got
	assert.Equal(t, "registry.npmjs.org", s.host)
	assert.Equal(t, "/left-pad?v=1", s.uri, "origin form upstream")
	assert.Empty(t, s.proxyAuth, "Proxy-* headers stripped")
	assert.Empty(t, s.conn, "a GET leaves its upstream connection open for the next")
	assert.Equal(t, "kept", s.custom)
	assert.Equal(t, "Go-http-client/1.1", s.ua, "the client's user agent, unchanged")

	// A request body, and a port.
	resp, err = p.client().Post("http://registry.npmjs.org:8080/upload", "text/plain", strings.NewReader("payload"))
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "hello from registry.npmjs.org:8080 /upload", string(body))
	s = <-got
	assert.Equal(t, "payload", s.body)
	assert.Equal(t, "close", s.conn, "a request with a body gets a connection of its own")

	// A raw request without User-Agent gets none added.
	c, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	_, err = io.WriteString(c, "GET http://registry.npmjs.org/raw HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n")
	require.NoError(t, err)
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	assert.Equal(t, "hello from registry.npmjs.org /raw", string(body), "the URL decides, not the Host header")
	assert.True(t, resp.Close, "one request per connection")
	s = <-got
	assert.Empty(t, s.ua)
}

// A GET reuses an idle upstream connection to the same destination, never
// one to another host, even at the same address, and every request is
// decided anew.
func TestForwardHTTPReusesUpstream(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]map[string]bool{} // by Host header: the remote addresses seen
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if conns[r.Host] == nil {
			conns[r.Host] = map[string]bool{}
		}
		conns[r.Host][r.RemoteAddr] = true
		mu.Unlock()
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	defer origin.Close()
	addr := origin.Listener.Addr().String()
	w := world{"a.example:80": addr, "b.example:80": addr, "c.example:80": addr}
	live := NewLive(mustRules(t, []string{"a.example", "b.example"}, nil))
	var ds decisions
	p := startProxy(t, &Server{Dial: w.dial, Live: live, Decided: ds.add}, nil, nil)

	for i := range 5 {
		for _, host := range []string{"a.example", "b.example"} {
			code, body := p.get(t, "http://"+host+"/"+strconv.Itoa(i))
			require.Equal(t, http.StatusOK, code, body)
			assert.Equal(t, "hello from "+host, body)
			// The exchange ends after the client has the response: the
			// connection is idle once no longer tracked.
			waitOpen(t, live, 0)
		}
	}
	mu.Lock()
	assert.Len(t, conns["a.example"], 1, "a's requests shared one connection: %v", conns)
	assert.Len(t, conns["b.example"], 1, "b's requests shared one connection: %v", conns)
	for remote := range conns["a.example"] {
		assert.False(t, conns["b.example"][remote], "a connection for a carried a request for b")
	}
	mu.Unlock()
	assert.Len(t, ds.all(), 10, "every request decided")

	// A narrowing refuses b's next request; its idle connection never
	// carries another.
	live.Set(mustRules(t, []string{"a.example"}, nil))
	code, _ := p.get(t, "http://b.example/after")
	assert.Equal(t, http.StatusForbidden, code)
	code, body := p.get(t, "http://c.example/never")
	assert.Equal(t, http.StatusForbidden, code, body)

	// The origin closing an idle connection costs nothing: the GET goes
	// again on a new one.
	origin.CloseClientConnections()
	code, body = p.get(t, "http://a.example/again")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "hello from a.example", body)
}

// An idle connection the origin drops as the next GET goes out costs that
// GET nothing: it goes again, once, on a new connection.
func TestForwardHTTPRetriesDroppedIdle(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n := accepted.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				// Each connection answers one request, keeping the
				// connection, and drops the next unanswered.
				for i := 0; ; i++ {
					if _, err := http.ReadRequest(br); err != nil || i == 1 {
						return
					}
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n%d", n)
				}
			}()
		}
	}()
	w := world{"a.example:80": l.Addr().String()}
	live := NewLive(mustRules(t, []string{"a.example"}, nil))
	p := startProxy(t, &Server{Dial: w.dial, Live: live}, nil, nil)

	code, body := p.get(t, "http://a.example/1")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "1", body)
	waitOpen(t, live, 0)
	code, body = p.get(t, "http://a.example/2")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "2", body, "answered on a new connection")
	assert.EqualValues(t, 2, accepted.Load())
}

func TestRefusedHTTP(t *testing.T) {
	echo := startEcho(t)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	defer origin.Close()
	_, originPort, _ := net.SplitHostPort(origin.Listener.Addr().String())
	w := world{
		"api.github.com:80":       origin.Listener.Addr().String(),
		"ads.github.com:80":       origin.Listener.Addr().String(),
		"git.example.com:8443":    echo,
		"git.example.com:443":     echo,
		"example.org:443":         echo,
		"x.ads.example.com:443":   echo,
		"registry.npmjs.org:443":  echo,
		"registry.npmjs.org:8443": echo,
	}
	p := startProxy(t, &Server{Dial: w.dial},
		[]string{"*.github.com", "git.example.com:8443", "*.example.com", "127.0.0.1:" + originPort},
		[]string{"ads.github.com", "*.ads.example.com"})

	// A refused name, plain HTTP and CONNECT.
	resp, err := p.client().Get("http://example.org/steal")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, "text/plain", resp.Header.Get("Content-Type"))
	assert.Equal(t, `boxsh: access to example.org:80 is not allowed by the sandbox's network policy. To allow it, add "example.org" to network.allowedDomains (or run with --allow-domain example.org).`+"\n", string(body))
	_, resp, msg := p.connect(t, "example.org:443")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, `boxsh: access to example.org:443 is not allowed by the sandbox's network policy. To allow it, add "example.org" to network.allowedDomains (or run with --allow-domain example.org).`+"\n", msg)

	// A wildcard rule: any subdomain, not the domain itself.
	status, body2 := p.get(t, "http://api.github.com/repos")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "hello from api.github.com", body2)
	status, _ = p.get(t, "http://github.com/")
	assert.Equal(t, http.StatusForbidden, status)

	// A port rule: :8443 only.
	c, resp, _ := p.connect(t, "git.example.com:8443")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	echoes(t, c, "through the tunnel")
	_, resp, msg = p.connect(t, "registry.npmjs.org:8443")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, msg, "registry.npmjs.org:8443 is not allowed")

	// Denied beats allowed.
	status, body2 = p.get(t, "http://ads.github.com/")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, `boxsh: access to ads.github.com:80 is refused by network.deniedDomains rule "ads.github.com".`+"\n", body2)
	_, resp, msg = p.connect(t, "x.ads.example.com:443")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, msg, `refused by network.deniedDomains rule "*.ads.example.com"`)

	// Raw IP addresses: refused unless allowed exactly.
	status, body2 = p.get(t, "http://127.0.0.2:"+originPort+"/")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, body2, "raw IP addresses are refused unless allowed exactly")
	assert.Contains(t, body2, `add "127.0.0.2" to network.allowedDomains`)
	_, resp, msg = p.connect(t, "[::1]:443")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, msg, "access to [::1]:443 is not allowed")
	assert.Contains(t, msg, `add "[::1]"`)
	status, body2 = p.get(t, "http://127.0.0.1:"+originPort+"/")
	assert.Equal(t, http.StatusOK, status, "the address allowed exactly")
	assert.Equal(t, "hello from 127.0.0.1:"+originPort, body2)
}

// The Setting field words the refusal.
func TestRefusalSetting(t *testing.T) {
	p := startProxy(t, &Server{Setting: "proxy.allowedDomains"}, []string{"ok.example.com"}, []string{"no.example.com"})
	status, body := p.get(t, "http://example.org/")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, body, `add "example.org" to proxy.allowedDomains`)
	_, body = p.get(t, "http://no.example.com/")
	assert.Contains(t, body, `refused by proxy.deniedDomains rule "no.example.com"`)
}

// Malformed requests, and requests not for a proxy.
func TestBadRequests(t *testing.T) {
	p := startProxy(t, &Server{}, []string{"example.com"}, nil)
	for _, tc := range []struct {
		request string
		status  int
		body    string
	}{
		{"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", http.StatusBadRequest, "absolute URLs"},
		{"GET ftp://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", http.StatusBadRequest, "only http://"},
		{"CONNECT example.com HTTP/1.1\r\nHost: example.com\r\n\r\n", http.StatusBadRequest, "host:port"},
		{"CONNECT example.com:0 HTTP/1.1\r\n\r\n", http.StatusBadRequest, "host:port"},
		{"GET http://example.com:99999/ HTTP/1.1\r\n\r\n", http.StatusBadRequest, "bad port"},
		{"NONSENSE\r\n\r\n", http.StatusBadRequest, "malformed"},
		{"GET http://example.com/ HTTP/1.1\r\nX-Big: " + strings.Repeat("x", 70<<10) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge, "too large"},
		{"CONNECT a!b.example.com:443 HTTP/1.1\r\n\r\n", http.StatusForbidden, "not a valid host name"},
	} {
		c, err := net.Dial("tcp", p.addr)
		require.NoError(t, err)
		require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
		_, err = io.WriteString(c, tc.request)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if assert.NoError(t, err, "%.40q", tc.request) {
			body, _ := io.ReadAll(resp.Body)
			assert.Equal(t, tc.status, resp.StatusCode, "%.40q", tc.request)
			assert.Contains(t, string(body), tc.body, "%.40q", tc.request)
		}
		c.Close()
	}
}

// Upstream failures: 502, and the proxy goes on.
func TestUpstreamFailure(t *testing.T) {
	closed := closedAddr(t)
	w := world{"down.example.com:80": closed, "down.example.com:443": closed}
	p := startProxy(t, &Server{Dial: w.dial}, []string{"*.example.com"}, nil)
	status, body := p.get(t, "http://down.example.com/")
	assert.Equal(t, http.StatusBadGateway, status)
	assert.Contains(t, body, "cannot connect to down.example.com:80")
	_, resp, body := p.connect(t, "unknown.example.com:443")
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	assert.Contains(t, body, "no such host")
	assert.Contains(t, p.log.String(), "cannot connect upstream", "logged")
}

// An origin's response header is bounded as a request's is.
func TestUpstreamHugeHeader(t *testing.T) {
	huge := startServer(t, func(c net.Conn) {
		// Read the request first: closing with it unread would reset the
		// connection, losing the header in flight.
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Big: " + strings.Repeat("x", 1000) + "\r\n"
		for range 1 << 10 { // 1 MiB of header, if the proxy read it all
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	})
	w := world{"huge.example.com:80": huge}
	p := startProxy(t, &Server{Dial: w.dial}, []string{"huge.example.com"}, nil)
	status, body := p.get(t, "http://huge.example.com/")
	assert.Equal(t, http.StatusBadGateway, status)
	assert.Contains(t, body, "response header of huge.example.com is too large")
}

// A refused request explains itself in the status line too (a client that
// fails a CONNECT shows only that), and each refused host is logged once
// at Warn, the default level (issue 24).
func TestRefusalStatusTextAndWarnOnce(t *testing.T) {
	p := startProxy(t, &Server{Dial: world{}.dial}, []string{"registry.npmjs.org"}, []string{"ads.example.com"})
	_, resp, msg := p.connect(t, "example.org:443")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, "403 boxsh: example.org is not allowed (run with --allow-domain example.org)", resp.Status)
	assert.Contains(t, msg, "--allow-domain example.org")
	resp2, err := p.client().Get("http://example.org/again")
	require.NoError(t, err)
	resp2.Body.Close()
	assert.Equal(t, "403 boxsh: example.org is not allowed (run with --allow-domain example.org)", resp2.Status)
	_, resp, _ = p.connect(t, "ads.example.com:443")
	assert.Equal(t, "403 boxsh: ads.example.com is refused by the denied domain ads.example.com", resp.Status)
	_, resp, _ = p.connect(t, "10.0.0.1:443")
	assert.Contains(t, resp.Status, "10.0.0.1 is not allowed")

	var warns []string
	for line := range strings.SplitSeq(strings.TrimSpace(p.log.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		if m["@level"] == "warn" {
			warns = append(warns, m["@message"].(string))
		}
	}
	assert.Equal(t, []string{
		"example.org is not allowed (run with --allow-domain example.org)",
		"ads.example.com is refused by the denied domain ads.example.com",
		"10.0.0.1 is not allowed (an IP address is allowed only when named exactly: --allow-domain 10.0.0.1)",
	}, warns, "one line per refused host, however often it is refused")
}

func TestStatusText(t *testing.T) {
	assert.Equal(t, "a?b", statusText("a\x7fb"))
	assert.Equal(t, "x??y", statusText("x\r\ny"))
}
