package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewStandIn checks a stand-in's shape: the length, the prefix and
// the kind of each character kept; the rest random.
func TestNewStandIn(t *testing.T) {
	for _, c := range []struct{ value, prefix string }{
		{"ghp_" + strings.Repeat("aB3", 12), "ghp_"},
		{"sk-ant-api03-" + strings.Repeat("Zz9_", 10), "sk-ant-api03-"},
		{"github_pat_11ABCDEFG0123456789abcdef", "github_pat_"},
		{"hunter2hunter2hunter2", ""},
		{"Bearer-Like.Token/With+Symbols==0123456789", ""},
	} {
		seen := map[string]bool{}
		for range 20 {
			s, err := NewStandIn(c.value)
			require.NoError(t, err, c.value)
			require.Len(t, s, len(c.value), c.value)
			assert.True(t, strings.HasPrefix(s, c.prefix), "%s keeps %q: %s", c.value, c.prefix, s)
			assert.NotEqual(t, c.value, s)
			for i := range len(s) {
				assert.Equal(t, kind(c.value[i]) == "", kind(s[i]) == "" && s[i] == c.value[i], "%s[%d]", c.value, i)
				if k := kind(c.value[i]); k != "" {
					assert.Contains(t, k, string(s[i]), "a character of its kind")
				}
			}
			seen[s] = true
		}
		assert.Len(t, seen, 20, "random: %s", c.value)
	}
	_, err := NewStandIn("ghp_short")
	assert.ErrorContains(t, err, "fewer than the 12")
}

// testSecrets are two secrets for two hosts.
func testSecrets(t *testing.T) (*Secrets, Secret, Secret) {
	t.Helper()
	gh := Secret{Name: "GH_TOKEN", Value: "ghp_realREALreal0123456789", Hosts: []string{"api.github.com", "*.github.example"}}
	npm := Secret{Name: "NPM_TOKEN", Value: "npm_realREALreal9876543210", Hosts: []string{"registry.npmjs.org:443"}, Headers: []string{"x-npm-token"}}
	var err error
	for _, s := range []*Secret{&gh, &npm} {
		s.StandIn, err = NewStandIn(s.Value)
		require.NoError(t, err)
	}
	set, err := NewSecrets([]Secret{gh, npm})
	require.NoError(t, err)
	return set, gh, npm
}

// TestSecretsPut checks where a stand-in is replaced for the hosts its
// secret is for, and that it is refused for any other host wherever it is
// in the request.
func TestSecretsPut(t *testing.T) {
	set, gh, npm := testSecrets(t)
	basic := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	req := func(rawURL string, hdr ...string) (http.Header, *url.URL) { return testRequest(t, rawURL, hdr...) }

	// Bearer, a Basic credential, a named header, the URL's userinfo.
	h, u := req("http://api.github.com/repos", "Authorization", "Bearer "+gh.StandIn)
	used, leak := set.Put("api.github.com", 80, h, u)
	require.Nil(t, leak)
	assert.Equal(t, []string{"GH_TOKEN"}, used)
	assert.Equal(t, "Bearer "+gh.Value, h.Get("Authorization"))

	h, u = req("http://raw.github.example/x", "Authorization", basic("x-access-token:"+gh.StandIn))
	used, leak = set.Put("raw.github.example", 80, h, u)
	require.Nil(t, leak)
	assert.Equal(t, []string{"GH_TOKEN"}, used)
	assert.Equal(t, basic("x-access-token:"+gh.Value), h.Get("Authorization"))

	h, u = req("http://registry.npmjs.org/x", "X-Npm-Token", npm.StandIn)
	used, leak = set.Put("registry.npmjs.org", 443, h, u)
	require.Nil(t, leak)
	assert.Equal(t, []string{"NPM_TOKEN"}, used)
	assert.Equal(t, npm.Value, h.Get("X-Npm-Token"))

	h, u = req("http://git:" + gh.StandIn + "@api.github.com/x")
	used, leak = set.Put("api.github.com", 80, h, u)
	require.Nil(t, leak)
	assert.Equal(t, []string{"GH_TOKEN"}, used)
	assert.Equal(t, basic("git:"+gh.Value), h.Get("Authorization"), "the userinfo becomes a Basic credential")
	assert.Nil(t, u.User)

	// Elsewhere in a request to its host, the stand-in stays: an answer
	// could echo it.
	h, u = req("http://api.github.com/search?q="+gh.StandIn, "User-Agent", gh.StandIn, "X-Npm-Token", gh.StandIn)
	used, leak = set.Put("api.github.com", 80, h, u)
	require.Nil(t, leak)
	assert.Empty(t, used)
	assert.Equal(t, gh.StandIn, h.Get("User-Agent"))
	assert.Equal(t, gh.StandIn, h.Get("X-Npm-Token"), "a header named by another secret only")
	assert.Contains(t, u.String(), gh.StandIn)

	// NPM_TOKEN is for port 443 only.
	h, u = req("http://registry.npmjs.org/x", "X-Npm-Token", npm.StandIn)
	_, leak = set.Put("registry.npmjs.org", 80, h, u)
	require.NotNil(t, leak)
	assert.Equal(t, "NPM_TOKEN", leak.Secret)

	// To any other host, wherever it is: refused, nothing replaced.
	for _, c := range []struct {
		url string
		hdr []string
	}{
		{"http://evil.example/", []string{"Authorization", "Bearer " + gh.StandIn}},
		{"http://evil.example/", []string{"Authorization", basic("u:" + gh.StandIn)}},
		{"http://evil.example/", []string{"Cookie", "t=" + gh.StandIn}},
		{"http://evil.example/", []string{"X-Custom", basic(gh.StandIn)}},
		{"http://evil.example/", []string{"X-" + gh.StandIn, "1"}}, // the name canonicalized
		{"http://evil.example/" + gh.StandIn, nil},
		{"http://evil.example/?t=" + url.QueryEscape(gh.StandIn), nil},
		{"http://evil.example/?t=" + pctAll(gh.StandIn), nil},
		{"http://evil.example/" + pctAll(gh.StandIn), nil},
		{"http://u:" + gh.StandIn + "@evil.example/", nil},
		{"http://api.github.com.evil.example/", []string{"Authorization", "Bearer " + gh.StandIn}},
		{"http://github.example/", []string{"Authorization", "Bearer " + gh.StandIn}},
	} {
		h, u := req(c.url, c.hdr...)
		host := u.Hostname()
		before := fmt.Sprint(h)
		used, leak := set.Put(host, 80, h, u)
		require.NotNil(t, leak, "%s %v", c.url, c.hdr)
		assert.Equal(t, "GH_TOKEN", leak.Secret)
		assert.Empty(t, used)
		assert.NotContains(t, fmt.Sprint(h), gh.Value, "nothing replaced")
		assert.Equal(t, before, fmt.Sprint(h))
		assert.Equal(t, "the request carries the stand-in of secret GH_TOKEN, which is only for api.github.com, *.github.example", leak.Error())
	}

	// No secrets: nothing to do.
	var none *Secrets
	h, u = req("http://evil.example/", "Authorization", "Bearer "+gh.StandIn)
	used, leak = none.Put("evil.example", 80, h, u)
	assert.Nil(t, leak)
	assert.Empty(t, used)
}

// testRequest is the header and URL of a request for rawURL with the
// header fields hdr (name, value, ...).
func testRequest(t *testing.T, rawURL string, hdr ...string) (http.Header, *url.URL) {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	h := http.Header{}
	for i := 0; i < len(hdr); i += 2 {
		h.Add(hdr[i], hdr[i+1])
	}
	return h, u
}

// TestSecretsPutRequest checks that a TRACE or TRACK request, which a
// server answers with itself, gets no secret, and other methods do.
func TestSecretsPutRequest(t *testing.T) {
	set, gh, _ := testSecrets(t)
	req := func(rawURL string, hdr ...string) (http.Header, *url.URL) { return testRequest(t, rawURL, hdr...) }
	for _, method := range []string{"TRACE", "track"} {
		h, u := req("http://api.github.com/", "Authorization", "Bearer "+gh.StandIn)
		used, leak := set.PutRequest(method, "api.github.com", 80, h, u)
		require.NotNil(t, leak, method)
		assert.Empty(t, used)
		assert.Equal(t, "Bearer "+gh.StandIn, h.Get("Authorization"), "nothing replaced")
		assert.Equal(t, "the request carries the stand-in of secret GH_TOKEN, and a "+strings.ToUpper(method)+" request is answered with itself, so the proxy puts no secret in one", leak.Error())
	}
	h, u := req("http://api.github.com/")
	used, leak := set.PutRequest("TRACE", "api.github.com", 80, h, u)
	assert.Nil(t, leak, "without a stand-in, nothing to refuse")
	assert.Empty(t, used)
	h, u = req("http://api.github.com/", "Authorization", "Bearer "+gh.StandIn)
	used, leak = set.PutRequest("GET", "api.github.com", 80, h, u)
	require.Nil(t, leak)
	assert.Equal(t, []string{"GH_TOKEN"}, used)
	assert.Equal(t, "Bearer "+gh.Value, h.Get("Authorization"))
	var none *Secrets
	used, leak = none.PutRequest("TRACE", "api.github.com", 80, h, u)
	assert.Nil(t, leak)
	assert.Empty(t, used)
}

// TestNewSecretsRefuses checks the secrets a proxy refuses to take.
func TestNewSecretsRefuses(t *testing.T) {
	ok := Secret{Name: "A", Value: "aaaaaaaaaaaaaaaa", StandIn: "bbbbbbbbbbbbbbbb", Hosts: []string{"a.example"}}
	for _, c := range []struct {
		edit func(*Secret)
		want string
	}{
		{func(s *Secret) { s.Name = "" }, "a secret needs a name"},
		{func(s *Secret) { s.Value, s.StandIn = "", "" }, "secret A: the value is empty"},
		{func(s *Secret) { s.StandIn = s.Value }, "secret A: the stand-in must differ from the value and have its length"},
		{func(s *Secret) { s.StandIn = "short" }, "secret A: the stand-in must differ from the value and have its length"},
		{func(s *Secret) { s.Hosts = nil }, "secret A: name the hosts it is for"},
		{func(s *Secret) { s.Hosts = []string{"*.com"} }, "secret A: host "},
	} {
		s := ok
		c.edit(&s)
		_, err := NewSecrets([]Secret{s})
		assert.ErrorContains(t, err, c.want)
	}
	b := ok
	b.Name, b.StandIn = "B", ok.StandIn
	_, err := NewSecrets([]Secret{ok, b})
	assert.EqualError(t, err, "secrets A and B: one's stand-in holds the other's")
}

// TestForwardPutsSecrets checks the proxy end to end: the origin a secret
// is for gets the value in place of the stand-in, and a request carrying
// the stand-in elsewhere is refused with a 403 that says why, recorded
// as a refusal that no setting would allow.
func TestForwardPutsSecrets(t *testing.T) {
	set, gh, _ := testSecrets(t)
	var mu sync.Mutex
	var got []string
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Host+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	defer origin.Close()
	w := world{"api.github.com:80": origin.Listener.Addr().String(), "other.example:80": origin.Listener.Addr().String()}
	var decided []Decision
	p := startProxy(t, &Server{Dial: w.dial, Secrets: set, Decided: func(d Decision) {
		mu.Lock()
		decided = append(decided, d)
		mu.Unlock()
	}}, []string{"api.github.com", "other.example"}, nil)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(p.url)}, Timeout: testTimeout}

	get := func(rawURL string) (*http.Response, string) {
		r, err := http.NewRequest(http.MethodGet, rawURL, nil)
		require.NoError(t, err)
		r.Header.Set("Authorization", "Bearer "+gh.StandIn)
		resp, err := client.Do(r)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	resp, body := get("http://api.github.com/user")
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	resp, body = get("http://other.example/steal")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, "403 boxsh: the request to other.example carries the stand-in of secret GH_TOKEN", resp.Status)
	assert.Contains(t, body, "the proxy puts the real value only in requests to those hosts")
	assert.NotContains(t, body, gh.Value)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"api.github.com Bearer " + gh.Value}, got, "the origin got the value once, for its host only")
	require.Len(t, decided, 2)
	assert.True(t, decided[0].Allowed)
	assert.Equal(t, []string{"GH_TOKEN"}, decided[0].Secrets)
	assert.False(t, decided[1].Allowed)
	assert.Equal(t, "the request carries the stand-in of secret GH_TOKEN, which is only for api.github.com, *.github.example", decided[1].Reason)
	assert.Empty(t, decided[1].Allow, "no setting should allow it")
	assert.NotContains(t, p.log.String(), gh.Value, "the log never has the value")
}

// pctAll is s with every byte percent-encoded.
func pctAll(s string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// tlsOrigin is an HTTPS test server that records the Authorization of
// each request, and the roots that verify it.
func tlsOrigin(t *testing.T, name string) (*httptest.Server, *x509.CertPool, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, name+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprintf(w, "tls hello %s %s", name, r.URL.Path)
	}))
	origin.Config.ErrorLog = log.New(io.Discard, "", 0)
	origin.StartTLS()
	t.Cleanup(origin.Close)
	roots := x509.NewCertPool()
	roots.AddCert(origin.Certificate())
	return origin, roots, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestTerminateTLS checks HTTPS to a secret's host: the proxy terminates
// TLS with its CA's certificate, puts the value in, and reaches the server
// over TLS it verifies; another host's tunnel is untouched; a client that
// does not trust the CA fails, and the refusal says why.
func TestTerminateTLS(t *testing.T) {
	_, gh, npm := testSecrets(t)
	// httptest's certificate is for example.com.
	gh.Hosts = []string{"example.com"}
	set, err := NewSecrets([]Secret{gh, npm})
	require.NoError(t, err)
	origin, roots, seen := tlsOrigin(t, "example.com")
	plain, _, plainSeen := tlsOrigin(t, "other")
	set.CA, err = NewCA("boxsh test CA")
	require.NoError(t, err)
	set.Roots = roots
	w := world{"example.com:443": origin.Listener.Addr().String(), "other.example:443": plain.Listener.Addr().String()}
	var mu sync.Mutex
	var decided []Decision
	p := startProxy(t, &Server{Dial: w.dial, Secrets: set, Decided: func(d Decision) {
		mu.Lock()
		decided = append(decided, d)
		mu.Unlock()
	}}, []string{"example.com", "other.example"}, nil)

	trusting := x509.NewCertPool()
	require.True(t, trusting.AppendCertsFromPEM(set.CA.CertPEM()))
	client := func(roots *x509.CertPool, serverName string) *http.Client {
		return &http.Client{Timeout: testTimeout, Transport: &http.Transport{
			Proxy:           http.ProxyURL(p.url),
			TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: serverName},
		}}
	}
	get := func(c *http.Client, rawURL, token string) (*http.Response, string, error) {
		r, err := http.NewRequest(http.MethodGet, rawURL, nil)
		require.NoError(t, err)
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(r)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b), nil
	}

	c := client(trusting, "")
	for range 2 { // two requests in one terminated tunnel
		resp, body, err := get(c, "https://example.com/user", gh.StandIn)
		require.NoError(t, err)
		assert.Equal(t, "tls hello example.com /user", body)
		assert.Equal(t, "boxsh test CA", resp.TLS.PeerCertificates[0].Issuer.CommonName, "terminated by the proxy")
	}
	assert.Equal(t, []string{"example.com/user Bearer " + gh.Value, "example.com/user Bearer " + gh.Value}, seen())

	// Another secret's stand-in inside the terminated tunnel: refused.
	resp, body, err := get(c, "https://example.com/npm", npm.StandIn)
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body, "carries the stand-in of secret NPM_TOKEN")
	assert.Len(t, seen(), 2, "sent nowhere")

	// A host without a secret: the tunnel is the server's own TLS.
	plainRoots := x509.NewCertPool()
	plainRoots.AddCert(plain.Certificate())
	resp, _, err = get(client(plainRoots, "example.com"), "https://other.example/x", "none")
	require.NoError(t, err)
	assert.NotEqual(t, "boxsh test CA", resp.TLS.PeerCertificates[0].Issuer.CommonName)
	assert.Equal(t, []string{"other/x Bearer none"}, plainSeen())

	// A client that trusts only the server (pinning, or no SSL_CERT_FILE).
	_, _, err = get(client(roots, ""), "https://example.com/pinned", gh.StandIn)
	require.Error(t, err)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range decided {
			if !d.Allowed && strings.Contains(d.Reason, "TLS to example.com is terminated by boxsh's proxy for the secret GH_TOKEN") {
				return true
			}
		}
		return false
	}, testTimeout, 10*time.Millisecond, "the refusal says why")
	assert.Len(t, seen(), 2)

	// A TLS server name other than the tunnel's is refused.
	_, _, err = get(client(trusting, "evil.example"), "https://example.com/sni", gh.StandIn)
	require.Error(t, err)
	assert.Len(t, seen(), 2)

	mu.Lock()
	defer mu.Unlock()
	var https []Decision
	for _, d := range decided {
		if d.Protocol == "https" && d.Allowed {
			https = append(https, d)
		}
	}
	require.Len(t, https, 2, "each request in the tunnel is recorded: %+v", decided)
	assert.Equal(t, []string{"GH_TOKEN"}, https[0].Secrets)
	assert.NotContains(t, p.log.String(), gh.Value)
}
