//go:build linux

package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/integration/internal/outside"
)

// outsideMode is the subprocess mode of the stand-in internet's holder.
const outsideMode = "outside-holder"

func init() { subprocessModes[outsideMode] = outside.Holder }

// standIn starts the stand-in internet of package outside for the current
// test, and makes boxshPath, until the test ends, a script that runs the
// boxsh it named before (binDir's, the released build, unless the test
// asked for the test-seam build for a hook of its own) in the stand-in's
// front namespaces. The test must not be parallel: boxshPath is shared.
func standIn(t *testing.T, cfg outside.Config) *outside.Net {
	t.Helper()
	requireRootless(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	n, err := outside.Start(ctx, cfg, dir, []string{self}, subprocessVar+"="+outsideMode)
	require.NoError(t, err)
	t.Cleanup(func() {
		n.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, n.Wait(ctx), "the stand-in's holder exits when closed")
	})
	standInProgram = boxshPath()
	wrapper, err := n.Wrapper(dir, standInProgram)
	require.NoError(t, err)
	prev := frontOverride
	frontOverride, activeStandIn, activePort = wrapper, n, 0
	t.Cleanup(func() { frontOverride, activeStandIn, activePort, standInProgram = prev, nil, 0, "" })
	return n
}

// activeStandIn is the stand-in of the current test, if any: boxsh's own
// listeners on the loopback are in its front namespace (frontTransport).
var activeStandIn *outside.Net

// standInProgram is the boxsh that the current stand-in's wrapper runs.
var standInProgram string

// activePort is the current stand-in's test port (serveName), once picked.
var activePort int

// frontTransport is an HTTP transport that connects in the current test's
// stand-in's front namespace, or nil without one.
func frontTransport() http.RoundTripper {
	n := activeStandIn
	if n == nil {
		return nil
	}
	return &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
		return n.DialFront(addr)
	}}
}

// serveOutside serves h on port (0: one the system picks) of name's address
// in stand-in n until the test ends.
func serveOutside(t *testing.T, n *outside.Net, name string, port int, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := n.Listen(name, port)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// serveName serves h for name of stand-in n on its well-known port (443
// over TLS, 80 otherwise) and on the stand-in's test port (activePort),
// until the test ends, and returns the latter server. All the names of a
// test share the test port, so that any of them is reached on any port
// the test uses. Over TLS it serves cert, or
// httptest's certificate (for example.com and its subdomains) without one.
func serveName(t *testing.T, n *outside.Net, name string, h http.Handler, secure bool, cert ...tls.Certificate) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	for _, port := range []int{80, activePort} {
		if secure && port == 80 {
			port = 443
		}
		l, err := n.Listen(name, port)
		require.NoError(t, err)
		if activePort == 0 && port == 0 {
			activePort = l.Addr().(*net.TCPAddr).Port
		}
		srv = httptest.NewUnstartedServer(h)
		srv.Listener.Close()
		srv.Listener = l
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		if secure {
			if len(cert) > 0 {
				srv.TLS = &tls.Config{Certificates: cert}
			}
			srv.StartTLS()
		} else {
			srv.Start()
		}
		t.Cleanup(srv.Close)
	}
	return srv
}

// outsideServers serves "hello from NAME PATH" for each name (see
// serveName), and returns the test port.
func outsideServers(t *testing.T, n *outside.Net, names ...string) string {
	t.Helper()
	for _, name := range names {
		serveName(t, n, name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello from %s %s", name, r.URL.Path)
		}), false)
	}
	return strconv.Itoa(activePort)
}

// TestOutsideRefusals checks the released proxy's refusals from inside the
// stand-in internet, where names resolve through /etc/hosts as on a real
// machine (by DNS): a name allowed by the policy but mapped to the loopback, to a
// link-local address (a cloud's metadata service), to 0.0.0.0 or to an
// address of the front's own interfaces is refused before any connection,
// by each of the proxy's ways in; the same names' neighbour on an address
// of the outside is reached, and so is a private network's address
// (10.0.0.1), which docs/security.md says stays reachable for the names
// allowed.
func TestOutsideRefusals(t *testing.T) {
	refused := map[string]string{
		"lo.example.com":    "127.0.0.1",
		"meta.example.com":  "169.254.169.254",
		"zero.example.com":  "0.0.0.0",
		"front.example.com": outside.FrontAddr,
	}
	n := standIn(t, outside.Config{
		Names: []string{"api.example.com"},
		Fixed: mergeHosts(refused, map[string]string{"lan.example.com": "10.0.0.1"}),
		Extra: []string{"10.0.0.1"},
	})
	ctx := testContext(t)
	port := outsideServers(t, n, "api.example.com", "10.0.0.1")

	names := append([]string{"api.example.com", "lan.example.com"}, mapKeys(refused)...)
	args := []string{"--sandbox", "--network", "allowlist", "--log-level", "info"}
	script := ""
	// Each way in: plain HTTP, CONNECT, SOCKS5 and the capture of a
	// program that ignores the proxy variables (for the port allowed).
	ways := []string{"", "--proxytunnel", "--proxy socks5h://127.0.0.1:3128", "--noproxy '*'"}
	for _, name := range names {
		args = append(args, "--allow-domain", name+":"+port)
		u := "http://" + name + ":" + port + "/" + name
		for _, via := range ways {
			script += "echo \"" + name + " " + via + " $(curl -sS --max-time 10 " + via + " -o - -w '|%{http_code}' " + u + " 2>/dev/null | tr '\\n' ' ')\"; "
		}
	}
	r := runBoxsh(t, ctx, "", append(args, "-c", script)...)
	t.Logf("stdout:\n%s", r.stdout)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, len(ways)*len(names), r.stderr)
	for _, line := range lines {
		name, _, _ := strings.Cut(line, " ")
		switch name {
		case "api.example.com":
			assert.Contains(t, line, "hello from api.example.com /api.example.com|200", "an outside server, reached by name")
		case "lan.example.com":
			assert.Contains(t, line, "hello from 10.0.0.1 /lan.example.com|200", "a private network stays reachable")
		default:
			assert.NotContains(t, line, "hello from", "refused: %s", name)
			assert.NotContains(t, line, "|200", "refused: %s", name)
		}
	}
	for name, ip := range refused {
		assert.Regexp(t, regexp.QuoteMeta("host="+name)+`.*refusing to connect to `+regexp.QuoteMeta(ip)+`: an address of the host itself`, r.stderr, name)
	}
	assert.NotContains(t, r.stderr, "connection refused", "no connection was tried")
}

// TestOutsideRealRelease checks that the stand-in runs the released boxsh,
// as its user, with no capabilities, in a network namespace with the
// front's link and the loopback only, where the stand-in's DNS server
// answers for its names, and that the host's resolv.conf is untouched.
func TestOutsideRealRelease(t *testing.T) {
	n := standIn(t, outside.Config{Names: []string{"api.example.com"}})
	ctx := testContext(t)
	argv := n.Command("sh", "-c",
		`id -u; id -g; grep -E '^Cap(Prm|Eff|Amb)' /proc/self/status; ip -o -4 addr show | awk '{print $2, $4}'; getent hosts api.example.com`)
	r := runProgramIn(t, ctx, t.TempDir(), "", nil, argv[0], argv[1:]...)
	require.Equal(t, 0, r.code(), r.stderr)
	want := fmt.Sprintf("%d\n%d\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapAmb:\t0000000000000000\n"+
		"lo 127.0.0.1/8\nbxf %s/24\n%s api.example.com\n", os.Getuid(), os.Getgid(), outside.FrontAddr, n.Addr("api.example.com"))
	assert.Equal(t, want, regexp.MustCompile(`[ \t]+api`).ReplaceAllString(r.stdout, " api"))
	resolv, err := os.ReadFile("/etc/resolv.conf")
	require.NoError(t, err)
	assert.NotContains(t, string(resolv), outside.ResolverAddr, "the host's /etc/resolv.conf is untouched")
	assert.Equal(t, filepath.Join(binDir, "boxsh"), wrappedProgram(t, boxshPath()), "the released build")
}

// wrappedProgram is the program a standIn wrapper script runs.
func wrappedProgram(t *testing.T, wrapper string) string {
	t.Helper()
	b, err := os.ReadFile(wrapper)
	require.NoError(t, err)
	m := regexp.MustCompile(`"\$PWD" '([^']+)' "\$@"`).FindStringSubmatch(string(b))
	require.NotNil(t, m, "%s", b)
	return m[1]
}

// mergeHosts is the union of host maps.
func mergeHosts(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// mapKeys are m's keys.
func mapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
