//go:build linux

package integration

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// startOrigins starts an origin on the loopback for each of plain (HTTP)
// and tls (HTTPS, httptest's certificate for example.com), mapped for the
// proxy (the test-seam build). Each records every request whole and
// answers it back, all but its Authorization header: a reflecting API.
func startOrigins(t *testing.T, plain, tls []string) *origins {
	t.Helper()
	useTestSeamFront(t)
	o := &origins{addrs: map[string]string{}}
	var hosts []string
	var roots []byte
	handler := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			dump, _ := httputil.DumpRequest(r, true)
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
		srv := httptest.NewServer(handler(name))
		t.Cleanup(srv.Close)
		o.addrs[name] = srv.Listener.Addr().String()
		hosts = append(hosts, name+"="+o.addrs[name])
	}
	for _, name := range tls {
		srv := httptest.NewUnstartedServer(handler(name))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
		t.Cleanup(srv.Close)
		o.addrs[name] = srv.Listener.Addr().String()
		hosts = append(hosts, name+"="+o.addrs[name])
		roots = append(roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})...)
	}
	t.Setenv("BOXSH_PROXY_HOSTS", strings.Join(hosts, ","))
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
// (each byte percent-encoded), {SLOW}, {SUP}, {SA} and {SB} (its halves)
// and {BASIC} (a Basic credential x:{S}) are the attacks' disguises.
const attackPy = `
import base64, os, socket, ssl, sys
S, W, P = (os.environ.get(n, '') for n in ('GH_TOKEN', 'WILD_TOKEN', 'PORT_TOKEN'))
def fill(b):
    t = b.decode()
    for k, v in (('{S64}', base64.b64encode(S.encode()).decode()), ('{SPCT}', ''.join('%%%02X' % c for c in S.encode())),
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
	all := splitSections(t, r.stdout, len(cmds))
	t.Logf("stderr:\n%s", r.stderr)
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
		for _, w := range a.want {
			assert.Contains(t, out[i], fill.Replace(w), "%s: its output", a.name)
		}
		for _, w := range a.nowant {
			assert.NotContains(t, out[i], fill.Replace(w), "%s: its output", a.name)
		}
		if a.path != "" {
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

// readDoc is the file path of the repository's docs.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", path))
	require.NoError(t, err)
	return string(b)
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
		// The same places, in a terminated HTTPS tunnel.
		{name: "tls header, cookie, query", cmd: tunnelAttack("connect", "example.com", tp, "example.com", tlsGet("/e7?q={S}", "X-Echo: {S}\r\nCookie: c={S}\r\n")), path: "/e7", want: []string{"issuer=boxsh", "X-Echo: {S}", "Cookie: c={S}", "/e7?q={S}"}, reach: []string{"example.com"}},
		{name: "tls body", cmd: tunnelAttack("connect", "example.com", tp, "example.com", tlsPost), path: "/e8", want: []string{"token={S}"}, reach: []string{"example.com"}},
	}
	runAttacks(t, o, []string{"--secret", "GH_TOKEN=api.example.com,example.com", "--ca-file", o.pem}, rows)
	require.Len(t, o.seen(), len(rows))
	for _, h := range o.seen() {
		assert.Contains(t, h.dump, "Bearer "+ghValue, "%s: the value in Authorization", h.path)
	}
	checkValuesWent(t, o, map[string][]string{ghValue: {"api.example.com", "example.com"}})

	// The documented limit: an origin that echoes Authorization.
	assert.Contains(t, readDoc(t, "security.md"), "an API that\nechoes its `Authorization` header would show the value")
}
