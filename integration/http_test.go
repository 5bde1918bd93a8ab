package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
	"github.com/boxsh/boxsh/internal/jsontest"
)

// httpBoxsh is a running `boxsh --rpc --listen`.
type httpBoxsh struct {
	cmd    *exec.Cmd
	url    string // http://ADDR/mcp
	base   string // http://ADDR
	token  string
	stderr *lockedBuffer
	exited chan struct{}
	// printed is the URL the server printed; on a Unix socket
	// (http://unix:PATH:/mcp) url is http://localhost/mcp, and tr dials
	// the socket.
	printed string
	tr      http.RoundTripper
}

// client is an HTTP client of h, its answers checked by jsontest.
func (h *httpBoxsh) client() *http.Client {
	return &http.Client{Transport: jsontest.Transport{Base: h.tr}}
}

var listenLine = regexp.MustCompile(`MCP on (http://[^\s]+/mcp)`)

// startHTTP starts boxsh serving HTTP on a free loopback port, with its
// token in a file of the test, and waits for the address on stderr.
func startHTTP(t *testing.T, ctx context.Context, args ...string) *httpBoxsh {
	t.Helper()
	return startHTTPIn(t, ctx, t.TempDir(), nil, args...)
}

// startHTTPIn is startHTTP in dir, with env added to the environment.
func startHTTPIn(t *testing.T, ctx context.Context, dir string, env []string, args ...string) *httpBoxsh {
	t.Helper()
	return startHTTPOn(t, ctx, "127.0.0.1:0", dir, env, args...)
}

// startHTTPOn is startHTTPIn listening on listen (unix:PATH too), with
// no token if args hold --no-auth.
func startHTTPOn(t *testing.T, ctx context.Context, listen, dir string, env []string, args ...string) *httpBoxsh {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	argv := []string{"--rpc", "--listen", listen, "--token-file", tokenFile}
	noAuth := slices.Contains(args, "--no-auth")
	if noAuth {
		argv = argv[:3]
	}
	cmd := exec.CommandContext(ctx, boxshPath(), append(argv, args...)...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	h := &httpBoxsh{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = h.stderr
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	go func() { _ = cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
		case <-time.After(exitTimeout):
			t.Errorf("boxsh --listen did not stop on SIGTERM")
			_ = cmd.Process.Kill()
			<-h.exited
		}
		if t.Failed() {
			t.Logf("boxsh stderr:\n%s", truncate(h.stderr.String()))
		}
	})
	h.printed = waitListening(t, "boxsh", h.stderr, h.exited)
	h.url = h.printed
	if path, ok := unixSocketOf(h.printed); ok {
		h.url, h.tr = "http://localhost/mcp", client.UnixSocketTransport(path)
	} else if tr := frontTransport(); tr != nil {
		h.tr = tr // boxsh's loopback is the stand-in's front namespace's
	}
	h.base = strings.TrimSuffix(h.url, "/mcp")
	if noAuth {
		return h
	}
	b, err := os.ReadFile(tokenFile)
	require.NoError(t, err)
	h.token = strings.TrimSpace(string(b))
	fi, err := os.Stat(tokenFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "token file readable by the user only")
	return h
}

// waitListening waits for a boxsh --listen server (who) to say on stderr
// where it serves, and returns its MCP URL; it fails the test if the
// server exits first or says nothing within replyTimeout.
func waitListening(t *testing.T, who string, stderr *lockedBuffer, exited <-chan struct{}) string {
	t.Helper()
	var m []string
	gone := false
	require.Eventually(t, func() bool {
		if m = listenLine.FindStringSubmatch(stderr.String()); m != nil {
			return true
		}
		select {
		case <-exited:
			gone = true
		default:
		}
		return gone
	}, replyTimeout, 10*time.Millisecond, "%s: no listen address on stderr:\n%s", who, stderr.String())
	if m == nil {
		t.Fatalf("%s exited before listening:\n%s", who, stderr.String())
	}
	return m[1]
}

// unixSocketOf is the socket's path of a URL http://unix:PATH:/mcp, the
// form a server on --listen unix:PATH prints.
func unixSocketOf(url string) (string, bool) {
	rest, ok := strings.CutPrefix(url, "http://unix:")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, ":/mcp")
}

// bearer adds the token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// sdkHTTP connects the official Go SDK client over streamable HTTP.
func (h *httpBoxsh) sdkHTTP(t *testing.T, ctx context.Context, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "boxsh-http-test", Version: "1.0.0"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:   h.url,
		HTTPClient: &http.Client{Transport: bearer{h.token, jsontest.Transport{Base: h.tr}}},
		MaxRetries: -1,
	}
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	s, err := client.Connect(ctx, tr, opts)
	require.NoError(t, err, "connect over HTTP")
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// rawPost sends one JSON-RPC message as a pinned 2026-07-28 client would.
func (h *httpBoxsh) rawPost(t *testing.T, method string, params map[string]any, hdr map[string]string) (int, message) {
	t.Helper()
	body := requestJSON("r1", method, params)
	req, err := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("MCP-Protocol-Version", modernVersion)
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := h.client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var m message
	if len(b) > 0 && b[0] == '{' {
		require.NoError(t, jsontest.Unmarshal(b, &m), "%s", b)
		m.Raw = b
	}
	return res.StatusCode, m
}

func TestHTTPSDKBothEras(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	h := startHTTP(t, ctx)
	for version, want := range map[string]string{"": modernVersion, "2025-11-25": "2025-11-25", "2025-06-18": "2025-06-18"} {
		t.Run("pin="+version, func(t *testing.T) {
			s := h.sdkHTTP(t, ctx, version)
			require.Equal(t, want, s.InitializeResult().ProtocolVersion)
			sdkListAndEcho(t, ctx, s, "http")
		})
	}
}

func TestHTTPPinnedModernClient(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	h := startHTTP(t, ctx)
	status, m := h.rawPost(t, "server/discover", modernParams(nil), nil)
	require.Equal(t, 200, status, "%s", m.Raw)
	assert.Contains(t, string(m.Result), `"supportedVersions"`)
	status, m = h.rawPost(t, "tools/list", modernParams(nil), nil)
	require.Equal(t, 200, status)
	requireToolsListAtLeast(t, m)
	status, m = h.rawPost(t, "tools/call", modernParams(callParams("bash", map[string]any{"command": "echo pinned"})), nil)
	require.Equal(t, 200, status)
	assert.Equal(t, "pinned\n", m.bash(t).Stdout)

	status, m = h.rawPost(t, "tools/call", modernParams(callParams("bash", map[string]any{"command": "echo x"})), map[string]string{"Mcp-Name": "read"})
	assert.Equal(t, 400, status)
	require.NotNil(t, m.Error)
	assert.Equal(t, -32020, m.Error.Code)
}

func TestHTTPAuthAndOrigin(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	h := startHTTP(t, ctx)
	for name, hdr := range map[string]map[string]string{
		"no token":    {"Authorization": ""},
		"wrong token": {"Authorization": "Bearer " + strings.Repeat("0", 64)},
		"not bearer":  {"Authorization": "Basic " + h.token},
	} {
		status, _ := h.rawPost(t, "tools/list", modernParams(nil), hdr)
		assert.Equal(t, 401, status, name)
	}
	status, _ := h.rawPost(t, "tools/list", modernParams(nil), map[string]string{"Origin": "https://evil.example"})
	assert.Equal(t, 403, status, "foreign Origin (DNS rebinding)")
	status, _ = h.rawPost(t, "tools/list", modernParams(nil), map[string]string{"Origin": "http://127.0.0.1:5173"})
	assert.Equal(t, 200, status, "loopback Origin")

	// Without a token, a non-loopback address is refused.
	out, err := exec.CommandContext(ctx, boxshPath(), "--rpc", "--listen", "0.0.0.0:0", "--no-auth").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "non-loopback")
}

// TestHTTPConcurrentClients checks that many clients at once, each running
// several calls, share one server.
func TestHTTPConcurrentClients(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	h := startHTTP(t, ctx)
	const clients, calls = 50, 4
	var wg sync.WaitGroup
	errs := make(chan error, clients*calls)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := h.sdkHTTP(t, ctx, "")
			for i := range calls {
				want := fmt.Sprintf("c%d-%d", c, i)
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo " + want}})
				if err != nil {
					errs <- err
					continue
				}
				b, _ := json.Marshal(res.StructuredContent)
				var out bashOutput
				_ = json.Unmarshal(b, &out)
				if out.Stdout != want+"\n" {
					errs <- fmt.Errorf("client %d call %d: stdout %q", c, i, out.Stdout)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestHTTPSigtermInFlight checks that SIGTERM lets the calls in flight
// finish, within the grace, and answers them before boxsh exits.
func TestHTTPSigtermInFlight(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	h := startHTTP(t, ctx)
	type answer struct {
		status int
		m      message
	}
	got := make(chan answer, 3)
	var markers []string
	for i := range 3 {
		marker := sleepMarker(1)
		killMarkedAtCleanup(t, marker)
		markers = append(markers, marker)
		go func() {
			st, m := h.rawPost(t, "tools/call", modernParams(callParams("bash", map[string]any{"command": fmt.Sprintf("sleep %s; echo done-%d", marker, i)})), nil)
			got <- answer{st, m}
		}()
	}
	for _, marker := range markers { // every call in flight
		waitForProcess(t, marker)
	}
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGTERM))
	for range 3 {
		select {
		case a := <-got:
			require.Equal(t, 200, a.status, "%s", a.m.Raw)
			assert.Contains(t, a.m.bash(t).Stdout, "done-")
		case <-time.After(replyTimeout):
			t.Fatal("a call in flight at SIGTERM was not answered")
		}
	}
	select {
	case <-h.exited:
		assert.Equal(t, 0, h.cmd.ProcessState.ExitCode(), "clean shutdown")
	case <-time.After(exitTimeout):
		t.Fatal("boxsh did not exit after SIGTERM")
	}
}

// TestHTTPRESTTwin checks the REST twin: curl-style calls and the OpenAPI
// document.
func TestHTTPRESTTwin(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	h := startHTTP(t, ctx)
	do := func(method, path, body, token string) (int, []byte) {
		req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := jsontest.NewClient().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	status, b := do("POST", "/v1/tools/bash", `{"command":"echo rest"}`, h.token)
	require.Equal(t, 200, status, "%s", b)
	var r toolResult
	require.NoError(t, json.Unmarshal(b, &r))
	var out bashOutput
	require.NoError(t, json.Unmarshal(r.StructuredContent, &out))
	assert.Equal(t, "rest\n", out.Stdout)

	status, b = do("POST", "/v1/tools/bash", `{}`, h.token)
	assert.Equal(t, 400, status)
	assert.Contains(t, string(b), "bash tool missing string field: command")
	status, _ = do("POST", "/v1/tools/bash", `{"command":"id"}`, "")
	assert.Equal(t, 401, status)

	status, b = do("GET", "/openapi.json", "", h.token)
	require.Equal(t, 200, status)
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Equal(t, "3.1.0", doc.OpenAPI)
	for _, name := range allToolNames {
		assert.Contains(t, doc.Paths, "/v1/tools/"+name)
	}
}

// TestHTTPSandboxed checks that the HTTP front serves a sandboxed backend
// as it does stdio.
func TestHTTPSandboxed(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	h := startHTTP(t, ctx, "--sandbox")
	s := h.sdkHTTP(t, ctx, "")
	res := sdkCall(t, ctx, s, "bash", map[string]any{"command": "cat /proc/1/comm"})
	var out bashOutput
	sdkStructured(t, res, &out)
	assert.Equal(t, "boxsh-init\n", out.Stdout, "the call ran in the sandbox")
}

// TestHTTPTokenFileRefused checks a --token-file another user could have
// planted: a symbolic link, or a file open to the group or others. It stops
// boxsh before it listens, with one line that says how to fix it. The
// planted token never works.
func TestHTTPTokenFileRefused(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	require.NoError(t, os.WriteFile(open, []byte("attacker-token\n"), 0o644))
	require.NoError(t, os.Chmod(open, 0o644))
	groupOnly := filepath.Join(dir, "group")
	require.NoError(t, os.WriteFile(groupOnly, []byte("attacker-token\n"), 0o640))
	require.NoError(t, os.Chmod(groupOnly, 0o640))
	mine := filepath.Join(dir, "mine")
	require.NoError(t, os.WriteFile(mine, []byte("attacker-token\n"), 0o600))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(mine, link))
	for _, c := range []struct{ path, want string }{
		{open, "has mode 0644, open to other users: chmod 600 " + open},
		{groupOnly, "has mode 0640, open to other users: chmod 600 " + groupOnly},
		{link, "is a symbolic link, which boxsh does not follow: remove it (rm " + link + ")"},
	} {
		// It exits at once; a boxsh that serves is stopped after a while.
		runCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		cmd := exec.CommandContext(runCtx, boxshPath(), "--rpc", "--listen", "127.0.0.1:0", "--token-file", c.path)
		cmd.Dir = dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "boxsh started with %s:\n%s", c.path, stderr.String())
		assert.Equal(t, 1, exit.ExitCode())
		assert.Empty(t, stdout.String())
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		assert.Len(t, lines, 1, "one line: %q", stderr.String())
		assert.True(t, strings.HasPrefix(lines[0], "boxsh: token file "+c.path+" "), "%q", lines[0])
		assert.Contains(t, lines[0], c.want)
		assert.NotContains(t, stderr.String(), "MCP on", "it listened")
	}
}
