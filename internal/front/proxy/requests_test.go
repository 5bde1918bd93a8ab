package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"testing"

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
