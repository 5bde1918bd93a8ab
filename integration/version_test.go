package integration

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frontBuild is the build of the boxsh under test, as --version names it.
func frontBuild(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(boxshPath(), "--version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	build, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "boxsh version ")
	require.True(t, ok, "boxsh --version: %q", out)
	return build
}

// buildInit builds the program of package pkg (a path from the module's
// root) statically into dir as boxsh-init, with ldflags, and returns its
// path.
func buildInit(t *testing.T, ctx context.Context, dir, pkg, ldflags string) string {
	t.Helper()
	root, err := moduleRoot()
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "boxsh-init")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", path, pkg)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return path
}

// copyFront copies the boxsh under test, and the boxsh-launch beside it,
// into dir and returns the copy of boxsh.
func copyFront(t *testing.T, dir string) string {
	t.Helper()
	exe, err := os.ReadFile(boxshPath())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	front := filepath.Join(dir, "boxsh")
	require.NoError(t, os.WriteFile(front, exe, 0o755))
	if launcher, err := os.ReadFile(filepath.Join(filepath.Dir(boxshPath()), "boxsh-launch")); err == nil {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "boxsh-launch"), launcher, 0o755))
	}
	return front
}

// refusalModes are the ways boxsh starts a boxsh-init that serves calls:
// plain and in a sandbox, on stdio and over HTTP.
var refusalModes = []struct {
	name    string
	args    []string
	sandbox bool
	// stdio modes get an initialize, sent while boxsh-init starts.
	stdio bool
}{
	{"plain", []string{"--rpc"}, false, true},
	{"sandbox", []string{"--rpc", "--sandbox"}, true, true},
	{"http", []string{"--rpc", "--listen", "127.0.0.1:0", "--no-auth"}, false, false},
	{"http-sandbox", []string{"--rpc", "--sandbox", "--listen", "127.0.0.1:0", "--no-auth"}, true, false},
}

// assertRefusedAtStart runs front in each of refusalModes with env. It
// checks that front ends by itself while its client still waits, with a
// status that is not 0. It must say one error, once, that contains want.
func assertRefusedAtStart(t *testing.T, ctx context.Context, front string, env []string, want string) {
	t.Helper()
	for _, mode := range refusalModes {
		t.Run(mode.name, func(t *testing.T) {
			if mode.sandbox {
				requireRootless(t)
			}
			cmd := exec.CommandContext(ctx, front, mode.args...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), env...)
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			defer stdin.Close() // open until boxsh has exited: the refusal ends the session
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.WaitDelay = 5 * time.Second
			require.NoError(t, cmd.Start())
			if mode.stdio {
				_, _ = io.WriteString(stdin, string(requestJSON(1, "initialize", map[string]any{"protocolVersion": "2025-06-18"}))+"\n")
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case err = <-exited:
			case <-time.After(exitTimeout):
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("boxsh did not end after starting a boxsh-init of another build; stderr:\n%s", stderr.String())
			}
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, "exit status; stderr:\n%s", stderr.String())
			assert.NotZero(t, exitErr.ExitCode())
			assert.Contains(t, stderr.String(), want)
			assert.Equal(t, 1, strings.Count(stderr.String(), "install them together"), "one error, said once:\n%s", stderr.String())
			assert.NotContains(t, stderr.String(), "boxsh-init is gone", "a refusal, not a death:\n%s", stderr.String())
		})
	}
}

// TestOtherBuildOfInitRefused checks that boxsh refuses a boxsh-init of
// another build found at $BOXSH_INIT, with boxsh alone in its directory and
// no boxsh-init on PATH. It refuses at start, while its client still waits,
// not at the first call or never. The refusal is one error naming both
// builds, and an exit status that is not 0.
func TestOtherBuildOfInitRefused(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir := t.TempDir()
	front := copyFront(t, filepath.Join(dir, "front"))
	initPath := buildInit(t, ctx, filepath.Join(dir, "init"), "./cmd/boxsh-init", "-X main.version=other-build")
	want := "boxsh-init at " + initPath + " is build other-build (protocol 1); this boxsh is build " + frontBuild(t) + " (protocol 1): install them together"
	assertRefusedAtStart(t, ctx, front, []string{"PATH=/usr/bin:/bin", "BOXSH_INIT=" + initPath}, want)
	require.NoError(t, ctx.Err())
}

// TestOlderInitRefused checks that boxsh refuses, the same way, a
// boxsh-init of an older build beside it: at start, with one error naming
// both builds. The older build knows only the options boxsh-init had when
// the hello came in, and exits with its usage on any other;
// testdata/olderinit stands in for it. Whatever option this build adds must
// not reach such a boxsh-init before its hello has.
func TestOlderInitRefused(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir := t.TempDir()
	front := copyFront(t, dir)
	initPath := buildInit(t, ctx, dir, "./integration/testdata/olderinit", "-X main.build=older-build")
	want := "boxsh-init at " + initPath + " is build older-build (protocol 1); this boxsh is build " + frontBuild(t) + " (protocol 1): install them together"
	assertRefusedAtStart(t, ctx, front, []string{"PATH=/usr/bin:/bin", "BOXSH_INIT="}, want)
	require.NoError(t, ctx.Err())
}
