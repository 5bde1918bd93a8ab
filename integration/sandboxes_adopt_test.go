package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
)

// TestSandboxesReadopt kills a server (kill -9) and starts it again on the
// same state directory. It hosts its named sandboxes again: listed, with
// their files and new processes. They have no token but the server's until
// a new one is asked for. An MCP session's sandbox is gone.
func TestSandboxesReadopt(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx, "--sandbox-disk", "64M")
	srv := client.NewServer(m.base, m.token, nil)
	keep, err := srv.Create(ctx, "keep", client.FromWorkspace)
	require.NoError(t, err)
	empty, err := srv.CreateWith(ctx, client.CreateRequest{Name: "blank", From: client.FromEmpty, Disk: "16M"})
	require.NoError(t, err)
	// countSleep counts the sandbox's processes running sleep 600.
	const countSleep = `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline; echo; done | grep -c '^sleep 600'`
	_, err = srv.Sandbox("keep", keep.Token).Run(ctx, "echo kept > kept.txt; sleep 600 >/dev/null 2>&1 &")
	require.NoError(t, err)
	res, err := srv.Sandbox("keep", keep.Token).Run(ctx, countSleep)
	require.NoError(t, err)
	require.Equal(t, "1\n", res.Stdout)
	_, err = srv.Sandbox("blank", empty.Token).Run(ctx, "echo blank > b.txt")
	require.NoError(t, err)
	legacy := m.connect(t, ctx, "/mcp", m.token, "2025-06-18")
	sh(t, ctx, legacy, "echo gone > gone.txt")
	require.Len(t, m.list(t), 3)

	require.NoError(t, m.cmd.Process.Kill())
	select {
	case <-m.exited:
	case <-time.After(exitTimeout):
		t.Fatal("the server did not die")
	}

	h := startHTTPIn(t, ctx, m.workspace, []string{"XDG_STATE_HOME=" + m.state, "XDG_RUNTIME_DIR=" + m.run}, "--sandboxes", "--workers", "1", "--sandbox-disk", "64M")
	m2 := &manyBoxsh{httpBoxsh: h, workspace: m.workspace, state: m.state, run: m.run}
	srv2 := client.NewServer(m2.base, m2.token, nil)
	list, err := srv2.List(ctx)
	require.NoError(t, err)
	var got []string
	for _, s := range list {
		got = append(got, s.Name)
		if s.Name == "blank" {
			require.NotNil(t, s.Disk)
			assert.Equal(t, int64(16<<20), s.Disk.Limit, "its own disk limit")
			assert.Equal(t, client.FromEmpty, s.From)
		}
	}
	sort.Strings(got)
	assert.Equal(t, []string{"blank", "keep"}, got, "the named sandboxes, not the MCP session's")

	// The same files, through the same name, in new processes.
	res, err = srv2.Sandbox("keep", m2.token).Run(ctx, "cat kept.txt seed.txt; "+countSleep)
	require.NoError(t, err)
	assert.Equal(t, "kept\nseed\n0\n", res.Stdout, "the files, not the processes")
	res, err = srv2.Sandbox("blank", m2.token).Run(ctx, "cat b.txt")
	require.NoError(t, err)
	assert.Equal(t, "blank\n", res.Stdout)

	// The old token is not kept; a new one is asked for.
	_, err = srv2.Sandbox("keep", keep.Token).Run(ctx, "true")
	var he *client.HTTPError
	require.ErrorAs(t, err, &he, "the old token")
	assert.Equal(t, http.StatusUnauthorized, he.StatusCode)
	tok, err := srv2.NewToken(ctx, "keep")
	require.NoError(t, err)
	res, err = srv2.Sandbox("keep", tok).Run(ctx, "cat kept.txt")
	require.NoError(t, err)
	assert.Equal(t, "kept\n", res.Stdout)
	_, err = srv2.Sandbox("blank", tok).Run(ctx, "true")
	require.ErrorAs(t, err, &he, "keep's token on blank")
	assert.Equal(t, http.StatusUnauthorized, he.StatusCode)

	// Deleting one removes its files; the MCP session's are gone.
	require.NoError(t, srv2.Delete(ctx, "keep"))
	_, err = os.Stat(keep.Workspace)
	assert.ErrorIs(t, err, os.ErrNotExist)
	sessions, err := os.ReadDir(filepath.Join(m.state, "boxsh", "sessions"))
	require.NoError(t, err)
	assert.Len(t, sessions, 1, "blank's only")
}
