//go:build linux

package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
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

// The tests of this file run boxsh --sandbox inside real Docker containers,
// as root and as another user of the container, with the flags the README
// names and without each of them. They need a Docker engine whose socket
// the test's user can use: scripts/docker-engine.sh installs Debian's
// docker.io and starts one (.ci/run runs it), listening on
// dockerEngineSocket for the group of the user that runs the tests.

// dockerEngineSocket is where scripts/docker-engine.sh's engine listens.
const dockerEngineSocket = "/run/boxsh-docker/docker.sock"

// dockerFlags are the docker run flags the README names for boxsh
// --sandbox in a container (on hosts with AppArmor, --security-opt
// apparmor=unconfined too).
var dockerFlags = []string{"--security-opt", "seccomp=unconfined", "--security-opt", "systempaths=unconfined"}

// A dockerEngine runs containers of an image holding busybox and boxsh,
// with the docker command line (or podman's, which takes the same flags).
type dockerEngine struct {
	argv  []string // the engine's command and its global flags
	env   []string // DOCKER_HOST, when the test chose it
	image string
}

// requireDocker finds a Docker engine and imports into it an image of
// busybox and boxsh's binaries; no image registry is needed. It removes the
// image after the test. Without an engine, it skips the test, saying why.
func requireDocker(t *testing.T) *dockerEngine {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no Docker engine: the docker client is not installed (as root: scripts/docker-engine.sh installs Debian's docker.io and starts an engine)")
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("busybox is not installed (Debian: apt-get install busybox-static)")
	}
	d := &dockerEngine{argv: []string{"docker"}}
	if os.Getenv("DOCKER_HOST") == "" {
		if _, err := os.Stat(dockerEngineSocket); err == nil {
			d.env = []string{"DOCKER_HOST=unix://" + dockerEngineSocket}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := d.command(ctx, "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		t.Skipf("no Docker engine is reachable (docker version: %s): as root, scripts/docker-engine.sh installs Debian's docker.io and starts one", firstLine(strings.TrimSpace(string(out))))
	}
	t.Logf("Docker engine %s", strings.TrimSpace(string(out)))
	d.importImage(t, ctx)
	return d
}

// importImage imports an image of busybox and boxsh's binaries (see
// writeDockerRootfs), removed after the test.
func (d *dockerEngine) importImage(t *testing.T, ctx context.Context) {
	t.Helper()
	var tarball bytes.Buffer
	writeDockerRootfs(t, &tarball)
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	d.image = fmt.Sprintf("boxsh-test-%d-%s:latest", os.Getpid(), hex.EncodeToString(suffix))
	cmd := d.command(ctx, "import", "-", d.image)
	cmd.Stdin = &tarball
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s import: %v: %s", d.argv[0], err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = d.command(ctx, "rmi", "--force", d.image).Run()
	})
}

// command is an engine command line.
func (d *dockerEngine) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, d.argv[0], append(d.argv[1:len(d.argv):len(d.argv)], args...)...)
	cmd.Env = append(os.Environ(), d.env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs script (busybox sh) in a new container of the image, as user
// ("" for the image's root), with the docker run flags, and returns what
// it printed and its exit status. /scratch is a tmpfs.
func (d *dockerEngine) run(t *testing.T, user string, flags []string, script string) runResult {
	t.Helper()
	args := []string{"run", "--rm", "--network", "none", "--tmpfs", "/scratch:mode=1777,exec"}
	if user != "" {
		args = append(args, "--user", user)
	}
	args = append(append(args, flags...), d.image, "/bin/sh", "-c", script)
	cmd := d.command(testContext(t), args...)
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%s run: %v", d.argv[0], err)
	}
	return runResult{stdout.String(), stderr.String(), cmd.ProcessState}
}

// writeDockerRootfs writes to w the tar of a root file system holding
// busybox and boxsh's binaries, with root and user (1000:1000, home
// /home/user).
func writeDockerRootfs(t *testing.T, w io.Writer) {
	t.Helper()
	tw := tar.NewWriter(w)
	add := func(h *tar.Header, body []byte) {
		h.Size = int64(len(body))
		h.ModTime = time.Unix(0, 0)
		require.NoError(t, tw.WriteHeader(h))
		_, err := tw.Write(body)
		require.NoError(t, err)
	}
	dir := func(name string, mode int64, uid int) {
		add(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid}, nil)
	}
	file := func(name string, mode int64, body []byte) {
		add(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode}, body)
	}
	for _, d := range []string{"bin", "usr", "usr/local", "usr/local/bin", "etc", "root", "proc", "dev", "sys", "home"} {
		dir(d, 0o755, 0)
	}
	dir("tmp", 0o1777, 0)
	dir("home/user", 0o755, 1000)
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return b
	}
	file("bin/busybox", 0o755, read("/bin/busybox"))
	for _, applet := range []string{"sh", "cat", "echo", "id", "ls", "true", "mkdir", "head", "tr"} {
		add(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + applet, Linkname: "busybox", Mode: 0o777}, nil)
	}
	bin := filepath.Dir(boxshPath())
	for _, name := range []string{"boxsh", "boxsh-init", "boxsh-launch", "boxsh-zygote.so"} {
		file("usr/local/bin/"+name, 0o755, read(filepath.Join(bin, name)))
	}
	file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n"))
	file("etc/group", 0o644, []byte("root:x:0:\nuser:x:1000:\n"))
	require.NoError(t, tw.Close())
}

// containerWorks is the script of TestDocker's and TestPodman's working
// containers: a sandbox, a cow: bind whose changes are on a tmpfs, and
// --try in a directory on it.
const containerWorks = `PATH=/usr/local/bin:/bin
echo "outside $(id -u)"
echo "inside $(boxsh --sandbox -c 'id -u')"
mkdir -p "$HOME/src" && echo base > "$HOME/src/f"
boxsh --sandbox --bind "cow:$HOME/src:/scratch/dst" -c 'echo more >> /scratch/dst/f'
echo "dst $(cat /scratch/dst/f | tr '\n' ' ')"
echo "src $(cat "$HOME/src/f")"
mkdir /scratch/repo && cd /scratch/repo && echo base > f
boxsh --try -c 'echo tried > f' 2>/dev/null
echo "repo $(cat f), try $(cat /scratch/.boxsh-try-*/work/f)"
`

// dockerWorks is containerWorks, then two checks of the container's
// overlayfs root. A cow: bind whose changes would be on it is refused with
// one line. --try in a directory whose parent is on it keeps its changes in
// TMPDIR, and is refused with one line when TMPDIR is on it too.
const dockerWorks = containerWorks + `cd "$HOME" && boxsh --sandbox --bind "cow:$HOME/src:$HOME/dst" -c 'echo ran' 2>&1 | head -1
cd "$HOME/src" && TMPDIR=/scratch/tmp && mkdir $TMPDIR && export TMPDIR
boxsh --try -c 'echo tried > f' 2>/dev/null
echo "src $(cat f), try $(cat /scratch/tmp/boxsh-try-*/work/f)"
TMPDIR=/tmp boxsh --try -c 'echo ran' 2>&1 | head -1
`

// TestDocker runs boxsh --sandbox in Docker containers, as root and as
// another user of the container. With the README's flags it works, cow: and
// --try included. So it does with the original's flags, which add
// CAP_SYS_ADMIN. Without each flag, the first line of the error names it.
func TestDocker(t *testing.T) {
	d := requireDocker(t)
	works := func(t *testing.T, user string, flags []string, uid string) {
		r := d.run(t, user, flags, dockerWorks)
		require.Equal(t, 0, r.code(), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		require.Len(t, lines, 8, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
		assert.Equal(t, "outside "+uid, lines[0])
		assert.Equal(t, "inside 0", lines[1])
		assert.Equal(t, "dst base more ", lines[2], "the changes are in DST")
		assert.Equal(t, "src base", lines[3], "SRC is unchanged")
		assert.Equal(t, "repo base, try tried", lines[4], "--try keeps its changes apart")
		assert.True(t, strings.HasPrefix(lines[5], "boxsh: "), lines[5])
		assert.Contains(t, lines[5], "is on overlayfs (a container's root file system)")
		assert.Contains(t, lines[5], "-v or --tmpfs")
		assert.Equal(t, "src base, try tried", lines[6], "--try keeps its changes in TMPDIR")
		assert.True(t, strings.HasPrefix(lines[7], "boxsh: --try: "), lines[7])
		assert.Contains(t, lines[7], "are on overlayfs (a container's root file system)")
		assert.Contains(t, lines[7], "set TMPDIR to one")
	}
	fails := func(t *testing.T, user string, flags []string, wantFlag string) {
		r := d.run(t, user, flags, `PATH=/usr/local/bin:/bin; exec boxsh --sandbox -c 'echo ran'`)
		require.NotEqual(t, 0, r.code(), "stdout: %s", r.stdout)
		assert.NotContains(t, r.stdout, "ran")
		first := firstLine(r.stderr)
		assert.True(t, strings.HasPrefix(first, "boxsh: cannot start the sandbox: "), first)
		assert.Contains(t, first, wantFlag)
		doctorSays(t, d, user, flags, false, wantFlag)
	}
	noSeccomp := dockerFlags[2:]
	noSystemPaths := dockerFlags[:2]
	t.Run("root", func(t *testing.T) {
		t.Parallel()
		works(t, "", dockerFlags, "0")
		doctorSays(t, d, "", dockerFlags, true)
	})
	t.Run("user", func(t *testing.T) {
		t.Parallel()
		works(t, "1000:1000", dockerFlags, "1000")
		doctorSays(t, d, "1000:1000", dockerFlags, true)
	})
	t.Run("root-original-flags", func(t *testing.T) {
		t.Parallel()
		works(t, "", append([]string{"--cap-add", "SYS_ADMIN", "--security-opt", "apparmor=unconfined"}, dockerFlags...), "0")
	})
	t.Run("root-without-seccomp", func(t *testing.T) {
		t.Parallel()
		fails(t, "", noSeccomp, "--security-opt seccomp=unconfined")
	})
	t.Run("user-without-seccomp", func(t *testing.T) {
		t.Parallel()
		fails(t, "1000:1000", noSeccomp, "--security-opt seccomp=unconfined")
	})
	// With CAP_SYS_ADMIN, Docker's default profile allows the user
	// namespace but still refuses keyctl, which the runtime calls.
	t.Run("root-sys-admin-without-seccomp", func(t *testing.T) {
		t.Parallel()
		fails(t, "", append([]string{"--cap-add", "SYS_ADMIN"}, noSeccomp...), "--security-opt seccomp=unconfined")
	})
	t.Run("root-without-systempaths", func(t *testing.T) {
		t.Parallel()
		fails(t, "", noSystemPaths, "--security-opt systempaths=unconfined")
	})
	t.Run("user-without-systempaths", func(t *testing.T) {
		t.Parallel()
		fails(t, "1000:1000", noSystemPaths, "--security-opt systempaths=unconfined")
	})
}

// doctorSays runs boxsh doctor in a container of d with flags. It checks
// that doctor says what a sandbox's start there does: that boxsh can start
// sandboxes (exit 0), or that it cannot, naming each of wantFlags in one
// line (exit 1).
func doctorSays(t *testing.T, d *dockerEngine, user string, flags []string, canStart bool, wantFlags ...string) {
	t.Helper()
	r := d.run(t, user, flags, `PATH=/usr/local/bin:/bin
out=$(boxsh doctor); code=$?; echo "$out"; echo "doctor=$code"
if boxsh --sandbox -c true 2>/dev/null; then echo started=yes; else echo started=no; fi`)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.GreaterOrEqual(t, len(lines), 3, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	verdict, code, started := lines[len(lines)-3], lines[len(lines)-2], lines[len(lines)-1]
	require.Equal(t, map[bool]string{true: "started=yes", false: "started=no"}[canStart], started, "the sandbox's own start")
	if canStart {
		assert.Equal(t, "doctor=0", code, r.stdout)
		assert.Equal(t, "boxsh can start sandboxes here", verdict)
		assert.Contains(t, r.stdout, "ok   sandbox start: a sandbox started and ran a command")
		return
	}
	assert.Equal(t, "doctor=1", code, r.stdout)
	assert.True(t, strings.HasPrefix(verdict, "boxsh cannot start sandboxes here: "), verdict)
	for _, f := range wantFlags {
		assert.Contains(t, verdict, f, "one line names every missing flag")
	}
}
