package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// policyEnv overrides HOME (and clears XDG_CONFIG_HOME), so that the
// global settings file is home's.
func policyEnv(home string) []string {
	return []string{"HOME=" + home, "XDG_CONFIG_HOME="}
}

func TestPolicyInitAndShow(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	home, project := t.TempDir(), t.TempDir()
	env := policyEnv(home)

	r := runBoxshIn(t, ctx, project, "", env, "policy", "init")
	require.Equal(t, 0, r.code(), r.stderr)
	projectFile := filepath.Join(project, ".boxsh", "policy.json")
	b, err := os.ReadFile(projectFile)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"~/.ssh"`)
	r = runBoxshIn(t, ctx, project, "", env, "policy", "init")
	assert.Equal(t, 1, r.code(), "an existing file is kept")
	assert.Contains(t, r.stderr, "exists (--force replaces it)")

	r = runBoxshIn(t, ctx, project, "", env, "policy", "init", "--global")
	require.Equal(t, 0, r.code(), r.stderr)
	globalFile := filepath.Join(home, ".config", "boxsh", "policy.json")
	require.FileExists(t, globalFile)
	require.NoError(t, os.WriteFile(globalFile, []byte(`{"limits": {"pids": 100, "memory": "1G"}, "filesystem": {"denyWrite": ["docs"]}}`), 0o644))
	require.NoError(t, os.WriteFile(projectFile, []byte(`{"limits": {"memory": "2G"}}`), 0o644))

	r = runBoxshIn(t, ctx, project, "", env, "policy", "show", "--json", "--pids", "7")
	require.Equal(t, 0, r.code(), r.stderr)
	var p struct {
		DenyRead  []struct{ Value, Source string }
		DenyWrite []struct{ Value, Source string }
		Memory    struct {
			Value  int64
			Source string
		}
		Pids struct {
			Value  int
			Source string
		}
		Files []string
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p), r.stdout)
	assert.Equal(t, []string{globalFile, projectFile}, p.Files)
	assert.Equal(t, int64(1<<30), p.Memory.Value, "an untrusted project file cannot raise the user's limit")
	assert.Equal(t, globalFile, p.Memory.Source)
	assert.Equal(t, 7, p.Pids.Value, "flags win over files")
	assert.Equal(t, "--pids", p.Pids.Source)
	require.Len(t, p.DenyWrite, 1)
	assert.Equal(t, globalFile, p.DenyWrite[0].Source)
	assert.NotEmpty(t, p.DenyRead)
	assert.Equal(t, "boxsh: warning: settings file "+projectFile+` is not trusted, so it can only narrow your policy: ignored limits.memory "2G" (after reviewing it, `+"`boxsh policy trust "+projectFile+"`"+` lets it widen the policy)`+"\n", r.stderr)

	r = runBoxshIn(t, ctx, project, "", env, "policy", "show")
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Regexp(t, `not trusted \(narrows only\):\s+`+regexpQuote(projectFile)+` \(ignored: limits.memory "2G"\)`, r.stdout)

	// Once trusted, the project's file merges after the global one.
	r = runBoxshIn(t, ctx, project, "", env, "policy", "trust")
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "trusted "+projectFile)
	fi, err := os.Stat(filepath.Join(home, ".config", "boxsh", "trusted.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	r = runBoxshIn(t, ctx, project, "", env, "policy", "show", "--json")
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Empty(t, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p), r.stdout)
	assert.Equal(t, int64(2<<30), p.Memory.Value, "a trusted project file wins over the global one")
	assert.Equal(t, projectFile, p.Memory.Source)
	r = runBoxshIn(t, ctx, project, "", env, "policy", "show")
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Regexp(t, `memory\s+2147483648 bytes\s+`+regexpQuote(projectFile), r.stdout)
	r = runBoxshIn(t, ctx, project, "", env, "policy", "trusted")
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Regexp(t, regexpQuote(projectFile)+`\s+sha256 [0-9a-f]{16}\s+\S+\s+trusted\n`, r.stdout)

	// A change makes it untrusted again; untrust forgets it.
	require.NoError(t, os.WriteFile(projectFile, []byte(`{"limits": {"memory": "3G"}}`), 0o644))
	r = runBoxshIn(t, ctx, project, "", env, "policy", "trusted")
	assert.Contains(t, r.stdout, "changed since trusted: not trusted")
	r = runBoxshIn(t, ctx, project, "", env, "policy", "show", "--json")
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p), r.stdout)
	assert.Equal(t, int64(1<<30), p.Memory.Value)
	assert.Contains(t, r.stderr, `ignored limits.memory "3G"`)
	r = runBoxshIn(t, ctx, project, "", env, "policy", "untrust")
	require.Equal(t, 0, r.code(), r.stderr)
	r = runBoxshIn(t, ctx, project, "", env, "policy", "trusted")
	assert.Equal(t, "no trusted settings files\n", r.stdout)
	r = runBoxshIn(t, ctx, project, "", env, "policy", "untrust")
	assert.Equal(t, 1, r.code())
	assert.Contains(t, r.stderr, "is not trusted")
}

func regexpQuote(s string) string {
	return strings.NewReplacer(".", `\.`, "/", `/`).Replace(s)
}

// TestPolicyFileErrors checks that a broken settings file stops every mode
// with one line naming the file, the key and what was expected.
func TestPolicyFileErrors(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	home, project := t.TempDir(), t.TempDir()
	env := policyEnv(home)
	file := filepath.Join(project, ".boxsh", "policy.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte("{\n  \"limits\": {\"pids\": \"lots\"}\n}\n"), 0o644))
	for _, args := range [][]string{{"-c", "true"}, {"--rpc"}, {"spec"}, {"policy", "show"}} {
		r := runBoxshIn(t, ctx, project, "", env, args...)
		assert.Equal(t, 1, r.code(), "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, file+": line 2: limits.pids: expected a whole number, got string", "%v", args)
		assert.Empty(t, r.stdout, "%v", args)
	}
	r := runBoxshIn(t, ctx, t.TempDir(), "", env, "--policy", "/nonexistent.json", "-c", "true")
	assert.Equal(t, 1, r.code())
	assert.Contains(t, r.stderr, "/nonexistent.json")
	r = runBoxshIn(t, ctx, t.TempDir(), "", env, "--memory", "lots", "-c", "true")
	assert.Equal(t, 2, r.code(), "a bad flag value is a usage error")
	assert.Contains(t, r.stderr, `--memory "lots": expected a size such as 512M or 2G`)
}

// TestPolicyBashLimits checks that --timeout-default and --max-output, from
// a flag or a settings file, apply to bash calls that do not say otherwise.
func TestPolicyBashLimits(t *testing.T) {
	ctx := testContext(t)
	inBothModes(t, func(t *testing.T, sandbox []string) {
		s := startServer(t, ctx, serverOptions{args: append([]string{"--timeout-default", "0.5", "--max-output", "1K"}, sandbox...)})
		out := s.call("bash", map[string]any{"command": "sleep 5; echo late"}).bash(t)
		assert.Equal(t, -1, out.ExitCode, "the default timeout applies")
		assert.Equal(t, "timeout", out.Stderr)
		out = s.call("bash", map[string]any{"command": "sleep 1; echo done", "timeout": 5}).bash(t)
		assert.Equal(t, "done\n", out.Stdout, "a call's own timeout wins")
		out = s.call("bash", map[string]any{"command": "head -c 5000 /dev/zero | tr '\\0' x"}).bash(t)
		assert.Len(t, out.Stdout, 1024)
		assert.True(t, out.StdoutTruncated)
	})

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".boxsh"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".boxsh", "policy.json"), []byte(`{"limits": {"maxOutput": 10}}`), 0o644))
	s := startServer(t, ctx, serverOptions{dir: dir})
	out := s.call("bash", map[string]any{"command": "echo 0123456789abcdef"}).bash(t)
	assert.Equal(t, "0123456789", out.Stdout, "the project's settings file applies")
}

// TestPolicyEnvironment checks that commands get a clean environment: the
// base variables and what the policy passes or sets. They never get a
// variable that looks like a secret unless a rule names it exactly.
func TestPolicyEnvironment(t *testing.T) {
	ctx := testContext(t)
	t.Setenv("BOXSH_TEST_TOKEN", "leaked-token")
	t.Setenv("BOXSH_TEST_PLAIN", "plain-value")
	t.Setenv("BOXSH_TEST_NAMED_SECRET", "named")
	t.Setenv("EDITOR", "vim")
	inBothModes(t, func(t *testing.T, sandbox []string) {
		s := startServer(t, ctx, serverOptions{args: sandbox})
		out := s.call("bash", map[string]any{"command": "env"}).bash(t)
		assert.NotContains(t, out.Stdout, "leaked-token")
		assert.NotContains(t, out.Stdout, "EDITOR=")
		assert.NotContains(t, out.Stdout, "plain-value", "only what the policy passes")
		assert.Contains(t, out.Stdout, "HOME=")
		assert.Contains(t, out.Stdout, "PATH=")

		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, ".boxsh"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".boxsh", "policy.json"), []byte(`{"environment": {
			"pass": ["BOXSH_TEST_*", "BOXSH_TEST_NAMED_SECRET"], "set": {"CI": "true"}}}`), 0o644))
		home := t.TempDir()
		s = startServer(t, ctx, serverOptions{args: sandbox, dir: dir, env: policyEnv(home)})
		out = s.call("bash", map[string]any{"command": "env"}).bash(t)
		assert.NotContains(t, out.Stdout, "BOXSH_TEST_PLAIN", "an untrusted project file passes nothing")
		assert.NotContains(t, out.Stdout, "BOXSH_TEST_NAMED_SECRET")
		assert.Contains(t, out.Stdout, "CI=true\n", "but may set new variables")
		s.stop()
		assert.Contains(t, s.stderr.String(), `ignored environment.pass ["BOXSH_TEST_*","BOXSH_TEST_NAMED_SECRET"]`)
		r := runBoxshIn(t, ctx, dir, "", policyEnv(home), "policy", "trust")
		require.Equal(t, 0, r.code(), r.stderr)
		s = startServer(t, ctx, serverOptions{args: sandbox, dir: dir, env: policyEnv(home)})
		out = s.call("bash", map[string]any{"command": "env"}).bash(t)
		assert.Contains(t, out.Stdout, "BOXSH_TEST_PLAIN=plain-value\n", "a prefix rule passes")
		assert.NotContains(t, out.Stdout, "leaked-token", "a prefix rule never passes a secret")
		assert.Contains(t, out.Stdout, "BOXSH_TEST_NAMED_SECRET=named\n", "an exact rule does")
		assert.Contains(t, out.Stdout, "CI=true\n")

		// Terminals get the same environment.
		term := s.call("run_in_terminal", map[string]any{"command": "echo \"[$BOXSH_TEST_TOKEN|$CI]\""}).toolResult(t)
		assert.Contains(t, term.text(), "[|true]")
	})

	// The sandboxed shell too; boxsh as a plain shell keeps its environment.
	t.Run("shell", func(t *testing.T) {
		r := runBoxsh(t, ctx, "", "-c", `echo "[$BOXSH_TEST_TOKEN]"`)
		assert.Equal(t, "[leaked-token]\n", r.stdout, "unsandboxed, boxsh is the user's shell")
		requireRootless(t)
		r = runBoxsh(t, ctx, "", "--sandbox", "-c", `echo "[$BOXSH_TEST_TOKEN|$HOME]"`)
		assert.Equal(t, "[|"+os.Getenv("HOME")+"]\n", r.stdout, r.stderr)
	})
}

// TestPolicyResourceLimits checks that a memory hog fails under --memory,
// and that the next call works. So does a fork bomb under --pids in the
// sandbox, where the limit counts only the sandbox's processes.
func TestPolicyResourceLimits(t *testing.T) {
	ctx := testContext(t)
	// dd allocates its whole 200 MiB buffer at once.
	hog := `dd if=/dev/zero bs=200M count=1 of=/dev/null`
	inBothModes(t, func(t *testing.T, sandbox []string) {
		s := startServer(t, ctx, serverOptions{args: append([]string{"--memory", "64M"}, sandbox...)})
		out := s.call("bash", map[string]any{"command": hog, "timeout": 30}).bash(t)
		assert.NotEqual(t, 0, out.ExitCode, "the hog fails: %+v", out)
		assert.Contains(t, out.Stderr, "memory exhausted")
		out = s.call("bash", map[string]any{"command": "grep 'Max data' /proc/self/limits; echo next"}).bash(t)
		assert.Contains(t, out.Stdout, "67108864")
		assert.Contains(t, out.Stdout, "next\n")
		term := s.call("run_in_terminal", map[string]any{"command": "grep 'Max data' /proc/self/limits"}).toolResult(t)
		assert.Contains(t, term.text(), "67108864", "terminals are limited too")
	})
	t.Run("fork bomb", func(t *testing.T) {
		requireRootless(t)
		s := startServer(t, ctx, serverOptions{args: []string{"--sandbox", "--pids", "48"}})
		// The bomb runs in the background of its call, so it is killed with
		// the call's process group at the timeout. A call that ended by
		// itself would leave it running, since background processes outlive
		// their call, and holding the sandbox's processes. The call's wait
		// is forked before the bomb and waited on by a builtin: a fork after
		// it may find no process left (the shell would then exit 2 at once).
		out := s.call("bash", map[string]any{"command": "sleep 60 & wait_for=$!; bomb() { bomb | bomb & }; bomb 2>>/tmp/bomb.err; wait $wait_for", "timeout": 3}).bash(t)
		assert.Equal(t, -1, out.ExitCode, "the bomb's call times out: %+v", out)
		out = s.call("bash", map[string]any{"command": "echo next works; grep -ci fork /tmp/bomb.err"}).bash(t)
		next, count, _ := strings.Cut(out.Stdout, "\n")
		assert.Equal(t, "next works", next, "the next call works once the bomb's call is killed: %+v", out)
		failed, err := strconv.Atoi(strings.TrimSpace(count))
		require.NoError(t, err, "%+v", out)
		assert.Positive(t, failed, "the bomb's forks fail: %+v", out)
		out = s.call("bash", map[string]any{"command": "grep 'Max processes' /proc/self/limits"}).bash(t)
		assert.Contains(t, out.Stdout, " 48 ")
	})
}

// TestPolicyFileRules checks that the kernel enforces the file rules in the
// sandbox, through commands and through the file tools alike.
func TestPolicyFileRules(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	project := t.TempDir()
	for name, content := range map[string]string{
		".env": "SECRET=1\n", ".env.example": "SECRET=\n", "certs/server.pem": "PEM\n",
		"keys/id": "key\n", "docs/guide.md": "guide\n", "build/out.txt": "old\n", "src/main.go": "package main\n",
	} {
		p := filepath.Join(project, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	require.NoError(t, os.Symlink(".env", filepath.Join(project, "innocent.txt")))
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".boxsh"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".boxsh", "policy.json"), []byte(`{"filesystem": {
		"denyRead": ["keys"], "allowRead": [".env.example"], "denyWrite": ["docs"], "allowWrite": ["build"]}}`), 0o644))
	env := policyEnv(t.TempDir())
	r := runBoxshIn(t, ctx, project, "", env, "policy", "trust")
	require.Equal(t, 0, r.code(), r.stderr)

	// The project is bound read-only; allowWrite makes build writable.
	s := startServer(t, ctx, serverOptions{dir: project, env: env, args: []string{"--sandbox", "--bind", "ro:" + project}})
	sh := func(cmd string) bashOutput { return s.call("bash", map[string]any{"command": cmd}).bash(t) }

	for _, denied := range []string{".env", "certs/server.pem", "innocent.txt"} {
		out := sh("cat " + denied)
		assert.NotEqual(t, 0, out.ExitCode, denied)
		assert.Contains(t, out.Stderr, "Permission denied", "%s (a default rule, or a symlink to one)", denied)
		assert.NotContains(t, out.Stdout, "SECRET=1")
		requireToolFailure(t, s.call("read", map[string]any{"path": filepath.Join(project, denied)}), "permission denied")
	}
	out := sh("ls keys")
	assert.Contains(t, out.Stderr, "Permission denied", "a denied directory")
	requireToolFailure(t, s.call("read", map[string]any{"path": filepath.Join(project, "keys", "id")}), "permission denied")
	assert.Equal(t, "SECRET=\n", sh("cat .env.example").Stdout, "allowRead punches a hole")
	requireToolFailure(t, s.call("read", map[string]any{"path": filepath.Join(project, ".env")}), "refused by the sandbox's policy: denyRead .env (default)")
	assert.Equal(t, "guide\n", sh("cat docs/guide.md").Stdout, "denyWrite leaves reading alone")

	// allowWrite: build is writable, the rest of the project is not.
	out = sh("echo new > build/out.txt && cat build/out.txt")
	assert.Equal(t, "new\n", out.Stdout, out.Stderr)
	res := s.call("write", map[string]any{"path": filepath.Join(project, "build", "tool.txt"), "content": "x"}).toolResult(t)
	assert.False(t, res.IsError, res.text())
	b, err := os.ReadFile(filepath.Join(project, "build", "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(b), "the write reached the host")

	// denyWrite inside a writable area: through a wr bind of the project.
	s = startServer(t, ctx, serverOptions{dir: project, env: env, args: []string{"--sandbox", "--bind", "wr:" + project}})
	out = s.call("bash", map[string]any{"command": "echo x > docs/guide.md"}).bash(t)
	assert.Contains(t, out.Stderr, "Read-only file system")
	requireToolFailure(t, s.call("write", map[string]any{"path": filepath.Join(project, "docs", "new.md"), "content": "x"}), "read-only file system",
		"refused by the sandbox's policy: denyWrite docs ("+filepath.Join(project, ".boxsh", "policy.json")+")")
	out = s.call("bash", map[string]any{"command": "echo ok > src/other.go && echo wrote"}).bash(t)
	assert.Equal(t, "wrote\n", out.Stdout, "the rest stays writable")
	out = s.call("bash", map[string]any{"command": "mv .env moved.txt; cat moved.txt; rm -f .env; cat .env"}).bash(t)
	assert.NotContains(t, out.Stdout, "SECRET=1", "a denied file cannot be moved or removed to get at it")
	b, err = os.ReadFile(filepath.Join(project, ".env"))
	require.NoError(t, err)
	assert.Equal(t, "SECRET=1\n", string(b))
}

// TestPolicyHardDenied checks that the hard-denied paths stay read-only in
// a writable project, and that the missing ones at its root cannot be
// created.
func TestPolicyHardDenied(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	project := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".git", "hooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".git", "config"), []byte("[core]\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(project, "web", ".vscode"), 0o755))
	s := startServer(t, ctx, serverOptions{dir: project, args: []string{"--sandbox", "--bind", "wr:" + project}})
	for _, cmd := range []string{
		"echo evil > .git/config",
		"echo evil > .git/hooks/pre-commit",
		"echo '{}' > .mcp.json",
		"mkdir -p .vscode && echo x > .vscode/tasks.json",
		"echo x > web/.vscode/tasks.json",
		"mkdir -p .claude/commands && echo x > .claude/commands/run.md",
	} {
		out := s.call("bash", map[string]any{"command": cmd}).bash(t)
		assert.NotEqual(t, 0, out.ExitCode, "%s: %+v", cmd, out)
	}
	requireToolFailure(t, s.call("write", map[string]any{"path": filepath.Join(project, ".mcp.json"), "content": "{}"}), "hard-denied .mcp.json")
	out := s.call("bash", map[string]any{"command": "echo fine > notes.txt && cat notes.txt"}).bash(t)
	assert.Equal(t, "fine\n", out.Stdout, "the rest of the project is writable")
	s.stop()
	b, err := os.ReadFile(filepath.Join(project, ".git", "config"))
	require.NoError(t, err)
	assert.Equal(t, "[core]\n", string(b))
	for _, p := range []string{".mcp.json", ".vscode", ".claude", "web/.vscode/tasks.json", ".git/hooks/pre-commit"} {
		assert.NoFileExists(t, filepath.Join(project, p), "%s: nothing planted, no placeholder left", p)
		assert.NoDirExists(t, filepath.Join(project, p), p)
	}
}
