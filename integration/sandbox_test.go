package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireRootless skips sandbox tests when run as root. A broken sandbox
// tested as real root could change the host (its /etc, say); .ci/run runs
// these tests as an unprivileged user, which is also how users run boxsh.
func requireRootless(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("sandbox tests never run as real root: run `just test`, which runs them as an unprivileged user")
	}
}

// runBoxshIn runs boxsh with args in dir, with stdin, and returns what it
// printed and its exit status.
func runBoxshIn(t *testing.T, ctx context.Context, dir, stdin string, env []string, args ...string) runResult {
	t.Helper()
	return runProgramIn(t, ctx, dir, stdin, env, boxshPath(), args...)
}

// runProgramIn is runBoxshIn of another program (a wrapper of boxsh).
func runProgramIn(t *testing.T, ctx context.Context, dir, stdin string, env []string, name string, args ...string) runResult {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !assert.ErrorAs(t, err, &exitErr) {
		t.FailNow()
	}
	require.NoError(t, ctx.Err(), "boxsh %q did not finish in time", args)
	return runResult{stdout.String(), stderr.String(), cmd.ProcessState}
}

// sandboxShell runs `boxsh --sandbox [flags] -c script` in dir.
func sandboxShell(t *testing.T, dir string, flags []string, script string) runResult {
	t.Helper()
	args := append(append([]string{"--sandbox"}, flags...), "-c", script)
	return runBoxshIn(t, testContext(t), dir, "", nil, args...)
}

// TestSandboxView checks what a sandboxed command sees:
//   - it is root of a user namespace;
//   - it has its own PID namespace, with boxsh-init as PID 1;
//   - the system directories are read-only, and /tmp is private;
//   - its home is an empty one of its own;
//   - none of the host's other files show: home directories, and the
//     working directory unless bound.
func TestSandboxView(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "host-file"), []byte("x"), 0o644))
	home, _ := os.UserHomeDir()
	r := sandboxShell(t, dir, nil, `
		echo "id=$(id -u):$(id -g)"
		echo "pid1=$(tr '\0' ' ' </proc/1/cmdline | head -c 49)"
		echo "host=$(hostname)"
		touch /usr/boxsh-probe 2>/dev/null && echo usr-writable
		echo tmp > /tmp/probe && echo tmp-writable
		test -d `+home+` || echo no-home
		ls -A `+home+` | grep -q . && echo home-not-empty
		test -e `+dir+`/host-file && echo cwd-visible
		test -e /root && echo root-visible
		ls -A | grep -q . && echo cwd-not-empty
		pwd`)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "id=0:0\n")
	assert.Contains(t, r.stdout, "pid1=/.boxsh/boxsh-init --exec --lifeline 3 -- /bin/sh\n")
	assert.Contains(t, r.stdout, "host=boxsh\n")
	assert.Contains(t, r.stdout, "tmp-writable\n")
	for _, leak := range []string{"usr-writable", "no-home", "home-not-empty", "cwd-visible", "root-visible", "cwd-not-empty"} {
		assert.NotContains(t, r.stdout, leak)
	}
	assert.True(t, strings.HasSuffix(r.stdout, "\n"+dir+"\n"), "an unbound cwd keeps its path (as in boxsh v4), without its files: %q", r.stdout)
}

// TestSandboxUnboundCwd checks where a sandbox started from a directory it
// does not show starts:
//   - In /tmp, which is the sandbox's own, it starts at the same path, in
//     an empty directory, as boxsh v4 does (its suite's "CWD is preserved
//     inside sandbox", shell and RPC mode). The path is all it gets, and
//     writes stay in the sandbox.
//   - Elsewhere, here in the home directory, it starts in / with the
//     directory absent, as boxsh v3 and v4 require ("sandbox without any
//     bind — CWD is not auto-bound").
func TestSandboxUnboundCwd(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	// A directory in /tmp (whatever TMPDIR says), and one outside it: in
	// $HOME, or in /var/tmp where $HOME is under /tmp (as in CI).
	inTmp, err := os.MkdirTemp("/tmp", "boxsh-cwd-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(inTmp) })
	outside, err := os.UserHomeDir()
	if err != nil || outside == "/tmp" || strings.HasPrefix(outside, "/tmp/") {
		outside = "/var/tmp"
	}
	outside, err = os.MkdirTemp(outside, "boxsh-cwd-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(outside) })
	for dir, want := range map[string]string{inTmp: "", outside: "/"} {
		if want == "" {
			want = dir
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "host-file"), []byte("x"), 0o644))
		r := sandboxShell(t, dir, nil, `pwd; [ "$PWD" = / ] || ls -A; cat host-file `+dir+`/host-file 2>/dev/null; ls `+dir+` >/dev/null 2>&1 && echo dir-exists; echo new 2>/dev/null > `+dir+`/new-file`)
		expect := want + "\n"
		if want == dir {
			expect += "dir-exists\n" // the empty directory
		}
		assert.Equal(t, expect, r.stdout, "only the path, in /tmp: %s", r.stderr)
		_, err := os.Stat(filepath.Join(dir, "new-file"))
		assert.ErrorIs(t, err, os.ErrNotExist, "no write reaches the host")

		s := startServer(t, testContext(t), serverOptions{dir: dir, args: []string{"--sandbox", "--workers", "1"}})
		out := s.bash(`pwd; [ "$PWD" = / ] || ls -A`)
		assert.Equal(t, want+"\n", out.Stdout, "RPC mode: %s", out.Stderr)
		st := s.call("stat", map[string]any{"path": filepath.Join(dir, "host-file")}).toolResult(t)
		assert.JSONEq(t, fmt.Sprintf(`{"path":%q,"exists":false}`, filepath.Join(dir, "host-file")), st.text())
	}
}

// TestSandboxBinds checks ro, wr and cow binds from a command. A write to a
// ro bind fails. One to a wr bind lands on the host. One through a cow bind
// lands in DST and leaves SRC alone, deletions included.
func TestSandboxBinds(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	base := t.TempDir()
	ro, wr, src := filepath.Join(base, "ro"), filepath.Join(base, "wr"), filepath.Join(base, "src")
	dst := filepath.Join(base, "dst")
	for _, d := range []string{ro, wr, src} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(ro, "f"), []byte("ro\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "keep"), []byte("src\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(src, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "sub", "gone"), []byte("src\n"), 0o644))

	r := sandboxShell(t, src, []string{"--bind", "ro:" + ro, "--bind", "wr:" + wr, "--bind", "cow:" + src + ":" + dst}, `
		cat `+ro+`/f
		echo x > `+ro+`/f || echo ro-refused
		echo w > `+wr+`/new && echo wr-ok
		pwd
		echo changed > keep && echo new > added && rm -r sub && echo cow-ok
		ls`)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "ro\nro-refused\nwr-ok\n"+dst+"\ncow-ok\nadded\nkeep\n", r.stdout)
	assert.Contains(t, r.stderr, "Read-only file system")

	got, err := os.ReadFile(filepath.Join(wr, "new"))
	require.NoError(t, err)
	assert.Equal(t, "w\n", string(got))
	got, err = os.ReadFile(filepath.Join(src, "keep"))
	require.NoError(t, err)
	assert.Equal(t, "src\n", string(got), "SRC never changes")
	assert.FileExists(t, filepath.Join(src, "sub", "gone"))
	got, err = os.ReadFile(filepath.Join(dst, "keep"))
	require.NoError(t, err)
	assert.Equal(t, "changed\n", string(got), "writes land in DST")
	assert.DirExists(t, filepath.Join(base, ".boxsh", "dst"), "the overlay's work directory")

	// A second run sees the first one's changes (DST persists).
	r = sandboxShell(t, src, []string{"--bind", "cow:" + src + ":" + dst}, "cat keep; test -e sub || echo sub-still-gone")
	assert.Equal(t, "changed\nsub-still-gone\n", r.stdout, r.stderr)
}

// TestSandboxShellExitAndSignals checks that shell mode passes the exit
// status, stdin and a death by signal through the sandbox.
func TestSandboxShellExitAndSignals(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	r := runBoxshIn(t, ctx, t.TempDir(), "", nil, "--sandbox", "-c", "exit 42")
	assert.Equal(t, 42, r.code(), r.stderr)
	r = runBoxshIn(t, ctx, t.TempDir(), "echo from-stdin\n", nil, "--sandbox")
	assert.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "from-stdin\n", r.stdout)
	r = runBoxshIn(t, ctx, t.TempDir(), "", nil, "--sandbox", "-c", "kill -TERM $$")
	assert.Equal(t, 128+15, r.code(), r.stderr)
	r = runBoxshIn(t, ctx, t.TempDir(), "", nil, "--sandbox", "--", "sh", "-c", "echo cmd $0", "arg0")
	assert.Equal(t, "cmd arg0\n", r.stdout, r.stderr)
	r = runBoxshIn(t, ctx, t.TempDir(), "", nil, "--sandbox", "--", "no-such-command-boxsh")
	assert.Equal(t, 127, r.code())
	assert.Contains(t, r.stderr, "no-such-command-boxsh")
}

// TestSandboxRPC checks that in --rpc --sandbox mode the commands and the
// file tools see the same sandbox. A file written by one is read by the
// other. Writes to ro binds and reads of unbound host paths fail.
func TestSandboxRPC(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	base := t.TempDir()
	ro := filepath.Join(base, "ro")
	require.NoError(t, os.Mkdir(ro, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ro, "f"), []byte("ro\n"), 0o644))
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret\n"), 0o600))

	s := startServer(t, ctx, serverOptions{args: []string{"--sandbox", "--bind", "ro:" + ro}, dir: base})
	out := s.bash("echo hi > /tmp/shared; id -u; cat /proc/1/cmdline | tr '\\0' ' '")
	require.Equal(t, 0, out.ExitCode, out.Stderr)
	assert.Equal(t, "0\n/.boxsh/boxsh-init --workers 4 --shell /bin/sh --log-level warn --rules /.boxsh/rules.json ", out.Stdout, "the options of protocol 1 (the forwarding socket is named in the front's hello)")

	read := s.call("read", map[string]any{"path": "/tmp/shared"}).toolResult(t)
	assert.False(t, read.IsError, read.text())
	assert.Equal(t, "hi\n", read.text(), "file tools see the sandbox's /tmp")

	requireToolFailure(t, s.call("write", map[string]any{"path": filepath.Join(ro, "f"), "content": "x"}), "read-only file system")
	requireToolFailure(t, s.call("read", map[string]any{"path": secret}), "no such file")
	requireToolFailure(t, s.call("edit", map[string]any{"path": filepath.Join(ro, "f"),
		"edits": []map[string]any{{"oldText": "ro", "newText": "rw"}}}), "read-only file system")
	got, err := os.ReadFile(filepath.Join(ro, "f"))
	require.NoError(t, err)
	assert.Equal(t, "ro\n", string(got))

	// boxsh-init is PID 1: it reaps the orphans of commands, and the exit
	// status of every command still reaches its call.
	for i := range 10 {
		out := s.bash(fmt.Sprintf("sh -c 'sleep 0.05 &'; exit %d", i))
		assert.Equal(t, i, out.ExitCode)
	}
	out = s.bash("sleep 0.3; grep -l '^State:.*Z' /proc/[0-9]*/status | wc -l")
	assert.Equal(t, "0\n", out.Stdout, "no zombies left in the sandbox")
}

// TestSandboxRestartKeepsCowWork checks that when boxsh-init dies, the next
// call runs in a fresh sandbox. It still sees the work done through a cow
// bind, since DST persists. The killed sandbox's state is gone.
func TestSandboxRestartKeepsCowWork(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	require.NoError(t, os.Mkdir(src, 0o755))
	s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox", "--bind", "cow:" + src + ":" + dst}, dir: src})
	out := s.bash("echo work > done.txt && pwd")
	require.Equal(t, 0, out.ExitCode, out.Stderr)
	assert.Equal(t, dst+"\n", out.Stdout)

	init := findChild(t, s.pid(), "boxsh-init")
	require.NoError(t, syscall.Kill(init, syscall.SIGKILL))
	requireGone(t, init, "boxsh-init")
	// A call that races with the death may be lost; then one runs.
	require.Eventually(t, func() bool {
		return !s.call("bash", map[string]any{"command": "true"}).toolResult(t).IsError
	}, 5*time.Second, 50*time.Millisecond, "the next call runs in a new sandbox")
	out = s.bash("cat done.txt")
	assert.Equal(t, "work\n", out.Stdout, out.Stderr)
	assert.NotEqual(t, init, findChild(t, s.pid(), "boxsh-init"))
	assert.NoFileExists(t, filepath.Join(src, "done.txt"))
}

// TestSandboxTerminalStdinOnly checks a command typed at a terminal with
// its output redirected (boxsh --sandbox -c CMD > file): stdin is a
// terminal but not the sandbox's, and the command still runs.
func TestSandboxTerminalStdinOnly(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	defer tty.Close()
	cmd := exec.CommandContext(testContext(t), boxshPath(), "--sandbox", "-c", "echo to-file; test -t 0 && echo stdin-tty")
	cmd.Dir = t.TempDir()
	cmd.Stdin = tty
	var out, errOut lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), errOut.String())
	assert.Equal(t, "to-file\nstdin-tty\n", out.String())
}

// TestSandboxesShareHome checks two sandboxes with the same writable home.
// The second keeps the first's placeholders of missing dotfiles read-only.
// The first ending neither unprotects nor stops the second. The last to end
// removes the placeholders.
func TestSandboxesShareHome(t *testing.T) {
	requireRootless(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	// The placeholder of a missing .mcp.json at the root of a writable
	// project (a writable home's dot entries need none: it is read-only).
	mcp := filepath.Join(home, "proj", ".mcp.json")
	require.NoError(t, os.Mkdir(filepath.Dir(mcp), 0o755))
	ctx := testContext(t)
	args := []string{"--sandbox", "--bind", "wr:" + home, "--bind", "wr:" + filepath.Dir(mcp)}
	a := startServer(t, ctx, serverOptions{args: args, dir: home})
	a.requireServing()
	b := startServer(t, ctx, serverOptions{args: args, dir: home})
	b.requireServing()
	initB := findChild(t, b.pid(), "boxsh-init")

	out := b.bash("echo evil > ~/proj/.mcp.json")
	assert.NotEqual(t, 0, out.ExitCode, "the first sandbox's placeholder is read-only in the second too")
	assert.Empty(t, a.drain()) // the first ends
	a.requireExitZero()
	b2, err := os.ReadFile(mcp)
	require.NoError(t, err, "still in use by the second sandbox")
	assert.Equal(t, "{\"mcpServers\": {}}\n", string(b2), "the placeholder of no servers")

	// The call reads what the second sandbox's guard has queued before
	// it runs (ProtectionLost): a's end, if it lifted the protection.
	out = b.bash("echo evil > ~/proj/.mcp.json")
	assert.NotEqual(t, 0, out.ExitCode, "still protected in the second sandbox")
	assert.Equal(t, initB, findChild(t, b.pid(), "boxsh-init"), "the second sandbox was not stopped")
	assert.Empty(t, b.drain())
	b.requireExitZero()
	_, err = os.Lstat(mcp)
	assert.True(t, os.IsNotExist(err), "the last sandbox removed the placeholder: %v", err)
}
