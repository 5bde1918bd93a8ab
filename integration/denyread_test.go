//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// denyReadProject is a project with a secret that the default denyRead
// rules cover (.env), in config/, and the arguments of a sandbox that
// binds it wr:, with its own HOME.
func denyReadProject(t *testing.T) (project string, env []string, args []string) {
	t.Helper()
	project = t.TempDir()
	writeHostFile(t, filepath.Join(project, "config", ".env"), "SECRET=1\n", 0o644)
	writeHostFile(t, filepath.Join(project, "README"), "readme\n", 0o644)
	return project, policyEnv(t.TempDir()), []string{"--sandbox", "--bind", "wr:" + project}
}

// restartInit kills boxsh-init from inside (the supervisor starts a new
// sandbox for the next call) and returns the output of that next call.
func restartInit(t *testing.T, s *server, next string) message {
	t.Helper()
	s.call("bash", map[string]any{"command": "kill -TERM 1; sleep 5"})
	return s.call("bash", map[string]any{"command": next})
}

// TestEscapeDenyReadWalkFlood checks a command that floods the bind with
// more files than the walk for denyRead name patterns looks at, then has
// the sandbox restarted (issue 14, finding 3). The restart must not serve
// .env in clear. The session ends with one line naming the bind, the count
// and how to narrow it. A new session refuses to start too.
func TestEscapeDenyReadWalkFlood(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	project, env, args := denyReadProject(t)
	s := startServer(t, ctx, serverOptions{dir: project, env: env, args: args})
	out := s.call("bash", map[string]any{"command": "cat config/.env; echo; mkdir flood && cd flood && perl -e 'for (1..200001) { $s = q(a) . int($_ / 50000); open(F, q(>), $s) unless -e $s; link($s, qq(l$_)) or die $! }' && echo flooded", "timeout": 120}).bash(t)
	require.Contains(t, out.Stdout, "flooded", out.Stderr)
	require.NotContains(t, out.Stdout, "SECRET=1", "covered at the first start")

	res := restartInit(t, s, "cat config/.env")
	if res.Error == nil {
		assert.NotContains(t, res.toolResult(t).text(), "SECRET=1", "the restarted sandbox serves .env in clear")
	}
	st := s.waitExit(10 * time.Second)
	assert.Equal(t, 1, st.ExitCode(), "the session ends")
	stderr := s.stderr.String()
	assert.Contains(t, stderr, "--bind wr:"+project+": the binds hold more than 200000 files, too many to find every match of the denyRead name patterns")
	assert.Contains(t, stderr, "bind a smaller directory, or write the rules as paths")

	r := runBoxshIn(t, ctx, project, "", env, append(args, "-c", "cat config/.env")...)
	assert.Equal(t, 1, r.code())
	assert.NotContains(t, r.stdout, "SECRET=1")
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %s", r.stderr)
	assert.Contains(t, r.stderr, "more than 200000 files")

	// Narrowed (the flood is out of the bind), it starts again.
	require.NoError(t, os.RemoveAll(filepath.Join(project, "flood")))
	r = runBoxshIn(t, ctx, project, "", env, append(args, "-c", "cat README; cat config/.env")...)
	assert.Equal(t, "readme\n", r.stdout, r.stderr)
}

// TestEscapeDenyReadMoveOutOfSight checks the other ways to get a covered
// file out of the walk's sight before a restart or the next session:
//   - a rename of its directory into one the walk skips (node_modules);
//   - a directory made unreadable to the walk;
//   - a hard link under another name.
func TestEscapeDenyReadMoveOutOfSight(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	project, env, args := denyReadProject(t)
	s := startServer(t, ctx, serverOptions{dir: project, env: env, args: args})
	out := s.call("bash", map[string]any{"command": tryFunc + `
		mkdir -p node_modules
		try mv mv config node_modules/
		try mvcopy sh -c 'cp -r config node_modules/ 2>/dev/null'
		try link ln config/.env linked
		try linkdir sh -c 'ln config/.env node_modules/x.txt'
		cat node_modules/config/.env linked node_modules/x.txt 2>/dev/null`}).bash(t)
	assert.Contains(t, out.Stdout, "mv-refused", "the directory above a covered file is pinned")
	assert.Contains(t, out.Stdout, "link-refused", "a hard link to the covered inode")
	assert.Contains(t, out.Stdout, "linkdir-refused")
	assert.NotContains(t, out.Stdout, "SECRET=1")

	res := restartInit(t, s, "cat config/.env node_modules/config/.env linked 2>&1")
	require.Nil(t, res.Error)
	assert.NotContains(t, res.toolResult(t).text(), "SECRET=1", "after a restart")
	s.stop()

	// A directory of the user's made unreadable before a restart, to be
	// made readable again inside: the restarted sandbox covers it whole.
	project, env, args = denyReadProject(t)
	s = startServer(t, ctx, serverOptions{dir: project, env: env, args: args})
	out = s.call("bash", map[string]any{"command": "chmod 000 config && echo hidden"}).bash(t)
	require.Equal(t, "hidden\n", out.Stdout, out.Stderr)
	t.Cleanup(func() { os.Chmod(filepath.Join(project, "config"), 0o755) })
	res = restartInit(t, s, "chmod 755 config; cat config/.env; echo end")
	require.Nil(t, res.Error)
	text := res.toolResult(t).text()
	assert.NotContains(t, text, "SECRET=1")
	assert.Contains(t, text, "end")
	read := s.call("read", map[string]any{"path": filepath.Join(project, "config", ".env")}).toolResult(t)
	assert.True(t, read.IsError, read.text())
	assert.NotContains(t, read.text(), "SECRET=1")
	s.stop()
}
