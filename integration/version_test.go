package integration

import (
	"bytes"
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

// TestOtherBuildOfInitRefused checks that boxsh refuses a boxsh-init of
// another build, found at $BOXSH_INIT (boxsh alone in its directory, no
// boxsh-init on PATH), at start: with one error naming both builds, and
// an exit status that is not 0, while its client still waits, not at the
// first call or never.
func TestOtherBuildOfInitRefused(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	frontDir := filepath.Join(dir, "front")
	require.NoError(t, os.Mkdir(frontDir, 0o755))
	exe, err := os.ReadFile(boxshPath())
	require.NoError(t, err)
	front := filepath.Join(frontDir, "boxsh")
	require.NoError(t, os.WriteFile(front, exe, 0o755))

	root, err := moduleRoot()
	require.NoError(t, err)
	initDir := filepath.Join(dir, "init")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-X main.version=other-build", "-o", initDir+string(filepath.Separator), "./cmd/boxsh-init")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	initPath := filepath.Join(initDir, "boxsh-init")

	want := "boxsh-init at " + initPath + " is build other-build (protocol 1); this boxsh is build " + frontBuild(t) + " (protocol 1): install them together"
	for _, mode := range []struct {
		name string
		args []string
	}{{"plain", nil}, {"sandbox", []string{"--sandbox"}}} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.args != nil {
				requireRootless(t)
			}
			cmd := exec.CommandContext(ctx, front, append([]string{"--rpc"}, mode.args...)...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin", "BOXSH_INIT="+initPath)
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			defer stdin.Close() // open until boxsh has exited: the refusal ends the session
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.WaitDelay = 5 * time.Second
			require.NoError(t, cmd.Start())
			_, _ = io.WriteString(stdin, string(requestJSON(1, "initialize", map[string]any{"protocolVersion": "2025-06-18"}))+"\n")
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
		})
	}
	require.NoError(t, ctx.Err())
}
