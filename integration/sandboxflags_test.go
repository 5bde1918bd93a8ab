//go:build linux

package integration

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
)

// hostLoopbackServer is an HTTP server on the host's loopback that counts
// its requests: a sandbox without the host's network cannot reach it.
func hostLoopbackServer(t *testing.T) (port string, hits *atomic.Int32) {
	t.Helper()
	hits = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "host")
	}))
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	return port, hits
}

// TestSandboxFlagsWithoutSandbox checks that sandbox flags without
// --sandbox mean a sandbox (issue 24). A read-only bind and the disabled
// network are enforced, not ignored.
func TestSandboxFlagsWithoutSandbox(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	dir := t.TempDir()
	port, hits := hostLoopbackServer(t)
	script := "touch " + dir + "/x 2>/dev/null && echo WROTE; curl -s --max-time 3 http://127.0.0.1:" + port + "/ && echo REACHED; echo done"
	for _, flags := range [][]string{
		{"--bind", "ro:" + dir, "--network", "disabled"},
		{"--bind", "ro:" + dir, "--new-net-ns"},
	} {
		r := runBoxsh(t, ctx, "", append(flags, "-c", script)...)
		assert.Equal(t, 0, r.code(), r.stderr)
		assert.Equal(t, "done\n", r.stdout, "%q: %s", flags, r.stderr)
		assert.NoFileExists(t, filepath.Join(dir, "x"), "%q", flags)
	}
	assert.Zero(t, hits.Load(), "the host's loopback was reached")

	// A --bind alone: only the bind is visible, and it is read-only.
	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "secret"), []byte("s"), 0o644))
	r := runBoxsh(t, ctx, "", "--bind", "ro:"+dir, "--", "sh", "-c", "cat "+other+"/secret; touch "+dir+"/y; echo $?")
	assert.Equal(t, "1\n", r.stdout, r.stderr)
	assert.NoFileExists(t, filepath.Join(dir, "y"))

	// A --policy file with network settings.
	pol := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(`{"network":{"mode":"disabled"}}`), 0o644))
	r = runBoxsh(t, ctx, "", "--policy", pol, "-c", script)
	assert.Equal(t, "done\n", r.stdout, r.stderr)
	assert.Zero(t, hits.Load(), "the host's loopback was reached")

	// --allow-domain with another mode is refused with one line.
	r = runBoxsh(t, ctx, "", "--network", "disabled", "--allow-domain", "example.com", "-c", "echo ran")
	assert.Equal(t, 2, r.code())
	assert.Empty(t, r.stdout)
	assert.Equal(t, "boxsh: --allow-domain example.com needs --network allowlist, not --network disabled (see boxsh --help)\n", r.stderr)
}

// TestClientSandboxOptionsWithoutSandbox checks that the Go client's
// sandbox options without Sandbox: true mean a sandbox.
func TestClientSandboxOptionsWithoutSandbox(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	dir := t.TempDir()
	port, hits := hostLoopbackServer(t)
	c := startClient(t, client.Options{Binds: []client.Bind{{Mode: client.ReadOnly, Src: dir}}, Network: client.NetworkDisabled})
	r, err := c.Exec(testContext(t), client.ExecRequest{Command: "touch " + dir + "/x 2>/dev/null && echo WROTE; curl -s --max-time 3 http://127.0.0.1:" + port + "/ && echo REACHED; echo done"})
	require.NoError(t, err)
	assert.Equal(t, "done\n", r.Stdout, r.Stderr)
	assert.NoFileExists(t, filepath.Join(dir, "x"))
	assert.Zero(t, hits.Load())
}

// TestAllowDomainWithoutNetwork checks that --allow-domain without
// --network means the allowlist (issue 24). Its refusals say why, in the
// status line of a refused CONNECT too. They are also said once per host on
// boxsh's stderr at the default log level.
func TestAllowDomainWithoutNetwork(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs := fakeInternet(t, "allowed.example.test", "other.example.test")
	_, port, _ := net.SplitHostPort(addrs["allowed.example.test"])
	curl := func(host string, extra string) string {
		return "curl -sS --max-time 10 " + extra + " -o - -w ' |%{http_code}\\n' http://" + host + ":" + port + "/p 2>&1; "
	}
	r := runBoxsh(t, ctx, "", "--allow-domain", "allowed.example.test", "-c",
		curl("allowed.example.test", "")+curl("other.example.test", "")+curl("other.example.test", "--proxytunnel -v")+curl("other.example.test", ""))
	assert.Contains(t, r.stdout, "hello from allowed.example.test /p |200")
	assert.Contains(t, r.stdout, "boxsh: access to other.example.test:"+port+" is not allowed")
	assert.Contains(t, r.stdout, "< HTTP/1.1 403 boxsh: other.example.test is not allowed (run with --allow-domain other.example.test)", "the reason in a refused CONNECT's status line")
	assert.NotContains(t, r.stdout, "hello from other")
	assert.Equal(t, 1, strings.Count(r.stderr, "other.example.test is not allowed (run with --allow-domain other.example.test)"),
		"one line per refused host on stderr: %s", r.stderr)
	assert.Contains(t, r.stderr, "[WARN]")
}

// TestEnvFlag checks that --env passes and sets variables as the policy's
// environment does. Secrets are passed only when named exactly, and a bad
// name is refused with why.
func TestEnvFlag(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	env := []string{"CI_FOO=1", "X_PLAIN=a", "X_TOKEN=t", "GITHUB_TOKEN=g", "UNPASSED=u"}
	r := runBoxshIn(t, ctx, t.TempDir(), "", env, "--sandbox", "--env", "CI_FOO", "--env", "BAR=baz qux", "--env", "X_*", "--env", "GITHUB_TOKEN", "-c", "env | sort")
	require.Equal(t, 0, r.code(), r.stderr)
	for _, want := range []string{"CI_FOO=1\n", "BAR=baz qux\n", "X_PLAIN=a\n", "GITHUB_TOKEN=g\n"} {
		assert.Contains(t, r.stdout, want)
	}
	assert.NotContains(t, r.stdout, "X_TOKEN", "a prefix passes no secret")
	assert.NotContains(t, r.stdout, "UNPASSED")

	// The MCP server's commands (no sandbox) get the same.
	for k, v := range map[string]string{"CI_FOO": "1", "X_TOKEN": "t"} {
		t.Setenv(k, v)
	}
	s := startServer(t, ctx, serverOptions{args: []string{"--env", "CI_FOO", "--env", "BAR=1", "--env", "X_*"}})
	out := s.bash("echo $CI_FOO-$BAR-${X_TOKEN:-none}")
	assert.Equal(t, "1-1-none\n", out.Stdout)

	// A CI's pattern: the plain variables pass, the secret-looking ones
	// are withheld and named in one line, with how to pass one.
	env = []string{"GITHUB_SHA=0123abc", "GITHUB_REF=refs/heads/main", "GITHUB_TOKEN=ghs_x", "GITHUB_PAT=p", "GITHUB_REPOSITORY=acme/app"}
	r = runBoxshIn(t, ctx, t.TempDir(), "", env, "--sandbox", "--env", "GITHUB_*", "-c", "env | sort")
	require.Equal(t, 0, r.code(), r.stderr)
	for _, want := range []string{"GITHUB_SHA=0123abc\n", "GITHUB_REF=refs/heads/main\n", "GITHUB_REPOSITORY=acme/app\n"} {
		assert.Contains(t, r.stdout, want)
	}
	assert.NotContains(t, r.stdout, "GITHUB_TOKEN")
	assert.NotContains(t, r.stdout, "GITHUB_PAT")
	assert.Equal(t, "boxsh: GITHUB_* (--env) withheld GITHUB_PAT, GITHUB_TOKEN: they look like secrets; pass one by its name, as --env GITHUB_PAT\n", r.stderr)

	r = runBoxsh(t, ctx, "", "--env", "1BAD=x", "-c", "true")
	assert.Equal(t, 2, r.code())
	assert.Contains(t, r.stderr, `boxsh: --env "1BAD=x": "1BAD" is not a variable name`)
}

// homeDir makes a directory for a test's home outside /tmp, under /var/tmp,
// removed at the end. The sandbox's /tmp is its own tmpfs, so a home under
// it would be writable there whatever boxsh does with homes.
func homeDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "boxsh-home-")
	require.NoError(t, err, "a home outside /tmp")
	t.Cleanup(func() {
		exec.Command("chmod", "-R", "u+w", d).Run()
		os.RemoveAll(d)
	})
	return d
}

// TestPrivateHome checks that the sandbox's home is its own and writable
// (issue 24). Tools' caches work for a user without them. Nothing written
// there reaches the host's home, start-up files least of all.
func TestPrivateHome(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	home := homeDir(t)
	proj := filepath.Join(home, "proj")
	require.NoError(t, os.Mkdir(proj, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".bashrc"), []byte("# host\n"), 0o644))
	env := []string{"HOME=" + home}
	r := runBoxshIn(t, ctx, proj, "", env, "--sandbox", "--bind", "wr:"+proj, "-c",
		`set -e; test ! -e ~/.bashrc; echo evil >> ~/.bashrc; echo '[core] fsmonitor = x' > ~/.gitconfig
		mkdir -p ~/.config/git ~/.local/bin ~/.cache/go-build ~/go/pkg/mod ~/.npm ~/.ssh
		echo x > ~/.local/bin/git; echo k > ~/.ssh/authorized_keys; echo ok > made; echo "$HOME"`)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, home+"\n", r.stdout)
	assert.FileExists(t, filepath.Join(proj, "made"), "the bind inside the home is the host's")
	entries, err := os.ReadDir(home)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{".bashrc", "proj"}, names, "nothing new in the host's home")
	b, _ := os.ReadFile(filepath.Join(home, ".bashrc"))
	assert.Equal(t, "# host\n", string(b))

	// A home bound read-only stays read-only.
	r = runBoxshIn(t, ctx, proj, "", env, "--sandbox", "--bind", "ro:"+home, "-c", "cat ~/.bashrc; touch ~/.gitconfig 2>/dev/null || echo refused")
	assert.Equal(t, "# host\nrefused\n", r.stdout, r.stderr)
	assert.NoFileExists(t, filepath.Join(home, ".gitconfig"))
}

// TestNewFilesReportSkipsCaches checks the report of files a command made
// that host tools run programs from. It names real risks, not what lies
// inside tool and dependency caches.
func TestNewFilesReportSkipsCaches(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	dir := t.TempDir()
	r := runBoxsh(t, ctx, "", "--sandbox", "--bind", "wr:"+dir, "-c",
		"cd "+dir+" && mkdir -p go/pkg/mod/example.com/sdk@v1.8.0/.devcontainer node_modules/x/.vscode .cache/y/.devcontainer sub/.devcontainer && "+
			"touch go/pkg/mod/example.com/sdk@v1.8.0/.gitmodules sub/.gitmodules")
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stderr, "[WARN]")
	assert.Contains(t, r.stderr, dir+"/sub/.devcontainer")
	assert.Contains(t, r.stderr, dir+"/sub/.gitmodules")
	assert.NotContains(t, r.stderr, "go/pkg/mod")
	assert.NotContains(t, r.stderr, "node_modules")
	assert.NotContains(t, r.stderr, ".cache")
}
