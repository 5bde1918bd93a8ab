//go:build linux

package integration

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// egressProbeSource is a program that ignores the proxy variables: it
// resolves names and connects itself, as a program with its own HTTP stack
// or a raw TCP client does.
const egressProbeSource = `package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	switch os.Args[1] {
	case "get": // an HTTP client without a proxy
		c := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}
		resp, err := c.Get(os.Args[2])
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		fmt.Printf("%d %s\n", resp.StatusCode, b)
	case "banner": // a raw TCP client, as ssh's first exchange
		c, err := net.DialTimeout("tcp", os.Args[2], 10*time.Second)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(c, "SSH-2.0-probe\r\n")
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Print(line)
	case "tcpdns": // DNS over TCP
		var d net.Dialer
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}}
		addrs, err := r.LookupHost(ctx, os.Args[2])
		fmt.Println(addrs, err)
	case "flood": // many names
		n, _ := strconv.Atoi(os.Args[2])
		ok := 0
		for i := range n {
			if _, err := net.DefaultResolver.LookupHost(ctx, fmt.Sprintf("n%d.flood.example", i)); err == nil {
				ok++
			}
		}
		fmt.Printf("ok=%d\n", ok)
	case "udp": // UDP elsewhere than the name service
		c, err := net.Dial("udp", os.Args[2])
		if err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			_, err = c.Write([]byte("hello"))
			if err == nil {
				_, err = c.Read(make([]byte, 1))
			}
		}
		fmt.Println("udp:", err)
	}
}
`

// buildEgressProbe builds the probe into a fresh directory (to bind ro:)
// and returns its path.
func buildEgressProbe(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	src, bin := filepath.Join(base, "src"), filepath.Join(base, "bin")
	writeHostFile(t, filepath.Join(src, "go.mod"), "module egressprobe\n\ngo 1.22\n", 0o644)
	writeHostFile(t, filepath.Join(src, "main.go"), egressProbeSource, 0o644)
	require.NoError(t, os.Mkdir(bin, 0o755))
	cmd := exec.CommandContext(testContext(t), "go", "build", "-trimpath", "-o", filepath.Join(bin, "probe"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build of the egress probe:\n%s", out)
	return filepath.Join(bin, "probe")
}

// sshStandIn starts a TCP server on l that greets as an SSH server does
// and records the first line each client sends. It stands for an sshd,
// which this machine lacks.
func sshStandIn(t *testing.T, l net.Listener) (addr string, lines func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(20 * time.Second))
				_, _ = c.Write([]byte("SSH-2.0-standin\r\n"))
				line, _ := bufio.NewReader(c).ReadString('\n')
				mu.Lock()
				got = append(got, strings.TrimSpace(line))
				mu.Unlock()
			})
		}
	})
	return l.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// sections returns a shell script that runs each command of cmds, with a
// marker before the output of each, so that splitSections can split the
// output by command.
func sections(cmds []string) string {
	var b strings.Builder
	for i, c := range cmds {
		b.WriteString("echo '@@" + strconv.Itoa(i) + "'; " + c + " 2>&1; ")
	}
	return b.String()
}

func splitSections(t *testing.T, out string, n int) []string {
	t.Helper()
	parts := make([]string, n)
	for i := n - 1; i >= 0; i-- {
		mark := "@@" + strconv.Itoa(i) + "\n"
		at := strings.LastIndex(out, mark)
		require.GreaterOrEqual(t, at, 0, "section %d in %q", i, out)
		parts[i] = strings.TrimSpace(out[at+len(mark):])
		out = out[:at]
	}
	return parts
}

// TestEgressTransparent checks that programs that ignore the proxy
// variables reach allowed names through the same policy. They do so by
// name, on any captured port (a rule's explicit port, and 80 and 443), over
// HTTP or raw TCP (ssh). Refused names and ports, raw addresses, and UDP
// other than to the name service fail, and the refusals are recorded. The
// proxy variables stay, and proxy-aware programs are unchanged.
func TestEgressTransparent(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	probe := buildEgressProbe(t)
	// web.example.com's stand-in answers on port 80 too (fakeInternet);
	// git.example.org's ssh on a port other than the test port.
	addrs := fakeInternet(t, "registry.npmjs.org", "web.example.com", "evil.example.org", "metadata.google.internal", "git.example.org")
	l, err := activeStandIn.Listen("git.example.org", 0)
	require.NoError(t, err)
	if l.Addr().(*net.TCPAddr).Port == activePort {
		l.Close()
		l, err = activeStandIn.Listen("git.example.org", 0)
		require.NoError(t, err)
	}
	sshAddr, sshLines := sshStandIn(t, l)
	_, port, _ := net.SplitHostPort(addrs["registry.npmjs.org"])
	_, sshPort, _ := net.SplitHostPort(sshAddr)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")

	cmds := []string{
		`echo "$HTTP_PROXY $ALL_PROXY"`,
		`cat /etc/resolv.conf | grep nameserver`,
		`curl -sS --max-time 10 --noproxy '*' http://registry.npmjs.org:` + port + `/direct`,
		`curl -sS --max-time 10 --noproxy '*' http://Web.Example.COM./eighty`,
		`curl -sS --max-time 10 http://registry.npmjs.org:` + port + `/proxied`,
		probe + ` get http://registry.npmjs.org:` + port + `/go`,
		probe + ` banner git.example.org:` + sshPort,
		`ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 -p ` + sshPort + ` git@git.example.org true; echo rc=$?`,
		`curl -sS --max-time 10 --noproxy '*' http://evil.example.org:` + port + `/steal; echo rc=$?`,
		`curl -sS --max-time 10 --noproxy '*' http://registry.npmjs.org:` + sshPort + `/otherport; echo rc=$?`,
		`curl -sS --max-time 10 --noproxy '*' http://registry.npmjs.org:9/notcaptured; echo rc=$?`,
		`curl -sS --max-time 10 --noproxy '*' http://metadata.google.internal/computeMetadata; echo rc=$?`,
		`curl -sS --max-time 10 --noproxy '*' http://` + addrs["registry.npmjs.org"] + `/raw; echo rc=$?`,
		`curl -sS --max-time 10 --noproxy '*' http://192.0.2.1/raw; echo rc=$?`,
		probe + ` tcpdns registry.npmjs.org`,
		probe + ` udp 192.0.2.1:53`,
		probe + ` udp 127.0.0.1:443`,
	}
	r := runBoxsh(t, ctx, "", "--sandbox", "--network", "allowlist", "--bind", "ro:"+filepath.Dir(probe),
		"--allow-domain", "registry.npmjs.org:"+port, "--allow-domain", "web.example.com",
		"--allow-domain", "git.example.org:"+sshPort, "--audit", audit, "-c", sections(cmds))
	out := splitSections(t, r.stdout, len(cmds))
	t.Logf("stderr:\n%s", r.stderr)

	assert.Equal(t, "http://127.0.0.1:3128 socks5h://127.0.0.1:3128", out[0], "the proxy variables stay")
	assert.Equal(t, "nameserver 127.0.0.1", out[1])
	assert.Equal(t, "hello from registry.npmjs.org /direct", out[2], "curl without the proxy, an explicit port")
	assert.Equal(t, "hello from web.example.com /eighty", out[3], "port 80 of a rule without a port, any case, trailing dot")
	assert.Equal(t, "hello from registry.npmjs.org /proxied", out[4], "curl through the proxy")
	assert.Equal(t, "200 hello from registry.npmjs.org /go", out[5], "Go's HTTP client without a proxy")
	assert.Equal(t, "SSH-2.0-standin", out[6], "raw TCP to another port")
	assert.Contains(t, sshLines(), "SSH-2.0-probe")
	assert.True(t, func() bool {
		for _, l := range sshLines() {
			if strings.HasPrefix(l, "SSH-2.0-OpenSSH") {
				return true
			}
		}
		return false
	}(), "ssh without a ProxyCommand reached the stand-in: %v; %s", sshLines(), out[7])

	assert.NotContains(t, out[8], "hello from", "a refused name")
	assert.NotContains(t, out[8], "rc=0")
	assert.NotContains(t, out[9], "hello from", "an allowed name on a port its rule does not allow")
	assert.NotContains(t, out[9], "rc=0")
	assert.Contains(t, out[10], "rc=7", "a port not captured: connection refused")
	assert.NotContains(t, out[11], "hello from", "the metadata name is not allowed")
	assert.NotContains(t, out[11], "rc=0")
	assert.NotContains(t, out[12], "hello from", "a raw address of the outside")
	assert.Contains(t, out[13], "rc=7", "a raw address: no route")
	assert.Regexp(t, `^\[127\.77\.\d+\.\d+\] <nil>$`, out[14], "DNS over TCP")
	assert.Contains(t, out[15], "network is unreachable", "UDP out")
	assert.Contains(t, out[16], "udp: read", "UDP to the loopback reaches nothing")
	assert.NotContains(t, out[16], "<nil>")

	var decided []tool.AuditEntry
	for _, e := range readAudit(t, audit) {
		if e.Kind == tool.AuditNetwork && e.Protocol == "transparent" {
			decided = append(decided, e)
		}
	}
	find := func(host string, port int) *tool.AuditEntry {
		for i := range decided {
			if decided[i].Host == host && decided[i].Port == port {
				return &decided[i]
			}
		}
		return nil
	}
	p, _ := strconv.Atoi(port)
	sp, _ := strconv.Atoi(sshPort)
	for _, want := range []struct {
		host    string
		port    int
		allowed bool
	}{
		{"registry.npmjs.org", p, true}, {"web.example.com", 80, true}, {"git.example.org", sp, true},
		{"evil.example.org", p, false}, {"registry.npmjs.org", sp, false}, {"metadata.google.internal", 80, false},
	} {
		e := find(want.host, want.port)
		if assert.NotNil(t, e, "%s:%d recorded as transparent: %+v", want.host, want.port, decided) {
			assert.Equal(t, want.allowed, *e.Allowed, "%s:%d", want.host, want.port)
		}
	}
	assert.Nil(t, find("registry.npmjs.org", 9), "a port not captured never reaches the proxy")
	assert.Contains(t, r.stderr, "evil.example.org is not allowed", "the refusal says how to allow it")
}

// TestEgressFlood checks that the name service is bounded. A flood of names
// gets addresses up to the bound, and the names given one keep it.
func TestEgressFlood(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	probe := buildEgressProbe(t)
	r := runBoxsh(t, ctx, "", "--sandbox", "--network", "allowlist", "--bind", "ro:"+filepath.Dir(probe),
		"--allow-domain", "registry.npmjs.org", "-c", probe+" flood 600; getent hosts n0.flood.example n599.flood.example; echo rc=$?")
	assert.Contains(t, r.stdout, "ok=512\n", r.stderr)
	assert.Regexp(t, `127\.77\.0\.1\s+n0\.flood\.example\n`, r.stdout, "the first name keeps its address")
	assert.NotContains(t, r.stdout, "n599.flood.example", "past the bound, no address")
}

// TestEgressServe checks that a server's commands (bash calls) get the same
// capture. The server's ports travel in the hello.
func TestEgressServe(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs := fakeInternet(t, "registry.npmjs.org")
	_, port, _ := net.SplitHostPort(addrs["registry.npmjs.org"])
	s := startServer(t, ctx, serverOptions{args: []string{"--sandbox", "--network", "allowlist", "--allow-domain", "registry.npmjs.org:" + port}})
	out := s.call("bash", map[string]any{"command": "curl -sS --max-time 10 --noproxy '*' http://registry.npmjs.org:" + port + "/served", "timeout": 20}).bash(t)
	assert.Equal(t, "hello from registry.npmjs.org /served", out.Stdout, "%+v", out)
}
