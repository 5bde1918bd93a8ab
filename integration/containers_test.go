//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of this file run boxsh --sandbox where CI jobs run: inside a
// rootless container (its stand-in: unshare making a user, mount and PID
// namespace, with uid 0 mapped to the test's user), inside a pod with a
// user namespace (its stand-in: rootless runc running a bundle with one),
// inside another boxsh sandbox, and where user namespaces are refused.

// rootlessContainer is the command prefix of the rootless container
// stand-in. It runs as uid 0 in a user namespace of its own, with mount and
// PID namespaces and the /proc of its PID namespace, as Podman makes them.
var rootlessContainer = []string{"unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--mount-proc"}

// runIn runs argv with the environment env added and returns what it
// printed and its exit status.
func runIn(t *testing.T, env []string, argv ...string) runResult {
	t.Helper()
	ctx := testContext(t)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !assert.ErrorAs(t, err, &exitErr) {
		t.FailNow()
	}
	return runResult{stdout.String(), stderr.String(), cmd.ProcessState}
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// TestContainerRootless runs boxsh --sandbox as uid 0 of a rootless
// container. boxsh must not take itself for the real root, with a cgroup it
// cannot make or root's state directory. It must use a state directory of
// its own, even where one named for uid 0 exists and is not its own (the
// host root's, shared through /dev/shm). That holds with or without
// XDG_RUNTIME_DIR.
func TestContainerRootless(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	wr := t.TempDir()
	script := `echo "uid $(id -u)"; echo written > ` + wr + `/out; cat /proc/self/uid_map`
	for name, env := range map[string][]string{
		"shm":             {"XDG_RUNTIME_DIR="},
		"xdg-runtime-dir": {"XDG_RUNTIME_DIR=" + t.TempDir()},
	} {
		t.Run(name, func(t *testing.T) {
			os.Remove(filepath.Join(wr, "out"))
			// A /dev/shm of the container's own, holding a boxsh-0 that
			// is not private, as another user's would be.
			inner := `mount -t tmpfs shm /dev/shm && mkdir -m 755 /dev/shm/boxsh-0 && exec "$@"`
			argv := append(append([]string(nil), rootlessContainer...), "sh", "-c", inner, "sh",
				boxshPath(), "--sandbox", "--bind", "wr:"+wr, "-c", script)
			r := runIn(t, env, argv...)
			require.Equal(t, 0, r.code(), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Contains(t, r.stdout, "uid 0")
			got, err := os.ReadFile(filepath.Join(wr, "out"))
			require.NoError(t, err)
			assert.Equal(t, "written\n", string(got))
			assert.NotContains(t, r.stderr, "cgroup")
		})
	}
}

// TestContainerStaleProc checks the one line that names a container's
// /proc of another PID namespace (unshare --pid without --mount-proc),
// where the runtime cannot map the sandbox's ids.
func TestContainerStaleProc(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	r := runIn(t, nil, "unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", boxshPath(), "--sandbox", "-c", "true")
	require.NotEqual(t, 0, r.code())
	assert.Contains(t, firstLine(r.stderr), "/proc is another PID namespace's")
	assert.Contains(t, firstLine(r.stderr), "--mount-proc")
}

// TestContainerNested runs boxsh --sandbox inside boxsh --sandbox: the
// outer sandbox's seccomp filter refuses the user namespace and mounts
// the inner one needs, which the first line says, with what to do.
func TestContainerNested(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	bin := filepath.Dir(boxshPath())
	r := sandboxShell(t, t.TempDir(), []string{"--bind", "ro:" + bin}, boxshPath()+" --sandbox -c 'echo inner'")
	require.NotEqual(t, 0, r.code(), "stdout: %s", r.stdout)
	assert.NotContains(t, r.stdout, "inner")
	first := firstLine(r.stderr)
	assert.Contains(t, first, "boxsh: cannot start the sandbox: user namespaces: boxsh runs inside a boxsh sandbox")
	assert.Contains(t, first, "sandboxes do not nest")
}

// userNSOff is a command prefix that runs the rest in a user namespace of
// the test's own where user.max_user_namespaces is 0 (the sysctl is per
// user namespace: the host's stays as it is).
var userNSOff = []string{"unshare", "--user", "--map-root-user", "sh", "-c", `echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"`, "sh"}

// TestContainerUserNamespacesOff checks what boxsh does where user
// namespaces are off:
//   - the first line names the cause and the sysctl;
//   - boxsh --rpc --sandbox still answers initialize, and fails each tool
//     call with that line;
//   - boxsh doctor fails the check;
//   - --try announces no directory.
func TestContainerUserNamespacesOff(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	before, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	require.NoError(t, err)
	const cause = "cannot start the sandbox: user namespaces: user namespaces are off (sysctl user.max_user_namespaces is 0)"

	r := runIn(t, nil, append(userNSOff, boxshPath(), "--sandbox", "-c", "echo ran")...)
	require.NotEqual(t, 0, r.code())
	assert.NotContains(t, r.stdout, "ran")
	assert.True(t, strings.HasPrefix(r.stderr, "boxsh: "+cause), "first line: %s", firstLine(r.stderr))
	assert.Contains(t, firstLine(r.stderr), "sysctl -w user.max_user_namespaces=")

	r = runIn(t, nil, append(userNSOff, boxshPath(), "--try", "-c", "echo ran")...)
	require.NotEqual(t, 0, r.code())
	assert.NotContains(t, r.stderr, "changes will be saved")
	assert.Contains(t, firstLine(r.stderr), cause)

	r = runIn(t, nil, append(userNSOff, boxshPath(), "doctor")...)
	assert.Equal(t, 1, r.code(), "stdout: %s", r.stdout)
	assert.Contains(t, r.stdout, "FAIL user namespaces: user namespaces are off")

	after, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the host's sysctl is unchanged")

	t.Run("rpc", func(t *testing.T) {
		s := startServer(t, testContext(t), serverOptions{wrap: userNSOff, args: []string{"--sandbox"}})
		init := s.roundTrip("initialize", map[string]any{
			"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "test", "version": "1"},
		})
		require.Nil(t, init.Error)
		assert.Contains(t, string(init.Result), `"serverInfo"`)
		for range 2 {
			res := s.call("bash", map[string]any{"command": "echo ran"}).toolResult(t)
			assert.True(t, res.IsError)
			assert.Contains(t, res.text(), cause)
			assert.NotContains(t, res.text(), "ran\n")
		}
	})
}

// TestDoctor checks boxsh doctor where the sandbox works: every check,
// one a line, and exit status 0.
func TestDoctor(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	r := runIn(t, nil, boxshPath(), "doctor")
	require.Equal(t, 0, r.code(), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	for _, want := range []string{
		"ok   seccomp support:", "ok   sandbox launcher:", "ok   user namespaces:", "ok   AppArmor:", "ok   /proc:",
		"ok   cgroups: cgroup ", "ok   overlayfs:", "ok   runc (for boxsh spec):",
	} {
		assert.Contains(t, "\n"+r.stdout, "\n"+want, "doctor output:\n%s", r.stdout)
	}
	assert.Contains(t, r.stdout, "rlimits", "a rootless sandbox's limits are rlimits")
	assert.True(t, strings.HasSuffix(r.stdout, "boxsh can start sandboxes here\n"))

	// In the rootless container stand-in, uid 0 is no real root.
	r = runIn(t, nil, append(append([]string(nil), rootlessContainer...), boxshPath(), "doctor")...)
	require.Equal(t, 0, r.code(), "stdout: %s", r.stdout)
	assert.Contains(t, r.stdout, "in a container's user namespace: a sandbox gets no cgroup of its own")
}

// podCapabilities are the capabilities container runtimes give a pod's
// processes by default (containerd's and CRI-O's).
var podCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// podBundle writes an OCI bundle of a pod with a user namespace, whose root
// holds busybox and boxsh's binaries and which runs boxsh with args. The
// pod maps uid 0 to the test's user, has the default capabilities, and no
// seccomp profile (as `seccompProfile: Unconfined`). masked gives its /proc
// the runtime's default masks; otherwise /proc is as with `procMount:
// Unmasked`. edit, when not nil, changes the spec and the root file system
// (root) before the bundle is written.
func podBundle(t *testing.T, masked bool, edit func(root string, spec *specs.Spec), args ...string) string {
	t.Helper()
	if _, err := os.Stat("/bin/busybox"); err != nil {
		requireInCI(t, "busybox is not installed (Debian: apt-get install busybox-static; scripts/deps.sh does)")
	}
	bundle := t.TempDir()
	root := filepath.Join(bundle, "rootfs")
	for _, d := range []string{"bin", "etc", "root", "tmp", "proc", "dev", "sys", "work"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	require.NoError(t, os.Chmod(filepath.Join(root, "tmp"), 0o1777))
	copyFile := func(src, dst string) {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(root, dst), b, 0o755))
	}
	copyFile("/bin/busybox", "bin/busybox")
	for _, applet := range []string{"sh", "cat", "echo", "id", "ls", "true", "mkdir"} {
		require.NoError(t, os.Symlink("busybox", filepath.Join(root, "bin", applet)))
	}
	bin := filepath.Dir(boxshPath())
	copyFile(filepath.Join(bin, "boxsh"), "bin/boxsh")
	copyFile(filepath.Join(bin, "boxsh-init"), "bin/boxsh-init")
	copyFile(filepath.Join(bin, "boxsh-launch"), "bin/boxsh-launch")
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\n"), 0o644))

	spec := specs.Spec{
		Version:  specs.Version,
		Root:     &specs.Root{Path: "rootfs"},
		Hostname: "pod",
		Process: &specs.Process{
			Args: append([]string{"/bin/boxsh"}, args...),
			Env:  []string{"PATH=/bin", "HOME=/root"},
			Cwd:  "/work",
			Capabilities: &specs.LinuxCapabilities{
				Bounding: podCapabilities, Effective: podCapabilities, Permitted: podCapabilities,
			},
		},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/sys", Type: "none", Source: "/sys", Options: []string{"rbind", "nosuid", "noexec", "nodev", "ro"}},
		},
		Linux: &specs.Linux{
			UIDMappings: []specs.LinuxIDMapping{{ContainerID: 0, HostID: uint32(os.Getuid()), Size: 1}},
			GIDMappings: []specs.LinuxIDMapping{{ContainerID: 0, HostID: uint32(os.Getgid()), Size: 1}},
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
				{Type: specs.MountNamespace}, {Type: specs.UserNamespace}, {Type: specs.NetworkNamespace},
			},
		},
	}
	if masked {
		spec.Linux.MaskedPaths = []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
			"/proc/timer_list", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"}
		spec.Linux.ReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	}
	if edit != nil {
		edit(root, &spec)
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(bundle, "config.json"), b, 0o644))
	return bundle
}

// runPod runs the bundle under rootless runc.
func runPod(t *testing.T, runc, bundle string) runResult {
	t.Helper()
	state := t.TempDir()
	id := fmt.Sprintf("boxsh-pod-%d-%d", os.Getpid(), runcSeq.Add(1))
	t.Cleanup(func() { _ = exec.Command(runc, "--root", state, "delete", "--force", id).Run() })
	return runIn(t, nil, runc, "--root", state, "run", "--bundle", bundle, id)
}

// TestContainerPod runs boxsh --sandbox in a pod with a user namespace,
// with rootless runc as the stand-in. boxsh works with an unmasked /proc.
// With the runtime's default masks, the first line says why it cannot, and
// names the settings that unmask /proc.
func TestContainerPod(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	runc := requireRunc(t)
	t.Run("unmasked", func(t *testing.T) {
		r := runPod(t, runc, podBundle(t, false, nil, "--sandbox", "-c", `echo "in the sandbox: $(id -u)"; echo data > /tmp/f; cat /tmp/f`))
		require.Equal(t, 0, r.code(), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
		assert.Equal(t, "in the sandbox: 0\ndata\n", r.stdout)
	})
	t.Run("masked", func(t *testing.T) {
		r := runPod(t, runc, podBundle(t, true, nil, "--sandbox", "-c", "echo ran"))
		require.NotEqual(t, 0, r.code(), "stdout: %s", r.stdout)
		assert.NotContains(t, r.stdout, "ran")
		first := firstLine(r.stderr)
		assert.Contains(t, first, "boxsh: cannot start the sandbox: /proc: parts are masked")
		assert.Contains(t, first, "procMount: Unmasked")
		assert.Contains(t, first, "systempaths=unconfined")
	})
}
