//go:build linux

package integration

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/boxsh/boxsh/integration/internal/outside"
)

// fakeInternet starts the stand-in internet (standIn) with an HTTP server
// for each name that answers "hello from NAME PATH" on ports 80 and 443 of
// the name's address and on the test port (serveName), and returns the
// latter addresses by name. boxshPath runs boxsh in the stand-in until the
// test ends.
func fakeInternet(t *testing.T, names ...string) map[string]string {
	t.Helper()
	n := standIn(t, outside.Config{Names: names})
	addrs := map[string]string{}
	for _, name := range names {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello from %s %s", name, r.URL.Path)
		})
		serveOutside(t, n, name, 443, h)
		addrs[name] = serveName(t, n, name, h, false).Listener.Addr().String()
	}
	return addrs
}

// TestNetworkReleaseIgnoresTestHosts checks that the boxsh users run has no
// test seam (issue 12). Even with BOXSH_PROXY_HOSTS mapping an allowed name
// to a loopback server, the proxy refuses to connect there.
func TestNetworkReleaseIgnoresTestHosts(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "hello from the host's loopback")
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := net.SplitHostPort(addr)
	t.Setenv("BOXSH_PROXY_HOSTS", "registry.npmjs.org="+addr+",example.org=127.0.0.1")
	r := runBoxsh(t, ctx, "", "--sandbox", "--network", "allowlist",
		"--allow-domain", "registry.npmjs.org", "--allow-domain", "example.org", "-c",
		"for u in http://registry.npmjs.org:"+port+"/x http://example.org:"+port+"/y; do "+
			"curl -sS --max-time 10 -o - -w ' |%{http_code}\n' $u; "+
			"curl -sS --max-time 10 --proxytunnel -o - -w ' |%{http_code}\n' $u; "+
			"curl -sS --max-time 10 --proxy socks5h://127.0.0.1:3128 -o - -w ' |%{http_code}\n' $u; done")
	assert.NotContains(t, r.stdout, "hello from", "%s\n%s", r.stdout, r.stderr)
	assert.Zero(t, hits.Load(), "the loopback server was reached")
}

func TestNetworkAllowlist(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs := fakeInternet(t, "registry.npmjs.org", "api.github.com", "evil.example.org", "ads.github.com")
	_, port, _ := net.SplitHostPort(addrs["registry.npmjs.org"])
	s := startServer(t, ctx, serverOptions{args: []string{"--sandbox", "--network", "allowlist",
		"--allow-domain", "registry.npmjs.org", "--allow-domain", "*.github.com"}})
	sh := func(cmd string) bashOutput {
		return s.call("bash", map[string]any{"command": cmd, "timeout": 20}).bash(t)
	}
	curl := func(url string, extra ...string) bashOutput {
		return sh("curl -sS --max-time 10 " + strings.Join(extra, " ") + " -o - -w '|%{http_code}' " + url)
	}

	out := curl("http://registry.npmjs.org:" + port + "/left-pad")
	assert.Equal(t, "hello from registry.npmjs.org /left-pad|200", out.Stdout, "an allowed name, plain HTTP through the proxy: %+v", out)
	out = curl("http://api.github.com:" + port + "/repos")
	assert.Equal(t, "hello from api.github.com /repos|200", out.Stdout, "a wildcard rule: %+v", out)

	out = curl("http://evil.example.org:" + port + "/steal")
	assert.Contains(t, out.Stdout, "|403", "a refused name: %+v", out)
	assert.Contains(t, out.Stdout, "evil.example.org", "the refusal names the domain")
	assert.Contains(t, out.Stdout, "allowedDomains", "and the setting that would allow it")

	// CONNECT (as for TLS): the tunnel is made for an allowed name only.
	out = curl("http://registry.npmjs.org:"+port+"/tunnel", "--proxytunnel")
	assert.Equal(t, "hello from registry.npmjs.org /tunnel|200", out.Stdout, "CONNECT to an allowed name: %+v", out)
	out = curl("http://evil.example.org:"+port+"/tunnel", "--proxytunnel")
	assert.NotContains(t, out.Stdout, "hello from", "CONNECT to a refused name: %+v", out)

	// SOCKS5, names resolved by the proxy.
	out = curl("http://registry.npmjs.org:"+port+"/socks", "--proxy", "socks5h://127.0.0.1:3128")
	assert.Equal(t, "hello from registry.npmjs.org /socks|200", out.Stdout, "SOCKS5: %+v", out)

	// A raw IP address is refused; going around the proxy is impossible.
	out = curl("http://" + addrs["registry.npmjs.org"] + "/raw")
	assert.NotContains(t, out.Stdout, "hello from", "raw IP: %+v", out)
	out = curl("http://"+addrs["registry.npmjs.org"]+"/direct", "--noproxy", "'*'")
	assert.NotEqual(t, 0, out.ExitCode, "no way out but the proxy: %+v", out)
	assert.NotContains(t, out.Stdout, "hello from")
	out = sh("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
	assert.Equal(t, "lo\n", out.Stdout, "only loopback in the sandbox")
}

func TestNetworkDeniedWinsAndPorts(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs := fakeInternet(t, "api.github.com", "ads.github.com", "git.example.com")
	_, port, _ := net.SplitHostPort(addrs["api.github.com"])
	_, gitPort, _ := net.SplitHostPort(addrs["git.example.com"])
	dir := t.TempDir()
	writeHostFile(t, dir+"/.boxsh/policy.json", `{"network": {"mode": "allowlist",
		"allowedDomains": ["*.github.com", "git.example.com:`+gitPort+`"],
		"deniedDomains": ["ads.github.com"]}}`, 0o644)
	s := startServer(t, ctx, serverOptions{dir: dir, args: []string{"--sandbox", "--log-level", "info"}})
	get := func(url string) string {
		return s.call("bash", map[string]any{"command": "curl -sS --max-time 10 -o - -w '|%{http_code}' " + url, "timeout": 20}).bash(t).Stdout
	}
	assert.Equal(t, "hello from api.github.com /|200", get("http://api.github.com:"+port+"/"))
	denied := get("http://ads.github.com:" + port + "/")
	assert.Contains(t, denied, "|403", "denied wins over allowed")
	assert.Contains(t, denied, "deniedDomains")
	assert.Equal(t, "hello from git.example.com /|200", get("http://git.example.com:"+gitPort+"/"), "the allowed port")
	if port != gitPort {
		assert.Contains(t, get("http://git.example.com:"+port+"/"), "|403", "another port")
	}

	// The decision log (hclog on stderr, at info).
	s.stop()
	log := s.stderr.String()
	assert.Regexp(t, `ads\.github\.com`, log)
	assert.Regexp(t, `allowed=false`, log)
	assert.Regexp(t, `allowed=true`, log)
}

// TestNetworkRefusesHostInterfaces checks that the proxy never connects to
// the host's own interface addresses (issue 14, finding 7). It refuses even
// when the policy allows the address exactly, since a service bound to
// 0.0.0.0 on the host would answer there. No server is needed: the refusal
// comes before the connection, and the proxy's log says why. Without the
// check the log said "connection refused", from a dial that went out. The
// test runs the release build, which has no test seam.
func TestNetworkRefusesHostInterfaces(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--sandbox", "--network", "allowlist", "--log-level", "info"}
	var urls []string
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok || ipnet.IP.IsLoopback() || ipnet.IP.IsLinkLocalUnicast() {
			continue // covered by class, and by TestNewProxyDial
		}
		host := ipnet.IP.String()
		if ipnet.IP.To4() == nil {
			host = "[" + host + "]"
		}
		args = append(args, "--allow-domain", host)
		urls = append(urls, "http://"+host+":9/")
	}
	// The loopback too, allowed exactly.
	args = append(args, "--allow-domain", "127.0.0.1")
	urls = append(urls, "http://127.0.0.1:9/")
	script := ""
	for _, u := range urls {
		script += "curl -sS --max-time 10 -o /dev/null -w '%{http_code}\n' --noproxy '' --proxy http://127.0.0.1:3128 " + u + "; "
	}
	r := runBoxsh(t, ctx, "", append(args, "-c", script)...)
	assert.NotContains(t, r.stdout, "200")
	t.Logf("interface addresses tried: %v", urls)
	for _, u := range urls {
		host := strings.Trim(strings.TrimSuffix(strings.TrimPrefix(u, "http://"), ":9/"), "[]")
		assert.Regexp(t, `refusing to connect to `+regexp.QuoteMeta(host)+`: an address of the host itself`, r.stderr, u)
	}
	assert.NotContains(t, r.stderr, "connection refused", "no connection was tried")
}

// TestNetworkShellMode checks that shell mode and -- CMD get the same
// proxy, and that --new-net-ns is "disabled".
func TestNetworkShellMode(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs := fakeInternet(t, "registry.npmjs.org")
	url := "http://registry.npmjs.org:" + strings.Split(addrs["registry.npmjs.org"], ":")[1] + "/pkg"
	r := runBoxsh(t, ctx, "", "--sandbox", "--network", "allowlist", "--allow-domain", "registry.npmjs.org",
		"-c", "curl -sS --max-time 10 "+url)
	assert.Equal(t, "hello from registry.npmjs.org /pkg", r.stdout, r.stderr)

	r = runBoxsh(t, ctx, "", "--sandbox", "--new-net-ns", "--", "sh", "-c", "curl -sS --max-time 5 "+url+"; echo rc=$?")
	assert.NotContains(t, r.stdout, "hello from", "disabled: no proxy, no way out")
	assert.Contains(t, r.stdout, "rc=")
}
