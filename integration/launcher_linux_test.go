package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	// The command runs before the launcher's answer to the exec reaches the
	// front, so a kill in between is told as the start's error.
	assert.Regexp(t, `boxsh: (start sandbox: )?the sandbox's launcher /\S*/boxsh-launch died: signal: killed`, output.String())
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

// launchersIn lists the live launchers (zombies excluded) started with
// XDG_RUNTIME_DIR=runtimeDir.
func launchersIn(runtimeDir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || procComm(pid) != "boxsh-launch" || isZombie(pid) {
			continue
		}
		env, err := readProcFile(pid, "environ")
		if err == nil && slices.Contains(strings.Split(env, "\x00"), "XDG_RUNTIME_DIR="+runtimeDir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestSandboxLauncherDestroysAfterFront checks that once a sandboxed shell
// has exited with its command's status, its launcher destroys the sandbox on
// its own: the sandbox's processes, the launcher and the state directory are
// gone soon after; and that a launcher killed meanwhile leaves nothing that
// the next start does not sweep.
func TestSandboxLauncherDestroysAfterFront(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	runtimeDir := t.TempDir()
	env := []string{"XDG_RUNTIME_DIR=" + runtimeDir}
	marker := sleepMarker(307)
	killMarkedAtCleanup(t, marker)

	r := runBoxshIn(t, testContext(t), t.TempDir(), "", env, "--sandbox", "-c", "sleep "+marker+" & echo started; exit 7")
	require.Equal(t, 7, r.code(), "stderr: %s", r.stderr)
	assert.Equal(t, "started\n", r.stdout)
	requireNoArgv(t, 5*time.Second, "sleep", marker)
	require.Eventually(t, func() bool { return len(launchersIn(runtimeDir)) == 0 && len(sandboxStates(t, runtimeDir)) == 0 },
		10*time.Second, 10*time.Millisecond, "launchers %v, state directories %v left", launchersIn(runtimeDir), sandboxStates(t, runtimeDir))

	// Launchers killed as soon as their front has exited, while their
	// destroy may still run.
	for range 3 {
		cmd := exec.CommandContext(testContext(t), boxshPath(), "--sandbox", "-c", "true")
		cmd.Dir, cmd.Env = t.TempDir(), append(os.Environ(), env...)
		require.NoError(t, cmd.Run())
		for _, pid := range launchersIn(runtimeDir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// Dead, they hold no lock for the next start's sweep to skip.
	require.Eventually(t, func() bool { return len(launchersIn(runtimeDir)) == 0 },
		10*time.Second, 10*time.Millisecond, "launchers %v left", launchersIn(runtimeDir))
	r = runBoxshIn(t, testContext(t), t.TempDir(), "", env, "--sandbox", "-c", "true")
	require.Equal(t, 0, r.code(), "stderr: %s", r.stderr)
	require.Eventually(t, func() bool { return len(launchersIn(runtimeDir)) == 0 && len(sandboxStates(t, runtimeDir)) == 0 },
		10*time.Second, 10*time.Millisecond, "launchers %v, state directories %v left", launchersIn(runtimeDir), sandboxStates(t, runtimeDir))
}

// TestSandboxLauncherDestroysAfterServer checks the same of a server of one
// sandbox, which leaves the destroy to the launcher once boxsh-init has
// exited at the end of its input: nothing of the sandbox is left soon
// after the server's exit, neither its processes (a background one among
// them), the launcher nor the state directory.
func TestSandboxLauncherDestroysAfterServer(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	runtimeDir := t.TempDir()
	marker := sleepMarker(308)
	killMarkedAtCleanup(t, marker)
	s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox"}, env: []string{"XDG_RUNTIME_DIR=" + runtimeDir}})
	out := s.bash("nohup sleep " + marker + " >/dev/null 2>&1 & echo started")
	require.Equal(t, "started\n", out.Stdout, "%+v", out)
	waitForArgv(t, "sleep", marker)
	require.Len(t, sandboxStates(t, runtimeDir), 1, "the sandbox's state directory")
	s.requireExitZero()
	requireNoArgv(t, 5*time.Second, "sleep", marker)
	require.Eventually(t, func() bool { return len(launchersIn(runtimeDir)) == 0 && len(sandboxStates(t, runtimeDir)) == 0 },
		10*time.Second, 10*time.Millisecond, "launchers %v, state directories %v left", launchersIn(runtimeDir), sandboxStates(t, runtimeDir))
}

// launcherCopies lists pid's descriptors that are sealed copies of
// boxsh-launch (memfds named after it).
func launcherCopies(t *testing.T, pid int) []string {
	t.Helper()
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var copies []string
	for _, e := range entries {
		l, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err == nil && strings.HasPrefix(l, "/memfd:") && strings.Contains(l, "boxsh-launch") {
			copies = append(copies, e.Name()+" -> "+l)
		}
	}
	return copies
}

// TestSandboxLauncherCopyOfOneSandbox checks that a server of one sandbox
// holds no copy of the launcher once its sandbox runs: the launcher runs
// from the sealed copy the front made for it, which only the launcher holds
// (so it is freed with it); and that the launcher of a restarted sandbox,
// with no copy made for it, runs from a sealed copy of its own.
func TestSandboxLauncherCopyOfOneSandbox(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox"}})
	require.Equal(t, 0, s.bash("true").ExitCode)
	assert.Empty(t, launcherCopies(t, s.pid()), "the front holds a copy of the launcher")
	launcher := findChild(t, s.pid(), "boxsh-launch")
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", launcher))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(exe, "/memfd:"), "the launcher runs from %s, not a sealed copy", exe)

	out := restartInit(t, s, "echo restarted").bash(t)
	require.Equal(t, "restarted\n", out.Stdout, "%+v", out)
	next := findChild(t, s.pid(), "boxsh-launch")
	require.NotEqual(t, launcher, next, "the sandbox was not restarted")
	exe, err = os.Readlink(fmt.Sprintf("/proc/%d/exe", next))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(exe, "/memfd:"), "the restarted launcher runs from %s, not a sealed copy", exe)
	assert.Empty(t, launcherCopies(t, s.pid()), "the front holds a copy of the launcher after the restart")
}
