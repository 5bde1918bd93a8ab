package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
	"github.com/boxsh/boxsh/internal/jsontest"
	"github.com/boxsh/boxsh/internal/tool"
)

// manyBoxsh is a running `boxsh --rpc --listen --sandboxes` on a
// workspace of the test, its sessions under state.
type manyBoxsh struct {
	*httpBoxsh
	// workspace is the server's directory; state and run its
	// XDG_STATE_HOME (the sessions) and XDG_RUNTIME_DIR (the sandboxes'
	// state).
	workspace, state, run string
}

// startMany starts a server of many sandboxes on a workspace holding
// seed.txt.
func startMany(t *testing.T, ctx context.Context, args ...string) *manyBoxsh {
	t.Helper()
	requireRootless(t)
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "seed.txt"), []byte("seed\n"), 0o644))
	state, run := t.TempDir(), t.TempDir()
	h := startHTTPIn(t, ctx, ws, []string{"XDG_STATE_HOME=" + state, "XDG_RUNTIME_DIR=" + run}, append([]string{"--sandboxes", "--workers", "1"}, args...)...)
	return &manyBoxsh{httpBoxsh: h, workspace: ws, state: state, run: run}
}

// sandboxInfo is a sandbox as the management API describes it.
type sandboxInfo struct {
	Name      string  `json:"name"`
	From      string  `json:"from"`
	Age       float64 `json:"age_seconds"`
	Idle      float64 `json:"idle_seconds"`
	Calls     int64   `json:"calls"`
	Workspace string  `json:"workspace"`
	Endpoint  string  `json:"endpoint"`
	Token     string  `json:"token"`
}

// do sends a request with token (none when "") and returns the status and
// body.
func (m *manyBoxsh) do(t *testing.T, method, path, token string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, m.base+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := m.client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, b
}

// create makes sandbox name from from, requiring success.
func (m *manyBoxsh) create(t *testing.T, name, from string) sandboxInfo {
	t.Helper()
	status, body := m.do(t, http.MethodPost, "/v1/sandboxes", m.token, map[string]string{"name": name, "from": from})
	require.Equal(t, http.StatusCreated, status, "create %s: %s", name, body)
	var info sandboxInfo
	require.NoError(t, json.Unmarshal(body, &info))
	return info
}

// list lists the sandboxes.
func (m *manyBoxsh) list(t *testing.T) []sandboxInfo {
	t.Helper()
	status, body := m.do(t, http.MethodGet, "/v1/sandboxes", m.token, nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var out struct {
		Sandboxes []sandboxInfo `json:"sandboxes"`
	}
	require.NoError(t, json.Unmarshal(body, &out))
	return out.Sandboxes
}

// names are the names of list.
func names(list []sandboxInfo) []string {
	out := []string{}
	for _, s := range list {
		out = append(out, s.Name)
	}
	return out
}

// connect connects the official SDK to a sandbox's endpoint with token
// (version "" for the SDK's own).
func (m *manyBoxsh) connect(t *testing.T, ctx context.Context, path, token, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "boxsh-sandboxes-test", Version: "1.0.0"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:   m.base + path,
		HTTPClient: &http.Client{Transport: bearer{token, jsontest.Transport{Base: m.tr}}},
		MaxRetries: -1,
	}
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	s, err := client.Connect(ctx, tr, opts)
	require.NoError(t, err, "connect to %s", path)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// sh runs command in a session's sandbox and returns its stdout.
func sh(t *testing.T, ctx context.Context, s *mcp.ClientSession, command string) string {
	t.Helper()
	var out tool.BashOutput
	sdkOK(t, ctx, s, "bash", map[string]any{"command": command}, &out)
	return out.Stdout
}

// TestSandboxesIsolation runs two sandboxes of one server, each driven by
// the official SDK on its own endpoint with its own token. Neither sees the
// other's files, processes, background processes, terminals or exposed
// ports. Neither reaches the other's endpoint with its token. The
// management API lists and deletes them.
func TestSandboxesIsolation(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	a := m.create(t, "alpha", "workspace")
	b := m.create(t, "beta", "empty")
	assert.Equal(t, "/s/alpha/mcp", a.Endpoint)
	require.NotEmpty(t, a.Token)
	require.NotEqual(t, a.Token, b.Token)
	assert.NotEqual(t, m.token, a.Token)
	assert.Equal(t, []string{"alpha", "beta"}, names(m.list(t)))

	sa := m.connect(t, ctx, a.Endpoint, a.Token, "")
	sb := m.connect(t, ctx, b.Endpoint, b.Token, "2025-06-18") // the legacy era on a sandbox's endpoint
	// Files: alpha sees the workspace, beta an empty directory; writes
	// stay in each one's own view, never on the host's workspace.
	assert.Equal(t, "seed\n", sh(t, ctx, sa, "cat seed.txt"))
	assert.Equal(t, "", sh(t, ctx, sb, "ls -A"))
	assert.Equal(t, m.workspace+"\n", sh(t, ctx, sa, "pwd"), "alpha works on the workspace at its own path")
	sh(t, ctx, sa, "echo a-secret > mine.txt")
	sh(t, ctx, sb, "echo b-secret > mine.txt")
	assert.Equal(t, "a-secret\n", sh(t, ctx, sa, "cat mine.txt"))
	assert.Equal(t, "b-secret\n", sh(t, ctx, sb, "cat mine.txt"))
	assert.NoFileExists(t, filepath.Join(m.workspace, "mine.txt"), "copy-on-write: the host's workspace is untouched")
	assert.Equal(t, "a-secret\n", sh(t, ctx, sa, "cat "+filepath.Join(m.workspace, "mine.txt")), "the workspace's path shows alpha's view")
	assert.FileExists(t, filepath.Join(a.Workspace, "mine.txt"), "alpha's write is in its layer")
	bPath := strings.TrimSpace(sh(t, ctx, sb, "pwd"))
	assert.Contains(t, sh(t, ctx, sa, "cat "+bPath+"/mine.txt 2>&1; ls "+filepath.Dir(b.Workspace)+" 2>&1; true"), "No such file", "alpha cannot reach beta's files")

	// Processes and background processes: beta sees none of alpha's.
	var started tool.BashOutput
	sdkOK(t, ctx, sa, "bash", map[string]any{"command": "exec sleep 313", "background": true}, &started)
	require.NotEmpty(t, started.ID)
	assert.Equal(t, "0\n", sh(t, ctx, sb, "ps -eo args | grep -c '[s]leep 313' || true"), "beta sees alpha's processes")
	var procs tool.ProcessListOutput
	sdkOK(t, ctx, sb, "process_list", map[string]any{}, &procs)
	assert.Empty(t, procs.Processes, "beta lists alpha's background processes")
	res := sdkCall(t, ctx, sb, "process_kill", map[string]any{"id": started.ID, "signal": "KILL"})
	assert.True(t, res.IsError, "beta killed alpha's background process")
	sdkOK(t, ctx, sa, "process_list", map[string]any{}, &procs)
	require.Len(t, procs.Processes, 1)
	assert.Equal(t, tool.ProcessRunning, procs.Processes[0].State)

	// Terminals.
	res = sdkCall(t, ctx, sa, "run_in_terminal", map[string]any{"command": "sleep 300"})
	require.False(t, res.IsError, "%s", sdkText(t, res))
	res = sdkCall(t, ctx, sa, "list_terminals", map[string]any{})
	assert.Contains(t, sdkText(t, res), "sleep 300", "alpha lists its terminal")
	res = sdkCall(t, ctx, sb, "list_terminals", map[string]any{})
	assert.NotContains(t, sdkText(t, res), "sleep 300", "beta lists alpha's terminals")

	// Exposed ports: alpha's port is alpha's; beta's listener on the
	// same port number is another one (its own network namespace).
	port := freePort(t)
	sdkOK(t, ctx, sa, "bash", map[string]any{"args": []string{"python3", "-m", "http.server", strconv.Itoa(port), "--bind", "127.0.0.1", "--directory", "/usr"}, "background": true}, &started)
	var info tool.PortInfo
	sdkOK(t, ctx, sa, "expose", map[string]any{"port": port}, &info)
	var ports tool.PortsOutput
	sdkOK(t, ctx, sb, "ports", map[string]any{}, &ports)
	assert.Empty(t, ports.Ports, "beta lists alpha's exposed ports")
	script := "import socket,sys\ntry:\n socket.create_connection(('127.0.0.1', int(sys.argv[1])), 2); print('connected')\nexcept OSError: print('refused')"
	var probe tool.BashOutput
	sdkOK(t, ctx, sb, "bash", map[string]any{"args": []string{"python3", "-c", script, strconv.Itoa(port)}}, &probe)
	assert.Equal(t, "refused\n", probe.Stdout, "beta reaches alpha's server")
	assert.Contains(t, httpGet(t, "http://"+info.Address+"/"), "Directory listing for /")

	// Tokens: a sandbox's token reaches its own endpoint only, and
	// manages nothing; an unknown name is told to the server's token only.
	status, _ := m.do(t, http.MethodPost, "/s/alpha/v1/tools/bash", b.Token, map[string]string{"command": "true"})
	assert.Equal(t, http.StatusUnauthorized, status, "beta's token on alpha's endpoint")
	status, body := m.do(t, http.MethodPost, "/s/beta/v1/tools/bash", b.Token, map[string]string{"command": "cat mine.txt"})
	assert.Equal(t, http.StatusOK, status, "%s", body)
	assert.Contains(t, string(body), "b-secret")
	status, _ = m.do(t, http.MethodGet, "/v1/sandboxes", a.Token, nil)
	assert.Equal(t, http.StatusUnauthorized, status, "a sandbox's token lists the sandboxes")
	status, _ = m.do(t, http.MethodDelete, "/v1/sandboxes/beta", a.Token, nil)
	assert.Equal(t, http.StatusUnauthorized, status, "a sandbox's token deletes one")
	status, _ = m.do(t, http.MethodPost, "/s/gamma/v1/tools/bash", a.Token, map[string]string{"command": "true"})
	assert.Equal(t, http.StatusUnauthorized, status, "an unknown sandbox told to a sandbox's token")
	status, _ = m.do(t, http.MethodPost, "/s/gamma/v1/tools/bash", m.token, map[string]string{"command": "true"})
	assert.Equal(t, http.StatusNotFound, status)
	status, body = m.do(t, http.MethodPost, "/v1/tools/bash", m.token, map[string]string{"command": "true"})
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, string(body), "/s/NAME/v1/tools/bash")

	// Listing: calls counted, idle and age told.
	for _, s := range m.list(t) {
		assert.Positive(t, s.Calls, s.Name)
		assert.Positive(t, s.Age, s.Name)
		assert.Empty(t, s.Token, "list gives no token")
	}

	// Delete: alpha's processes, files and endpoint go; beta lives on.
	status, body = m.do(t, http.MethodDelete, "/v1/sandboxes/alpha", m.token, nil)
	require.Equal(t, http.StatusNoContent, status, "%s", body)
	assert.Equal(t, []string{"beta"}, names(m.list(t)))
	assert.NoDirExists(t, filepath.Dir(a.Workspace), "alpha's session removed")
	status, _ = m.do(t, http.MethodPost, "/s/alpha/v1/tools/bash", a.Token, map[string]string{"command": "true"})
	assert.Equal(t, http.StatusUnauthorized, status, "a deleted sandbox's token")
	status, _ = m.do(t, http.MethodDelete, "/v1/sandboxes/alpha", m.token, nil)
	assert.Equal(t, http.StatusNotFound, status)
	require.Eventually(t, func() bool { return !pgrepArgs("sleep 313") }, 10*time.Second, 50*time.Millisecond, "alpha's background process outlived it")
	assert.Equal(t, "b-secret\n", sh(t, ctx, sb, "cat mine.txt"), "beta lives on")
}

// pgrepArgs reports whether a process of the user runs with args.
func pgrepArgs(args string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ") == args {
			return true
		}
	}
	return false
}

// TestSandboxesSessionSandboxes checks that 2025-era clients of /mcp get a
// sandbox per session. It is made at their first tool call and deleted with
// the session. A modern request on /mcp is told where sandboxes are.
func TestSandboxesSessionSandboxes(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	s1 := m.connect(t, ctx, "/mcp", m.token, "2025-06-18")
	s2 := m.connect(t, ctx, "/mcp", m.token, "2025-03-26")
	assert.Empty(t, m.list(t), "no sandbox before the first call")
	sh(t, ctx, s1, "echo one > mine.txt")
	assert.Equal(t, "seed\n", sh(t, ctx, s2, "cat seed.txt"))
	assert.Equal(t, "", sh(t, ctx, s2, "cat mine.txt 2>/dev/null; true"), "session two sees session one's file")
	list := m.list(t)
	require.Len(t, list, 2)
	for _, s := range list {
		assert.True(t, strings.HasPrefix(s.Name, "mcp-"), s.Name)
	}
	require.NoError(t, s1.Close())
	require.Eventually(t, func() bool { return len(m.list(t)) == 1 }, 10*time.Second, 50*time.Millisecond, "the sandbox of a closed session")
	assert.Equal(t, "seed\n", sh(t, ctx, s2, "cat seed.txt"))

	_, msg := m.rawPost(t, "tools/call", callParams("bash", map[string]any{"command": "true"}), nil)
	assert.Equal(t, -32600, msg.rpcErr(t).Code, "%s", msg.Raw)
	assert.Contains(t, string(msg.Raw), "/s/NAME/mcp")
	status, body := m.do(t, http.MethodPost, "/v1/sandboxes", m.token, map[string]string{"name": "mcp-x"})
	assert.Equal(t, http.StatusBadRequest, status, "a name of the sessions' sandboxes: %s", body)
}

// TestSandboxesGoClient checks that the Go client manages the sandboxes of
// a server and drives one through a Client bound to it.
func TestSandboxesGoClient(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	srv := client.NewServer(m.base, m.token, nil)
	one, err := srv.Create(ctx, "one", client.FromEmpty)
	require.NoError(t, err)
	assert.Equal(t, "/s/one/mcp", one.Endpoint)
	require.NotEmpty(t, one.Token)
	_, err = srv.Create(ctx, "two", "")
	require.NoError(t, err)
	_, err = srv.Create(ctx, "one", "")
	var he *client.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusConflict, he.StatusCode)

	c := srv.Sandbox("one", one.Token)
	require.NoError(t, c.Ping(ctx))
	res, err := c.Run(ctx, "echo hi > f.txt; cat f.txt; ls -A")
	require.NoError(t, err)
	assert.Equal(t, "hi\nf.txt\n", res.Stdout)
	bg, err := c.StartBackground(ctx, client.ExecRequest{Command: "sleep 300"})
	require.NoError(t, err)
	procs, err := c.ListProcesses(ctx)
	require.NoError(t, err)
	require.Len(t, procs, 1)
	assert.Equal(t, bg.ID, procs[0].ID)
	_, err = c.Exec(ctx, client.ExecRequest{})
	assert.Error(t, err)
	two := srv.Sandbox("two", "") // the server's token
	res, err = two.Run(ctx, "cat seed.txt; cat f.txt 2>/dev/null; true")
	require.NoError(t, err)
	assert.Equal(t, "seed\n", res.Stdout)
	procs, err = two.ListProcesses(ctx)
	require.NoError(t, err)
	assert.Empty(t, procs)

	list, err := srv.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "one", list[0].Name)
	assert.Positive(t, list[0].Calls)
	assert.Positive(t, list[0].Age)

	require.NoError(t, srv.Delete(ctx, "one"))
	_, err = c.Run(ctx, "true")
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusUnauthorized, he.StatusCode, "a deleted sandbox")
	err = srv.Delete(ctx, "one")
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusNotFound, he.StatusCode)
	assert.Contains(t, he.Detail, "no sandbox one")
	require.NoError(t, c.Close())
	_, err = c.Run(ctx, "true")
	assert.ErrorIs(t, err, client.ErrClosed)
}

// TestSandboxesLimits checks the limits of a server of many sandboxes:
//   - a create past --max-sandboxes is refused with the limit named;
//   - a sandbox idle for --sandbox-idle is deleted, and makes room;
//   - the policy's process limit binds each sandbox's commands.
func TestSandboxesLimits(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx, "--max-sandboxes", "2", "--sandbox-idle", "3s", "--pids", "77")
	srv := client.NewServer(m.base, m.token, nil)
	a, err := srv.Create(ctx, "a", client.FromEmpty)
	require.NoError(t, err)
	_, err = srv.Create(ctx, "b", client.FromEmpty)
	require.NoError(t, err)
	_, err = srv.Create(ctx, "c", client.FromEmpty)
	var he *client.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusTooManyRequests, he.StatusCode)
	assert.Contains(t, he.Detail, "--max-sandboxes 2")

	res, err := srv.Sandbox("a", a.Token).Run(ctx, "grep 'Max processes' /proc/self/limits")
	require.NoError(t, err)
	assert.Regexp(t, `Max processes\s+77\s+77`, res.Stdout)

	require.Eventually(t, func() bool {
		list, err := srv.List(ctx)
		return err == nil && len(list) == 0
	}, 20*time.Second, 100*time.Millisecond, "idle sandboxes deleted")
	_, err = srv.Create(ctx, "c", client.FromEmpty)
	require.NoError(t, err, "room made by the idle ones")
}

// resources are what a server holds that a sandbox adds to.
type resources struct {
	procs, fds, mounts, entries int
	rssKiB                      int64
}

// held counts m's processes (the server's descendants), descriptors,
// mounts (as the host sees them) and the files and directories under its
// state and runtime directories.
func (m *manyBoxsh) held(t *testing.T) resources {
	t.Helper()
	pid := m.cmd.Process.Pid
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	require.NoError(t, err)
	mounts, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "mountinfo"))
	require.NoError(t, err)
	r := resources{procs: len(descendants(pid)), fds: len(fds), mounts: strings.Count(string(mounts), "\n"), rssKiB: rssKiB(pid)}
	for _, d := range []string{m.state, m.run} {
		_ = filepath.WalkDir(d, func(string, os.DirEntry, error) error { r.entries++; return nil })
	}
	return r
}

// TestSandboxesNoLeak checks that sandboxes made, called and deleted leave
// nothing behind: no process, descriptor, mount, file or directory more
// than before.
func TestSandboxesNoLeak(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	// No kept-alive connection: the server's descriptors are its own.
	srv := client.NewServer(m.base, m.token, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}})
	cycle := func(i int) {
		from := client.FromWorkspace
		if i%2 == 1 {
			from = client.FromEmpty
		}
		info, err := srv.Create(ctx, "c"+strconv.Itoa(i), from)
		require.NoError(t, err)
		c := srv.Sandbox(info.Name, info.Token)
		_, err = c.StartBackground(ctx, client.ExecRequest{Command: "sleep 300"})
		require.NoError(t, err)
		res, err := c.Run(ctx, "echo x > f.txt; cat f.txt")
		require.NoError(t, err)
		require.Equal(t, "x\n", res.Stdout)
		require.NoError(t, srv.Delete(ctx, info.Name))
	}
	for i := range 2 { // warm up: the reaper, pools, caches
		cycle(i)
	}
	before := m.held(t)
	const n = 20
	for i := range n {
		cycle(2 + i)
	}
	var after resources
	require.Eventually(t, func() bool {
		after = m.held(t)
		return after.procs <= before.procs && after.fds <= before.fds
	}, 10*time.Second, 50*time.Millisecond, "processes %d before, %d after; descriptors %d before, %d after", before.procs, after.procs, before.fds, after.fds)
	assert.LessOrEqual(t, after.mounts, before.mounts, "mounts")
	assert.LessOrEqual(t, after.entries, before.entries, "files and directories under the state and runtime directories")
	t.Logf("%d cycles: RSS %d KiB before, %d KiB after", n, before.rssKiB, after.rssKiB)
	list, err := srv.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, list)
}

// TestSandboxesWarmPool checks that with --warm-sandboxes the server keeps
// sandboxes of each kind started ahead. A create takes one, with its own
// files and no one else's. The pool refills. The server stops them all at
// its end.
func TestSandboxesWarmPool(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx, "--warm-sandboxes", "1")
	warm := func() int {
		status, body := m.do(t, http.MethodGet, "/v1/sandboxes", m.token, nil)
		require.Equal(t, http.StatusOK, status)
		var out struct {
			Warm int `json:"warm"`
		}
		require.NoError(t, json.Unmarshal(body, &out))
		return out.Warm
	}
	require.Eventually(t, func() bool { return warm() == 2 }, 30*time.Second, 50*time.Millisecond, "one warm sandbox of each kind")
	srv := client.NewServer(m.base, m.token, nil)
	e, err := srv.Create(ctx, "e", client.FromEmpty)
	require.NoError(t, err)
	w, err := srv.Create(ctx, "w", client.FromWorkspace)
	require.NoError(t, err)
	assert.Less(t, warm(), 2, "taken from the pool")
	res, err := srv.Sandbox("e", e.Token).Run(ctx, "ls -A; echo e > mine.txt")
	require.NoError(t, err)
	assert.Equal(t, "", res.Stdout, "an empty workspace")
	res, err = srv.Sandbox("w", w.Token).Run(ctx, "cat seed.txt; cat mine.txt 2>&1; true")
	require.NoError(t, err)
	assert.Contains(t, res.Stdout, "seed\n")
	assert.Contains(t, res.Stdout, "No such file", "the workspace sandbox sees the other's file")
	list, err := srv.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"e", "w"}, []string{list[0].Name, list[1].Name})
	require.Eventually(t, func() bool { return warm() == 2 }, 30*time.Second, 50*time.Millisecond, "the pool refilled")
	require.NoError(t, srv.Delete(ctx, "e"))
	_, err = srv.Create(ctx, "e", client.FromEmpty)
	require.NoError(t, err, "a name made again from the pool")
}

// TestSandboxesChangesApply checks that a sandbox's changes to the
// workspace are reviewed and applied through the management API, with the
// server's token only.
func TestSandboxesChangesApply(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	a := m.create(t, "a", "workspace")
	s := m.connect(t, ctx, a.Endpoint, a.Token, "")
	sh(t, ctx, s, "echo new > new.txt; echo changed > seed.txt")
	status, _ := m.do(t, http.MethodGet, "/v1/sandboxes/a/changes", a.Token, nil)
	assert.Equal(t, http.StatusUnauthorized, status, "a sandbox's token reviews")
	status, body := m.do(t, http.MethodGet, "/v1/sandboxes/a/changes", m.token, nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var changes struct {
		Changes []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
	}
	require.NoError(t, json.Unmarshal(body, &changes))
	require.Len(t, changes.Changes, 2, "%s", body)
	assert.Equal(t, "new.txt", changes.Changes[0].Path)
	assert.Equal(t, "seed.txt", changes.Changes[1].Path)
	status, body = m.do(t, http.MethodGet, "/v1/sandboxes/a/diff?path=seed.txt", m.token, nil)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(body), "-seed\n+changed\n")
	status, body = m.do(t, http.MethodPost, "/v1/sandboxes/a/apply", m.token, map[string]any{"dry_run": true})
	require.Equal(t, http.StatusOK, status, "%s", body)
	assert.NoFileExists(t, filepath.Join(m.workspace, "new.txt"), "a dry run")
	status, body = m.do(t, http.MethodPost, "/v1/sandboxes/a/apply", m.token, map[string]any{"paths": []string{"new.txt"}})
	require.Equal(t, http.StatusOK, status, "%s", body)
	b, err := os.ReadFile(filepath.Join(m.workspace, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(b))
	b, err = os.ReadFile(filepath.Join(m.workspace, "seed.txt"))
	require.NoError(t, err)
	assert.Equal(t, "seed\n", string(b), "only the path asked for")
	status, _ = m.do(t, http.MethodGet, "/v1/sandboxes/zz/changes", m.token, nil)
	assert.Equal(t, http.StatusNotFound, status)
}

// TestSandboxesFilesOutliveServer checks that a named sandbox's files
// outlive the server, as a session that `boxsh sessions` lists, labelled
// with the sandbox's name. An MCP session's sandbox goes with the server.
func TestSandboxesFilesOutliveServer(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	a := m.create(t, "keep", "workspace")
	sh(t, ctx, m.connect(t, ctx, a.Endpoint, a.Token, ""), "echo kept > kept.txt")
	legacy := m.connect(t, ctx, "/mcp", m.token, "2025-06-18")
	sh(t, ctx, legacy, "echo gone > gone.txt")
	require.Len(t, m.list(t), 2)
	require.NoError(t, m.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-m.exited:
	case <-time.After(exitTimeout):
		t.Fatal("the server did not stop on SIGTERM")
	}
	b, err := os.ReadFile(filepath.Join(a.Workspace, "kept.txt"))
	require.NoError(t, err, "the named sandbox's file outlived the server")
	assert.Equal(t, "kept\n", string(b))
	base := filepath.Join(m.state, "boxsh", "sessions")
	r := runBoxshIn(t, ctx, t.TempDir(), "", nil, "sessions", "--base", base)
	require.Equal(t, 0, r.code(), "%s", r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 1, "the MCP session's sandbox is gone: %s", r.stdout)
	assert.Contains(t, lines[0], a.Workspace)
	assert.Contains(t, lines[0], "sandbox keep")
	assert.Contains(t, lines[0], "ended")
}

// TestSandboxesAudit checks --audit with --sandboxes: one log, each entry
// naming its sandbox. Management calls are logged too. The audit tool of a
// sandbox's endpoint answers that sandbox's entries only:
//   - a client of alpha reads none of beta's;
//   - a sandbox made again under a name reads none of its predecessor's;
//   - an MCP session's sandbox reads only its own.
func TestSandboxesAudit(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	m := startMany(t, ctx, "--audit", path, "--network", "allowlist", "--allow-domain", "allowed.example")
	a := m.create(t, "alpha", "workspace")
	b := m.create(t, "beta", "empty")
	sa := m.connect(t, ctx, a.Endpoint, a.Token, "")
	sb := m.connect(t, ctx, b.Endpoint, b.Token, "2025-06-18")
	sh(t, ctx, sa, "echo alpha-cmd")
	sh(t, ctx, sb, "echo beta-cmd; curl -s --max-time 5 http://beta-host.example/ >/dev/null; true")

	audit := func(s *mcp.ClientSession) tool.AuditOutput {
		t.Helper()
		var got tool.AuditOutput
		sdkOK(t, ctx, s, "audit", map[string]any{"last": 100}, &got)
		return got
	}
	got := audit(sa)
	assert.Equal(t, path, got.Path)
	require.Len(t, got.Entries, 1, "%+v", got.Entries)
	assert.Equal(t, "alpha", got.Entries[0].Sandbox)
	assert.Equal(t, "echo alpha-cmd", got.Entries[0].Args["command"])
	raw, err := json.Marshal(got)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "beta", "alpha's client reads beta's entries")

	got = audit(sb)
	require.Len(t, got.Entries, 2, "%+v", got.Entries)
	// The decision is written while the call runs, the call once answered.
	network, call := got.Entries[0], got.Entries[1]
	assert.Equal(t, "echo beta-cmd; curl -s --max-time 5 http://beta-host.example/ >/dev/null; true", call.Args["command"])
	assert.Equal(t, tool.AuditNetwork, network.Kind)
	assert.Equal(t, "beta-host.example", network.Host)
	assert.False(t, *network.Allowed)
	for _, e := range got.Entries {
		assert.Equal(t, "beta", e.Sandbox)
	}

	// Management calls: an apply of alpha, beta deleted and made again,
	// which then sees none of the first beta's entries.
	status, body := m.do(t, http.MethodPost, "/v1/sandboxes/alpha/apply", m.token, map[string]any{"dry_run": true})
	require.Equal(t, http.StatusOK, status, "%s", body)
	status, body = m.do(t, http.MethodDelete, "/v1/sandboxes/beta", m.token, nil)
	require.Equal(t, http.StatusNoContent, status, "%s", body)
	b = m.create(t, "beta", "empty")
	sb = m.connect(t, ctx, b.Endpoint, b.Token, "")
	assert.Empty(t, audit(sb).Entries, "the new beta reads the old one's")
	got = audit(sa)
	require.Len(t, got.Entries, 3, "%+v", got.Entries)
	apply := got.Entries[2]
	assert.Equal(t, tool.AuditSandbox, apply.Kind)
	assert.Equal(t, "apply", apply.Tool)
	assert.Equal(t, true, apply.Args["dry_run"])
	assert.Regexp(t, `^rest 127\.0\.0\.1:\d+$`, apply.Client)

	// An MCP session's sandbox reads its own entries only.
	legacy := m.connect(t, ctx, "/mcp", m.token, "2025-06-18")
	sh(t, ctx, legacy, "echo legacy-cmd")
	got = audit(legacy)
	require.Len(t, got.Entries, 1, "%+v", got.Entries)
	assert.True(t, strings.HasPrefix(got.Entries[0].Sandbox, "mcp-"), got.Entries[0].Sandbox)
	assert.Equal(t, "echo legacy-cmd", got.Entries[0].Args["command"])
	assert.Regexp(t, `^http session [0-9a-f]{12}$`, got.Entries[0].Client)

	// The file holds them all, every entry naming its sandbox.
	var managed []string
	for _, e := range readAudit(t, path) {
		assert.NotEmpty(t, e.Sandbox, "%+v", e)
		if e.Kind == tool.AuditSandbox {
			managed = append(managed, e.Tool+" "+e.Sandbox)
		}
	}
	require.Len(t, managed, 6, "%q", managed)
	assert.Equal(t, []string{"create alpha", "create beta", "apply alpha", "delete beta", "create beta"}, managed[:5])
	assert.Regexp(t, `^create mcp-`, managed[5])
	r := runBoxsh(t, ctx, "", "audit", path)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, ` [alpha] sandbox apply dry_run=true ok `)
	assert.Contains(t, r.stdout, ` [beta] network http beta-host.example:80 refused`)
}
