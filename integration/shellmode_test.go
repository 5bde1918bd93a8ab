package integration

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runResult is what a finished boxsh left.
type runResult struct {
	stdout, stderr string
	state          *os.ProcessState
}

// code is the exit status (-1 when killed by a signal).
func (r runResult) code() int { return r.state.ExitCode() }

// runBoxsh runs boxsh with args and stdin to completion, in a new
// directory.
func runBoxsh(t *testing.T, ctx context.Context, stdin string, args ...string) runResult {
	t.Helper()
	return runBoxshIn(t, ctx, t.TempDir(), stdin, nil, args...)
}

func TestShellDashC(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := runBoxsh(t, ctx, "", "-c", `echo "$0|$1|$2|$#"`, "myname", "first", "second arg")
	assert.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "myname|first|second arg|2\n", r.stdout)

	r = runBoxsh(t, ctx, "", "-c", `echo "$0"`)
	assert.Equal(t, "/bin/sh\n", r.stdout, "$0 defaults to the shell")

	r = runBoxsh(t, ctx, "", "-c", "echo out; echo err >&2")
	assert.Equal(t, "out\n", r.stdout)
	assert.Equal(t, "err\n", r.stderr)
}

func TestShellScriptFile(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	script := filepath.Join(t.TempDir(), "script.sh")
	require.NoError(t, os.WriteFile(script, []byte("echo \"script $0 $# $1 $2\"\nread line\necho \"read $line\"\nexit 5\n"), 0o644))
	r := runBoxsh(t, ctx, "from stdin\n", script, "x", "y z")
	assert.Equal(t, 5, r.code(), r.stderr)
	assert.Equal(t, "script "+script+" 2 x y z\nread from stdin\n", r.stdout)
}

func TestShellExitCodes(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	for _, code := range []int{0, 1, 42, 255} {
		r := runBoxsh(t, ctx, "", "-c", "exit "+strconv.Itoa(code))
		assert.Equal(t, code, r.code(), "exit %d: %s", code, r.stderr)
	}
	r := runBoxsh(t, ctx, "", "-c", "false")
	assert.Equal(t, 1, r.code())
	r = runBoxsh(t, ctx, "", "-c", "no-such-command-xyz")
	assert.Equal(t, 127, r.code())
	assert.Contains(t, r.stderr, "no-such-command-xyz")
}

func TestShellPipedStdin(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := runBoxsh(t, ctx, "echo piped-$((2+3))\nX=1\necho \"x=$X\"\nexit 7\necho never\n")
	assert.Equal(t, 7, r.code(), r.stderr)
	assert.Equal(t, "piped-5\nx=1\n", r.stdout)
	assert.NotContains(t, r.stderr, "[boxsh]", "no prompt for a script on a pipe")
}

// TestShellSignalPassthrough checks that the shell replaces boxsh. So the
// caller sees a shell killed by a signal as killed by that signal: status
// 143 for SIGTERM in a shell.
func TestShellSignalPassthrough(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := runBoxsh(t, ctx, "", "-c", "echo before; kill -TERM $$; echo after")
	assert.Equal(t, "before\n", r.stdout)
	ws, ok := r.state.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, ws.Signaled(), "boxsh must die of the signal, not exit: %v", r.state)
	assert.Equal(t, syscall.SIGTERM, ws.Signal())

	// As a shell caller sees it.
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `"$0" -c 'kill -TERM $$'; echo "status=$?"`, boxshPath())
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "status=143\n", string(out))
}

// TestShellInteractiveFlag checks --interactive on a stdin that is not a
// terminal. It gives an interactive shell, with the boxsh prompt.
func TestShellInteractiveFlag(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	for _, flag := range []string{"--interactive", "-i"} {
		r := runBoxsh(t, ctx, "echo \"flags=$-\"\nexit 4\n", flag)
		assert.Equal(t, 4, r.code(), r.stderr)
		require.True(t, strings.HasPrefix(r.stdout, "flags="), r.stdout)
		assert.Contains(t, strings.TrimPrefix(r.stdout, "flags="), "i", "$- has i")
		assert.Contains(t, r.stderr, "[boxsh] ", "prompt on stderr")
	}
}

// TestShellPTY runs an interactive session on a real terminal. It checks
// the prompt, the terminal's size and its changes, Ctrl-C reaching the
// foreground command and not the shell, and the exit status. In the sandbox
// the shell gets a terminal of the sandbox's own, which boxsh relays.
func TestShellPTY(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, args []string) {
		ctx := testContext(t)
		cmd := exec.CommandContext(ctx, boxshPath(), args...)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "TERM=dumb")
		cmd.WaitDelay = 5 * time.Second
		tty, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 120, Rows: 40})
		require.NoError(t, err)
		defer tty.Close()
		var screen lockedBuffer
		go func() { _, _ = io.Copy(&screen, tty) }()

		waitScreen := func(want string) {
			t.Helper()
			require.Eventually(t, func() bool { return strings.Contains(screen.String(), want) },
				15*time.Second, 20*time.Millisecond, "%q never appeared on the terminal:\n%s", want, screen.String())
		}
		typeIn := func(text string) {
			t.Helper()
			_, err := tty.Write([]byte(text))
			require.NoError(t, err)
		}
		waitScreen("[boxsh] ")
		typeIn("echo pty_$((6*7)); printf 'fl%s=%s\\n' ags \"$-\"; echo \"size=$(stty size)\"\n")
		waitScreen("pty_42")
		waitScreen("flags=")
		waitScreen("size=40 120")
		marker := sleepMarker(30)
		killMarkedAtCleanup(t, marker)
		typeIn("sleep " + marker + "\n")
		waitForProcess(t, marker)
		typeIn("\x03") // Ctrl-C
		typeIn("echo after_$((2*21))\n")
		waitScreen("after_42")
		require.NoError(t, pty.Setsize(tty, &pty.Winsize{Cols: 100, Rows: 30}))
		// The relay passes the new size on at SIGWINCH: asked until the
		// sandbox's terminal has it.
		for i := 0; ; i++ {
			typeIn(fmt.Sprintf("echo \"resized%d=$(stty size)\"\n", i))
			answer := regexp.MustCompile(fmt.Sprintf(`resized%d=(\d+ \d+)`, i))
			var size []string
			require.Eventually(t, func() bool { size = answer.FindStringSubmatch(screen.String()); return size != nil },
				15*time.Second, 20*time.Millisecond, "no answer %d on the terminal:\n%s", i, screen.String())
			if size[1] == "30 100" {
				break
			}
			require.Less(t, i, 100, "the terminal's size stays %s", size[1])
		}
		typeIn("exit 3\n")

		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("the interactive shell did not exit; screen:\n%s", screen.String())
		}
		assert.Equal(t, 3, cmd.ProcessState.ExitCode())
		out := screen.String()
		i := strings.Index(out, "flags=")
		require.GreaterOrEqual(t, i, 0)
		flags := strings.Fields(out[i+len("flags="):])
		require.NotEmpty(t, flags)
		assert.Contains(t, flags[0], "i", "interactive shell flags")
	})
}

// TestShellCommandMode checks that `boxsh -- CMD ARGS` runs CMD itself.
func TestShellCommandMode(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := runBoxsh(t, ctx, "", "--", "/bin/echo", "a", "b")
	assert.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "a b\n", r.stdout)

	r = runBoxsh(t, ctx, "", "--", "echo", "found", "on", "PATH")
	assert.Equal(t, "found on PATH\n", r.stdout)

	r = runBoxsh(t, ctx, "", "--", "/bin/sh", "-c", "exit 9")
	assert.Equal(t, 9, r.code())

	r = runBoxsh(t, ctx, "stdin passes through\n", "--", "cat")
	assert.Equal(t, "stdin passes through\n", r.stdout)

	r = runBoxsh(t, ctx, "", "--", "no-such-command-xyz")
	assert.Equal(t, 127, r.code())
	assert.Contains(t, r.stderr, "no-such-command-xyz")
}

func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	for _, flag := range []string{"--help", "-h"} {
		r := runBoxsh(t, ctx, "", flag)
		assert.Equal(t, 0, r.code(), flag)
		assert.Contains(t, r.stdout, "Usage: boxsh", flag)
		assert.Contains(t, r.stdout, "--rpc", flag)
		assert.Contains(t, r.stdout, "--workers", flag)
		assert.Empty(t, r.stderr, flag)
	}
	r := runBoxsh(t, ctx, "", "--version")
	assert.Equal(t, 0, r.code())
	assert.True(t, strings.HasPrefix(r.stdout, "boxsh version "), "stdout %q", r.stdout)
	assert.Empty(t, r.stderr)

	// Each subcommand's --help: its usage on stdout, exit 0.
	for _, sub := range []string{"spec", "doctor", "policy", "audit", "changes", "diff", "apply", "discard", "sessions"} {
		for _, args := range [][]string{{sub, "--help"}, {sub, "-h"}} {
			r := runBoxsh(t, ctx, "", args...)
			assert.Equal(t, 0, r.code(), "%q: stderr %q", args, r.stderr)
			assert.True(t, strings.HasPrefix(r.stdout, "Usage: boxsh "), "%q: stdout %q", args, r.stdout)
			assert.Contains(t, r.stdout, "boxsh "+sub, "%q", args)
			assert.Empty(t, r.stderr, "%q", args)
		}
	}
}

// TestBadFlags checks that bad options give exit status 2 and a "boxsh:
// ..." message on stderr naming the problem. Nothing runs.
func TestBadFlags(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--workers", "0", "--rpc"}, "--workers"},
		{[]string{"--workers", "abc", "--rpc"}, "--workers"},
		{[]string{"--workers=2000", "--rpc"}, "--workers"},
		{[]string{"--rpc", "--workers"}, "--workers"},
		{[]string{"--shell", ""}, "--shell"},
		{[]string{"--rpc", "extra-arg"}, "extra-arg"},
		{[]string{"--"}, "--"},
		{[]string{"--frobnicate"}, "unknown option --frobnicate"},
		{[]string{"--sandbox", "--frobnicate", "-c", "echo x"}, "unknown option --frobnicate"},
	}
	for _, c := range cases {
		r := runBoxsh(t, ctx, "echo should-not-run\n", c.args...)
		assert.Equal(t, 2, r.code(), "%q: stderr %q", c.args, r.stderr)
		assert.Empty(t, r.stdout, "%q", c.args)
		first, _, _ := strings.Cut(r.stderr, "\n")
		assert.True(t, strings.HasPrefix(first, "boxsh: "), "%q: stderr %q", c.args, r.stderr)
		assert.Contains(t, first, c.want, "%q", c.args)
	}
	// A bad --bind value exits with 1, as in boxsh v3 (its suite checks it).
	for _, args := range [][]string{{"--bind", "bogus:x"}, {"--rpc", "--sandbox", "--bind", "cow:only-one-path"}} {
		r := runBoxsh(t, ctx, "", args...)
		assert.Equal(t, 1, r.code(), "%q: stderr %q", args, r.stderr)
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
		assert.Contains(t, r.stderr, "--bind", "%q", args)
	}
}
