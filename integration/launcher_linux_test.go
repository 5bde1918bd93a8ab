package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startMarkedShell starts `boxsh --sandbox -c 'sleep MARKER'` and returns it
// once the sleep runs, with the pids of its launcher and of the sandbox's
// boxsh-init.
func startMarkedShell(t *testing.T, marker string) (cmd *exec.Cmd, output *lockedBuffer, launcher, init int) {
	t.Helper()
	killMarkedAtCleanup(t, marker)
	cmd = exec.CommandContext(testContext(t), boxshPath(), "--sandbox", "-c", "sleep "+marker+"; echo not-killed")
	cmd.Dir = t.TempDir()
	output = &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = output, output
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitForArgv(t, "sleep", marker)
	launcher = findChild(t, cmd.Process.Pid, "boxsh-launch")
	init = findChild(t, cmd.Process.Pid, "boxsh-init")
	return cmd, output, launcher, init
}

// TestSandboxLauncherDiesWithFront checks that SIGKILL of a sandboxed shell's
// front ends its launcher, and the sandbox with it.
func TestSandboxLauncherDiesWithFront(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	marker := sleepMarker(305)
	cmd, output, launcher, init := startMarkedShell(t, marker)

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	requireGone(t, launcher, "boxsh-launch")
	requireNoArgv(t, 5*time.Second, "sleep", marker)
	requireGone(t, init, "boxsh-init")
	assert.NotContains(t, output.String(), "not-killed")
}

// TestSandboxLauncherKilled checks that when the launcher dies, the sandbox
// dies with it and the front ends with an error that names the launcher.
func TestSandboxLauncherKilled(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	marker := sleepMarker(306)
	cmd, output, launcher, init := startMarkedShell(t, marker)

	require.NoError(t, syscall.Kill(launcher, syscall.SIGKILL))
	err := cmd.Wait()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "output: %s", output.String())
	assert.NotEqual(t, 0, exitErr.ExitCode())
	assert.Regexp(t, `boxsh: the sandbox's launcher /\S*/boxsh-launch died: signal: killed`, output.String())
	requireNoArgv(t, 5*time.Second, "sleep", marker)
	requireGone(t, init, "boxsh-init")
	assert.NotContains(t, output.String(), "not-killed")
}

// TestSandboxLauncherMissing checks that a boxsh without boxsh-launch
// beside it or in BOXSH_LAUNCH says so, naming it, in shell mode and in RPC
// mode, and does not take one from PATH, where a sandbox may have written
// it.
func TestSandboxLauncherMissing(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	dir := t.TempDir()
	bin := filepath.Dir(boxshPath())
	for _, name := range []string{"boxsh", "boxsh-init"} {
		b, err := os.ReadFile(filepath.Join(bin, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o755))
	}
	onPath := t.TempDir()
	launcher, err := os.ReadFile(filepath.Join(bin, "boxsh-launch"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(onPath, "boxsh-launch"), launcher, 0o755))
	env := []string{"PATH=" + onPath + ":/usr/bin:/bin", "BOXSH_LAUNCH="}
	for _, args := range [][]string{{"--sandbox", "-c", "true"}, {"--rpc", "--sandbox"}} {
		r := runProgramIn(t, testContext(t), t.TempDir(), "", env, filepath.Join(dir, "boxsh"), args...)
		assert.NotEqual(t, 0, r.code(), "%q", args)
		assert.Contains(t, r.stderr, "cannot find boxsh-launch", "%q", args)
	}
	r := runProgramIn(t, testContext(t), t.TempDir(), "", append(env, "BOXSH_LAUNCH="+filepath.Join(dir, "nowhere")), filepath.Join(dir, "boxsh"), "--sandbox", "-c", "true")
	assert.NotEqual(t, 0, r.code())
	assert.Contains(t, r.stderr, "BOXSH_LAUNCH="+filepath.Join(dir, "nowhere")+" is not an executable file")
}
