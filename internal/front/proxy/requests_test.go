package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRequestRules checks the rules by method and path: a host a rule
// names gets only what some rule of it allows, by whole path segments,
// whatever the scheme; other hosts are left alone.
func TestRequestRules(t *testing.T) {
	r, err := NewRequestRules([]string{
		"GET,HEAD https://api.github.com/repos/acme/",
		"POST https://api.github.com/repos/acme/app/issues",
		"read https://registry.npmjs.org/",
		"* https://*.internal.example:8443/",
	})
	require.NoError(t, err)
	for _, c := range []struct {
		host         string
		port         int
		method, path string
		allowed      bool
	}{
		{"api.github.com", 443, "GET", "/repos/acme/app", true},
		{"api.github.com", 443, "HEAD", "/repos/acme", true},
		{"api.github.com", 443, "GET", "/repos/acme/", true},
		{"api.github.com", 443, "GET", "/repos/acmeevil/x", false},
		{"api.github.com", 443, "GET", "/repos/acme/../other/x", false},
		{"api.github.com", 443, "GET", "/repos//acme/x", true},
		{"api.github.com", 443, "DELETE", "/repos/acme/app", false},
		{"api.github.com", 443, "POST", "/repos/acme/app/issues", true},
		{"api.github.com", 443, "POST", "/repos/acme/app/issues/1/comments", true},
		{"api.github.com", 443, "POST", "/repos/acme/app/pulls", false},
		{"api.github.com", 80, "DELETE", "/repos/acme/app", false},
		{"api.github.com", 443, "GET", "/user", false},
		{"registry.npmjs.org", 443, "OPTIONS", "/left-pad", true},
		{"registry.npmjs.org", 443, "PUT", "/left-pad", false},
		{"a.internal.example", 8443, "PATCH", "/x", true},
		{"a.internal.example", 443, "PATCH", "/x", true},
		{"other.example", 443, "DELETE", "/", true},
	} {
		ref := r.Check(c.host, c.port, c.method, c.path)
		assert.Equal(t, c.allowed, ref == nil, "%s %s:%d%s: %v", c.method, c.host, c.port, c.path, ref)
	}
	ref := r.Check("api.github.com", 443, "DELETE", "/repos/acme/app")
	require.NotNil(t, ref)
	assert.Equal(t, "DELETE /repos/acme/app is not allowed by the host's request rules (GET,HEAD https://api.github.com/repos/acme/; POST https://api.github.com/repos/acme/app/issues)", ref.Error())
	assert.Equal(t, "--allow-request 'DELETE https://api.github.com/repos/acme/app'", requestAllow("https", "api.github.com", 443, ref))

	for text, want := range map[string]string{
		"https://api.github.com/":         "expected METHODS URL",
		"get https://api.github.com/":     `method "get"`,
		"GET ftp://api.github.com/":       "expected https://HOST/PATH",
		"GET https://api.github.com/a/..": "a clean path prefix",
		"GET https://api.github.com/a?b":  "a clean path prefix",
		"GET https://*.com/":              "too broad",
	} {
		_, err := NewRequestRules([]string{text})
		assert.ErrorContains(t, err, want, text)
	}
}

// TestForwardRequestRules checks the proxy end to end: a plain request the
// rules refuse gets a 403 that names them and the setting that would allow
// it, and over HTTPS the proxy terminates TLS to decide.
func TestForwardRequestRules(t *testing.T) {
	origin, roots, seen := tlsOrigin(t, "example.com")
	rules, err := NewRequestRules([]string{"read https://example.com/pub/"})
	require.NoError(t, err)
	set, err := NewSecrets(nil)
	require.NoError(t, err)
	set.CA, err = NewCA("boxsh test CA")
	require.NoError(t, err)
	set.Roots = roots
	w := world{"example.com:443": origin.Listener.Addr().String()}
	p := startProxy(t, &Server{Dial: w.dial, Secrets: set, Requests: rules}, []string{"example.com"}, nil)
	trusting := x509.NewCertPool()
	require.True(t, trusting.AppendCertsFromPEM(set.CA.CertPEM()))
	c := &http.Client{Timeout: testTimeout, Transport: &http.Transport{Proxy: http.ProxyURL(p.url), TLSClientConfig: &tls.Config{RootCAs: trusting}}}

	resp, err := c.Get("https://example.com/pub/a")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = c.Post("https://example.com/pub/a", "text/plain", nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, string(body), "POST /pub/a is not allowed by the host's request rules (read https://example.com/pub/). To allow it, run with --allow-request 'POST https://example.com/pub/a'.")
	assert.Equal(t, []string{"example.com/pub/a "}, seen(), "the refused request reached nothing")
}

// TestRequestRulesWithoutCA checks that a tunnel to a host with request
// rules is refused when the proxy cannot terminate TLS to see its
// requests.
func TestRequestRulesWithoutCA(t *testing.T) {
	rules, err := NewRequestRules([]string{"read https://example.com/"})
	require.NoError(t, err)
	p := startProxy(t, &Server{Dial: world{}.dial, Requests: rules}, []string{"example.com"}, nil)
	c := &http.Client{Timeout: testTimeout, Transport: &http.Transport{Proxy: http.ProxyURL(p.url)}}
	_, err = c.Get("https://example.com/")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boxsh: CONNECT / is not allowed by the request rules of example.com")
}

// TestTerminateSniffs checks what the proxy does with a tunnel to a host
// it may terminate, by the client's first bytes: plain HTTP is decided
// request by request, other bytes go through untouched for a secret's
// host, and nowhere for a host with request rules.
func TestTerminateSniffs(t *testing.T) {
	origin, _, seen := plainOrigin(t, "example.com")
	echo := startEcho(t)
	rules, err := NewRequestRules([]string{"read https://rules.example/"})
	require.NoError(t, err)
	_, gh, _ := testSecrets(t)
	gh.Hosts = []string{"example.com", "echo.example"}
	set, err := NewSecrets([]Secret{gh})
	require.NoError(t, err)
	set.CA, err = NewCA("boxsh test CA")
	require.NoError(t, err)
	w := world{"example.com:80": origin, "echo.example:7": echo, "rules.example:7": echo}
	p := startProxy(t, &Server{Dial: w.dial, Secrets: set, Requests: rules}, []string{"example.com", "echo.example", "rules.example"}, nil)

	connect := func(target string) (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", p.addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
		_, err = io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\n\r\n")
		require.NoError(t, err)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return c, br
	}
	// Plain HTTP in a tunnel to a secret's host: the value goes in.
	c, br := connect("example.com:80")
	_, err = io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: example.com\r\nAuthorization: Bearer "+gh.StandIn+"\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []string{"example.com/plain Bearer " + gh.Value}, seen())

	// Bytes that are neither TLS nor HTTP (an ssh banner): untouched.
	c, br = connect("echo.example:7")
	_, err = io.WriteString(c, "SSH-2.0-test\r\n")
	require.NoError(t, err)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "SSH-2.0-test\r\n", line)

	// The same to a host with request rules: nowhere.
	c, br = connect("rules.example:7")
	_, err = io.WriteString(c, "get / HTTP/1.1\r\n\r\n")
	require.NoError(t, err)
	_, err = br.ReadString('\n')
	assert.Error(t, err, "closed, nothing echoed")
}

// plainOrigin is an HTTP test server that records the Authorization of
// each request.
func plainOrigin(t *testing.T, name string) (string, *http.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, name+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), srv.Config, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}
