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

	killFrontRequireGone(t, cmd, output, marker, launcher, init)
}

// killFrontRequireGone kills a marked shell's front and checks that its
// launcher, its sleep and its boxsh-init end with it.
func killFrontRequireGone(t *testing.T, cmd *exec.Cmd, output *lockedBuffer, marker string, launcher, init int) {
	t.Helper()
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

// requireCopyOrSettled requires the launcher pid to run from a sealed copy,
// or from its binary on disk once settled (TestSandboxLauncherSettles).
func requireCopyOrSettled(t *testing.T, pid int) {
	t.Helper()
	exe, mapped := launcherExe(pid)
	want, err := filepath.EvalSymlinks(launcherBeside())
	require.NoError(t, err)
	assert.True(t, (mapped && strings.HasPrefix(exe, "/memfd:")) || (!mapped && exe == want), "the launcher runs from %s, neither a sealed copy nor %s", exe, want)
}

// TestSandboxLauncherCopyOfOneSandbox checks that a server of one sandbox
// holds no copy of the launcher once its sandbox runs: the launcher runs
// from the sealed copy the front made for it, which only the launcher holds
// (so it is freed with it, or when it settles); and that the launcher of a
// restarted sandbox, with no copy made for it, runs from a sealed copy of
// its own.
func TestSandboxLauncherCopyOfOneSandbox(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox"}})
	require.Equal(t, 0, s.bash("true").ExitCode)
	assert.Empty(t, launcherCopies(t, s.pid()), "the front holds a copy of the launcher")
	launcher := findChild(t, s.pid(), "boxsh-launch")
	requireCopyOrSettled(t, launcher)

	out := restartInit(t, s, "echo restarted").bash(t)
	require.Equal(t, "restarted\n", out.Stdout, "%+v", out)
	next := findChild(t, s.pid(), "boxsh-launch")
	require.NotEqual(t, launcher, next, "the sandbox was not restarted")
	requireCopyOrSettled(t, next)
	assert.Empty(t, launcherCopies(t, s.pid()), "the front holds a copy of the launcher after the restart")
}

// launcherExe is the executable pid runs, and whether any of its mappings is
// a sealed copy of boxsh-launch.
func launcherExe(pid int) (exe string, mapsCopy bool) {
	exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	maps, _ := readProcFile(pid, "maps")
	return exe, strings.Contains(maps, "memfd:runc_cloned")
}

// requireSettled waits until the launcher pid runs from the executable
// at want on disk and maps no sealed copy of itself.
func requireSettled(t *testing.T, pid int, want string) {
	t.Helper()
	want, err := filepath.EvalSymlinks(want)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		exe, mapped := launcherExe(pid)
		return exe == want && !mapped && procComm(pid) == "boxsh-launch"
	}, 10*time.Second, 10*time.Millisecond, "the launcher %d did not settle on %s: %v", pid, want, func() []any {
		exe, mapped := launcherExe(pid)
		return []any{exe, mapped}
	}())
}

// launcherBeside is the boxsh-launch the tests' boxsh runs.
func launcherBeside() string { return filepath.Join(filepath.Dir(boxshPath()), "boxsh-launch") }

// TestSandboxLauncherSettles checks that once a server's sandbox runs, its
// launcher executes itself again from its binary on disk, so that the sealed
// copy it started from is freed, and that the sandbox is served as before:
// calls, a restart (whose launcher settles too), and the end of the server,
// after which nothing of the sandbox is left.
func TestSandboxLauncherSettles(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	runtimeDir := t.TempDir()
	s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox"}, env: []string{"XDG_RUNTIME_DIR=" + runtimeDir}})
	require.Equal(t, "before\n", s.bash("echo before").Stdout)
	launcher := findChild(t, s.pid(), "boxsh-launch")
	init := findChild(t, s.pid(), "boxsh-init")
	requireSettled(t, launcher, launcherBeside())
	assert.Equal(t, init, findChild(t, s.pid(), "boxsh-init"), "the same sandbox")
	out := s.bash("echo after; exit 3")
	assert.Equal(t, "after\n", out.Stdout, "%+v", out)
	assert.Equal(t, 3, out.ExitCode)

	out = restartInit(t, s, "echo restarted").bash(t)
	require.Equal(t, "restarted\n", out.Stdout, "%+v", out)
	next := findChild(t, s.pid(), "boxsh-launch")
	require.NotEqual(t, launcher, next, "the sandbox was not restarted")
	requireGone(t, launcher, "boxsh-launch")
	requireSettled(t, next, launcherBeside())
	require.Equal(t, "again\n", s.bash("echo again").Stdout)

	s.requireExitZero()
	require.Eventually(t, func() bool { return len(launchersIn(runtimeDir)) == 0 && len(sandboxStates(t, runtimeDir)) == 0 },
		10*time.Second, 10*time.Millisecond, "launchers %v, state directories %v left", launchersIn(runtimeDir), sandboxStates(t, runtimeDir))
}

// TestSandboxLauncherSettledUnmapsProgram checks that a settled launcher
// drops its mappings of its program's code and constants, which its start
// faulted in: most stay unmapped while it idles.
func TestSandboxLauncherSettledUnmapsProgram(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox", "--log-level", "debug"}, env: []string{"XDG_RUNTIME_DIR=" + t.TempDir()}})
	require.Equal(t, "x\n", s.bash("echo x").Stdout)
	launcher := findChild(t, s.pid(), "boxsh-launch")
	requireSettled(t, launcher, launcherBeside())
	require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), "boxsh-launch unmapped") }, 10*time.Second, 10*time.Millisecond,
		"the settled launcher did not unmap its program: %s", s.stderr.String())
	exe, err := filepath.EvalSymlinks(launcherBeside())
	require.NoError(t, err)
	resident, size := programResidence(t, launcher, exe)
	require.Positive(t, size, "no read-only mapping of %s in the launcher", exe)
	// A start faults in nearly all of it (97-99%); what the idle launcher
	// maps again is about half.
	assert.Less(t, float64(resident)/float64(size), 0.7, "%d of %d kB of the launcher's program resident", resident, size)
	require.Equal(t, "y\n", s.bash("echo y").Stdout)
	s.requireExitZero()
}

// programResidence sums the size and the resident part, in kB, of process
// pid's read-only mappings of the executable exe.
func programResidence(t *testing.T, pid int, exe string) (resident, size int64) {
	t.Helper()
	smaps, err := readProcFile(pid, "smaps")
	require.NoError(t, err)
	ours := false
	for _, line := range strings.Split(smaps, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			ours = len(f) >= 6 && f[5] == exe && !strings.Contains(f[1], "w")
		case ours && len(f) == 3 && (f[0] == "Size:" || f[0] == "Rss:"):
			n, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err)
			if f[0] == "Size:" {
				size += n
			} else {
				resident += n
			}
		}
	}
	return resident, size
}

// TestSandboxLauncherSettledShell checks a sandboxed shell whose launcher
// has settled: the command's status still reaches the front, a signal to
// the front still reaches the sandbox, and the front's death and the
// launcher's still end the sandbox (the parent-death signals outlive the
// launcher's execve).
func TestSandboxLauncherSettledShell(t *testing.T) {
	t.Parallel()
	requireRootless(t)

	t.Run("status", func(t *testing.T) {
		runtimeDir := t.TempDir()
		cmd := exec.CommandContext(testContext(t), boxshPath(), "--sandbox", "-c", "read line; echo got $line; exit 7")
		cmd.Dir, cmd.Env = t.TempDir(), append(os.Environ(), "XDG_RUNTIME_DIR="+runtimeDir)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		output := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = output, output
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		requireSettled(t, findChild(t, cmd.Process.Pid, "boxsh-launch"), launcherBeside())
		_, err = stdin.Write([]byte("line\n"))
		require.NoError(t, err)
		err = cmd.Wait()
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr, "output: %s", output.String())
		assert.Equal(t, 7, exitErr.ExitCode())
		assert.Equal(t, "got line\n", output.String())
		require.Eventually(t, func() bool { return len(launchersIn(runtimeDir)) == 0 && len(sandboxStates(t, runtimeDir)) == 0 },
			10*time.Second, 10*time.Millisecond, "launchers %v, state directories %v left", launchersIn(runtimeDir), sandboxStates(t, runtimeDir))
	})

	t.Run("signal", func(t *testing.T) {
		marker := sleepMarker(309)
		cmd, output, launcher, _ := startMarkedShell(t, marker)
		requireSettled(t, launcher, launcherBeside())
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		err := cmd.Wait()
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr, "output: %s", output.String())
		assert.Equal(t, 128+int(syscall.SIGTERM), exitErr.ExitCode(), "output: %s", output.String())
		requireNoArgv(t, 5*time.Second, "sleep", marker)
		assert.NotContains(t, output.String(), "not-killed")
	})

	t.Run("front killed", func(t *testing.T) {
		marker := sleepMarker(310)
		cmd, output, launcher, init := startMarkedShell(t, marker)
		requireSettled(t, launcher, launcherBeside())
		killFrontRequireGone(t, cmd, output, marker, launcher, init)
	})

	t.Run("launcher killed", func(t *testing.T) {
		marker := sleepMarker(311)
		cmd, output, launcher, init := startMarkedShell(t, marker)
		requireSettled(t, launcher, launcherBeside())
		require.NoError(t, syscall.Kill(launcher, syscall.SIGKILL))
		err := cmd.Wait()
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr, "output: %s", output.String())
		assert.NotEqual(t, 0, exitErr.ExitCode())
		assert.Regexp(t, `boxsh: the sandbox's launcher /\S*/boxsh-launch died: signal: killed`, output.String())
		requireNoArgv(t, 5*time.Second, "sleep", marker)
		requireGone(t, init, "boxsh-init")
	})
}

// TestSandboxLauncherChangedStaysOnCopy checks that a launcher whose binary
// changed on disk after its copy was made (here its mode, which moves its
// change time as a write does) does not execute it, and serves its sandbox
// from its copy.
func TestSandboxLauncherChangedStaysOnCopy(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	b, err := os.ReadFile(launcherBeside())
	require.NoError(t, err)
	// The launcher settles a second after the sandbox's command starts:
	// a chmod later than that tests nothing, and the test starts again.
	for attempt := 1; ; attempt++ {
		launcherCopy := filepath.Join(t.TempDir(), "boxsh-launch")
		require.NoError(t, os.WriteFile(launcherCopy, b, 0o755))
		s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox", "--log-level", "debug"}, env: []string{"BOXSH_LAUNCH=" + launcherCopy}})
		require.Equal(t, 0, s.bash("true").ExitCode)
		require.NoError(t, os.Chmod(launcherCopy, 0o700))
		launcher := findChild(t, s.pid(), "boxsh-launch")
		if exe, mapped := launcherExe(launcher); !mapped || !strings.HasPrefix(exe, "/memfd:") {
			require.Less(t, attempt, 5, "the launcher settled before the chmod every time")
			continue
		}
		require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), "boxsh-launch stays on its sealed copy") },
			10*time.Second, 10*time.Millisecond, "stderr: %s", s.stderr.String())
		exe, mapped := launcherExe(launcher)
		assert.True(t, mapped && strings.HasPrefix(exe, "/memfd:"), "the launcher runs %s", exe)
		assert.Equal(t, "served\n", s.bash("echo served").Stdout)
		s.requireExitZero()
		return
	}
}
