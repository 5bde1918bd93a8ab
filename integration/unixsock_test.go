package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
)

// requireSocket checks that path is a socket of mode 0600.
func requireSocket(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, fi.Mode().Type(), "%s is a socket", path)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only the user connects to %s", path)
}

// boxsh --rpc --listen unix:PATH serves MCP on a socket of mode 0600 (an
// initialize and a bash call of the Go SDK over it), still asks for the
// token it has, refuses a second server on the live socket, replaces the
// socket a killed server left, and removes its socket at SIGTERM.
func TestListenUnix(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "boxsh.sock")
	h := startHTTPOn(t, ctx, "unix:"+path, t.TempDir(), nil, "--sandbox")
	assert.Equal(t, "http://unix:"+path+":/mcp", h.printed)
	requireSocket(t, path)
	s := h.sdkHTTP(t, ctx, "")
	var out bashOutput
	sdkStructured(t, sdkCall(t, ctx, s, "bash", map[string]any{"command": "cat /proc/1/comm"}), &out)
	assert.Equal(t, "boxsh-init\n", out.Stdout, "the call ran in the sandbox")
	status, _ := h.rawPost(t, "tools/list", nil, map[string]string{"Authorization": ""})
	assert.Equal(t, http.StatusUnauthorized, status, "the token is asked for on a socket too")
	status, _ = h.rawPost(t, "tools/list", nil, nil)
	assert.Equal(t, http.StatusOK, status)

	r := runBoxsh(t, ctx, "", "--rpc", "--listen", "unix:"+path, "--no-auth")
	assert.NotEqual(t, 0, r.code())
	assert.Contains(t, r.stderr, "another server is listening on unix:"+path)
	status, _ = h.rawPost(t, "tools/list", nil, nil)
	assert.Equal(t, http.StatusOK, status, "the first server goes on")

	// Killed, the server leaves its socket; the next replaces it.
	require.NoError(t, h.cmd.Process.Kill())
	<-h.exited
	requireSocket(t, path)
	h = startHTTPOn(t, ctx, "unix:"+path, t.TempDir(), nil)
	requireSocket(t, path)
	status, _ = h.rawPost(t, "tools/list", nil, nil)
	assert.Equal(t, http.StatusOK, status, "the server on the replaced socket")

	require.NoError(t, h.cmd.Process.Signal(syscall.SIGTERM))
	<-h.exited
	_, err := os.Lstat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "the socket is removed at SIGTERM")
}

// --no-auth is taken on a Unix socket, where the socket's mode is the
// access control, and a file that is not a socket is never replaced.
func TestListenUnixNoAuth(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("keep\n"), 0o600))
	r := runBoxsh(t, ctx, "", "--rpc", "--listen", "unix:"+file, "--no-auth")
	assert.NotEqual(t, 0, r.code())
	assert.Contains(t, r.stderr, "not a socket: refusing to replace it")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "keep\n", string(b))

	path := filepath.Join(dir, "boxsh.sock")
	h := startHTTPOn(t, ctx, "unix:"+path, t.TempDir(), nil, "--no-auth")
	requireSocket(t, path)
	status, _ := h.rawPost(t, "tools/list", nil, map[string]string{"Authorization": ""})
	assert.Equal(t, http.StatusOK, status, "no token on the socket")
}

// A server of many sandboxes on a Unix socket: the Go client, given the
// base URL the server prints, creates a sandbox and runs a command in it.
func TestListenUnixSandboxes(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "seed.txt"), []byte("seed\n"), 0o644))
	path := filepath.Join(t.TempDir(), "boxsh.sock")
	h := startHTTPOn(t, ctx, "unix:"+path, ws, []string{"XDG_STATE_HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + t.TempDir()}, "--sandboxes", "--workers", "1")
	requireSocket(t, path)
	srv := client.NewServer("http://unix:"+path+":", h.token, nil)
	info, err := srv.Create(ctx, "a", client.FromWorkspace)
	require.NoError(t, err)
	res, err := srv.Sandbox("a", info.Token).Run(ctx, "cat seed.txt")
	require.NoError(t, err)
	assert.Equal(t, "seed\n", res.Stdout)
	list, err := srv.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "a", list[0].Name)
}
