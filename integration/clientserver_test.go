package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
	"github.com/boxsh/boxsh/client/session"
)

// TestClientStartServerReview checks a Go program that starts a server of
// many sandboxes with client.StartServer. The program reviews and applies a
// sandbox's changes to the workspace through client.Server, as boxsh
// changes, diff and apply do a session's.
func TestClientStartServerReview(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "old.txt"), []byte("old\n"), 0o644))
	srv, err := client.StartServer(ctx, client.ServerOptions{
		Binary: boxshPath(), Dir: ws,
		Env: append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "XDG_RUNTIME_DIR="+t.TempDir()),
	})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Kill() })
	assert.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)
	assert.NotEmpty(t, srv.Token)

	info, err := srv.Create(ctx, "review", client.FromWorkspace)
	require.NoError(t, err)
	sb := srv.Sandbox(info.Name, info.Token)
	defer sb.Close()
	res, err := sb.Exec(ctx, client.ExecRequest{Command: `printf 'package main\n\nfunc main() {}\n' > main.go; rm old.txt; echo new > new.txt`})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr)

	changes, err := srv.Changes(ctx, "review")
	require.NoError(t, err)
	kinds := map[string]session.Kind{}
	for _, c := range changes {
		kinds[c.Path] = c.Kind
	}
	assert.Equal(t, map[string]session.Kind{"main.go": session.Modified, "old.txt": session.Deleted, "new.txt": session.Added}, kinds)

	diff, err := srv.Diff(ctx, "review", "main.go")
	require.NoError(t, err)
	assert.Contains(t, diff, "+func main() {}")
	assert.NotContains(t, diff, "new.txt", "the diff of one path")
	all, err := srv.Diff(ctx, "review", "")
	require.NoError(t, err)
	assert.Contains(t, all, "new.txt")

	dry, err := srv.Apply(ctx, "review", session.ApplyOptions{DryRun: true})
	require.NoError(t, err)
	assert.Len(t, dry.Applied, 3)
	assert.NoFileExists(t, filepath.Join(ws, "new.txt"), "a dry run writes nothing")

	applied, err := srv.Apply(ctx, "review", session.ApplyOptions{Paths: []string{"new.txt", "main.go"}})
	require.NoError(t, err)
	assert.Len(t, applied.Applied, 2)
	b, err := os.ReadFile(filepath.Join(ws, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(b))
	assert.FileExists(t, filepath.Join(ws, "old.txt"), "a path left out is not applied")

	_, err = srv.Apply(ctx, "review", session.ApplyOptions{Protect: []string{".env"}})
	assert.ErrorContains(t, err, "Protect is the server's policy")
	_, err = srv.Changes(ctx, "missing")
	var he *client.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusNotFound, he.StatusCode)

	require.NoError(t, srv.Delete(ctx, "review"))
	require.NoError(t, srv.Close())
	<-srv.Done()
	_, err = srv.List(ctx)
	assert.Error(t, err, "the server has stopped")
}

// TestClientStartServerFails checks that StartServer reports a server that
// cannot start with its own words.
func TestClientStartServerFails(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	_, err := client.StartServer(ctx, client.ServerOptions{Binary: boxshPath(), Dir: t.TempDir(), Args: []string{"--max-sandboxes", "0"}})
	var se *client.StartError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Message, "--max-sandboxes")
	assert.Equal(t, 2, se.ExitCode)
}
