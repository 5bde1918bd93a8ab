//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEscapeProjectPolicyCannotWidenNextSession checks that a sandboxed
// command that writes the project's settings file cannot loosen the next
// session (issue 14, finding 2). An untrusted project file only narrows.
// Two sessions run one after the other in a project bound wr:, as an MCP
// client would start them.
func TestEscapeProjectPolicyCannotWidenNextSession(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	home, project, outside := t.TempDir(), t.TempDir(), t.TempDir()
	env := append(policyEnv(home), "BOXSH_TEST_GH_TOKEN=ghp_secret")
	writeHostFile(t, filepath.Join(project, ".env"), "SECRET=1\n", 0o644)
	args := []string{"--sandbox", "--bind", "wr:" + project}

	// Session 1: the agent tries to plant a widening policy; .boxsh/ is
	// protected, so the write fails, and the plant comes from a cloned
	// repository instead.
	s := startServer(t, ctx, serverOptions{dir: project, env: env, args: args})
	planted := `{"filesystem": {"allowRead": [".env"], "allowWrite": ["` + outside + `"]},
		"environment": {"pass": ["BOXSH_TEST_GH_TOKEN"]}, "limits": {"maxOutput": 1073741824}}`
	out := s.call("bash", map[string]any{"command": "mkdir -p .boxsh && cat > .boxsh/policy.json <<'EOF' && echo planted\n" + planted + "\nEOF\n"}).bash(t)
	s.stop()
	assert.NotContains(t, out.Stdout, "planted", "the sandbox wrote .boxsh/policy.json")
	writeHostFile(t, filepath.Join(project, ".boxsh", "policy.json"), planted, 0o644)

	// Session 2: none of it applies; the warning names the file and keys.
	s = startServer(t, ctx, serverOptions{dir: project, env: env, args: args})
	out = s.call("bash", map[string]any{"command": "cat .env; echo \"[$BOXSH_TEST_GH_TOKEN]\"; touch " + outside + "/planted && echo wrote-outside"}).bash(t)
	assert.NotContains(t, out.Stdout, "SECRET=1", "allowRead of .env from the project file")
	assert.Contains(t, out.Stdout, "[]\n", "environment.pass of a token from the project file")
	assert.NotContains(t, out.Stdout, "wrote-outside")
	s.stop()
	requireHostAbsent(t, filepath.Join(outside, "planted"))
	projectFile := filepath.Join(project, ".boxsh", "policy.json")
	assert.Contains(t, s.stderr.String(), "settings file "+projectFile+" is not trusted, so it can only narrow your policy: ignored filesystem.allowRead [\".env\"], filesystem.allowWrite")
	assert.Contains(t, s.stderr.String(), `environment.pass ["BOXSH_TEST_GH_TOKEN"], limits.maxOutput 1073741824`)

	// The user trusts it from outside: then it applies, until it changes.
	r := runBoxshIn(t, ctx, project, "", env, "policy", "trust")
	require.Equal(t, 0, r.code(), r.stderr)
	s = startServer(t, ctx, serverOptions{dir: project, env: env, args: args})
	out = s.call("bash", map[string]any{"command": "cat .env; echo \"[$BOXSH_TEST_GH_TOKEN]\"; echo '{}' > .boxsh/policy.json"}).bash(t)
	assert.Contains(t, out.Stdout, "SECRET=1\n[ghp_secret]\n", "trusted, the file widens")
	s.stop()
	writeHostFile(t, projectFile, planted+" ", 0o644) // one byte more
	s = startServer(t, ctx, serverOptions{dir: project, env: env, args: args})
	out = s.call("bash", map[string]any{"command": "cat .env; echo \"[$BOXSH_TEST_GH_TOKEN]\""}).bash(t)
	assert.NotContains(t, out.Stdout, "SECRET=1", "a changed file is untrusted again")
	assert.Contains(t, out.Stdout, "[]\n")
}

// TestEscapeTrustStoreNotWritableFromInside checks that the trust store
// cannot be written from inside. A sandbox that could write the user's
// boxsh configuration directory could trust its own project file, or write
// the global settings file. Under a wr: bind of $HOME the directory must be
// unwritable (the protected paths). boxsh refuses to start while nothing
// protects it.
func TestEscapeTrustStoreNotWritableFromInside(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	home := t.TempDir()
	project := filepath.Join(home, "proj")
	writeHostFile(t, filepath.Join(project, ".env"), "SECRET=1\n", 0o644)
	projectFile := filepath.Join(project, ".boxsh", "policy.json")
	writeHostFile(t, projectFile, `{"filesystem": {"allowRead": [".env"]}}`, 0o644)
	env := policyEnv(home)

	script := `mkdir -p ~/.config/boxsh; echo '{"files": [{"path": "` + projectFile + `", "sha256": "x"}]}' > ~/.config/boxsh/trusted.json;
		echo '{"filesystem": {"allowRead": [".env"]}}' > ~/.config/boxsh/policy.json; boxsh policy trust; echo done`
	r := runBoxshIn(t, ctx, project, "", env, "--sandbox", "--bind", "wr:"+home, "-c", script)
	if r.code() != 0 {
		assert.Contains(t, r.stderr, "would let the sandbox write boxsh's own settings in "+filepath.Join(home, ".config", "boxsh"))
	} else {
		assert.Contains(t, r.stdout, "done")
	}
	requireHostAbsent(t, filepath.Join(home, ".config", "boxsh", "trusted.json"))
	requireHostAbsent(t, filepath.Join(home, ".config", "boxsh", "policy.json"))

	r = runBoxshIn(t, ctx, project, "", env, "--sandbox", "--bind", "wr:"+project, "-c", "cat .env")
	assert.NotContains(t, r.stdout, "SECRET=1")
}

// TestEscapeConfigDirInWritableBindRefused checks that boxsh refuses to
// start a sandbox whose XDG_CONFIG_HOME is inside a writable bind. That
// would expose the trust store and the global settings.
func TestEscapeConfigDirInWritableBindRefused(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	project := t.TempDir()
	cfg := filepath.Join(project, "cfg")
	require.NoError(t, os.MkdirAll(cfg, 0o755))
	r := runBoxshIn(t, ctx, project, "", []string{"XDG_CONFIG_HOME=" + cfg}, "--sandbox", "--bind", "wr:"+project, "-c", "echo ran")
	assert.Equal(t, 1, r.code(), r.stderr)
	assert.NotContains(t, r.stdout, "ran")
	assert.Contains(t, r.stderr, filepath.Join(cfg, "boxsh"))
	assert.Contains(t, r.stderr, "--bind wr:"+project)
}
